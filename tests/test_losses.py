"""Losses: the vectorised forms equal naive loops written from the formulas; the teacher gets no gradient."""
import torch
import torch.nn.functional as F

from jacobi_min.losses import ar_loss, consistency_loss, jacobi_forcing_loss
from jacobi_min.packing import collate, pack
from tests.conftest import tiny_model

# (prompt, noisy blocks, clean blocks): unequal block lengths, a block equal to its fixed point,
# a final block that ends in EOS (3), and two examples of different lengths (the second is padded)
EXAMPLES = [
    ([5, 9, 12], [[11, 40, 8, 41], [6, 6, 13, 2], [7, 50, 3]], [[11, 4, 8, 20], [6, 6, 13, 2], [7, 9, 3]]),
    ([7, 8], [[30, 31, 32, 33], [1, 60]], [[30, 4, 5, 6], [1, 3]]),
]


def batch_and_logits(model, mask="noisy", divide_by_blocks=True):
    packed = [pack(p, n, c, eos={3}) for p, n, c in EXAMPLES]
    batch = collate(packed, pad_id=0, mask=mask, divide_by_blocks=divide_by_blocks)
    logits = model(input_ids=batch["input_ids"], position_ids=batch["position_ids"],
                   attention_mask=batch["attention_mask"]).logits
    return packed, batch, logits


def naive_consistency(logits, eos=3, divide_by_blocks=True):
    """The official formula, written from the layout [P][ỹ_0][y*_0][ỹ_1][y*_1]…:
    L_c = 1/B Σ_b 1/T_b · Σ_{j,i} KL_{b,j,i} / |K_b|, with i from the first mismatch of ỹ_j and
    y*_j to n_j - 1, the position of an EOS excluded (without the 1/T_b when not `divide_by_blocks`)."""
    total = 0.0
    for b, (prompt, noisy, clean) in enumerate(EXAMPLES):
        kls, start = [], len(prompt)
        for y_noisy, y_clean in zip(noisy, clean):
            n = len(y_clean)
            first = next((i for i in range(n) if y_noisy[i] != y_clean[i]), n)
            for i in range(first, n):
                if y_clean[i] == eos:
                    continue
                p_t = F.softmax(logits[b, start + n + i].detach(), -1)
                kls.append((p_t * (p_t.log() - F.log_softmax(logits[b, start + i], -1))).sum())
            start += 2 * n
        total = total + torch.stack(kls).sum() / len(kls) / (len(clean) if divide_by_blocks else 1)
    return total / len(EXAMPLES)


def naive_ar(packed, logits):
    terms = [F.cross_entropy(logits[b, i], torch.tensor(label))
             for b, e in enumerate(packed) for i, label in enumerate(e.labels) if label != -100]
    return torch.stack(terms).mean()


def test_vectorised_losses_equal_naive_loops():
    model = tiny_model()
    packed, batch, logits = batch_and_logits(model)
    torch.testing.assert_close(consistency_loss(logits, batch), naive_consistency(logits))
    torch.testing.assert_close(ar_loss(logits, batch["labels"]), naive_ar(packed, logits))
    total = jacobi_forcing_loss(logits, batch, lam=10.0)
    torch.testing.assert_close(total["loss"], 10.0 * total["ar"] + total["consistency"])


def test_undivided_consistency_equals_the_naive_loop_without_one_over_t():
    model = tiny_model()
    packed, batch, logits = batch_and_logits(model, divide_by_blocks=False)
    torch.testing.assert_close(consistency_loss(logits, batch), naive_consistency(logits, divide_by_blocks=False))
    _, official, _ = batch_and_logits(model)
    assert all(torch.equal(batch[k], official[k]) for k in batch if k != "weight")


def test_consistency_is_zero_when_noisy_equals_clean():
    model = tiny_model()
    prompt, clean = [5, 9, 12], [[11, 4, 8, 20], [6, 6, 13, 2]]
    example = pack(prompt, [list(b) for b in clean], clean)
    # force every position of every block into the loss: identical inputs, identical logits
    example.pairs = [(list(range(3 + 8 * j, 3 + 8 * j + 4)), list(range(7 + 8 * j, 7 + 8 * j + 4))) for j in range(2)]
    batch = collate([example], pad_id=0)
    logits = model(input_ids=batch["input_ids"], position_ids=batch["position_ids"],
                   attention_mask=batch["attention_mask"]).logits
    assert consistency_loss(logits, batch).abs().item() < 1e-6
    assert pack(prompt, clean, clean).pairs == [([], []), ([], [])]


def test_no_gradient_reaches_the_teacher():
    model = tiny_model()
    _, batch, logits = batch_and_logits(model)
    logits.retain_grad()
    consistency_loss(logits, batch).backward()
    teacher_grad = logits.grad[batch["rows"], batch["teacher"]]
    student_grad = logits.grad[batch["rows"], batch["student"]]
    assert torch.count_nonzero(teacher_grad) == 0
    assert torch.count_nonzero(student_grad) > 0


def test_label_smoothing_lambda_and_the_answer_part_equal_naive_loops():
    """ε-smoothed AR = mean over targets of (1-ε)·CE + ε·mean_v(-log p_v); the answer part is the plain
    CE over the answer's targets only; the total is λ·AR + L_c with the smoothed AR."""
    model = tiny_model()
    packed, batch, logits = batch_and_logits(model)
    eps, lam = 0.1, 3.0
    terms = [(1 - eps) * F.cross_entropy(logits[b, i], torch.tensor(label)) - eps * F.log_softmax(logits[b, i], -1).mean()
             for b, e in enumerate(packed) for i, label in enumerate(e.labels) if label != -100]
    answer = [F.cross_entropy(logits[b, i], torch.tensor(label))
              for b, e in enumerate(packed) for i, label in enumerate(e.answer_labels) if label != -100]
    assert len(answer) < len(terms)
    total = jacobi_forcing_loss(logits, batch, lam=lam, label_smoothing=eps)
    torch.testing.assert_close(total["ar"], torch.stack(terms).mean())
    torch.testing.assert_close(total["ar_answer"], torch.stack(answer).mean())
    torch.testing.assert_close(total["loss"], lam * torch.stack(terms).mean() + naive_consistency(logits))
    assert not total["ar_answer"].requires_grad
