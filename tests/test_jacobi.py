"""Greedy Jacobi decoding reproduces greedy AR output token for token (float32)."""
import numpy as np
import pytest
import torch

from jacobi_min import greedy_decode, jacobi_decode, multiblock_decode
from tests.conftest import ARCHS, generate_greedy, tiny_model
from tests.mock import PositionModel

BLOCK_SIZES = [1, 2, 3, 4, 8, 16, 32, 64]


def prompts(count: int, vocab: int, seed: int = 0) -> list[list[int]]:
    gen = torch.Generator().manual_seed(seed)
    return [torch.randint(4, vocab, (int(torch.randint(1, 12, (1,), generator=gen)),), generator=gen).tolist()
            for _ in range(count)]


@pytest.mark.parametrize("arch", list(ARCHS))
@pytest.mark.parametrize("block_size", BLOCK_SIZES)
@pytest.mark.exactness
def test_random_models_match_generate(arch, block_size):
    model = tiny_model(arch, vocab=48)
    for i, prompt in enumerate(prompts(3, 48, seed=block_size)):
        reference = generate_greedy(model, prompt, 45)
        assert jacobi_decode(model, prompt, block_size, 45, seed=i).tokens == reference
        assert greedy_decode(model, prompt, 45).tokens == reference


@pytest.mark.parametrize("block_size", BLOCK_SIZES)
@pytest.mark.exactness
def test_stopping_at_every_eos_position(block_size):
    """EOS anywhere (inside an accepted prefix, as correction, as bonus), one or two EOS ids."""
    model = tiny_model(vocab=40, eos=[])
    prompt = [5, 17, 9]
    free_run = generate_greedy(model, prompt, 40, eos=[])
    for k in range(0, 40, 3):
        eos = free_run[k]
        assert jacobi_decode(model, prompt, block_size, 40, eos_token_id=eos).tokens == generate_greedy(model, prompt, 40, eos)
        pair = [eos, free_run[min(k + 2, 39)]]
        assert jacobi_decode(model, prompt, block_size, 40, eos_token_id=pair).tokens == generate_greedy(model, prompt, 40, pair)


@pytest.mark.parametrize("max_new_tokens", [0, 1, 2, 5, 7, 13, 30])
@pytest.mark.exactness
def test_max_new_tokens_exact(max_new_tokens):
    model = tiny_model(vocab=40, eos=[])
    for prompt in ([11], [4, 9, 33, 21]):  # a one-token prompt too
        reference = generate_greedy(model, prompt, max_new_tokens, eos=[]) if max_new_tokens else []
        for block_size in (4, 8):
            result = jacobi_decode(model, prompt, block_size, max_new_tokens)
            assert result.tokens == reference
            assert sum(result.accepted) == max(0, len(result.tokens) - 1)


@pytest.mark.parametrize("block_size", [2, 5, 8, 16])
def test_invariants_and_trajectory(block_size):
    model = tiny_model("llama-gqa-untied", vocab=40, eos=[])
    prompt = [7, 8, 9, 10]
    result = jacobi_decode(model, prompt, block_size, 50, record=True)
    assert all(a >= 1 for a in result.accepted)
    assert [t for b in result.blocks for t in b.fixed_point] == result.tokens
    for block in result.blocks:
        assert len(block.states) - 1 <= block_size  # forwards per block <= n
        assert all(len(s) == len(block.fixed_point) for s in block.states)
        assert generate_greedy(model, block.context, len(block.fixed_point), eos=[]) == block.fixed_point
        assert block.states[0][0] == block.fixed_point[0]  # y0 is known when the block starts
    assert result.blocks[0].context == prompt
    again = jacobi_decode(model, prompt, block_size, 50, record=True)
    assert [b.states for b in again.blocks] == [b.states for b in result.blocks]
    other_seed = jacobi_decode(model, prompt, block_size, 50, record=True, seed=1)
    assert other_seed.tokens == result.tokens


def test_initial_draft_is_recorded_truly():
    """states[0] holds the random draft, not the fixed point (the original code overwrote it)."""
    model = tiny_model(vocab=40, eos=[])
    result = jacobi_decode(model, [7, 8, 9, 10], 16, 48, record=True)
    assert any(b.states[0] != b.fixed_point for b in result.blocks)


def test_control_flow_exact_on_mock():
    """Position mock: each block takes exactly 2 forwards, accepting 1 then n - 1 tokens."""
    n, prompt = 8, [0, 0, 0]
    model = PositionModel()
    result = jacobi_decode(model, prompt, n, 33, record=True)
    assert result.tokens == list(range(4, 4 + 33))
    assert result.accepted == [1, n - 1] * 4  # 32 tokens after the prefill's one
    assert model.forwards == 1 + 8
    assert result.tpf == n / 2
    assert [len(b.states) for b in result.blocks] == [3, 3, 3, 3, 1]


@pytest.mark.parametrize("eos_index, expected_accepted", [(1, [1]), (3, [1, 2]), (8, [1, 7]), (10, [1, 7, 1, 1])])
def test_eos_on_mock(eos_index, expected_accepted):
    """EOS as correction (index 1), inside an accepted prefix (3), as bonus (8), in block 2 (10)."""
    prompt = [0, 0, 0]
    eos = 4 + eos_index
    model = PositionModel(eos=eos)
    result = jacobi_decode(model, prompt, 8, 40)
    assert result.tokens == list(range(4, eos + 1))
    assert result.accepted == expected_accepted
    assert greedy_decode(model, prompt, 40).tokens == result.tokens


def test_untrained_tpf_is_about_one():
    model = tiny_model(vocab=48)
    result = jacobi_decode(model, [5, 6, 7], 16, 60)
    assert 1.0 <= result.tpf < 2.0


BAD_INPUTS = [
    (dict(input_ids=torch.zeros(2, 3, dtype=torch.long)), "batch size 2"),
    (dict(input_ids=[]), "prompt is empty"),
    (dict(input_ids=torch.zeros(1, 0, dtype=torch.long)), "prompt is empty"),
    (dict(input_ids=[1, 99]), r"token ids must lie in \[0, 48\)"),
    (dict(input_ids=[1, -1]), "token ids must lie"),
    (dict(block_size=0), "block_size must be an integer >= 1"),
    (dict(max_new_tokens=-1), "max_new_tokens must be an integer >= 0"),
    (dict(max_new_tokens=510), "exceeds the model's context of 512"),
    (dict(input_ids=torch.zeros(1, 1, 3, dtype=torch.long)), "shape"),
    (dict(input_ids=[[1, 2], [3, 4]]), "one prompt at a time"),
    (dict(input_ids=None), "got NoneType"),
    (dict(input_ids=5), "got int"),
    (dict(input_ids=[True, 2]), "not floats or bools"),
    (dict(input_ids=torch.tensor([[1.0, 2.0]])), "not floats or bools"),
    (dict(input_ids=torch.zeros(1, 3, dtype=torch.long, device="meta")), "meta-device"),
    (dict(block_size=True), "block_size must be an integer >= 1, got True"),
    (dict(block_size=2.0), "block_size must be an integer"),
    (dict(max_new_tokens=False), "max_new_tokens must be an integer"),
    (dict(seed=None), "seed must be an integer >= 0, got None"),
    (dict(seed=1.5), "seed must be an integer"),
    (dict(eos_token_id="x"), "eos_token_id must be a token id"),
    (dict(eos_token_id=-5), "eos_token_id must be a token id"),
    (dict(eos_token_id=torch.zeros(2, 2, dtype=torch.long)), "eos_token_id must be a token id"),
]


@pytest.mark.parametrize("kwargs, message", BAD_INPUTS)
def test_bad_inputs_raise_clear_errors(kwargs, message):
    model = tiny_model(vocab=48)
    args = dict(input_ids=[1, 2, 3], block_size=4, max_new_tokens=8) | kwargs
    with pytest.raises(ValueError, match=message):
        jacobi_decode(model, **args)
    if "block_size" not in kwargs and "seed" not in kwargs:
        with pytest.raises(ValueError, match=message):
            greedy_decode(model, args["input_ids"], args["max_new_tokens"], eos_token_id=args.get("eos_token_id"))


EOS_FORMS = {"int": (int, [0]), "numpy int": (np.int64, [0]), "list": (lambda e: [e], [0]),
             "tuple": (lambda e: (e, 47), [0, 47]), "0-D tensor": (torch.tensor, [0]),
             "1-D tensor": (lambda e: torch.tensor([e]), [0])}


@pytest.mark.parametrize("form", list(EOS_FORMS))
@pytest.mark.exactness
def test_every_form_of_eos_id_stops_like_generate(form):
    """An EOS id as int, numpy int, list, tuple, 0-D or 1-D tensor stops every decoder where generate stops."""
    model = tiny_model(vocab=48, eos=[])
    prompt = [5, 6, 7]
    eos_id = jacobi_decode(model, prompt, 4, 40, eos_token_id=[]).tokens[5]  # a token the model emits
    make, ids = EOS_FORMS[form]
    expected = generate_greedy(model, prompt, 40, eos=[eos_id if i == 0 else i for i in ids])
    assert expected[-1] == eos_id and len(expected) < 40
    for decode in (jacobi_decode, multiblock_decode):
        assert decode(model, prompt, 4, 40, eos_token_id=make(eos_id)).tokens == expected
    assert greedy_decode(model, prompt, 40, eos_token_id=make(eos_id)).tokens == expected


@pytest.mark.parametrize("prompt", [lambda ids: np.array([ids]), lambda ids: np.array(ids),
                                    lambda ids: {"input_ids": torch.tensor([ids]), "attention_mask": torch.ones(1, len(ids))},
                                    lambda ids: [np.int64(t) for t in ids], lambda ids: tuple(ids)])
def test_one_prompt_in_any_common_container(prompt):
    model = tiny_model(vocab=48)
    ids = [5, 6, 7]
    assert jacobi_decode(model, prompt(ids), 4, 12).tokens == jacobi_decode(model, ids, 4, 12).tokens


@pytest.mark.parametrize("block_size", [4, 16])
@pytest.mark.exactness
def test_prompts_holding_pad_and_eos_ids_and_the_context_boundary(block_size):
    """Pad (0) and EOS (3) inside the prompt are ordinary tokens; prompt + max_new_tokens may fill the
    context exactly; the model's own list of EOS ids (no eos_token_id argument) stops like generate."""
    model = tiny_model(vocab=48, eos=[3, 7])
    for prompt in ([0, 5, 0, 9], [3, 12, 3], [5] * 500):
        budget = 512 - len(prompt) if len(prompt) > 100 else 40
        reference = generate_greedy(model, prompt, budget)
        for decode in (jacobi_decode, multiblock_decode):
            assert decode(model, prompt, block_size, budget).tokens == reference
        assert greedy_decode(model, prompt, budget).tokens == reference
    with pytest.raises(ValueError, match="exceeds the model's context of 512"):
        jacobi_decode(model, [5] * 500, block_size, 13)
