"""The packed sequence and its mask: one forward must equal separate plain forwards."""
import pytest
import torch

from jacobi_min.packing import CLEAN, NOISY, PROMPT, allowed, ar_labels, collate, pack
from tests.conftest import tiny_model

PROMPT_IDS = [5, 9, 12, 7, 30]
CLEAN_BLOCKS = [[11, 4, 8, 20], [6, 6, 13, 2], [17, 3]]  # the last block is short (stopped at EOS 3)
NOISY_BLOCKS = [[11, 4, 40, 41], [6, 50, 51, 52], [17, 60]]


def plain_logits(model, tokens: list[int]) -> torch.Tensor:
    return model(input_ids=torch.tensor([tokens])).logits[0]


@pytest.mark.parametrize("mask", ["noisy", "clean"])
@pytest.mark.parametrize("attn", ["eager", "sdpa"])
def test_packed_forward_equals_separate_forwards(mask, attn):
    model = tiny_model("qwen2-gqa-tied")
    model.config._attn_implementation = attn
    packed = pack(PROMPT_IDS, NOISY_BLOCKS, CLEAN_BLOCKS, eos={3})
    other = pack(PROMPT_IDS[:2], NOISY_BLOCKS[:1], CLEAN_BLOCKS[:1], eos={3})  # a shorter row: padding
    batch = collate([packed, other], pad_id=0, mask=mask)
    with torch.no_grad():
        logits = model(input_ids=batch["input_ids"], position_ids=batch["position_ids"],
                       attention_mask=batch["attention_mask"]).logits
    rows = [(PROMPT_IDS, NOISY_BLOCKS, CLEAN_BLOCKS), (PROMPT_IDS[:2], NOISY_BLOCKS[:1], CLEAN_BLOCKS[:1])]
    for row, (prompt, noisy_blocks, clean_blocks) in zip(logits, rows):  # the padded row too
        p = len(prompt)
        torch.testing.assert_close(row[:p], plain_logits(model, prompt), rtol=1e-5, atol=1e-5)
        start = p
        for j, (noisy, clean) in enumerate(zip(noisy_blocks, clean_blocks)):
            n = len(clean)
            earlier_clean = [t for b in clean_blocks[:j] for t in b]
            earlier_noisy = [t for b in noisy_blocks[:j] for t in b]
            seen = earlier_noisy if mask == "noisy" else earlier_clean
            student = plain_logits(model, prompt + seen + noisy)[-n:]
            teacher = plain_logits(model, prompt + earlier_clean + clean)[-n:]
            torch.testing.assert_close(row[start:start + n], student, rtol=1e-5, atol=1e-5)
            torch.testing.assert_close(row[start + n:start + 2 * n], teacher, rtol=1e-5, atol=1e-5)
            start += 2 * n


@pytest.mark.parametrize("attn", ["eager", "sdpa"])
def test_one_noisy_block_after_clean_context_equals_separate_forwards(attn):
    """The CLLM layout [prompt][y*_0][ỹ_1][y*_1][y*_2] with the clean-context mask."""
    model = tiny_model("qwen2-gqa-tied")
    model.config._attn_implementation = attn
    packed = pack(PROMPT_IDS, [None, NOISY_BLOCKS[1], None], CLEAN_BLOCKS, eos={3})
    batch = collate([packed], pad_id=0, mask="clean")
    with torch.no_grad():
        logits = model(input_ids=batch["input_ids"], position_ids=batch["position_ids"],
                       attention_mask=batch["attention_mask"]).logits[0]
    clean = PROMPT_IDS + [t for b in CLEAN_BLOCKS for t in b]
    p, n = len(PROMPT_IDS), len(NOISY_BLOCKS[1])
    student = plain_logits(model, PROMPT_IDS + CLEAN_BLOCKS[0] + NOISY_BLOCKS[1])[-n:]
    clean_idx = [i for i, k in enumerate(packed.kinds) if k != NOISY]
    torch.testing.assert_close(logits[p + 4:p + 4 + n], student, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(logits[clean_idx], plain_logits(model, clean), rtol=1e-5, atol=1e-5)
    assert packed.positions == list(range(p + 4)) + list(range(p + 4, p + 8)) * 2 + [p + 8, p + 9]
    assert packed.pairs == [([p + 5, p + 6, p + 7], [p + 9, p + 10, p + 11])]
    assert batch["weight"].tolist() == [torch.tensor(1 / 3).item()] * 3  # T = 1 noisy block: L_c is that block's mean


def test_layout_positions_and_consistency_pairs():
    packed = pack(PROMPT_IDS, NOISY_BLOCKS, CLEAN_BLOCKS, eos={3})
    assert packed.ids == PROMPT_IDS + [t for n, c in zip(NOISY_BLOCKS, CLEAN_BLOCKS) for t in n + c]
    assert packed.positions == [0, 1, 2, 3, 4, 5, 6, 7, 8, 5, 6, 7, 8, 9, 10, 11, 12, 9, 10, 11, 12, 13, 14, 13, 14]
    assert packed.kinds[:7] == [PROMPT] * 5 + [NOISY] * 2
    # block 0: first mismatch at 2 -> student positions 7, 8 of the sequence; teachers 4 later
    assert packed.pairs[0] == ([7, 8], [11, 12])
    assert packed.pairs[1] == ([14, 15, 16], [18, 19, 20])
    assert packed.pairs[2] == ([], [])  # its mismatch is at the EOS, whose prediction lies past the answer
    assert pack(PROMPT_IDS, NOISY_BLOCKS, CLEAN_BLOCKS).pairs[2] == ([22], [24])  # no EOS: kept


def test_consistency_weights_pool_positions_per_example_then_divide_by_blocks():
    packed = pack(PROMPT_IDS, NOISY_BLOCKS, CLEAN_BLOCKS, eos={3})  # C = 2 + 3 + 0 positions, T = 3
    short = pack(PROMPT_IDS[:2], NOISY_BLOCKS[:1], CLEAN_BLOCKS[:1], eos={3})  # C = 2, T = 1
    weight = collate([packed, short], pad_id=0)["weight"]
    expected = [1 / (2 * 5 * 3)] * 5 + [1 / (2 * 2 * 1)] * 2
    torch.testing.assert_close(weight, torch.tensor(expected))
    undivided = collate([packed, short], pad_id=0, divide_by_blocks=False)["weight"]
    torch.testing.assert_close(undivided, torch.tensor([1 / (2 * 5)] * 5 + [1 / (2 * 2)] * 2))  # no 1/T


def test_ar_labels_bridge_blocks_stop_at_eos_and_skip_pad():
    labels = ar_labels([1, 2], [[5, 0, 7], [3, 9]], eos={3}, pad_id=0)
    # stream 1 2 5 0 7 3 9: targets 2 5 (bridge) 0->ignored 7 3(EOS, kept) then nothing
    assert labels == [2, 5, -100, 7, 3, -100, -100]
    packed = pack([1, 2], [[5, 8, 8], [3, 4]], [[5, 0, 7], [3, 9]], eos={3}, pad_id=0)
    assert packed.labels == [2, 5, -100, -100, -100, -100, 7, 3, -100, -100, -100, -100]


def test_mask_streams_never_see_each_other():
    packed = pack(PROMPT_IDS, NOISY_BLOCKS, CLEAN_BLOCKS)
    kinds, blocks = torch.tensor(packed.kinds), torch.tensor(packed.blocks)
    allow = allowed(kinds, blocks, "noisy")
    assert not allow[kinds == NOISY][:, kinds == CLEAN].any()
    assert not allow[kinds == CLEAN][:, kinds == NOISY].any()
    assert allow[:, kinds == PROMPT].sum() == sum(range(1, 6)) + 5 * (len(kinds) - 5)
    clean_ctx = allowed(kinds, blocks, "clean")
    q = (kinds == NOISY) & (blocks == 1)
    assert clean_ctx[q][:, (kinds == CLEAN) & (blocks == 0)].all()
    assert not clean_ctx[q][:, (kinds == NOISY) & (blocks == 0)].any()
    with pytest.raises(ValueError, match="unknown mask"):
        allowed(kinds, blocks, "diagonal")


def test_ar_labels_on_the_answer_only():
    """ar_on_prompt=False: no target inside the prompt; the bridge pair (last prompt token -> first
    answer token) and every answer target stay."""
    full = pack(PROMPT_IDS, NOISY_BLOCKS, CLEAN_BLOCKS, eos={3})
    answer = pack(PROMPT_IDS, NOISY_BLOCKS, CLEAN_BLOCKS, eos={3}, ar_on_prompt=False)
    p = len(PROMPT_IDS)
    assert answer.labels[:p - 1] == [-100] * (p - 1) and answer.labels[p - 1] == CLEAN_BLOCKS[0][0]
    assert answer.labels[p - 1:] == full.labels[p - 1:]


def test_answer_only_ar_and_drop_last_change_only_what_they_name():
    """ar_on_prompt=False: the prompt's own targets go, the bridge to the answer stays; drop_last
    (CLLM): the last position of each block leaves the consistency pairs (an EOS position already
    had). Everything else is the same packed sequence."""
    eos = {3}
    default = pack(PROMPT_IDS, NOISY_BLOCKS, CLEAN_BLOCKS, eos=eos)
    answer_only = pack(PROMPT_IDS, NOISY_BLOCKS, CLEAN_BLOCKS, eos=eos, ar_on_prompt=False)
    dropped = pack(PROMPT_IDS, NOISY_BLOCKS, CLEAN_BLOCKS, eos=eos, drop_last=True)
    p = len(PROMPT_IDS)
    assert default.labels[:p] == [9, 12, 7, 30, 11]
    assert answer_only.labels[:p] == [-100, -100, -100, -100, 11] == default.answer_labels[:p]
    assert answer_only.labels[p:] == default.labels[p:] == default.answer_labels[p:]
    # block 0: first mismatch at 2 -> positions 2, 3; block 1: at 1 -> 1..3; block 2: at 1, its EOS position -> none
    starts = [p, p + 8, p + 16]
    assert default.pairs == [(list(range(starts[0] + 2, starts[0] + 4)), list(range(starts[0] + 6, starts[0] + 8))),
                             (list(range(starts[1] + 1, starts[1] + 4)), list(range(starts[1] + 5, starts[1] + 8))),
                             ([], [])]
    assert dropped.pairs == [(s[:-1], t[:-1]) if s else (s, t) for s, t in default.pairs[:2]] + [default.pairs[2]]
    for other in (answer_only, dropped):
        assert (other.ids, other.positions, other.kinds, other.blocks) == (default.ids, default.positions,
                                                                         default.kinds, default.blocks)
    assert answer_only.pairs == default.pairs and dropped.labels == default.labels


EOS_PROMPT = [5, 3, 12, 7, 30]  # holds the EOS id 3, as a chat prompt holds <|im_end|>
PROMPT_TARGETS = {True: [3, 12, 7, 30, 11], False: [-100, -100, -100, -100, 11]}  # ar_on_prompt: targets of the prompt's positions


@pytest.mark.parametrize("ar_on_prompt", [True, False])
def test_an_eos_in_the_prompt_cuts_no_answer_label_jacobi_forcing(ar_on_prompt):
    """The AR labels run to the answer's first EOS (block 2's), whatever the prompt holds."""
    packed = pack(EOS_PROMPT, NOISY_BLOCKS, CLEAN_BLOCKS, eos={3}, ar_on_prompt=ar_on_prompt)
    answer = [-100] * 4 + [4, 8, 20, 6] + [-100] * 4 + [6, 13, 2, 17] + [-100] * 2 + [3, -100]
    assert packed.labels == PROMPT_TARGETS[ar_on_prompt] + answer
    assert packed.answer_labels == PROMPT_TARGETS[False] + answer


@pytest.mark.parametrize("ar_on_prompt", [True, False])
def test_an_eos_in_the_prompt_cuts_no_answer_label_cllm(ar_on_prompt):
    """CLLM's layout [prompt][y*_0][ỹ_1][y*_1][y*_2] (drop_last): the same labels on the clean blocks."""
    packed = pack(EOS_PROMPT, [None, NOISY_BLOCKS[1], None], CLEAN_BLOCKS, eos={3}, ar_on_prompt=ar_on_prompt,
                  drop_last=True)
    answer = [4, 8, 20, 6] + [-100] * 4 + [6, 13, 2, 17] + [3, -100]
    assert packed.labels == PROMPT_TARGETS[ar_on_prompt] + answer
    assert packed.answer_labels == PROMPT_TARGETS[False] + answer
