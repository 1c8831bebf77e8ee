"""Batched Jacobi decoding: every row equals its prompt decoded alone, token for token (float32).

On the embedded models over held-out problems of every answer length in one batch, on
Hypothesis-drawn random models and batches (1-8 prompts of different lengths, EOS inside
blocks, sampling), and through trajectory collection, whose records must not depend on the
batch size. A sampled row i is the sample of seed + i, so equal prompts give different samples.
The real Qwen's two-prompt check lives in test_qwen.py.
"""
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from jacobi_min import batch_jacobi_decode, greedy_decode, jacobi_decode, sampler, trajectories
from jacobi_min.tools import task
from jacobi_min.tools.evaluate import prompt_ids
from tests.conftest import generate_greedy
from tests.test_generate import PROMPTS, random_model
from tests.test_properties import CONTEXT, PROPERTY, SAMPLINGS, Case, build, cases, eos_argument


@pytest.fixture(scope="module")
def held_out(base):
    """Two held-out problems of each answer length, mixed in one list (prompts of different lengths)."""
    _, tokenizer = base
    problems = [p for length in ("short", "medium", "long") for p in task.problems("test", 2, length=length)]
    return [prompt_ids(tokenizer, p) for p in problems[::2] + problems[1::2]]


@pytest.mark.parametrize("name, batch", [("base", None), ("jacobi-forcing", 4)])
@pytest.mark.exactness
def test_each_row_equals_its_prompt_decoded_alone(name, batch, held_out):
    """All six prompts at once, or four at a time, waiting prompts joining as rows finish (continuous batching)."""
    import jacobi_min
    model, _ = jacobi_min.load(name)
    results, stats = batch_jacobi_decode(model, held_out, block_size=16, max_new_tokens=400, record=True,
                                         batch=batch)
    assert len({len(p) for p in held_out}) > 1  # the batch mixes prompt lengths
    for i, (prompt, row) in enumerate(zip(held_out, results)):
        alone = jacobi_decode(model, prompt, 16, 400, seed=i, record=True)
        assert row.tokens == greedy_decode(model, prompt, 400).tokens == alone.tokens
        assert (row.accepted, row.fed) == (alone.accepted, alone.fed)  # the same iteration, forward for forward
        assert [(b.context, b.states) for b in row.blocks] == [(b.context, b.states) for b in alone.blocks]
    assert stats.rows[0] == (batch or len(held_out)) and max(stats.rows) <= (batch or len(held_out))
    assert stats.rows[-1] < stats.rows[0]  # finished rows leave the batch
    assert sum(stats.rows) == sum(r.forwards for r in results) and all(w <= 16 for w in stats.width)


@pytest.mark.exactness
def test_block_size_one_is_batched_greedy(base, held_out):
    model, _ = base
    results, stats = batch_jacobi_decode(model, held_out, block_size=1, max_new_tokens=160)
    for prompt, row in zip(held_out, results):
        assert row.tokens == greedy_decode(model, prompt, 160).tokens
        assert set(row.accepted) == {1}
    assert set(stats.width) == {1}


@pytest.mark.parametrize("batch, workers", [(1, 1), (3, 2), (8, 1)])
def test_collection_does_not_depend_on_the_batch(base, held_out, batch, workers):
    model, _ = base
    alone = [jacobi_decode(model, p, 8, 64, seed=5 + i, record=True) for i, p in enumerate(held_out)]
    records = trajectories.collect(model, held_out, 8, 64, seed=5, workers=workers, batch=batch)
    assert records == [{"prompt": p, "blocks": [b.states for b in r.blocks]} for p, r in zip(held_out, alone)]


@pytest.mark.exactness
def test_each_sampled_row_is_the_sample_of_its_own_seed(base, held_out):
    """pick=sampler(τ, seed=7): row i equals the AR sampler and jacobi_decode with seed 7 + i, forward for forward,
    also for the prompts that join later (a batch of 3 for 6 prompts)."""
    model, _ = base
    results, _ = batch_jacobi_decode(model, held_out, 16, 32, seed=3, pick=sampler(1.5, seed=7), batch=3)
    for i, (prompt, row) in enumerate(zip(held_out, results)):
        alone = sampler(1.5, seed=7 + i)
        assert row.tokens == greedy_decode(model, prompt, 32, pick=alone).tokens
        jacobi = jacobi_decode(model, prompt, 16, 32, seed=3 + i, pick=alone)
        assert (row.tokens, row.accepted, row.fed) == (jacobi.tokens, jacobi.accepted, jacobi.fed)


def test_equal_prompts_in_a_sampled_batch_are_different_samples():
    """Four copies of one prompt at τ = 1.5 (the random model's most likely token has about 0.27 of the mass, so
    two equal 24-token samples have a chance below 0.3^24): four different samples; greedy, four equal rows."""
    model, prompts = random_model(eos=()), [PROMPTS[0]] * 4
    sampled, _ = batch_jacobi_decode(model, prompts, 8, 24, pick=sampler(1.5, seed=7))
    assert len({tuple(row.tokens) for row in sampled}) == 4
    greedy, _ = batch_jacobi_decode(model, prompts, 8, 24)
    assert len({tuple(row.tokens) for row in greedy}) == 1


def test_bad_input_is_a_clear_error(base):
    model, _ = base
    with pytest.raises(ValueError, match="non-empty list"):
        batch_jacobi_decode(model, [])
    with pytest.raises(ValueError, match="non-empty list"):
        batch_jacobi_decode(model, torch.tensor([[1, 2], [3, 4]]))
    with pytest.raises(ValueError, match="the prompt is empty"):
        batch_jacobi_decode(model, [[5, 6], []])
    with pytest.raises(ValueError, match="token ids must lie in"):
        batch_jacobi_decode(model, [[5, 6], [10**9]])
    with pytest.raises(ValueError, match="batch must be an integer >= 1"):
        batch_jacobi_decode(model, [[5, 6]], batch=0)
    with pytest.raises(ValueError, match="batch must be an integer >= 1"):
        trajectories.collect(model, [[5, 6]], 4, 8, batch=0)


def test_no_new_tokens_and_one_new_token(base, held_out):
    model, _ = base
    assert [r.tokens for r in batch_jacobi_decode(model, held_out[:2], max_new_tokens=0)[0]] == [[], []]
    one = batch_jacobi_decode(model, held_out[:2], max_new_tokens=1, record=True)[0]
    assert [r.tokens for r in one] == [greedy_decode(model, p, 1).tokens for p in held_out[:2]]
    assert [[b.states for b in r.blocks] for r in one] == [[[r.tokens]] for r in one]


BATCH = st.one_of(st.none(), st.integers(1, 8))  # the batch: rows decoded at once: all, or fewer, the others waiting


@st.composite
def case_lists(draw) -> list[Case]:
    """1-8 cases on one model with one EOS setting: prompts of different lengths, a shared budget and block size."""
    first = draw(cases())
    others = draw(st.lists(cases(), min_size=0, max_size=7))
    prompts = [first.prompt] + [[t % first.spec.vocab for t in c.prompt] for c in others]
    budget = min(first.max_new_tokens, CONTEXT - max(len(p) for p in prompts))
    return [first._replace(prompt=p, max_new_tokens=budget) for p in prompts]


@settings(PROPERTY, max_examples=50)
@given(case_lists(), BATCH)
@pytest.mark.exactness
def test_every_row_equals_generate(drawn, batch):
    """Row i of batch_jacobi_decode(prompts, n, seed, batch) = generate(prompt_i, do_sample=False), token for token."""
    model = build(drawn[0].spec)
    eos = eos_argument(model, drawn[0])
    case = drawn[0]
    results, _ = batch_jacobi_decode(model, [c.prompt for c in drawn], case.block_size, case.max_new_tokens, eos,
                                     case.seed, batch=batch)
    for c, row in zip(drawn, results):
        assert row.tokens == generate_greedy(model, c.prompt, case.max_new_tokens, eos)


@settings(PROPERTY, max_examples=25)
@given(case_lists(), SAMPLINGS, BATCH)
@pytest.mark.exactness
def test_every_row_equals_the_ar_sampler(drawn, sampling, batch):
    """With pick = sampler(τ, top_k, top_p, seed), row i equals the AR sampler on prompt i with seed + i: lossless
    per row."""
    model = build(drawn[0].spec)
    pick = sampler(*sampling)
    eos = eos_argument(model, drawn[0], pick)
    case = drawn[0]
    results, _ = batch_jacobi_decode(model, [c.prompt for c in drawn], case.block_size, case.max_new_tokens, eos,
                                     case.seed, pick=pick, batch=batch)
    for i, (c, row) in enumerate(zip(drawn, results)):
        alone = sampler(*sampling._replace(seed=sampling.seed + i))
        assert row.tokens == greedy_decode(model, c.prompt, case.max_new_tokens, eos, pick=alone).tokens
