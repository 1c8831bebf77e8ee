"""Jacobi Forcing's packed training sequence: noisy and clean blocks side by side.

One response of T blocks becomes one sequence

    [prompt (P)] [ỹ_0] [y*_0] [ỹ_1] [y*_1] … [ỹ_{T-1}] [y*_{T-1}]

- positions: prompt 0..P-1; ỹ_j and y*_j BOTH get P + (start of block j) + 0..n_j-1;
- attention (noisy context): ỹ_j sees the prompt, ỹ_0..ỹ_{j-1} and itself
  causally; y*_j sees the prompt, y*_0..y*_{j-1} and itself causally; the two
  streams never see each other. The CLLM-like "clean" variant lets ỹ_j see
  y*_0..y*_{j-1} instead of the noisy blocks;
- one forward gives student logits on ỹ and teacher logits on y*;
- consistency positions of block j: from the first mismatch of ỹ_j with y*_j
  to n_j - 1 (the last predicts block j+1's first token), the position of an
  EOS left out (it would predict past the answer, as in the official trainer);
  with `drop_last` (CLLM's trainer) the last position of the block is left out too;
- a block given no noisy state (None) appears only clean: the CLLM baseline
  packs ONE noisy block, after the clean blocks before it.

The mask is additive (0 where allowed, the dtype's minimum elsewhere): in
transformers 5.x a 4-D boolean mask is misread by eager attention.
"""
from dataclasses import dataclass

import torch

from .trajectories import first_mismatch

PROMPT, NOISY, CLEAN, PADDING = 0, 1, 2, 3
MASKS = ("noisy", "clean")


@dataclass
class Packed:
    ids: list[int]
    positions: list[int]
    kinds: list[int]  # PROMPT / NOISY / CLEAN for every token
    blocks: list[int]  # block index of every token (-1 in the prompt)
    labels: list[int]  # AR target of every token, -100 where none
    answer_labels: list[int]  # the same, -100 on the prompt's own tokens (what the AR loss says about answers)
    pairs: list[tuple[list[int], list[int]]]  # per block: (student idx, teacher idx) of consistency positions


def ar_labels(prompt, clean_blocks, eos: set[int], pad_id: int | None, on_prompt: bool = True) -> list[int]:
    """AR targets along the stream s = prompt + y*_0 + y*_1 + … (P prompt tokens, answer a = y*_0 y*_1 …):

        label_i = s_{i+1}   for  start ≤ i < P + e - 1,   -100 elsewhere

    with e the length of the answer up to and including its first EOS (all of it when it has none)
    and start = 0, or P - 1 with on_prompt=False (the answer only: from the bridge pair, last prompt
    token → a_0, on). So the answer's first EOS is the last target; an EOS id inside the prompt (a
    chat prompt's `<|im_end|>`) is a prompt token like any other and cuts nothing, as in the
    official trainer, which looks for EOS in the clean blocks only. A PAD target is -100 unless
    PAD is also an EOS id. Decision: such a PAD stays a target (the official trainer drops every
    PAD target): the real Qwen's PAD is `<|endoftext|>`, an EOS id that ends answers."""
    answer = [t for block in clean_blocks for t in block]
    stream = prompt + answer
    end = len(prompt) + next((i + 1 for i, t in enumerate(answer) if t in eos), len(answer))
    labels = [-100] * len(stream)
    for i in range(0 if on_prompt else len(prompt) - 1, end - 1):
        if stream[i + 1] != pad_id or stream[i + 1] in eos:
            labels[i] = stream[i + 1]
    return labels


def pack(prompt: list[int], noisy_blocks: list[list[int] | None], clean_blocks: list[list[int]],
         eos: set[int] = frozenset(), pad_id: int | None = None, ar_on_prompt: bool = True,
         drop_last: bool = False) -> Packed:
    """Lay out prompt, ỹ_j, y*_j as described above, with AR labels and consistency pairs
    (one entry in `pairs` per noisy block)."""
    stream = ar_labels(prompt, clean_blocks, eos, pad_id, ar_on_prompt)
    answer = ar_labels(prompt, clean_blocks, eos, pad_id, on_prompt=False)
    p = len(prompt)
    ids, positions = list(prompt), list(range(p))
    kinds, blocks, labels, answer_labels = [PROMPT] * p, [-1] * p, stream[:p], answer[:p]
    pairs, offset = [], p
    for j, (noisy, clean) in enumerate(zip(noisy_blocks, clean_blocks)):
        n = len(clean)
        if noisy is not None:
            last = n - 1 if drop_last or clean[-1] in eos else n  # the EOS position predicts past the answer
            student = list(range(len(ids) + first_mismatch(noisy, clean), len(ids) + last))
            pairs.append((student, [i + n for i in student]))
            ids, positions = ids + noisy, positions + list(range(offset, offset + n))
            kinds, blocks = kinds + [NOISY] * n, blocks + [j] * n
            labels, answer_labels = labels + [-100] * n, answer_labels + [-100] * n
        ids, positions = ids + clean, positions + list(range(offset, offset + n))
        kinds, blocks = kinds + [CLEAN] * n, blocks + [j] * n
        labels, answer_labels = labels + stream[offset:offset + n], answer_labels + answer[offset:offset + n]
        offset += n
    return Packed(ids, positions, kinds, blocks, labels, answer_labels, pairs)


def allowed(kinds: torch.Tensor, blocks: torch.Tensor, mask: str = "noisy") -> torch.Tensor:
    """(L, L) boolean: may query q attend to key k?"""
    if mask not in MASKS:
        raise ValueError(f"unknown mask {mask!r}: choose one of {MASKS}")
    q_kind, k_kind = kinds[:, None], kinds[None, :]
    q_block, k_block = blocks[:, None], blocks[None, :]
    length = len(kinds)
    causal = torch.ones(length, length, dtype=torch.bool).tril()
    same_stream = (q_kind == k_kind) & (k_block <= q_block)
    context = k_kind == PROMPT
    if mask == "clean":
        same_stream = same_stream & ((q_kind != NOISY) | (k_block == q_block))
        context = context | ((q_kind == NOISY) & (k_kind == CLEAN) & (k_block < q_block))
    padding = (q_kind == PADDING) & (k_kind == PADDING)
    return causal & ((same_stream & (q_kind != PADDING)) | context | padding)


def collate(examples: list[Packed], pad_id: int, mask: str = "noisy", dtype=torch.float32,
            divide_by_blocks: bool = True) -> dict:
    """Right-pad a batch; returns model inputs, AR labels and consistency indices with weights.

    Consistency weights (the official trainer's): example b with T_b noisy
    blocks and C_b consistency positions in all gives each of them
    1 / (B · C_b · T_b), so sum(weight · KL) = mean_b (Σ_{j,i} KL_{b,j,i} / C_b) / T_b.
    `divide_by_blocks=False` leaves out the 1 / T_b: every example's consistency
    weighs as much as a one-block example's (CLLM's weight per example).
    """
    width = max(len(e.ids) for e in examples)
    pad = lambda rows, value: torch.tensor([r + [value] * (width - len(r)) for r in rows])
    kinds = pad([e.kinds for e in examples], PADDING)
    blocks = pad([e.blocks for e in examples], -1)
    allow = torch.stack([allowed(k, b, mask) for k, b in zip(kinds, blocks)])
    additive = torch.zeros(allow.shape, dtype=dtype).masked_fill(~allow, torch.finfo(dtype).min)
    rows, student, teacher, weight = [], [], [], []
    for b, e in enumerate(examples):
        positions = sum(len(s) for s, _ in e.pairs)  # C_b
        blocks = len(e.pairs) if divide_by_blocks else 1  # T_b
        for s, t in e.pairs:
            rows += [b] * len(s)
            student += s
            teacher += t
            weight += [1.0 / (len(examples) * positions * blocks)] * len(s) if s else []
    return {"input_ids": pad([e.ids for e in examples], pad_id),
            "position_ids": pad([e.positions for e in examples], 0),
            "attention_mask": additive[:, None],  # (B, 1, L, L)
            "labels": pad([e.labels for e in examples], -100),
            "answer_labels": pad([e.answer_labels for e in examples], -100),
            "rows": torch.tensor(rows, dtype=torch.long), "student": torch.tensor(student, dtype=torch.long),
            "teacher": torch.tensor(teacher, dtype=torch.long), "weight": torch.tensor(weight)}
