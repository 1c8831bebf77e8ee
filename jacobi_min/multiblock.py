"""Multi-block Jacobi decoding with rejection recycling ("MR"), lossless.

K blocks of n tokens are in flight. The real-active block (RA) starts right
after the exact prefix x + y_<t, so its verified tokens are the greedy ones;
up to K - 1 pseudo-active blocks sit after RA's current (noisy) draft and are
Jacobi-iterated speculatively. One causal forward per iteration covers

    rows[b] ‖ P_1 ‖ … ‖ P_{K-1}        for every RA draft row b = 0..B-1

where rows[0] is RA's Jacobi draft (exactly as in `jacobi.py`) and rows[1:]
are recycled candidates. Causal attention makes each row's logits independent
of the pseudo blocks after it, so RA is verified exactly as plain Jacobi:

    acc_b = 1 + longest prefix of rows[b][1:] equal to argmax(rows[b])[:-1]

The row with the longest verified prefix b* is kept; RA commits
rows[b*][1:acc] and its correction/bonus token; every pseudo block P takes the
Jacobi update P'_i = argmax at the position before P_i (from row b*).

Invariant: before every forward the KV cache (batch 1) holds exactly
prompt + committed tokens except the last one, which is every row's first
token. Rows are verified against copies of that cache; after the forward only
row b*'s first acc entries are kept, so pseudo-block KV is recomputed every
iteration and no token commits unless it was the argmax on an exact prefix.

- Spawn: a new pseudo block joins when the newest block has >= ceil(r·n)
  accepted tokens (of its n input tokens: for RA the ones now exact, for a
  pseudo block the leading ones that agree with their own context) and fewer
  than K blocks are active.
- Promotion: when RA completes, the first pseudo block becomes RA with its
  first token set to RA's bonus token; its other tokens are re-verified.
- Recycling: a pool of the last `pool_size` token sequences from rejected
  iterations (the concatenated input row and the argmax tail from the
  rejection point). After a rejection with correction v, every pool entry
  holding v offers the continuation that follows v as an extra row.

With K = 1 and an empty pool this is `jacobi_decode`, forward for forward.

Where this differs from the official inference code (all choices are lossless;
`official=True` switches to the official behaviour of the first two):

1. The recycling pool lasts the whole decode; the official one is rebuilt for
   every block (kept for a later block, a rejected draft can still match).
2. A pseudo block's Jacobi update rewrites all its tokens; the official code
   freezes the prefix that already agrees with its context and updates the rest.
3. A new pseudo block is drafted from tokens of the sequence so far (as
   `jacobi_decode` drafts a block); the official one pads the tail of the real
   block's draft.
4. A promoted block keeps its draft (the official code restarts it from
   random tokens): its tokens were decoded on RA's draft, often correctly.
"""
import math
import numbers
from collections import deque
from dataclasses import dataclass, field
from functools import partial

import torch

from .jacobi import DecodeResult, commit, initial_draft, prefill
from .sampling import GREEDY
from .utils import as_int, check_inputs, eos_ids


@dataclass
class Block:
    """A block in flight: RA holds [y0] + its unverified draft, a pseudo block all its tokens."""
    tokens: list[int]
    accepted: int  # RA: input tokens now exact (y0 included); pseudo: leading tokens agreeing with their context


@dataclass
class Step:
    """One decoding forward, as recorded with record=True."""
    rows: list[list[int]]  # RA draft rows: rows[0] the Jacobi draft, then recycled candidates
    verified: list[int]  # per row: leading tokens verified on the exact prefix (the first token included)
    row: int  # the row kept: longest verified prefix, lowest index on ties
    pseudo: list[list[int]]  # pseudo-active blocks' tokens, in order after RA's draft
    pseudo_accepted: list[int]  # per pseudo block: leading tokens that agree with their (noisy) context
    accepted: int  # tokens committed: rows[row][1:verified[row]] then the correction/bonus (capped by EOS/budget)
    recycled: int  # of those, tokens drafted by a recycled candidate row
    promoted: int  # of those, tokens drafted while the block was pseudo-active


@dataclass
class MultiBlockResult(DecodeResult):
    recycled: list[int] = field(default_factory=list)  # per forward: committed tokens from a recycled candidate
    promoted: list[int] = field(default_factory=list)  # per forward: committed tokens from a promoted pseudo block
    steps: list[Step] | None = None  # with record=True

    def add_forward(self, kept: int, fed: int, recycled: bool, promoted: bool, drafted: int) -> None:
        """One forward's counts: `kept` tokens committed, `drafted` of them from the kept row's draft, which came
        from a recycled candidate or a promoted pseudo block (or neither)."""
        self.accepted.append(kept)
        self.fed.append(fed)
        self.recycled.append(drafted if recycled else 0)
        self.promoted.append(drafted if promoted else 0)


def check_multiblock(blocks, spawn_ratio, pool_size) -> None:
    """A ValueError that says which multi-block parameter is wrong."""
    as_int(blocks, "blocks", 1)
    if isinstance(spawn_ratio, bool) or not isinstance(spawn_ratio, numbers.Real) or not 0 < spawn_ratio <= 1:
        raise ValueError(f"spawn_ratio must lie in (0, 1], got {spawn_ratio!r}")
    as_int(pool_size, "pool_size", 0)


def common_prefix(a: list[int], b: list[int]) -> int:
    """Length of the longest common prefix of two token lists."""
    k = 0
    while k < min(len(a), len(b)) and a[k] == b[k]:
        k += 1
    return k


def forward_rows(model, rows: list[list[int]], cache, pick=GREEDY, context: list[int] = ()) -> list[list[int]]:
    """One forward of B equal-length rows, each appended to the same batch-1 prefix (`context` in the cache);
    the pick (argmax) at every position of every row."""
    if len(rows) > 1:
        cache.batch_repeat_interleave(len(rows))  # every row sees its own copy of the exact prefix
    ids = torch.tensor(rows, device=model.device)  # (B, L)
    logits = model(input_ids=ids, past_key_values=cache, use_cache=True).logits  # (B, L, V)
    return [pick(row_logits, [*context, *row]) for row_logits, row in zip(logits, rows)]


def update_pseudo(pseudo: list[Block], g: list[int], offset: int, freeze: bool = False) -> list[Block]:
    """Jacobi update of every pseudo block; `offset` is where the first one starts in the row.
    With `freeze`, the tokens that agreed with their context last time are kept as they are,
    but for the first: it always takes the update, so that on promotion it is RA's bonus token."""
    updated = []
    for block in pseudo:
        before = g[offset - 1:offset - 1 + len(block.tokens)]  # argmax at the position before each token
        if freeze:
            before = before[:1] + block.tokens[1:block.accepted] + before[max(1, block.accepted):]
        updated.append(Block(before, common_prefix(block.tokens, before)))
        offset += len(block.tokens)
    return updated


def recycled_rows(pool, draft: list[int]) -> list[list[int]]:
    """Candidate RA drafts: each pool entry holding the correction v = draft[0] continues from v."""
    rows = []
    for seq in pool:
        if draft[0] in seq:
            start = seq.index(draft[0])
            row = seq[start:start + len(draft)]
            row += draft[len(row):]  # a short continuation is padded with the Jacobi draft
            if row != draft and row not in rows:
                rows.append(row)
    return rows


def fresh_block(prompt, out, block_size, max_new_tokens, gen) -> Block:
    """A new RA block after out[-1], drawn exactly as `jacobi_decode` draws it."""
    size = min(block_size, max_new_tokens - len(out))
    return Block([out[-1]] + initial_draft(prompt + out, size - 1, gen), accepted=1)


@torch.inference_mode()
def multiblock_decode(model, input_ids, block_size: int = 16, max_new_tokens: int = 256, blocks: int = 2,
                      spawn_ratio: float = 0.85, pool_size: int = 4, eos_token_id=None, seed: int = 0,
                      record: bool = False, official: bool = False, pick=GREEDY, stopping=None,
                      on_chunk=None) -> MultiBlockResult:
    """Multi-block Jacobi decoding with rejection recycling; output equals AR decoding with the same
    `pick` (greedy by default; `stopping` and `on_chunk` as in `greedy_decode`).

    Returns tokens and, per decoding forward (prefill excluded), the tokens
    committed (`accepted`), how many of them a recycled candidate drafted
    (`recycled`) and how many a promoted pseudo block drafted (`promoted`);
    with record=True, a `Step` for every forward. `official=True`: a recycling pool per
    block and frozen pseudo-block prefixes, as the official code (see the module docstring).
    """
    prompt = check_inputs(model, input_ids, max_new_tokens, block_size)
    check_multiblock(blocks, spawn_ratio, pool_size)
    if max_new_tokens == 0:
        return MultiBlockResult([], steps=[] if record else None)
    eos = eos_ids(model, eos_token_id)
    gen = torch.Generator().manual_seed(as_int(seed, "seed", 0))  # same draws as jacobi_decode with the same seed
    cache, y0, stop = prefill(model, prompt, eos, pick, stopping)
    out = MultiBlockResult([y0], steps=[] if record else None)
    if on_chunk:
        on_chunk([y0])
    if stop or max_new_tokens == 1:
        return out
    ra = fresh_block(prompt, out.tokens, block_size, max_new_tokens, gen)
    pseudo, pool = [], deque(maxlen=pool_size)  # pseudo-active blocks in order; recycling pool, newest last
    rows, carried = [ra.tokens], False  # RA's draft rows; whether rows[0] was drafted while pseudo-active
    while True:
        # 1-2. one forward verifies every RA row (pseudo blocks after it); keep the longest verified row
        m, tail = len(ra.tokens), [t for block in pseudo for t in block.tokens]
        b, verified, g = verify(model, cache, rows, tail, prompt + out.tokens[:-1], pick)
        # 3. commit its verified draft tokens and the correction/bonus token g[acc-1]
        acc = verified[b]
        kept, stop = commit(out.tokens, rows[b][1:acc] + [g[acc - 1]], eos, max_new_tokens, stopping, on_chunk)
        out.add_forward(kept, len(rows) * (m + len(tail)), recycled=b > 0, promoted=carried, drafted=min(acc - 1, kept))
        # 4. Jacobi update of the pseudo blocks, read from the kept row
        fed_pseudo, pseudo = pseudo, update_pseudo(pseudo, g, m, freeze=official)
        if record:
            out.steps.append(Step(rows, verified, b, [p.tokens for p in fed_pseudo], [p.accepted for p in pseudo],
                                  kept, out.recycled[-1], out.promoted[-1]))
        if stop:
            return out
        # 5-6. RA's next draft rows (shrunk window + recycled rows, a promoted block or a fresh one)
        ra, pseudo, rows, carried = next_draft(ra, pseudo, pool, rows[b] + tail, g, acc, m, official,
                                               partial(fresh_block, prompt, out.tokens, block_size, max_new_tokens, gen))
        # 7. perhaps a new pseudo block
        spawn(pseudo, ra, g[-1], (prompt, out.tokens), blocks, math.ceil(spawn_ratio * block_size),
              max_new_tokens - len(out.tokens), block_size, gen)


def verify(model, cache, rows: list[list[int]], tail: list[int], context: list[int],
           pick) -> tuple[int, list[int], list[int]]:
    """1. One forward over every RA draft row followed by the pseudo blocks' tokens `tail`, on copies of
    the cache (which holds `context`); 2. per row, its leading tokens verified on the exact prefix

        verified[b] = 1 + longest prefix of rows[b][1:] equal to g_b[:m-1]

    Keeps the row b with the most (the lowest index on ties): the cache goes back to batch 1 and keeps
    only rows[b][:verified[b]]. Returns (b, verified, g_b: the pick at every position of row b)."""
    m = len(rows[0])
    g_rows = forward_rows(model, [row + tail for row in rows], cache, pick, context)  # (B, m + len(tail))
    verified = [1 + common_prefix(row[1:], g[:m - 1]) for row, g in zip(rows, g_rows)]
    b = verified.index(max(verified))
    if len(rows) > 1:
        cache.batch_select_indices(torch.tensor([b], device=model.device))
    cache.crop(verified[b] - m - len(tail))  # drop the KV of unverified RA tokens and of every pseudo block
    return b, verified, g_rows[b]


def next_draft(ra: Block, pseudo: list[Block], pool: deque, fed: list[int], g: list[int], acc: int, m: int,
               official: bool, fresh) -> tuple[Block, list[Block], list[list[int]], bool]:
    """5. RA's next draft: the shrunk window after a rejection, else the first pseudo block promoted, else
    `fresh()`; 6. after a rejection, rejection recycling adds the pool's rows that start with the correction.
    Returns (RA, pseudo blocks, RA's draft rows, whether RA was drafted while pseudo-active)."""
    if official and acc == m:
        pool.clear()  # the official pool serves one block
    if acc < m:
        ra = Block([g[acc - 1]] + g[acc:m - 1], ra.accepted + acc)
        for seq in (fed, g[acc - 1:]):  # this iteration's sequences; entries holding g[acc-1] give extra rows
            if seq not in pool:
                pool.append(seq)
        return ra, pseudo, [ra.tokens] + recycled_rows(pool, ra.tokens), False
    if pseudo:
        # Decision: the promoted block keeps its draft (the original restarts from random tokens).
        # Its Jacobi update already put RA's bonus g[m-1] first; all its tokens are re-verified.
        ra = Block(pseudo[0].tokens, accepted=1)
        return ra, pseudo[1:], [ra.tokens], True
    ra = fresh()
    return ra, pseudo, [ra.tokens], False


def spawn(pseudo: list[Block], ra: Block, first: int, sequence: tuple[list[int], list[int]], blocks: int, needed: int,
          budget: int, block_size: int, gen) -> None:
    """7. A new pseudo block after the newest one once that one has `needed` tokens accepted, while fewer than
    `blocks` are in flight and the budget has room: `first` (the last argmax) then a random draft seeded by
    `sequence` (prompt, output so far)."""
    newest = pseudo[-1] if pseudo else ra
    room = budget - len(ra.tokens) - sum(len(p.tokens) for p in pseudo)
    if 1 + len(pseudo) < blocks and newest.accepted >= needed and room > 0:
        size = min(block_size, room)
        pseudo.append(Block([first] + initial_draft(sequence[0] + sequence[1], size - 1, gen), accepted=0))
