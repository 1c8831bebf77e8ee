"""The baselines (issue #69): block diffusion adapted from the base, and speculative decoding with a drafter."""
import math
import random
from dataclasses import replace

import pytest
import torch

import jacobi_min
from jacobi_min import greedy_decode
from jacobi_min.baselines import DiffusionConfig, DrafterConfig, Speculative, build_drafter
from jacobi_min.baselines import diffusion_decode, train_diffusion, train_drafter
from jacobi_min.baselines.diffusion import Context, block_causal, masked_views, packed_mask, unmask
from jacobi_min.packing import CLEAN, NOISY, PROMPT, pack
from jacobi_min.tools import task
from tests.conftest import generate_greedy, tiny_model

MASK = 63  # the random model's mask token


def diffusion_model(seed: int = 0):
    """A random tiny Qwen2 (vocab 64, EOS 3) whose last id is its mask token."""
    model = tiny_model(vocab=64, seed=seed)
    model.config.mask_token_id = MASK
    return model


def prompts(count: int, seed: int = 0) -> list[list[int]]:
    rng = random.Random(seed)
    return [[rng.randrange(4, 63) for _ in range(rng.randint(1, 9))] for _ in range(count)]


def loop_block_causal(groups: list[int]) -> torch.Tensor:
    """The rule, written out: a prompt token (its own group) sees the tokens before it; a block's
    token sees the prompt, the earlier blocks and its whole block."""
    mask = torch.zeros(len(groups), len(groups), dtype=torch.bool)
    for q in range(len(groups)):
        for k in range(len(groups)):
            mask[q, k] = k <= q or groups[k] == groups[q]
    return mask


def test_block_causal_mask_equals_loops():
    prompt, answer, n = 5, 11, 4
    groups = list(range(prompt)) + [prompt + i // n for i in range(answer)]
    assert torch.equal(block_causal(torch.tensor(groups)), loop_block_causal(groups))


def test_packed_training_mask_equals_loops():
    """Noisy B̃_j: the prompt, the clean B_<j and all of B̃_j; clean B_j: the prompt, B_<j and all of B_j."""
    clean = [[10, 11, 12, 13], [14, 15, 16, 17], [18, 19]]
    noisy = [[b[0]] + [MASK] * (len(b) - 1) for b in clean]
    packed = pack([5, 6, 7], noisy, clean)
    kinds, blocks = packed.kinds, packed.blocks
    expected = torch.zeros(len(kinds), len(kinds), dtype=torch.bool)
    for q in range(len(kinds)):
        for k in range(len(kinds)):
            if kinds[q] == PROMPT:
                expected[q, k] = kinds[k] == PROMPT and k <= q
            elif kinds[q] == NOISY:
                expected[q, k] = kinds[k] == PROMPT or (kinds[k] == CLEAN and blocks[k] < blocks[q]) or (
                    kinds[k] == NOISY and blocks[k] == blocks[q])
            else:
                expected[q, k] = kinds[k] == PROMPT or (kinds[k] == CLEAN and blocks[k] <= blocks[q])
    assert torch.equal(packed_mask(torch.tensor(kinds), torch.tensor(blocks)), expected)


@pytest.mark.exactness
def test_cached_decoding_equals_recomputing_the_whole_sequence():
    """Same tokens, same unmasking forward by forward; the block's logits agree to float rounding."""
    model = diffusion_model()
    for i, prompt in enumerate(prompts(4)):
        for n, tau in [(1, 0.5), (4, 0.0), (4, 0.3), (16, 0.7), (16, 1.0)]:
            cached = diffusion_decode(model, prompt, n, tau, 40, eos_token_id=3 if i % 2 else [])
            again = diffusion_decode(model, prompt, n, tau, 40, eos_token_id=3 if i % 2 else [], use_cache=False)
            assert (cached.tokens, cached.accepted, cached.fed) == (again.tokens, again.accepted, again.fed)
            assert sum(cached.accepted) == len(cached.tokens) - 1
    contexts = [Context(model, use_cache) for use_cache in (True, False)]
    with torch.no_grad():
        for ctx in contexts:
            ctx.forward([5, 9, 11, 4], [0, 1, 2, 3], keep=True)
            ctx.forward([7, 8, 20], [4] * 3, keep=True)
        block = [[30] + [MASK] * 7 for _ in contexts]
        cached, full = (ctx.forward(b, [5] * 8, keep=False) for ctx, b in zip(contexts, block))
    assert torch.allclose(cached, full, atol=1e-4) and contexts[0].cache.get_seq_length() == 7


def test_threshold_one_unmasks_one_token_a_forward_and_zero_a_whole_block():
    model, n = diffusion_model(), 8
    for prompt in prompts(3, seed=1):
        one = diffusion_decode(model, prompt, n, 1.0, 1 + 3 * n, eos_token_id=[])
        assert one.accepted == [1] * (3 * n)  # n - 1 unmaskings and the cache rebuild, a block
        zero = diffusion_decode(model, prompt, n, 0.0, 1 + 3 * n, eos_token_id=[])
        assert zero.accepted == [n - 1, 1] * 3 and len(one.tokens) == len(zero.tokens) == 1 + 3 * n
        ends = diffusion_decode(model, prompt, n, 0.0, 3 * n, eos_token_id=[])
        assert ends.accepted == [n - 1, 1] * 2 + [n - 1]  # the last block fills the budget: no rebuild


def test_unmasking_rule_by_hand():
    confidence = torch.tensor([0.95, 0.5, 0.9, 0.91])
    assert unmask(confidence, 0.9) == [0, 2, 3]  # 0.9 reaches 0.9
    assert unmask(confidence, 0.99) == [0]  # none reaches it: the most confident alone
    assert unmask(confidence, 0.0) == [0, 1, 2, 3]
    assert unmask(torch.tensor([0.2, 0.6, 0.1]), 0.9) == [1]


def test_first_block_is_one_shifted_forward_under_the_block_mask():
    """τ = 0: y_0 from the prompt's last row, then rows 0..n-2 of ONE forward of [y_0, m, …, m] give
    positions 1..n-1 (the token shift), the mask token never predicted."""
    model, n = diffusion_model(seed=3), 6
    for prompt in prompts(3, seed=2):
        out = diffusion_decode(model, prompt, n, 0.0, 20, eos_token_id=[]).tokens
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([prompt])).logits[0, -1]
            y0 = int(logits[:MASK].argmax())
            groups = list(range(len(prompt))) + [len(prompt)] * n
            allow = loop_block_causal(groups)
            mask = torch.zeros(allow.shape).masked_fill(~allow, torch.finfo(torch.float32).min)
            block = model(input_ids=torch.tensor([prompt + [y0] + [MASK] * (n - 1)]),
                          attention_mask=mask[None, None]).logits[0, len(prompt):]
        assert out[:n] == [y0] + block[:n - 1, :MASK].argmax(-1).tolist()


def test_block_size_one_is_greedy_decoding():
    model = tiny_model(vocab=64, seed=4)
    for prompt in prompts(3, seed=3):
        reference = greedy_decode(model, prompt, 30).tokens
        model.config.mask_token_id = next(t for t in range(4, 64) if t not in reference)
        assert diffusion_decode(model, prompt, 1, 0.9, 30).tokens == reference


def test_bad_inputs_are_a_clear_value_error():
    model = diffusion_model()
    for threshold in (-0.1, 1.1, math.nan, True, "0.5", None):
        with pytest.raises(ValueError, match="threshold must be a number in \\[0, 1\\]"):
            diffusion_decode(model, [5, 6], 4, threshold, 10)
    for block_size in (0, -1, 2.0):
        with pytest.raises(ValueError, match="block_size"):
            diffusion_decode(model, [5, 6], block_size, 0.9, 10)
    for mask_id in (None, 64, -1, "63"):
        model.config.mask_token_id = mask_id
        with pytest.raises(ValueError, match="has no mask token"):
            diffusion_decode(model, [5, 6], 4, 0.9, 10)


def test_complementary_views_target_every_masked_token_from_the_row_before():
    blocks = [[10, 11, 12, 13, 14], [15, 16, 17, 18, 19], [3, 3, 3, 3, 3]]
    prompt = [5, 6, 7]
    views = masked_views(prompt, blocks, MASK, random.Random(0))
    masked = []
    for packed, labels in views:
        row, positions = len(prompt), set()
        for j, block in enumerate(blocks):
            noisy = packed.ids[row:row + len(block)]
            assert noisy[0] == block[0] and packed.ids[row + len(block):row + 2 * len(block)] == block
            positions |= {(j, i) for i, t in enumerate(noisy) if t == MASK}
            expected = [block[i] if i == 0 or noisy[i] == MASK else -100 for i in range(len(block))]
            assert labels[row - 1:row + len(block) - 1] == expected  # row i - 1 → position i
            row += 2 * len(block)
        assert sum(t != -100 for t in labels) == len(blocks) + len(positions)
        masked.append(positions)
    assert masked[0].isdisjoint(masked[1])
    assert masked[0] | masked[1] == {(j, i) for j in range(3) for i in range(1, 5)}


@pytest.fixture(scope="module")
def base():
    return jacobi_min.load()


def drafters(base_model):
    """A fresh, untrained drafter (lossless whatever it drafts) and the shipped one."""
    yield "fresh", build_drafter(base_model)
    yield "embedded", jacobi_min.load("drafter")[0]


@pytest.mark.exactness
def test_assisted_generation_with_the_drafter_equals_greedy_generate(base):
    model, tokenizer = base
    held_out = task.problems("test", 3, seed=1, length="short")
    for name, drafter in drafters(model):
        speculative = Speculative(model, drafter)
        for problem in held_out:
            ids = tokenizer(problem.prompt)["input_ids"]
            reference = generate_greedy(model, ids, 48)
            for k in (2, 4, 8):
                assert speculative(ids, 48, draft_tokens=k).tokens == reference, (name, k)
        assert speculative.drafts.count > speculative.target.count > 0


def test_drafter_is_the_bases_lower_layers(base):
    model, _ = base
    drafter = build_drafter(model, layers=2)
    assert drafter.config.num_hidden_layers == 2 and len(drafter.model.layers) == 2
    for name, weight in drafter.state_dict().items():
        assert torch.equal(weight, model.state_dict()[name]), name


def test_training_smoke_runs_write_loadable_fp16_checkpoints(base, tmp_path):
    small = {"steps": 2, "problems": 3, "batch_size": 1, "save_every": 1}
    train_diffusion(base, tmp_path / "block-diffusion", replace(DiffusionConfig(), **small), progress=False)
    model, tokenizer = jacobi_min.load(tmp_path / "block-diffusion")
    assert model.config.mask_token_id == tokenizer.mask_token_id == len(tokenizer) - 1 == base[0].config.vocab_size
    assert len(diffusion_decode(model, tokenizer("Question: Mia has 3 apples.")["input_ids"], 16, 0.9, 20).tokens) > 0
    train_drafter(base, tmp_path / "drafter", replace(DrafterConfig(), **small), progress=False)
    drafter, _ = jacobi_min.load(tmp_path / "drafter")
    assert drafter.config.num_hidden_layers == 2
    assert not (tmp_path / "drafter" / "resume.pt").exists()
    assert '"float16"' in (tmp_path / "drafter" / "config.json").read_text()
    assert base[0].config.vocab_size == len(base[1])  # the caller's model and tokenizer are left as they were


def test_an_interrupted_training_resumes_to_the_same_weights(base, tmp_path, monkeypatch):
    from safetensors.torch import load_file
    from jacobi_min.baselines import drafter as module
    cfg = replace(DrafterConfig(), steps=3, problems=12, batch_size=2, save_every=1)
    train_drafter(base, tmp_path / "whole", cfg, progress=False)
    batch = module.drafter_batch
    makers = iter([batch, batch])  # the third step's batch never comes: the run stops after step 2's snapshot
    monkeypatch.setattr(module, "drafter_batch", lambda *args: next(makers, None)(*args))
    with pytest.raises(TypeError):  # None(*args)
        train_drafter(base, tmp_path / "resumed", cfg, progress=False)
    assert (tmp_path / "resumed" / "resume.pt").exists() and not (tmp_path / "resumed" / "config.json").exists()
    monkeypatch.setattr(module, "drafter_batch", batch)
    log = train_drafter(base, tmp_path / "resumed", cfg, progress=False)
    assert [row["step"] for row in log] == [1, 2, 3]
    whole, resumed = (load_file(tmp_path / name / "model.safetensors") for name in ("whole", "resumed"))
    assert all(torch.equal(whole[k], resumed[k]) for k in whole)
