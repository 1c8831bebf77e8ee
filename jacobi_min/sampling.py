"""How a position's token is chosen: argmax (greedy), or a sample that is still a fixed point.

Every decoder here turns the logits of a forward into tokens with a `Pick`:
row i of a forward's logits belongs to the i-th fed token and chooses the token
at the next position t. Jacobi decoding is lossless whenever that choice is a
deterministic function y_t = f_t(x, y_<t) of the position's own prefix: the AR
sequence is then the iteration's unique fixed point (README, "The method in one
screen", and jacobi.py argue it for argmax, using nothing more). Greedy is
f_t = argmax. Sampling keeps f_t deterministic by tying the randomness to the
position instead of to the call (Gumbel-max with position-keyed noise):

    s_t = P(x ‖ y_<t, logits_t)          logits processors on the position's own prefix
                                           (temperature: logits / τ, top-k, top-p, penalties)
    g_t ~ Gumbel(0, 1)^V                   from a generator seeded by (seed, t)
    y_t = argmax_v ( s_t[v] + g_t[v] )     greedy: g_t = 0

Why y_t is an exact sample. For i.i.d. Gumbel g and any scores s,

    P(argmax_v (s_v + g_v) = v) = ∫ e^(-(g - s_v)) exp(-Σ_u e^(-(g - s_u))) dg
                                = e^(s_v) / Σ_u e^(s_u) = softmax(s)_v,

and softmax is unchanged by adding a constant to every score, so log p/τ and
logits/τ give the same y_t. The prefix y_<t depends on g_<t only, and g_t is
independent of g_<t (one generator per (seed, t)), so given y_<t the token y_t
is distributed as softmax(s_t): by the chain rule the whole output is an exact
sample of the processed model. Because f_t depends on nothing but (seed, t)
and the prefix, an AR loop and the Jacobi iteration with the same seed produce
the same tokens, and every guarantee of greedy Jacobi decoding carries over.

t is the token's absolute position in prompt + output (its position id).
Decision: the noise comes from numpy's SeedSequence((seed, t)) rather than
`torch.Generator.manual_seed`, whose CPU generator keeps only the low 32 bits
of a seed, so a packed (seed, t) key would repeat noise across seeds.

One seed is one sample (equal prompts and seeds give equal tokens), so a batch
keys row i's noise by seed + i (`Pick.for_row`, batch.py).
"""
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np
import torch
from transformers import (
    LogitsProcessorList,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
)

from .utils import as_int


def gumbel(seed: int, t: int, vocab: int) -> torch.Tensor:
    """g_t ~ Gumbel(0, 1)^V: the same noise for (seed, t) on every call, independent across t."""
    return torch.from_numpy(np.random.default_rng((seed, t)).gumbel(size=vocab))  # (V,) float64


@dataclass(frozen=True)
class Pick:
    """y_t = argmax(processors(prefix, logits_t) + g_t); no processors and no seed: the plain argmax."""
    processors: Callable | None = None  # (input_ids (1, t), scores (1, V)) -> scores, e.g. a LogitsProcessorList
    seed: int | None = None  # None: g_t = 0 (greedy); else Gumbel noise keyed by (seed, t)

    def __call__(self, logits: torch.Tensor, sequence: list[int]) -> list[int]:
        """A token for every row of `logits` (L, V), which belong to the last L tokens of `sequence`."""
        if not self.processors and self.seed is None:
            return logits.argmax(-1).tolist()
        ids = torch.tensor([sequence], device=logits.device)  # (1, S)
        first = len(sequence) - len(logits) + 1  # the position row 0 chooses
        picks = []
        for t, row in enumerate(logits.float(), start=first):
            scores = row[None]  # (1, V)
            if self.processors:
                scores = self.processors(ids[:, :t], scores)  # on this position's own prefix
            if self.seed is not None:
                scores = scores.double() + gumbel(self.seed, t, scores.shape[-1]).to(scores.device)
            picks.append(int(scores.argmax(-1)))
        return picks

    def for_row(self, i: int) -> "Pick":
        """The pick of row i of a batch: noise keyed by (seed + i, t), the same processors; greedy stays greedy."""
        return self if self.seed is None else replace(self, seed=self.seed + i)


GREEDY = Pick()


def fresh_seed() -> int:
    """A seed drawn from torch's global generator: other noise on every call, the same after torch.manual_seed."""
    return int(torch.randint(2**62, (1,)))


def sampler(temperature: float = 1.0, top_k: int = 0, top_p: float = 1.0, seed: int | None = 0) -> Pick:
    """Sampling at temperature τ with optional top-k / top-p (transformers' warpers, in generate's
    order); τ = 0 is greedy (then top-k and top-p change nothing). seed: an integer >= 0, or None.
    Decision: seed=None draws a seed (`fresh_seed`, kept in the Pick's `seed`) rather than raising, as
    generate's do_sample=True and jacobi_generate sample afresh; drawn once, it still defines one fixed point."""
    if temperature < 0 or top_k < 0 or not 0 < top_p <= 1:
        raise ValueError(f"need temperature >= 0, top_k >= 0 and top_p in (0, 1], got "
                         f"{temperature!r}, {top_k!r}, {top_p!r}")
    if temperature == 0:
        return GREEDY
    warpers = LogitsProcessorList()
    if temperature != 1.0:
        warpers.append(TemperatureLogitsWarper(temperature))
    if top_k:
        warpers.append(TopKLogitsWarper(top_k))
    if top_p < 1.0:
        warpers.append(TopPLogitsWarper(top_p))
    return Pick(warpers, fresh_seed() if seed is None else as_int(seed, "seed", 0))
