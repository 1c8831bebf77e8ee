"""What the two baselines' trainings share: their data and a resumable training loop.

Data (`greedy_answers`): the base's greedy answer to each training problem (the problems Jacobi
Forcing trains on: `task.problems("train", 4000, seed=0)`), stored as a trajectory of fixed
points, trajectories.py's format with only each block's last state:
``{"prompt": ids, "blocks": [[a_0 … a_{n-1}], [a_n … a_{2n-1}], …]}`` (blocks of n, EOS included).
Decision: the reference solution is checked the way Jacobi decoding checks a draft, in ONE forward:
where the base's argmax after each prefix of it is its next token (EOS included), the reference is
the base's greedy answer; otherwise `greedy_decode` writes the answer. (On the first 48 training
problems the reference was the greedy answer 48 times.) A forward of a batch may round otherwise
than decoding does, so an argmax at a near-tie could differ (batch.py says the same of its rows).

Loop (`fit`): AdamW β = (0.9, 0.95), ε = 1e-4, no weight decay, linear warm-up over 3 % of the
steps then cosine, gradients clipped to 1: Jacobi Forcing's round-1 optimiser. Seeded by
`cfg.seed` (the batches and masks come from `random.Random(seed)`; torch's global RNG is handed
back), a snapshot every `save_every` steps (an interrupted run resumes from it), and the model
saved in float16 with its tokenizer, config and log (`train.save_checkpoint`, atomic).
"""
import copy
import math
import random
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from tqdm import tqdm

from ..jacobi import greedy_decode
from ..model import load
from ..train import in_mode, save_checkpoint
from ..utils import lr_at, restore, snapshot
from ..tools.evaluate import prompt_ids
from ..tools.task import MAX_ANSWER_TOKENS
from ..tools.tiny import pad_batch


@dataclass
class Recipe:
    """A baseline's training run; the defaults are the pre-registered recipe's common part."""
    problems: int = 4000  # training problems, task.problems("train", problems, seed=0): Jacobi Forcing's
    steps: int = 1000
    batch_size: int = 8
    lr: float = 5e-4  # peak, after a warm-up over warmup_frac of the steps, then cosine
    warmup_frac: float = 0.03
    save_every: int = 100  # steps between resume snapshots
    seed: int = 0


def starting_model(base):
    """(model, tokenizer) to train, in float32: an embedded name or a directory is loaded, a
    (model, tokenizer) pair copied (the caller's stay as they are)."""
    if isinstance(base, tuple):
        model, tokenizer = base
        return copy.deepcopy(model).float(), copy.deepcopy(tokenizer)
    return load(base)


@torch.inference_mode()
def greedy_answers(model, tokenizer, problems: list, block_size: int, batch: int = 16,
                   progress: bool = True) -> list[dict]:
    """The model's greedy answer to every problem as a trajectory of fixed points (see above)."""
    eos, out = tokenizer.eos_token_id, []
    for i in tqdm(range(0, len(problems), batch), desc="greedy answers", disable=not progress):
        prompts = [prompt_ids(tokenizer, p) for p in problems[i:i + batch]]
        drafts = [tokenizer(p.completion)["input_ids"] + [eos] for p in problems[i:i + batch]]
        ids, _ = pad_batch([p + d for p, d in zip(prompts, drafts)], tokenizer.pad_token_id)  # right-padded
        picks = model(input_ids=ids.to(model.device)).logits.argmax(-1).tolist()
        for row, prompt, draft in zip(picks, prompts, drafts):
            fixed = row[len(prompt) - 1:len(prompt) + len(draft) - 1] == draft
            answer = draft if fixed else greedy_decode(model, prompt, MAX_ANSWER_TOKENS).tokens
            out.append({"prompt": prompt, "blocks": [[answer[j:j + block_size]]
                                                     for j in range(0, len(answer), block_size)]})
    return out


def draw(groups: list[list[dict]], size: int, rng: random.Random) -> list[dict]:
    """`size` examples of one length bucket, the bucket drawn uniformly (Jacobi Forcing's draw)."""
    group = rng.choice(groups)
    return [rng.choice(group) for _ in range(size)]


def fit(model, tokenizer, batches, loss, cfg: Recipe, out_dir: Path, desc: str, progress: bool = True) -> list[dict]:
    """Train `model` on `batches(rng)` -> dict of tensors, minimising `loss(model, batch)`; save to
    out_dir (resume snapshot: out_dir/resume.pt). Returns the log; the model comes back in its mode."""
    out_dir, device = Path(out_dir), next(model.parameters()).device
    resume, rng = out_dir / "resume.pt", random.Random(cfg.seed)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, betas=(0.9, 0.95), eps=1e-4, weight_decay=0.0)
    log = []
    if resume.exists():
        state = restore(resume, model, opt)
        log = state["log"]
        rng.setstate(state["rng"])
    start, warmup = time.time() - (log[-1]["seconds"] if log else 0.0), max(1, math.ceil(cfg.warmup_frac * cfg.steps))
    with in_mode(model, training=True), torch.random.fork_rng():
        torch.manual_seed(cfg.seed)
        for step in (bar := tqdm(range(len(log), cfg.steps), desc=desc, initial=len(log), total=cfg.steps,
                                 disable=not progress)):
            for group in opt.param_groups:
                group["lr"] = lr_at(step, cfg.steps, warmup, cfg.lr)
            value = loss(model, {k: v.to(device) for k, v in batches(rng).items()})
            if not torch.isfinite(value):
                raise FloatingPointError(f"the loss is {value.item()} at step {step + 1}: training diverged")
            opt.zero_grad(set_to_none=True)
            value.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            log.append({"step": step + 1, "loss": round(value.item(), 5), "seconds": round(time.time() - start, 1)})
            bar.set_postfix(loss=f"{value.item():.3f}")
            if (step + 1) % cfg.save_every == 0 and step + 1 < cfg.steps:
                snapshot(resume, model, opt, log, rng=rng.getstate())
    parameters = sum(p.numel() for p in model.parameters())
    save_checkpoint(model, tokenizer, out_dir, cfg, log, {"parameters": parameters, "train_seconds": round(time.time() - start)})
    return log
