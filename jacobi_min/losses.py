"""The Jacobi Forcing objective on one packed forward: consistency + AR.

Consistency (CLLM), for a noisy state ỹ_j of block j with fixed point y*_j,
at the positions i from the first mismatch to n-1 (EOS position excluded):

    KL_{j,i} = KL( stopgrad p_θ(· | x, y*_{<j}, y*_{j,<i}) || p_θ(· | x, ỹ_{<j}, ỹ_{j,<i}) )

The teacher is the same model in the same forward (its logits on the clean
block), detached. KL differs from the soft cross-entropy -Σ_v p_teacher log
p_student only by the teacher's entropy, a constant, so the gradients are the
same; KL is 0 when the two distributions agree.

Weighting, as the official multi-block trainer does: the KLs are pooled over
EVERY consistency position of the example (all T blocks together), averaged,
and divided again by T; a batch of B examples averages the examples:

    L_c = 1/B Σ_b  1/T_b · ( Σ_{j,i ∈ K_b} KL_{b,j,i} ) / |K_b|

with K_b the consistency positions of example b (|K_b| = C_b). A block equal
to its fixed point adds no position but still counts in T_b. CLLM's examples
are one block each (T_b = 1); `train --undivided-consistency` gives Jacobi
Forcing that weight per example (no 1/T_b; the frontier experiment). (The official
code runs one example per GPU and DDP averages the four; its batched variant
pools over the batch as well. Decision: per example, so a long answer's many
positions do not outweigh a short one in the batch.)

AR: next-token cross-entropy on the prompt and the clean blocks (bridge pairs
included, up to the answer's first EOS: an EOS id inside the prompt cuts nothing;
PAD ignored; `packing.ar_labels`), optionally with label smoothing ε
(CLLM's trainer: ε = 0.1, i.e. (1-ε)·CE + ε·mean_v(-log p_v)). Total:

    L = λ · L_AR + L_c          (λ = 10; the 1/T is inside L_c)

The AR term's answer part (`ar_answer`: the same cross-entropy on the answer's
tokens only, without smoothing) is reported beside it: on the base model the
prompt's tokens cost ~0.6 nats each and the answer's ~0.01, so the AR value as
a whole cannot show damage to answers.
"""
import torch
import torch.nn.functional as F


def consistency_loss(logits: torch.Tensor, batch: dict) -> torch.Tensor:
    """Σ weight · KL(teacher ‖ student) over the batch's consistency positions; logits (B, L, V)."""
    if len(batch["weight"]) == 0:
        return logits.sum() * 0.0
    student = logits[batch["rows"], batch["student"]]  # (N, V)
    teacher = logits[batch["rows"], batch["teacher"]].detach()  # (N, V)
    log_p_teacher = F.log_softmax(teacher.float(), dim=-1)
    log_p_student = F.log_softmax(student.float(), dim=-1)
    kl = (log_p_teacher.exp() * (log_p_teacher - log_p_student)).sum(-1)  # (N,)
    return (batch["weight"].to(kl.device) * kl).sum()


def ar_loss(logits: torch.Tensor, labels: torch.Tensor, label_smoothing: float = 0.0) -> torch.Tensor:
    """Token-mean cross-entropy where labels != -100; logits (B, L, V), labels (B, L)."""
    if not (labels != -100).any():
        return logits.sum() * 0.0
    return F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten().to(logits.device), ignore_index=-100,
                           label_smoothing=label_smoothing)


def jacobi_forcing_loss(logits: torch.Tensor, batch: dict, lam: float = 10.0, label_smoothing: float = 0.0) -> dict:
    """{'loss': λ·L_AR + L_c, 'ar': L_AR, 'consistency': L_c, 'ar_answer': the answer's CE (no gradient)}
    (the pooling and 1/T are in the consistency weights)."""
    ar = ar_loss(logits, batch["labels"], label_smoothing)
    consistency = consistency_loss(logits, batch)
    with torch.no_grad():
        ar_answer = ar_loss(logits, batch["answer_labels"])
    return {"loss": lam * ar + consistency, "ar": ar, "consistency": consistency, "ar_answer": ar_answer}
