"""Batched Jacobi decoding: many prompts in one forward, every row exact.

Each row runs jacobi.py's iteration on its own prompt - same initial drafts,
same acceptance rule, same block trajectories - and one forward serves them all:

    D     = the rows' drafts d_1 … d_B, right-padded to W = max_r |d_r|      (B, W)
    g_r   = pick_r(model(D | cache)_r),  pick_r = pick.for_row(r)         one forward
    acc_r = 1 + longest prefix of d_r[1:] equal to g_r[:-1]                per row

so row r gains acc_r tokens from this forward, exactly as it would alone.

The cache holds, for every row, exactly its verified prefix (prompt + accepted
tokens), left-padded so that all rows end at the same column. The attention
mask hides the padding and each row's position ids count its own tokens, so a
row attends to the same keys at the same positions as when decoded alone; only
float rounding (other matrix shapes) can differ, which could change an argmax
only at a near-tie (the tests assert token-for-token equality).

Decision: after each forward the rejected entries (|d_r| - acc_r per row) are
dropped and the rows re-aligned by one gather per layer (a plain cut when all
rows accepted alike), instead of staying in the cache under a zero mask: a
masked cache would grow by W every forward, W - acc_r of them masked for row
r, and every later forward would attend over them all.
Decision: rows that finish leave the batch, and with a batch of `batch` rows the
next waiting prompts join once a quarter of its rows are free (one left-padded
prefill for them all): a static batch shrinks as its rows finish and runs its
last forwards for its longest answers alone, with rows free that waiting
prompts could fill. (Neither choice was timed against its alternative.)
"""
from collections import deque
from dataclasses import dataclass, field

import torch
from transformers import DynamicCache

from .jacobi import DecodeResult, add_final_bonus, commit, initial_draft, jacobi_update, trimmed_block
from .sampling import GREEDY, Pick
from .utils import as_int, check_inputs, eos_ids


@dataclass
class Row:
    """One prompt's decoding state: its output so far and the draft of its current block."""
    prompt: list[int]
    gen: torch.Generator  # draws this row's initial drafts
    result: DecodeResult
    pick: Pick  # chooses this row's tokens: the batch's pick for this row (Pick.for_row)
    draft: list[int] = field(default_factory=list)
    start: int = 0  # index in the output of the current block's y0
    states: list[list[int]] | None = None  # the current block's states, with record
    done: bool = False

    @property
    def out(self) -> list[int]:
        return self.result.tokens

    @property
    def record(self) -> bool:
        """Whether this row keeps its block trajectories."""
        return self.result.blocks is not None

    def context(self) -> list[int]:
        """What the cache holds for this row: the prompt and every output token but the last."""
        return self.prompt + self.out[:-1]


@dataclass
class BatchStats:
    """The shape of every forward: what the decoding cost, padding included."""
    rows: list[int] = field(default_factory=list)  # rows in each decoding forward
    width: list[int] = field(default_factory=list)  # W, the padded draft length of each decoding forward
    prefills: list[int] = field(default_factory=list)  # tokens fed by each prefill forward (rows × padded length)

    @property
    def forwards(self) -> int:
        return len(self.rows)


def pad(sequences: list[list[int]], length: int, left: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Token ids (B, length), padded with 0 on the left or the right, and the mask of real tokens."""
    def padded(s: list[int]) -> list[int]:
        return [0] * (length - len(s)) + s if left else s + [0] * (length - len(s))
    ids = torch.tensor([padded(s) for s in sequences])
    mask = torch.tensor([padded([1] * len(s)) for s in sequences])
    return ids, mask


def start_block(row: Row, block_size: int, max_new_tokens: int) -> None:
    """The next block's draft: its known first token y0, then tokens drawn from the sequence so far."""
    size = min(block_size, max_new_tokens - len(row.out))
    row.start = len(row.out) - 1
    row.draft = [row.out[-1]] + initial_draft(row.prompt + row.out, size - 1, row.gen)
    row.states = [list(row.draft)] if row.record else None


def end_block(row: Row) -> None:
    """File the finished (or cut) block's states with the row's trajectory."""
    if row.record:
        row.result.blocks.append(trimmed_block(row.prompt + row.out[:row.start], row.states,
                                               len(row.out) - row.start))


def finish(row: Row) -> None:
    """The row is done; its trajectory ends with the final bonus token when no block holds it."""
    row.done = True
    if row.record:
        add_final_bonus(row.result.blocks, row.prompt, row.out)


def begin(row: Row, eos: set[int], block_size: int, max_new_tokens: int) -> None:
    """After the prefill: the row's first block, or its end when y0 is EOS or the one token asked for."""
    if row.out[0] in eos or max_new_tokens == 1:
        finish(row)
    else:
        start_block(row, block_size, max_new_tokens)


def advance(row: Row, g: list[int], eos: set[int], block_size: int, max_new_tokens: int) -> int:
    """Apply one forward's picks `g` to the row (jacobi_block's step); returns acc, the cache entries to keep."""
    acc, new, next_draft = jacobi_update(row.draft, g)
    row.result.fed.append(len(row.draft))
    kept, stop = commit(row.out, new, eos, max_new_tokens)
    row.result.accepted.append(kept)
    converged, row.draft = acc == len(row.draft), next_draft
    if row.states is not None:
        row.states.append((row.out[row.start:] + row.draft[1:])[:len(row.states[0])])
    if stop or converged:
        end_block(row)
    if stop:
        finish(row)
    elif converged:
        start_block(row, block_size, max_new_tokens)
    return acc


def prefill(model, rows: list[Row]) -> tuple[DynamicCache, torch.Tensor]:
    """The rows' prompts in one left-padded forward; each row's first token y0. Returns the cache and its mask."""
    ids, mask = pad([row.prompt for row in rows], max(len(row.prompt) for row in rows), left=True)
    cache = DynamicCache(config=model.config)
    positions = (mask.cumsum(1) - 1).clamp(min=0)
    logits = model(input_ids=ids.to(model.device), attention_mask=mask.to(model.device),
                   position_ids=positions.to(model.device), past_key_values=cache, use_cache=True).logits
    for r, row in enumerate(rows):
        row.out.append(row.pick(logits[r, -1:], row.prompt)[0])
    return cache, mask


def join(cache: DynamicCache | None, mask, new: DynamicCache, new_mask: torch.Tensor):
    """The rows of `new` appended to `cache`, the shorter side left-padded so both end at the same column."""
    if cache is None:
        return new, new_mask
    length = max(mask.shape[1], new_mask.shape[1])
    def left(t: torch.Tensor, dim: int) -> torch.Tensor:  # zeros before the entries along `dim`
        shape = list(t.shape)
        shape[dim] = length - t.shape[dim]
        return torch.cat([t.new_zeros(shape), t], dim)
    for layer, added in zip(cache.layers, new.layers):
        layer.keys = torch.cat([left(layer.keys, 2), left(added.keys, 2)])
        layer.values = torch.cat([left(layer.values, 2), left(added.values, 2)])
    return cache, torch.cat([left(mask, 1), left(new_mask, 1)])


def forward(model, cache: DynamicCache, mask: torch.Tensor, rows: list[Row]) -> list[list[int]]:
    """One forward of every row's draft after its cached prefix: each row's picks at its draft's positions."""
    width = max(len(row.draft) for row in rows)
    ids, window = pad([row.draft for row in rows], width, left=False)
    positions = mask.sum(1, keepdim=True) + torch.arange(width)
    device = model.device
    logits = model(input_ids=ids.to(device), attention_mask=torch.cat([mask, window], 1).to(device),
                   position_ids=positions.to(device), past_key_values=cache, use_cache=True).logits
    return [row.pick(logits[r, :len(row.draft)], row.context() + row.draft) for r, row in enumerate(rows)]


def compact(cache: DynamicCache, keep: torch.Tensor, stay: list[int]) -> torch.Tensor:
    """Keep, for the rows in `stay`, the cache entries marked in `keep` (B, T), left-padded and aligned
    again; returns the new mask (len(stay), T'). Where the kept entries of every row already end
    together (all rows accepted alike, as in AR), the rejected tail is cut off and nothing moves."""
    used = keep[stay].any(0).nonzero()
    span = slice(int(used.min()), int(used.max()) + 1)  # the columns no row keeps, before or after, go
    keep = keep[stay, span]
    aligned = bool((keep[:, 1:] >= keep[:, :-1]).all())  # every row: padding, then its entries
    if not aligned:
        order = torch.sort(keep.to(torch.uint8), dim=1, stable=True).indices[:, -int(keep.sum(1).max()):]
        keep = keep.gather(1, order)
    for layer in cache.layers:
        for name in ("keys", "values"):
            kv = getattr(layer, name)  # (B, heads, T, dim)
            if len(stay) < kv.shape[0]:
                kv = kv.index_select(0, torch.tensor(stay, device=kv.device))
            kv = kv[:, :, span]
            if not aligned:
                kv = kv.gather(2, order.to(kv.device)[:, None, :, None].expand(-1, kv.shape[1], -1, kv.shape[3]))
            setattr(layer, name, kv)
    return keep.to(torch.long)


def new_rows(model, prompts, block_size: int, max_new_tokens: int, seed: int, record: bool, pick: Pick) -> list[Row]:
    """A checked Row for every prompt; prompt i draws its drafts with seed + i and picks with pick.for_row(i)."""
    if not isinstance(prompts, (list, tuple)) or not prompts:
        raise ValueError("prompts must be a non-empty list of prompts (each a list of token ids)")
    prompts = [check_inputs(model, p, max_new_tokens, block_size) for p in prompts]
    seed = as_int(seed, "seed", 0)
    return [Row(p, torch.Generator().manual_seed(seed + i), DecodeResult([], blocks=[] if record else None),
                pick.for_row(i)) for i, p in enumerate(prompts)]


@torch.inference_mode()
def batch_jacobi_decode(model, prompts, block_size: int = 16, max_new_tokens: int = 256, eos_token_id=None,
                        seed: int = 0, record: bool = False, pick: Pick = GREEDY, batch: int | None = None
                        ) -> tuple[list[DecodeResult], BatchStats]:
    """Jacobi-decode every prompt in shared forwards; row i equals `jacobi_decode(prompts[i], seed=seed + i,
    pick=pick.for_row(i))`: with pick=sampler(…, seed=s), the sample of seed s + i, i being its index in `prompts`
    also when it joins later, so equal prompts in one batch draw independent samples.

    At most `batch` rows decode at once (default: all); when a quarter of them are free, the
    next waiting prompts are prefilled and join (continuous batching). Returns each row's DecodeResult
    (tokens, accepted and fed per forward, blocks with record=True) and the cost of the decoding
    forwards (rows and padded width of each). Block size 1 is batched greedy AR.
    """
    rows, stats = new_rows(model, prompts, block_size, max_new_tokens, seed, record, pick), BatchStats()
    limit = len(rows) if batch is None else as_int(batch, "batch", 1)
    eos = eos_ids(model, eos_token_id)
    waiting, active, cache, mask = deque(rows if max_new_tokens else []), [], None, None
    while waiting or active:
        free = limit - len(active)
        if waiting and free >= min(len(waiting), max(1, limit // 4)):  # admit the next prompts
            joining = [waiting.popleft() for _ in range(min(free, len(waiting)))]
            cache, mask = join(cache, mask, *prefill(model, joining))
            stats.prefills.append(len(joining) * max(len(row.prompt) for row in joining))
            for row in joining:
                begin(row, eos, block_size, max_new_tokens)
            active, keep = active + joining, mask
        else:  # one Jacobi iteration of every active row
            stats.rows.append(len(active))
            stats.width.append(max(len(row.draft) for row in active))
            picks = forward(model, cache, mask, active)
            keep = torch.cat([mask, torch.zeros(len(active), stats.width[-1], dtype=mask.dtype)], 1)
            for r, (row, g) in enumerate(zip(active, picks)):
                keep[r, mask.shape[1]:mask.shape[1] + advance(row, g, eos, block_size, max_new_tokens)] = 1
        stay = [r for r, row in enumerate(active) if not row.done]
        active = [active[r] for r in stay]
        cache, mask = (cache, compact(cache, keep, stay)) if stay else (None, None)
    return [row.result for row in rows], stats
