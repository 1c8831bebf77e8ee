"""Greedy Jacobi decoding with a KV cache: n tokens at a time, lossless.

Greedy decoding of the next n tokens is the fixed point of

    y_i^(k+1) = argmax_v p_θ(v | x, y_1^(k), …, y_{i-1}^(k))      i = 1..n

and one causal forward of the block on the KV cache computes all n updates.
Whatever the initial draft, after k iterations at least the first k tokens are
the greedy ones, so a block reaches its fixed point - the greedy AR output - in
at most n forwards.

Convention: a block starts with a token already known to be correct, y0 (the
argmax after prefill, or the previous block's bonus token):
``draft = [y0, d_1, …, d_{n-1}]``. One iteration:

    g   = argmax model(draft | cache)                    (one forward)
    acc = 1 + longest prefix of draft[1:] equal to g[:-1]
    keep draft[:acc] in the cache (each entry was computed on an exact prefix),
    crop the other len(draft) - acc entries;
    the newly known tokens are draft[1:acc] and g[acc-1] (correction or bonus);
    the rest of the block is re-drafted as [g[acc-1]] + g[acc:-1].

Decision: the forward covers only the block's still-unverified positions (the
window shrinks as the block converges) instead of being padded back to n with
next-block drafts, so every block has clean boundaries and a trajectory of its
own, which is what trajectory collection and training need.

Every argmax above is a `pick` (sampling.py): any deterministic function of a
position's own prefix keeps all of this true, so sampling with position-keyed
noise is lossless too (the output equals the AR sampler's with the same seed).
"""
from dataclasses import dataclass, field

import torch
from transformers import DynamicCache

from .sampling import GREEDY
from .utils import as_int, check_inputs, eos_ids


@dataclass
class BlockTrajectory:
    """Every state of one block: states[0] is the initial draft, states[-1] the fixed point."""
    context: list[int]  # prompt + every earlier block's fixed point
    states: list[list[int]]

    @property
    def fixed_point(self) -> list[int]:
        return self.states[-1]


@dataclass
class DecodeResult:
    tokens: list[int]  # generated ids, EOS included when reached
    accepted: list[int] = field(default_factory=list)  # new tokens of each decoding forward
    fed: list[int] = field(default_factory=list)  # tokens fed to each decoding forward (all rows)
    blocks: list[BlockTrajectory] | None = None  # with record=True

    @property
    def forwards(self) -> int:
        """Decoding forwards; the prefill forward is not counted."""
        return len(self.accepted)

    @property
    def tpf(self) -> float:
        """Tokens per forward; the prefill and the token it yields are left out (AR = 1.0)."""
        return sum(self.accepted) / self.forwards if self.forwards else float("nan")


def forward_argmax(model, tokens: list[int], cache: DynamicCache, pick=GREEDY, context: list[int] = ()) -> list[int]:
    """One forward of `tokens` appended to `cache`, which holds `context`; the argmax (or what `pick`
    chooses) at every position."""
    ids = torch.tensor([tokens], device=model.device)
    logits = model(input_ids=ids, past_key_values=cache, use_cache=True).logits  # (1, L, V)
    return pick(logits[0], [*context, *tokens])


def keep_count(new: list[int], eos: set[int], budget: int, out: list[int] = (), stopping=None) -> tuple[int, bool]:
    """How many of `new` to keep after `out` (up to the first EOS, or the first token after which
    `stopping(output so far)` holds; at most `budget`), and whether to stop."""
    for i, tok in enumerate(new[:budget]):
        if tok in eos or (stopping is not None and stopping([*out, *new[:i + 1]])):
            return i + 1, True
    return min(len(new), budget), len(new) >= budget


def commit(out: list[int], new: list[int], eos: set[int], max_new_tokens: int, stopping=None,
           on_chunk=None) -> tuple[int, bool]:
    """Append to `out` the tokens of `new` that `keep_count` keeps and hand them to `on_chunk`:
    (how many were kept, whether to stop)."""
    kept, stop = keep_count(new, eos, max_new_tokens - len(out), out, stopping)
    out += new[:kept]
    if on_chunk:
        on_chunk(new[:kept])
    return kept, stop


def prefill(model, prompt: list[int], eos: set[int], pick=GREEDY, stopping=None) -> tuple[DynamicCache, int, bool]:
    """Run the prompt through a fresh cache: (cache, first generated token, stop?)."""
    cache = DynamicCache(config=model.config)
    logits = model(input_ids=torch.tensor([prompt], device=model.device), past_key_values=cache, use_cache=True).logits
    y0 = pick(logits[0, -1:], prompt)[0]  # only the last prompt position chooses a token
    return cache, y0, y0 in eos or (stopping is not None and stopping([y0]))


@torch.inference_mode()
def greedy_decode(model, input_ids, max_new_tokens: int, eos_token_id=None, pick=GREEDY, stopping=None,
                  on_chunk=None) -> DecodeResult:
    """Autoregressive decoding with a KV cache, one token per forward: greedy, or whatever `pick` chooses.

    `stopping(output)` ends decoding after any token; `on_chunk(tokens)` receives each forward's tokens.
    """
    prompt = check_inputs(model, input_ids, max_new_tokens)
    if max_new_tokens == 0:
        return DecodeResult([])
    eos = eos_ids(model, eos_token_id)
    cache, tok, stop = prefill(model, prompt, eos, pick, stopping)
    out = DecodeResult([tok])
    if on_chunk:
        on_chunk([tok])
    while not stop and len(out.tokens) < max_new_tokens:
        tok = forward_argmax(model, [tok], cache, pick, prompt + out.tokens[:-1])[-1]
        stop = keep_count([tok], eos, max_new_tokens - len(out.tokens), out.tokens, stopping)[1]
        out.tokens.append(tok)
        out.accepted.append(1)
        out.fed.append(1)
        if on_chunk:
            on_chunk([tok])
    return out


def initial_draft(sequence: list[int], length: int, gen: torch.Generator) -> list[int]:
    """`length` tokens drawn uniformly from the current sequence (prompt + generated)."""
    picks = torch.randint(len(sequence), (length,), generator=gen).tolist()
    return [sequence[i] for i in picks]


def jacobi_update(draft: list[int], g: list[int]) -> tuple[int, list[int], list[int]]:
    """One iteration from the forward's picks `g`: (acc, the newly known tokens, the next draft)."""
    acc = 1
    while acc < len(draft) and draft[acc] == g[acc - 1]:
        acc += 1
    return acc, draft[1:acc] + [g[acc - 1]], [g[acc - 1]] + g[acc:-1]


def jacobi_block(model, cache, prompt, draft, out, eos, max_new_tokens, result, states=None, pick=GREEDY,
                 stopping=None, on_chunk=None) -> bool:
    """Iterate one block to its fixed point; appends to `out`. Returns True to stop decoding."""
    start, size = len(out) - 1, len(draft)  # out[start] is the block's y0
    while True:
        g = forward_argmax(model, draft, cache, pick, prompt + out[:-1])  # (len(draft),)
        result.fed.append(len(draft))
        acc, new, next_draft = jacobi_update(draft, g)
        cache.crop(acc - len(draft))  # drop the KV of unverified positions
        kept, stop = commit(out, new, eos, max_new_tokens, stopping, on_chunk)
        result.accepted.append(kept)
        done, draft = acc == len(draft), next_draft
        if states is not None:
            states.append((out[start:] + draft[1:])[:size])
        if stop or done:
            return stop


@torch.inference_mode()
def jacobi_decode(model, input_ids, block_size: int = 16, max_new_tokens: int = 256,
                  eos_token_id=None, seed: int = 0, record: bool = False, pick=GREEDY, stopping=None,
                  on_chunk=None) -> DecodeResult:
    """Jacobi decoding, block by block; output equals AR decoding with the same `pick` (greedy by default).

    Returns tokens, the new-token count of every forward (`accepted`, prefill
    excluded) and, with record=True, every state of every block. `seed` draws
    the initial drafts; `stopping` and `on_chunk` are as in `greedy_decode`.
    """
    prompt = check_inputs(model, input_ids, max_new_tokens, block_size)
    if max_new_tokens == 0:
        return DecodeResult([], blocks=[] if record else None)
    eos = eos_ids(model, eos_token_id)
    gen = torch.Generator().manual_seed(as_int(seed, "seed", 0))
    cache, y0, stop = prefill(model, prompt, eos, pick, stopping)
    result = DecodeResult([y0], blocks=[] if record else None)
    out, blocks = result.tokens, result.blocks
    if on_chunk:
        on_chunk([y0])
    while not stop and len(out) < max_new_tokens:
        size = min(block_size, max_new_tokens - len(out))
        start = len(out) - 1
        draft = [out[-1]] + initial_draft(prompt + out, size - 1, gen)
        states = [list(draft)] if record else None
        stop = jacobi_block(model, cache, prompt, draft, out, eos, max_new_tokens, result, states, pick, stopping,
                            on_chunk)
        if record:
            blocks.append(trimmed_block(prompt + out[:start], states, len(out) - start))
    if record:
        add_final_bonus(blocks, prompt, out)
    return result


def trimmed_block(context: list[int], states: list[list[int]], known: int) -> BlockTrajectory:
    """A block whose decoding stopped early keeps only the positions that were decided."""
    length = min(known, len(states[0]))
    return BlockTrajectory(context, [s[:length] for s in states])


def add_final_bonus(blocks: list[BlockTrajectory], prompt: list[int], out: list[int]) -> None:
    """End the trajectory with a block of the final bonus token when no block holds it."""
    if sum(len(b.fixed_point) for b in blocks) < len(out):
        blocks.append(BlockTrajectory(prompt + out[:-1], [[out[-1]]]))
