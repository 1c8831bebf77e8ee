"""Property-based exactness: every decoder equals its autoregressive reference on random models and inputs.

The other test files check exactness on a handful of fixed models, prompts and
settings. Here Hypothesis draws them: a tiny Qwen2, Qwen3 or Llama (grouped-query
attention or not, tied or untied embeddings, 1-2 layers, seeded init), a prompt
that may hold the pad and EOS ids, a block size, a budget up to the context edge
(48 tokens), an EOS id as int, list or tensor (often one the model emits, so EOS
falls inside a block), multi-block settings (K, r, pool size, official) and
sampler settings. For each draw the output must equal the reference token for
token; a counterexample is shrunk to a minimal one. Examples are derandomized and
no database is kept, so every run checks the same cases.
"""
from functools import lru_cache
from typing import NamedTuple

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from jacobi_min import (
    greedy_decode,
    jacobi_decode,
    jacobi_generate,
    multiblock_decode,
    sampler,
)
from jacobi_min.sampling import GREEDY
from jacobi_min.utils import eos_ids
from tests.conftest import ARCHS, generate_greedy
from tests.test_generate import generate, reference_sampler

settings.register_profile("properties", derandomize=True, deadline=None, database=None, max_examples=200)
PROPERTY = settings.get_profile("properties")

CONTEXT = 48  # max_position_embeddings: small, so that prompt + max_new_tokens reaches the edge
PAD, MODEL_EOS = 0, 3
ARCH_CLASSES = {name.split("-")[0]: (config_cls, model_cls) for name, (config_cls, model_cls, _) in ARCHS.items()}


class ModelSpec(NamedTuple):
    arch: str  # qwen2, qwen3 or llama
    hidden: int
    heads: int
    kv_heads: int  # divides heads: fewer than heads is grouped-query attention
    layers: int
    vocab: int
    tied: bool
    seed: int


class Eos(NamedTuple):
    """The eos_token_id a case passes: form "model" passes none (the model's own, 3); "int", "list" or "tensor"
    name a drawn id or, with `emitted`, the index-th distinct token of the free run, so that EOS can stop a
    block midway."""
    form: str
    emitted: bool
    index: int  # an id (mod vocab) or an index into the free run's distinct tokens (mod their count)
    extra: int  # the list form's other id (mod vocab)


class Case(NamedTuple):
    spec: ModelSpec
    prompt: list[int]
    max_new_tokens: int
    block_size: int
    eos: Eos
    seed: int  # draws the initial Jacobi drafts


class Sampling(NamedTuple):
    temperature: float
    top_k: int
    top_p: float
    seed: int


@lru_cache(maxsize=64)
def build(spec: ModelSpec):
    """The tiny float32 model of a spec, in eval mode; a large init makes its greedy output varied."""
    config_cls, model_cls = ARCH_CLASSES[spec.arch]
    config = config_cls(vocab_size=spec.vocab, hidden_size=spec.hidden, intermediate_size=2 * spec.hidden,
                        num_hidden_layers=spec.layers, num_attention_heads=spec.heads,
                        num_key_value_heads=spec.kv_heads, head_dim=spec.hidden // spec.heads,
                        tie_word_embeddings=spec.tied, max_position_embeddings=CONTEXT, eos_token_id=MODEL_EOS,
                        pad_token_id=PAD, bos_token_id=None, initializer_range=0.5)
    torch.manual_seed(spec.seed)
    return model_cls(config).eval()


@st.composite
def model_specs(draw) -> ModelSpec:
    heads = draw(st.sampled_from([4, 2, 1]))
    return ModelSpec(arch=draw(st.sampled_from(sorted(ARCH_CLASSES))), hidden=draw(st.sampled_from([16, 24, 32])),
                     heads=heads, kv_heads=draw(st.sampled_from([k for k in (1, 2, 4) if heads % k == 0])),
                     layers=draw(st.integers(1, 2)), vocab=draw(st.integers(40, 64)), tied=draw(st.booleans()),
                     seed=draw(st.integers(0, 3)))


EOS_CHOICES = st.builds(Eos, form=st.sampled_from(["int", "list", "tensor", "model"]), emitted=st.booleans(),
                        index=st.integers(0, 63), extra=st.integers(0, 63))


@st.composite
def cases(draw) -> Case:
    spec = draw(model_specs())
    token = st.one_of(st.sampled_from([PAD, MODEL_EOS]), st.integers(0, spec.vocab - 1))
    prompt = draw(st.lists(token, min_size=1, max_size=12))
    room = CONTEXT - len(prompt)
    return Case(spec, prompt, max_new_tokens=draw(st.one_of(st.just(room), st.integers(1, room))),
                block_size=draw(st.integers(1, 20)), eos=draw(EOS_CHOICES), seed=draw(st.integers(0, 2**16)))


MULTIBLOCK = st.fixed_dictionaries({"blocks": st.integers(1, 3), "spawn_ratio": st.floats(0, 1, exclude_min=True),
                                    "pool_size": st.integers(0, 4)})
SAMPLINGS = st.builds(Sampling, temperature=st.floats(0.05, 2.0), top_k=st.integers(0, 40),
                      top_p=st.floats(0.05, 1.0), seed=st.integers(0, 2**31))


def eos_argument(model, case: Case, pick=GREEDY):
    """The eos_token_id that `case` names (None: the model's own); an emitted one comes from the run of `pick`."""
    eos = case.eos
    if eos.form == "model":
        return None
    vocab = model.config.vocab_size
    token = eos.index % vocab
    if eos.emitted:
        free_run = greedy_decode(model, case.prompt, case.max_new_tokens, eos_token_id=[], pick=pick).tokens
        emitted = list(dict.fromkeys(free_run))  # in order of first appearance: a late one stops the run late
        token = emitted[eos.index % len(emitted)]
    return {"int": token, "list": [eos.extra % vocab, token], "tensor": torch.tensor([token])}[eos.form]


@PROPERTY
@given(cases())
@pytest.mark.exactness
def test_jacobi_decode_equals_generate(case):
    """jacobi_decode(x, n, seed) = greedy_decode(x) = generate(x, do_sample=False), token for token."""
    model = build(case.spec)
    eos = eos_argument(model, case)
    reference = generate_greedy(model, case.prompt, case.max_new_tokens, eos)
    assert greedy_decode(model, case.prompt, case.max_new_tokens, eos).tokens == reference
    assert jacobi_decode(model, case.prompt, case.block_size, case.max_new_tokens, eos, case.seed).tokens == reference


@PROPERTY
@given(cases(), MULTIBLOCK, st.booleans())
@pytest.mark.exactness
def test_multiblock_decode_equals_generate(case, options, official):
    """multiblock_decode(x, n, K, r, pool, official, seed) = generate(x, do_sample=False), token for token."""
    model = build(case.spec)
    eos = eos_argument(model, case)
    result = multiblock_decode(model, case.prompt, case.block_size, case.max_new_tokens, eos_token_id=eos,
                               seed=case.seed, official=official, **options)
    assert result.tokens == generate_greedy(model, case.prompt, case.max_new_tokens, eos)


@settings(PROPERTY, max_examples=100)  # a cacheless reference: the slowest property
@given(cases(), SAMPLINGS, MULTIBLOCK, st.booleans())
@pytest.mark.exactness
def test_sampling_equals_ar_sampler(case, sampling, options, official):
    """With pick = sampler(τ, top_k, top_p, seed): jacobi_decode = multiblock_decode = greedy_decode = the cacheless
    AR sampler y_t = argmax(warp(logits_t) + g(seed, t)), token for token."""
    model = build(case.spec)
    pick = sampler(*sampling)
    eos = eos_argument(model, case, pick)
    reference = reference_sampler(model, case.prompt, case.max_new_tokens, pick.processors, sampling.seed,
                                  eos_ids(model, eos))
    assert greedy_decode(model, case.prompt, case.max_new_tokens, eos, pick=pick).tokens == reference
    jacobi = jacobi_decode(model, case.prompt, case.block_size, case.max_new_tokens, eos, case.seed, pick=pick)
    assert jacobi.tokens == reference
    multiblock = multiblock_decode(model, case.prompt, case.block_size, case.max_new_tokens, eos_token_id=eos,
                                   seed=case.seed, official=official, pick=pick, **options)
    assert multiblock.tokens == reference


@PROPERTY
@given(cases(), MULTIBLOCK)
@pytest.mark.exactness
def test_jacobi_generate_equals_generate(case, options):
    """generate(x, custom_generate=jacobi_generate, n, K, r, pool) = generate(x, do_sample=False), token for token."""
    model = build(case.spec)
    eos = eos_argument(model, case)
    stop = {} if eos is None else {"eos_token_id": eos}
    tokens = generate(model, case.prompt, custom_generate=jacobi_generate, block_size=case.block_size,
                      max_new_tokens=case.max_new_tokens, **options, **stop)
    assert tokens == generate_greedy(model, case.prompt, case.max_new_tokens, eos)
