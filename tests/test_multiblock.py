"""Multi-block Jacobi decoding with rejection recycling: exactly greedy, and its counters tell the truth."""
from collections import deque
from functools import cache
from types import SimpleNamespace

import pytest
import torch
import torch.nn.functional as F
from transformers import Qwen2Config

from jacobi_min.jacobi import jacobi_decode
from jacobi_min.multiblock import (
    Block,
    multiblock_decode,
    next_draft,
    recycled_rows,
    update_pseudo,
)
from tests.conftest import generate_greedy, tiny_model

PROMPT = [5, 9, 12, 7, 30, 5, 9]  # on tiny_model(vocab=64): EOS 3 comes 17th, 36 first comes 14th


@cache
def model():
    return tiny_model("qwen2-gqa-tied", vocab=64)


@cache
def reference(arch: str, max_new_tokens: int, eos: tuple | None, prompt: tuple = tuple(PROMPT)) -> list[int]:
    m = model() if arch == "qwen2-gqa-tied" else tiny_model(arch, vocab=64)
    return generate_greedy(m, list(prompt), max_new_tokens, eos=None if eos is None else list(eos))


def check_counters(res):
    """Every forward commits >= 1 token; the per-forward counters add up; the prefill token is left out."""
    assert len(res.recycled) == len(res.promoted) == res.forwards
    assert all(a >= 1 for a in res.accepted)
    assert sum(res.accepted) == len(res.tokens) - 1
    assert all(r + p <= a for r, p, a in zip(res.recycled, res.promoted, res.accepted))


class RuleModel(torch.nn.Module):
    """A mock causal LM whose greedy next token is rule(token, position), whatever came before."""

    def __init__(self, vocab: int, rule, context: int = 400):
        super().__init__()
        self.rule = rule
        self.config = Qwen2Config(vocab_size=vocab, max_position_embeddings=context, num_hidden_layers=1)
        self.generation_config = SimpleNamespace(eos_token_id=None)

    @property
    def device(self):
        return torch.device("cpu")

    def forward(self, input_ids, past_key_values, use_cache=True):
        batch, length = input_ids.shape
        past = past_key_values.get_seq_length()
        state = torch.zeros(batch, 1, length, 1)
        past_key_values.update(state, state, layer_idx=0)  # fails unless the cache batch matches the rows
        positions = torch.arange(past, past + length).expand(batch, length)  # (B, L), from the cache length
        logits = F.one_hot(self.rule(input_ids, positions), self.config.vocab_size).float()  # (B, L, V)
        return SimpleNamespace(logits=logits)

    def greedy(self, prompt: list[int], max_new_tokens: int) -> list[int]:
        seq = list(prompt)
        while len(seq) < len(prompt) + max_new_tokens:
            seq.append(self.rule(torch.tensor(seq[-1]), torch.tensor(len(seq) - 1)).item())
        return seq[len(prompt):]


SUCC = torch.tensor([1, 2, 3, 4, 0, 6, 0, 8, 0, 0])  # 0 -> 1 -> 2 -> 3 -> 4 -> 0; 5..9 lead into the cycle
CYCLE = RuleModel(10, lambda tokens, positions: SUCC[tokens])  # Markov: the next token depends on the last one
CLOCK = RuleModel(64, lambda tokens, positions: (positions + 1) % 64)  # the next token depends on the position only
MOCK_PROMPT = [0, 1, 2, 3, 4, 5, 7]


def grid() -> list[tuple[int, int, float, int, bool]]:
    """(n, K, r, pool, official), pruned by rule to the cases that differ: with K = 1 no block spawns, so r
    does nothing, and without a pool neither does official (it only clears the pool per block); at n = 64
    the first block holds all 37 tokens, so K > 1 never spawns and is K = 1."""
    single = [(n, 1, 0.5, pool, official) for n in (4, 8, 16, 32, 64) for pool in (0, 1, 4, 8)
              for official in ((False,) if pool == 0 else (False, True))]
    multi = [(n, k, r, pool, official) for n in (4, 8, 16, 32) for k in (2, 3) for r in (0.5, 0.85, 1.0)
             for pool in (0, 1, 4, 8) for official in (False, True)]
    return single + multi


# (EOS, max_new_tokens) per prompt; on PROMPT the model's own EOS (3) comes 17th and the list [36, 3]
# stops at the 14th token; on the second prompt EOS comes 10th (test_the_grid_hits_eos_where_it_says)
SECOND = (40, 2, 61, 17, 8, 8, 23, 50, 11, 60, 1)
CASES = {tuple(PROMPT): [(None, 37), ((36, 3), 37), ((), 37), ((), 30)], SECOND: [(None, 37), ((), 33)]}


def test_the_grid_hits_eos_where_it_says():
    assert len(reference("qwen2-gqa-tied", 37, None)) == 17 and reference("qwen2-gqa-tied", 37, None)[-1] == 3
    assert len(reference("qwen2-gqa-tied", 37, (36, 3))) == 14 and reference("qwen2-gqa-tied", 37, (36, 3))[-1] == 36
    assert 36 not in reference("qwen2-gqa-tied", 37, (36, 3))[:-1] and 3 not in reference("qwen2-gqa-tied", 37, None)[:-1]
    assert len(reference("qwen2-gqa-tied", 37, None, SECOND)) == 10 and len(reference("qwen2-gqa-tied", 33, (), SECOND)) == 33
    assert len(reference("qwen2-gqa-tied", 37, ())) == 37 and len(grid()) == len(set(grid())) == 227


@pytest.mark.parametrize("block_size, blocks, spawn_ratio, pool_size, official", grid())
@pytest.mark.exactness
def test_matches_generate_grid(block_size, blocks, spawn_ratio, pool_size, official):
    args = dict(block_size=block_size, blocks=blocks, spawn_ratio=spawn_ratio, pool_size=pool_size, official=official)
    for prompt, cases in CASES.items():
        for eos, max_new in cases:
            res = multiblock_decode(model(), list(prompt), max_new_tokens=max_new, eos_token_id=None if eos is None
                                    else list(eos), **args)
            assert res.tokens == reference("qwen2-gqa-tied", max_new, eos, prompt)
            check_counters(res)


@pytest.mark.parametrize("arch", ["qwen2-mha-untied", "qwen3-gqa", "llama-gqa-untied"])
@pytest.mark.parametrize("block_size, blocks, spawn_ratio, pool_size", [(4, 2, 0.5, 4), (16, 3, 0.85, 8)])
@pytest.mark.exactness
def test_matches_generate_other_architectures(arch, block_size, blocks, spawn_ratio, pool_size):
    m = tiny_model(arch, vocab=64)
    res = multiblock_decode(m, torch.tensor([PROMPT]), block_size, 45, blocks, spawn_ratio, pool_size,
                            eos_token_id=[])
    assert res.tokens == reference(arch, 45, ())
    check_counters(res)


@pytest.mark.parametrize("block_size", [1, 3, 4, 16, 64])
@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("eos", [None, []])
@pytest.mark.exactness
def test_one_block_no_pool_is_jacobi_decode(block_size, seed, eos):
    mb = multiblock_decode(model(), PROMPT, block_size, 41, blocks=1, pool_size=0, eos_token_id=eos, seed=seed)
    jd = jacobi_decode(model(), PROMPT, block_size, 41, eos_token_id=eos, seed=seed)
    assert mb.tokens == jd.tokens
    assert mb.accepted == jd.accepted  # same forwards, same tokens in each
    assert sum(mb.recycled) == sum(mb.promoted) == 0


@pytest.mark.parametrize("max_new_tokens", [0, 1, 2, 5, 23])
@pytest.mark.exactness
def test_max_new_tokens_is_exact(max_new_tokens):
    res = multiblock_decode(model(), PROMPT, 8, max_new_tokens, blocks=3, spawn_ratio=0.5, pool_size=4,
                            eos_token_id=[])
    assert res.tokens == reference("qwen2-gqa-tied", 23, ())[:max_new_tokens]
    assert (res.forwards == 0) == (max_new_tokens <= 1)


@pytest.mark.exactness
def test_block_size_one_is_autoregressive():
    res = multiblock_decode(model(), PROMPT, 1, 20, blocks=3, spawn_ratio=0.5, pool_size=4, eos_token_id=[])
    assert res.tokens == reference("qwen2-gqa-tied", 20, ())
    assert res.accepted == [1] * 19 and res.tpf == 1.0  # TPF: prefill left out, AR = 1.0


def test_recycled_rows_continue_from_the_correction():
    pool = [[3, 4, 0, 1], [7, 3, 9], [1, 2], [3, 5, 6, 8], [2, 3, 4, 0, 1]]
    assert recycled_rows(pool, [3, 5, 6]) == [[3, 4, 0], [3, 9, 6]]  # padded from the draft; none equal to it


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_recycled_tokens_are_verified(seed):
    res = multiblock_decode(CYCLE, MOCK_PROMPT, 16, 120, blocks=1, pool_size=4, seed=seed, record=True)
    assert res.tokens == CYCLE.greedy(MOCK_PROMPT, 120)
    check_counters(res)
    assert sum(res.recycled) > 0
    done = 1  # the prefill token
    for step in res.steps:
        row, verified = step.rows[step.row], step.verified[step.row]
        assert all(len(r) == len(row) and r[0] == row[0] for r in step.rows)  # same length, same exact first token
        assert verified == max(step.verified) and step.accepted <= verified
        assert row[1:verified][:step.accepted] == res.tokens[done:done + verified - 1][:step.accepted]
        if step.recycled:
            assert step.row > 0 and verified > step.verified[0]  # the candidate beat the Jacobi draft
            assert step.recycled == min(verified - 1, step.accepted)
        else:
            assert step.row == 0
        done += step.accepted
    assert done == len(res.tokens)


@pytest.mark.parametrize("blocks", [2, 3])
def test_promoted_block_is_accepted_whole(blocks):
    """CLOCK gets every token right once a forward has seen its position, so a promoted draft is all right."""
    res = multiblock_decode(CLOCK, MOCK_PROMPT, 8, 90, blocks=blocks, spawn_ratio=0.25, pool_size=0, record=True)
    assert res.tokens == CLOCK.greedy(MOCK_PROMPT, 90)
    check_counters(res)
    assert all(len(step.pseudo) <= blocks - 1 for step in res.steps)
    promoted = [step for step in res.steps if step.promoted]
    assert len(promoted) >= 5
    assert all(step.accepted == len(step.rows[0]) == 8 for step in promoted[:-1])  # the whole block: 7 + bonus
    assert res.forwards < jacobi_decode(CLOCK, MOCK_PROMPT, 8, 90).forwards


@pytest.mark.parametrize("blocks, spawn_ratio", [(2, 0.5), (3, 0.5), (3, 0.85), (2, 1.0)])
def test_pseudo_blocks_on_a_real_model(blocks, spawn_ratio):
    res = multiblock_decode(model(), PROMPT, 4, 60, blocks, spawn_ratio, pool_size=4, eos_token_id=[], record=True)
    assert res.tokens == reference("qwen2-gqa-tied", 60, ())
    check_counters(res)
    assert max(len(step.pseudo) for step in res.steps) >= 1
    assert all(len(step.pseudo) == len(step.pseudo_accepted) <= blocks - 1 for step in res.steps)
    assert all(0 <= a <= len(p) for step in res.steps for p, a in zip(step.pseudo, step.pseudo_accepted))


@pytest.mark.parametrize("kwargs, message", [
    (dict(blocks=0), "blocks"), (dict(blocks=1.5), "blocks"),
    (dict(spawn_ratio=0), "spawn_ratio"), (dict(spawn_ratio=1.5), "spawn_ratio"), (dict(spawn_ratio=-0.2), "spawn_ratio"),
    (dict(pool_size=-1), "pool_size"), (dict(block_size=0), "block_size"), (dict(max_new_tokens=-1), "max_new_tokens"),
    (dict(input_ids=torch.tensor([PROMPT, PROMPT])), "batch size"), (dict(input_ids=[]), "empty"),
    (dict(input_ids=[5, 64]), "token ids"), (dict(max_new_tokens=600), "context"),
])
def test_bad_parameters_raise(kwargs, message):
    args = dict(input_ids=PROMPT) | kwargs
    with pytest.raises(ValueError, match=message):
        multiblock_decode(model(), **args)


def test_update_pseudo_by_hand():
    """Two pseudo blocks from offset 5 of a row whose argmax is g: each takes g at the position before each of its
    tokens. With freeze, a block keeps the tokens that agreed last time (all but its first: 11, 12), the rest update."""
    pseudo = [Block([10, 11, 12, 13], accepted=3), Block([20, 21], accepted=0)]
    g = [0, 1, 2, 3, 50, 51, 52, 53, 60, 61]
    assert update_pseudo(pseudo, g, 5) == [Block([50, 51, 52, 53], 0), Block([60, 61], 0)]
    assert update_pseudo(pseudo, g, 5, freeze=True) == [Block([50, 11, 12, 53], 0), Block([60, 61], 0)]
    agreeing = [0, 1, 2, 3, 10, 11, 99, 13, 20, 21]
    assert update_pseudo(pseudo, agreeing, 5) == [Block([10, 11, 99, 13], 2), Block([20, 21], 2)]
    assert update_pseudo(pseudo, agreeing, 5, freeze=True) == [Block([10, 11, 12, 13], 4), Block([20, 21], 2)]


def test_official_clears_the_pool_when_a_block_is_accepted_whole_and_ours_keeps_it():
    ra, fresh = Block([5, 6, 7, 8], accepted=0), lambda: Block([9, 9, 9, 9], accepted=0)
    for official, left in ((False, [[1, 2, 3]]), (True, [])):
        pool = deque([[1, 2, 3]], maxlen=4)
        next_draft(ra, [], pool, ra.tokens, [6, 7, 8, 10], 4, 4, official, fresh)  # all 4 accepted
        assert list(pool) == left
        pool = deque([[7, 1, 5]], maxlen=4)
        new, _, rows, _ = next_draft(ra, [], pool, ra.tokens, [6, 1, 2, 4], 2, 4, official, fresh)  # rejected at 2
        assert list(pool) == [[7, 1, 5], [5, 6, 7, 8], [1, 2, 4]] and new.tokens == [1, 2]  # the shrunk window
        assert rows == [[1, 2], [1, 5]]  # the draft, then the pool's continuation of the correction 1


@pytest.mark.parametrize("official", [False, True])
def test_a_run_clears_the_pool_per_block_and_freezes_agreeing_tokens_only_when_official(official, monkeypatch):
    """Spies on the two steps `official` changes, on the trained model (whose pseudo blocks live long
    enough to agree with their context) over three whole long answers: the pool after a whole-block
    acceptance, and each pseudo update."""
    import jacobi_min
    from jacobi_min import multiblock
    from jacobi_min.tools import task
    from jacobi_min.tools.evaluate import prompt_ids
    pools, updates = [], []
    draft, update = multiblock.next_draft, multiblock.update_pseudo

    def next_draft_spy(ra, pseudo, pool, fed, g, acc, m, *rest):
        before = list(pool)
        out = draft(ra, pseudo, pool, fed, g, acc, m, *rest)
        pools.append((acc == m, before, list(pool)))
        return out

    def update_spy(pseudo, g, offset, freeze=False):
        out = update(pseudo, g, offset, freeze)
        updates.extend(zip(pseudo, out, update(pseudo, g, offset)))  # (before, update, unfrozen update)
        return out

    monkeypatch.setattr(multiblock, "next_draft", next_draft_spy)
    monkeypatch.setattr(multiblock, "update_pseudo", update_spy)
    trained, tokenizer = jacobi_min.load("jacobi-forcing")
    for problem in task.problems("test", 3, seed=0, length="long"):
        multiblock_decode(trained, prompt_ids(tokenizer, problem), 16, task.MAX_ANSWER_TOKENS, 2, 0.25, 4, official=official)
    whole = [(before, after) for accepted_whole, before, after in pools if accepted_whole]
    assert any(before for before, _ in whole)
    assert all(after == ([] if official else before) for before, after in whole)
    if official:
        frozen = [(old, new) for old, new, _ in updates if old.accepted > 1]
        assert frozen and all(new.tokens[1:old.accepted] == old.tokens[1:old.accepted] for old, new in frozen)
        assert any(new.tokens != free.tokens for _, new, free in updates)  # freezing changed tokens in these runs
    else:
        assert all(new == free for _, new, free in updates)
