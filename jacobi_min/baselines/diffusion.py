"""Block diffusion adapted from the AR base: the paper's dLLM baselines, in miniature.

Fast-dLLM v2 (Wu et al. 2025, arXiv 2509.26328) adapts a pretrained AR model into a block-diffusion
model, as SDAR and D2F do in their ways. What they share, as built here:

- a mask token m: `<|mask|>`, one more embedding row (transformers' mean initialisation), its id in
  `config.mask_token_id` (`add_mask_token`); m is never predicted (its logit is left out);
- the answer a = a_0 a_1 … cut into blocks B_j = a[jn : (j+1)n], with the block-causal mask: with
  g(i) = i at a prompt position and g(i) = P + j in block j,

      query q may attend to key k  ⇔  g(k) ≤ g(q)           (`block_causal`)

  bidirectional inside a block, causal across blocks and along the prompt;
- Fast-dLLM v2's token shift: row i predicts the token at position i + 1, as the AR head did, so a
  block's first token comes from the row before it (the finished block's last row, or the prompt's)
  and is known when the block starts: B_j = [y_0, m, …, m].

Training: per block a share t_j ~ U(0, 1); each of positions 1..n-1 is masked with probability t_j
(the set M_j), and its complement makes a second example of the same answer (Fast-dLLM v2's
complementary masks: every token is a target once). Both are Jacobi Forcing's packed sequence
(`packing.pack`), a noisy copy B̃_j beside each clean B_j at the same positions,
``[prompt][B̃_0][B_0][B̃_1][B_1]…``: B̃_j sees the prompt, the clean B_<j and all of B̃_j, B_j the
prompt, B_<j and all of B_j (`packed_mask`: packing's clean-context mask, each block opened to
itself: that, and the targets, are where packing does not fit as it is). The loss is

    L = - 1/|T| Σ_{(r, y) ∈ T} log p_θ(y | row r)

over the targets T: a_{jn+i} from row i-1 of B̃_j for every masked i, and every block's first token
from the row before B̃_j (the clean B_{j-1}'s last, or the prompt's). Decision: no 1/t weight (the
ELBO weight of MDLM, LLaDA, BD3-LM), as Fast-dLLM v2: it would weigh a block with one mask up to
n - 1 times one fully masked, and the decoder meets every mask level. Decision: an answer is padded
with EOS to whole blocks, those targets trained (LLaDA's SFT), so that the tail after an answer's
end fills with EOS at once.

Decoding (`diffusion_decode`), block by block on the KV cache of the prompt and finished blocks:
the block is fed whole, its entries dropped after the forward; row i-1 gives p_i at each masked i,

    U = {i masked : max_v p_i(v) ≥ τ} ∪ {argmax_{i masked} max_v p_i(v)}      (`unmask`)

are set to their argmax (Fast-dLLM's threshold rule: at least the most confident). A block is
complete once every position up to its first EOS is unmasked; then one more forward of the complete
block writes its cache entries (a counted forward: it gives the next y_0). Decision: no D2F-style
pipelining of blocks. Not lossless: one forward decides several tokens independently.
"""
import numbers
from dataclasses import dataclass

import torch
from transformers import DynamicCache

from ..jacobi import DecodeResult, commit
from ..losses import ar_loss
from ..packing import PADDING, PROMPT, allowed, pack
from ..train import length_groups
from ..utils import check_inputs, eos_ids, is_int
from ..tools import task
from .training import Recipe, draw, fit, greedy_answers, starting_model

MASK = "<|mask|>"


@dataclass
class DiffusionConfig(Recipe):
    """The block-diffusion adaptation's pre-registered recipe (and Recipe's common part)."""
    block_size: int = 16
    steps: int = 1200
    batch_size: int = 4  # answers a step, each packed twice (complementary masks): 8 sequences, as Jacobi Forcing's


def add_mask_token(model, tokenizer) -> int:
    """Add `<|mask|>` to the tokenizer and a row to the embeddings; record it in config.mask_token_id."""
    tokenizer.add_special_tokens({"mask_token": MASK})
    model.resize_token_embeddings(len(tokenizer))
    model.config.mask_token_id = tokenizer.mask_token_id
    return tokenizer.mask_token_id


def mask_token_of(model) -> int:
    """The model's mask token id, or a ValueError."""
    mask = getattr(model.config, "mask_token_id", None)
    if not is_int(mask) or not 0 <= mask < model.config.vocab_size:
        raise ValueError(f"the model has no mask token (config.mask_token_id = {mask!r}): diffusion decoding needs "
                         "a block-diffusion model, e.g. load('block-diffusion'), or add_mask_token then training")
    return int(mask)


def block_causal(groups: torch.Tensor) -> torch.Tensor:
    """(L, L) boolean from every position's group (non-decreasing): q may attend to k iff g(k) ≤ g(q)."""
    return groups[None, :] <= groups[:, None]


def packed_mask(kinds: torch.Tensor, blocks: torch.Tensor) -> torch.Tensor:
    """(L, L) boolean of a packed sequence: packing's clean-context mask with every block copy open to itself."""
    inside = (kinds[:, None] == kinds[None, :]) & (blocks[:, None] == blocks[None, :])
    return allowed(kinds, blocks, "clean") | (inside & (kinds[:, None] != PROMPT) & (kinds[:, None] != PADDING))


def additive(allow: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """0 where allowed, the dtype's minimum elsewhere."""
    return torch.zeros(allow.shape, dtype=dtype).masked_fill(~allow, torch.finfo(dtype).min)


def predictions(logits: torch.Tensor, mask_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(top probability, argmax) of every row, the mask token left out."""
    return without_mask(logits, mask_id).softmax(-1).max(-1)


def without_mask(logits: torch.Tensor, mask_id: int) -> torch.Tensor:
    return logits.float().index_fill(-1, torch.tensor([mask_id], device=logits.device), float("-inf"))


def unmask(confidence: torch.Tensor, threshold: float) -> list[int]:
    """Indices of `confidence` to unmask: each one ≥ threshold, and at least the largest."""
    return sorted(set((confidence >= threshold).nonzero().flatten().tolist()) | {int(confidence.argmax())})


class Context:
    """The tokens so far with their groups and, with `use_cache`, their KV cache."""

    def __init__(self, model, use_cache: bool):
        self.model, self.ids, self.groups = model, [], []
        self.cache = DynamicCache(config=model.config) if use_cache else None

    def forward(self, tokens: list[int], group: list[int], keep: bool) -> torch.Tensor:
        """Logits (len(tokens), V) of `tokens` after the context under the block-causal mask: on the
        cache, or the whole sequence recomputed. `keep` appends them (and their cache entries)."""
        ids, groups = self.ids + tokens, self.groups + group
        start = len(self.ids) if self.cache is not None else 0
        mask = additive(block_causal(torch.tensor(groups))[start:], self.model.dtype).to(self.model.device)
        logits = self.model(input_ids=torch.tensor([ids[start:]], device=self.model.device),
                            position_ids=torch.arange(start, len(ids), device=self.model.device)[None],
                            attention_mask=mask[None, None], past_key_values=self.cache,
                            use_cache=self.cache is not None).logits[0, -len(tokens):]
        if keep:
            self.ids, self.groups = ids, groups
        elif self.cache is not None:
            self.cache.crop(-len(tokens))
        return logits


@dataclass
class Rule:
    mask_id: int
    threshold: float
    block_size: int
    max_new_tokens: int
    eos: set[int]

    def complete(self, block: list[int]) -> bool:
        """Every position up to the block's first EOS (or all) unmasked."""
        for token in block:
            if token == self.mask_id:
                return False
            if token in self.eos:
                return True
        return True


def decode_block(ctx: Context, result: DecodeResult, rule: Rule) -> bool:
    """Unmask the block [y_0, m, …, m] until complete, commit it, write its cache; True to stop."""
    out = result.tokens
    block = [out[-1]] + [rule.mask_id] * min(rule.block_size - 1, rule.max_new_tokens - len(out))
    group, steps = [ctx.groups[-1] + 1] * len(block), []
    while not rule.complete(block):
        confidence, tokens = predictions(ctx.forward(block, group, keep=False)[:-1], rule.mask_id)  # row i-1 → i
        masked = [i for i in range(1, len(block)) if block[i] == rule.mask_id]
        chosen = [masked[k] for k in unmask(confidence[[i - 1 for i in masked]], rule.threshold)]
        for i in chosen:
            block[i] = int(tokens[i - 1])
        steps.append(chosen)
        result.fed.append(len(block))
    kept, stop = commit(out, block[1:], rule.eos, rule.max_new_tokens)
    result.accepted += [sum(i <= kept for i in chosen) for chosen in steps]
    if stop:
        return True
    y0 = int(predictions(ctx.forward(block, group, keep=True)[-1:], rule.mask_id)[1])  # the cache rebuild
    result.fed.append(len(block))
    kept, stop = commit(out, [y0], rule.eos, rule.max_new_tokens)
    result.accepted.append(kept)
    return stop


@torch.inference_mode()
def diffusion_decode(model, input_ids, block_size: int = 16, threshold: float = 0.9, max_new_tokens: int = 256,
                     eos_token_id=None, use_cache: bool = True) -> DecodeResult:
    """Block diffusion decoding with Fast-dLLM's threshold rule (module docstring); not lossless.

    `accepted` holds the tokens each forward unmasked (the cache rebuild: the next block's first);
    `use_cache=False` recomputes the whole sequence every forward (the same tokens: the cache is exact).
    """
    prompt = check_inputs(model, input_ids, max_new_tokens, block_size)
    if isinstance(threshold, bool) or not isinstance(threshold, numbers.Real) or not 0 <= threshold <= 1:
        raise ValueError(f"threshold must be a number in [0, 1], got {threshold!r}")
    rule = Rule(mask_token_of(model), float(threshold), block_size, max_new_tokens, eos_ids(model, eos_token_id))
    if max_new_tokens == 0:
        return DecodeResult([])
    ctx = Context(model, use_cache)
    y0 = int(predictions(ctx.forward(prompt, list(range(len(prompt))), keep=True)[-1:], rule.mask_id)[1])
    result = DecodeResult([y0])
    stop = y0 in rule.eos
    while not stop and len(result.tokens) < max_new_tokens:
        stop = decode_block(ctx, result, rule)
    return result


def masked_views(prompt: list[int], blocks: list[list[int]], mask_id: int, rng) -> list[tuple]:
    """Two packed examples of one answer with complementary masks: [(Packed, targets by row)] × 2."""
    draws = []
    for block in blocks:
        share = rng.random()  # t_j ~ U(0, 1)
        draws.append([rng.random() < share for _ in block])
    views = []
    for flip in (False, True):
        noisy = [[mask_id if i > 0 and m != flip else tok for i, (tok, m) in enumerate(zip(b, d))]
                 for b, d in zip(blocks, draws)]
        packed = pack(prompt, noisy, blocks)
        labels, row = [-100] * len(packed.ids), len(prompt)
        for block in blocks:
            for i, tok in enumerate(block):
                if i == 0 or packed.ids[row + i] == mask_id:
                    labels[row + i - 1] = tok  # row i - 1 predicts position i; i = 0: the row before B̃_j
            row += 2 * len(block)
        views.append((packed, labels))
    return views


def eos_padded(trajectory: dict, block_size: int, eos: int) -> list[list[int]]:
    """An answer's blocks (fixed points), the last one filled up with EOS when the answer ended."""
    blocks = [states[-1] for states in trajectory["blocks"]]
    if blocks[-1][-1] == eos:
        blocks[-1] = blocks[-1] + [eos] * (block_size - len(blocks[-1]))
    return blocks


def diffusion_batch(trajectories: list[dict], mask_id: int, eos: int, pad_id: int, block_size: int, rng) -> dict:
    """Model inputs (the 4-D additive mask included) and targets of the answers' masked views."""
    views = [v for t in trajectories for v in masked_views(t["prompt"], eos_padded(t, block_size, eos), mask_id, rng)]
    width = max(len(p.ids) for p, _ in views)
    pad = lambda rows, value: torch.tensor([r + [value] * (width - len(r)) for r in rows])
    kinds, blocks = pad([p.kinds for p, _ in views], PADDING), pad([p.blocks for p, _ in views], -1)
    return {"input_ids": pad([p.ids for p, _ in views], pad_id), "position_ids": pad([p.positions for p, _ in views], 0),
            "attention_mask": additive(torch.stack([packed_mask(k, b) for k, b in zip(kinds, blocks)]), torch.float32)[:, None],
            "labels": pad([labels for _, labels in views], -100)}


def diffusion_loss(model, batch: dict) -> torch.Tensor:
    """The token-mean cross-entropy on the batch's targets (module docstring), m left out."""
    logits = model(input_ids=batch["input_ids"], position_ids=batch["position_ids"],
                   attention_mask=batch["attention_mask"].to(model.dtype)).logits
    return ar_loss(without_mask(logits, mask_token_of(model)), batch["labels"])


def train_diffusion(base, out_dir, cfg: DiffusionConfig = DiffusionConfig(), progress: bool = True) -> list[dict]:
    """Adapt `base` (a name, a directory or a (model, tokenizer) pair) to block diffusion; saved to out_dir."""
    model, tokenizer = starting_model(base)
    data = greedy_answers(model, tokenizer, task.problems("train", cfg.problems, seed=cfg.seed), cfg.block_size,
                          progress=progress)
    with torch.random.fork_rng():
        torch.manual_seed(cfg.seed)  # the new row's draw
        mask_id = add_mask_token(model, tokenizer)
    groups, eos = length_groups(data), tokenizer.eos_token_id
    batches = lambda rng: diffusion_batch(draw(groups, cfg.batch_size, rng), mask_id, eos, tokenizer.pad_token_id,
                                          cfg.block_size, rng)
    return fit(model, tokenizer, batches, diffusion_loss, cfg, out_dir, "train block-diffusion", progress)
