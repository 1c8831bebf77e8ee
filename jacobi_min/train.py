"""Training a parallel decoder on its own Jacobi trajectories.

Each step draws a length bucket and a batch of its trajectories, picks for block j the
state whose noise level is closest to the schedule's t_j = W[j mod w] (`trajectories`),
packs the response (`packing`), runs ONE forward and minimises L = λ · L_AR + L_c / T (`losses`).
`jacobi-forcing`: progressive noise schedule, noisy-context mask. `cllm`, as CLLM's trainer:
one example per (prompt, block), a uniformly drawn state after the clean blocks before it, T = 1.

`TrainConfig()` is round 1 of the shipped recipe: 1,600 steps of 8 examples, AdamW β = (0.9, 0.95)
without weight decay, lr 5e-4 after a 3 % warm-up then cosine, λ = 10, w = 16; every later training
is what it changes from these (the table `RECIPE` in tools/pipeline.py).

Decisions (measured in the journal, `git show 854650c:experiments/JOURNAL.md`): CLLM in one packed
forward instead of its two (the packing test proves them equal), its mean from the first wrong input token (the position
before has KL 0); AdamW ε = 1e-4, not 1e-8, so noise-only gradients barely move weights; each
example's schedule starts at a random block of the window (from block 0 a short answer's blocks
always get t = 0, 1/15, 2/15); `undivided_consistency` drops the official 1/T (rounds 3–5).
A `check(model)` runs at steps 0, 50, 100, every `check_every` and the last: an early collapse is a recipe fault.
"""
import copy
import json
import math
import os
import random
import shutil
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
import torch.distributed as dist
from tqdm import tqdm

from .losses import jacobi_forcing_loss
from .packing import collate, pack
from .trajectories import pick_state, schedule
from .utils import eos_ids, lr_at, restore, snapshot

BUCKETS = {"short": (1, 64), "medium": (65, 160), "long": (161, 400)}  # answer tokens, EOS included
MAX_ANSWER_TOKENS = BUCKETS["long"][1]  # the decoding budget that holds every answer


def option(default, help: str, flag: str | None = None):
    """A settings field with its command-line help (and its flag, where it is not --field-name)."""
    default_arg = {"default_factory": lambda: default} if isinstance(default, tuple) else {"default": default}
    return field(**default_arg, metadata={"help": help, "flag": flag})


@dataclass
class TrainConfig:
    """A training run's settings; the defaults are the shipped recipe's round 1. The `train` command
    has one flag per field."""
    method: str = option("jacobi-forcing", "jacobi-forcing, or cllm: CLLM's trainer (one example per block)")
    schedule: str = option("progressive", "noise schedule: progressive, random or reverse (Jacobi Forcing)")
    window: int = option(16, "w: the schedule's window in blocks")
    random_offset: bool = option(True, "start each example's progressive schedule at a random block of the window "
                                       "(the default; the paper starts at block 0)")
    steps: int = option(1600, "optimiser steps")
    batch_size: int = option(8, "examples per step")
    lr: float = option(5e-4, "peak learning rate (warm-up, then cosine)")
    warmup_frac: float = option(0.03, "share of the steps spent warming up")
    adam_eps: float = option(1e-4, "AdamW's ε (torch's: 1e-8); 1e-4 keeps noise-only gradients from moving weights")
    lam: float = option(10.0, "λ, the weight of the AR loss")
    save_every: int = option(200, "steps between resume snapshots")
    seed: int = option(0, "seed of the batches and noisy states")
    ar_on_prompt: bool = option(True, "the AR loss covers the prompt too (the flag: the answer only)",
                                flag="--answer-only-ar")
    consistency_on: tuple[str, ...] = option(tuple(BUCKETS), "length buckets whose examples get noisy blocks "
                                             "(the others train on the AR loss alone)")
    undivided_consistency: bool = option(False, "no 1/T on an example's consistency loss (CLLM's weight per example)")
    label_smoothing: float = option(0.0, "ε of the AR loss (CLLM: 0.1)")
    autocast: str | None = option(None, "bfloat16: float32 weights, the forward in bfloat16 autocast (the real Qwen, gpu)")
    freeze_embeddings: bool = option(False, "train neither the input embedding nor the LM head (the real Qwen's recipe)")
    clean_context: bool = option(False, "Jacobi Forcing's noisy blocks see the clean blocks before them (CLLM's mask)")
    draw_by_blocks: bool = option(False, "prompts drawn with probability ∝ their blocks (CLLM's draw), one example each")


METHODS = ("jacobi-forcing", "cllm")
EARLY_EVALS = (0, 50, 100)


def noisy_blocks(trajectory: dict, cfg: TrainConfig, rng: random.Random, block: int | None = None) -> list[list[int] | None]:
    """The noisy state packed for each block (None: the block appears only clean). CLLM makes
    `block` noisy (the example's block)."""
    states = trajectory["blocks"]
    if cfg.method == "cllm":
        return [rng.choice(s[:-1] or s) if i == block else None for i, s in enumerate(states)]
    offset = rng.randrange(cfg.window) if cfg.random_offset else 0
    targets = schedule(len(states), cfg.window, cfg.schedule, rng, offset)
    return [pick_state(s, t) for s, t in zip(states, targets)]


def bucket_of(tokens: int) -> str:
    """The length bucket (`BUCKETS`) of an answer of `tokens` tokens."""
    for name, (lo, hi) in BUCKETS.items():
        if lo <= tokens <= hi:
            return name
    raise ValueError(f"an answer of {tokens} tokens is longer than every bucket ({BUCKETS})")


def bucket(trajectory: dict) -> str:
    """The length bucket of a trajectory's answer."""
    return bucket_of(min(sum(len(states[-1]) for states in trajectory["blocks"]), MAX_ANSWER_TOKENS))


def length_groups(trajectories: list[dict]) -> list[list[dict]]:
    """Trajectories grouped by the length bucket of their answer."""
    groups = {}
    for t in trajectories:
        groups.setdefault(bucket(t), []).append(t)
    return [groups[name] for name in BUCKETS if name in groups]


def draw_examples(groups: list[list[dict]], cfg: TrainConfig, rng: random.Random) -> list[tuple[dict, int | None]]:
    """`batch_size` (trajectory, block) pairs from one length bucket (a batch of short answers is
    not padded to a long one's length). Jacobi Forcing: one example per prompt,
    the bucket drawn uniformly. CLLM: one example per (prompt, block), drawn uniformly over all
    blocks: the bucket with probability ∝ its blocks, then a prompt ∝ its blocks, then a block of
    it. `draw_by_blocks`: the prompts drawn as CLLM draws them, one example each."""
    if cfg.method != "cllm" and not cfg.draw_by_blocks:
        group = rng.choice(groups)
        return [(rng.choice(group), None) for _ in range(cfg.batch_size)]
    sizes = [[len(t["blocks"]) for t in group] for group in groups]
    group, size = rng.choices(list(zip(groups, sizes)), weights=[sum(s) for s in sizes])[0]
    picks = rng.choices(group, weights=size, k=cfg.batch_size)
    return [(t, rng.randrange(len(t["blocks"])) if cfg.method == "cllm" else None) for t in picks]


def make_batch(groups: list[list[dict]], cfg: TrainConfig, rng: random.Random, eos: set[int], pad_id: int) -> dict:
    """One packed batch (see `draw_examples`); examples of buckets outside `cfg.consistency_on`
    are packed without noisy blocks."""
    packed = []
    for t, block in draw_examples(groups, cfg, rng):
        noisy = noisy_blocks(t, cfg, rng, block) if bucket(t) in cfg.consistency_on else [None] * len(t["blocks"])
        packed.append(pack(t["prompt"], noisy, [s[-1] for s in t["blocks"]], eos, pad_id, cfg.ar_on_prompt,
                           drop_last=cfg.method == "cllm"))
    return collate(packed, pad_id, mask="noisy" if cfg.method == "jacobi-forcing" and not cfg.clean_context else "clean",
                   divide_by_blocks=not cfg.undivided_consistency)


def evaluates_at(step: int, steps: int, every: int | None) -> bool:
    """Step 0 (before training), the early steps, every `every`-th step (when given) and the last of `steps`."""
    return step in EARLY_EVALS or step == steps or bool(every) and step % every == 0


def check_config(cfg: TrainConfig) -> None:
    """A clear error for a method that does not exist or an option the method already fixes."""
    if cfg.method not in METHODS:
        raise ValueError(f"unknown method {cfg.method!r}: choose one of {METHODS}")
    if cfg.method == "cllm" and cfg.clean_context:
        raise ValueError("--clean-context is a Jacobi Forcing option: cllm always trains with the clean context")
    if cfg.method == "cllm" and cfg.undivided_consistency:
        raise ValueError("--undivided-consistency is a Jacobi Forcing option: a cllm example has one noisy block (T = 1)")
    if cfg.method == "cllm" and cfg.draw_by_blocks:
        raise ValueError("--draw-by-blocks is CLLM's own draw: cllm always draws its examples by blocks")


def setup_distributed() -> tuple[int, int]:
    """(rank, world size); initialises the process group when launched by torchrun."""
    if "RANK" not in os.environ:
        return 0, 1
    dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    return dist.get_rank(), dist.get_world_size()


@contextmanager
def in_mode(model, training: bool):
    """Run the block with `model` in training (True) or eval (False) mode; after it, even after an
    error, every module of the model is back in the mode it had."""
    modes = [(module, module.training) for module in model.modules()]
    model.train(training)
    try:
        yield
    finally:
        for module, mode in modes:
            module.training = mode


def train(model, tokenizer, trajectories: list[dict], cfg: TrainConfig, out_dir: Path | None = None,
          progress: bool = True, resume: Path | None = None, check=None, check_every: int | None = None) -> list[dict]:
    """AdamW β=(0.9, 0.95), warm-up then cosine; returns the log (and saves to out_dir on rank 0).

    `check(model, progress=...)` returns held-out scores for the log at the steps of `evaluates_at`.

    With `resume`, a snapshot (weights, optimiser, sampler state, log) is written there every
    `cfg.save_every` steps, and a run that finds one continues from it: an interrupted run
    resumed ends with the same weights as one never interrupted.

    The steps run in training mode with torch's global RNG seeded with `cfg.seed`; the model comes
    back in the mode it came in, and the global RNG (CPU, and the model's GPU) as it was.
    """
    device = next(model.parameters()).device
    with in_mode(model, training=True), torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        torch.manual_seed(cfg.seed)
        return train_steps(model, tokenizer, trajectories, cfg, out_dir, progress, resume, check, check_every)


def train_steps(model, tokenizer, trajectories: list[dict], cfg: TrainConfig, out_dir: Path | None,
                progress: bool, resume: Path | None, check, check_every: int | None) -> list[dict]:
    """`train`'s run, in the mode and RNG state `train` sets."""
    if not trajectories:
        raise ValueError("no trajectories to train on: collect some first (python -m jacobi_min collect)")
    check_config(cfg)
    rank, world = setup_distributed()
    rng = random.Random(f"{cfg.seed}-{rank}")
    eos, pad_id = eos_ids(model), tokenizer.pad_token_id
    groups = length_groups(trajectories)
    trainable = trainable_parameters(model, cfg.freeze_embeddings)
    net = torch.nn.parallel.DistributedDataParallel(model) if world > 1 else model
    opt = torch.optim.AdamW(trainable, lr=cfg.lr, betas=(0.9, 0.95), eps=cfg.adam_eps, weight_decay=0.0)  # as official
    warmup = max(1, math.ceil(cfg.warmup_frac * cfg.steps))
    resume = resume if world == 1 else None  # snapshots hold one sampler state: resuming is for single-process runs
    log = resumed(resume, model, opt, rng)
    start = time.time() - (log[-1]["seconds"] if log else 0.0)
    if not log and rank == 0 and check:
        log.append({"step": 0, "seconds": 0.0, **check(model, progress=progress)})
    done = log[-1]["step"] if log else 0
    for step in (bar := tqdm(range(done + 1, cfg.steps + 1), desc=f"train {cfg.method}", initial=done,
                             total=cfg.steps, disable=rank > 0 or not progress)):
        batch = make_batch(groups, cfg, rng, eos, pad_id)
        for group in opt.param_groups:
            group["lr"] = lr_at(step - 1, cfg.steps, warmup, cfg.lr)
        losses = optimise(net, model, batch, opt, trainable, cfg, step)
        row = {"step": step, **{k: round(v.item(), 5) for k, v in losses.items()}, "seconds": round(time.time() - start, 1)}
        if rank == 0 and check and evaluates_at(step, cfg.steps, check_every):
            row.update(check(model, progress=progress))
        log.append(row)
        bar.set_postfix(loss=f"{row['loss']:.3f}", **({"tpf": f"{row['tpf']:.2f}"} if "tpf" in row else {}))
        if resume is not None and rank == 0 and step % cfg.save_every == 0 and step < cfg.steps:
            snapshot(resume, model, opt, log, rng=rng.getstate())
    if rank == 0 and out_dir is not None:
        save_checkpoint(model, tokenizer, out_dir, cfg, log)
    if resume is not None and rank == 0:
        resume.unlink(missing_ok=True)
    if world > 1:
        dist.destroy_process_group()
    return log


def resumed(resume: Path | None, model, opt, rng: random.Random) -> list[dict]:
    """The log of an interrupted run, its weights, optimiser and sampler restored from the snapshot; or []."""
    if resume is None or not resume.exists():
        return []
    state = restore(resume, model, opt)
    rng.setstate(state["rng"])
    return state["log"]


def optimise(net, model, batch: dict, opt, trainable: list, cfg: TrainConfig, step: int) -> dict:
    """One step: the packed forward (in autocast when asked), λ·L_AR + L_c, backward, clip to 1, AdamW."""
    device = next(model.parameters()).device
    with torch.autocast(device.type, dtype=getattr(torch, cfg.autocast or "bfloat16"), enabled=cfg.autocast is not None):
        logits = net(input_ids=batch["input_ids"].to(device), position_ids=batch["position_ids"].to(device),
                     attention_mask=batch["attention_mask"].to(device, model.dtype)).logits
    losses = jacobi_forcing_loss(logits.float(), batch, cfg.lam, cfg.label_smoothing)
    if not torch.isfinite(losses["loss"]):
        raise FloatingPointError(f"the loss is {losses['loss'].item()} at step {step}: training diverged "
                                 f"(try a lower learning rate than {cfg.lr}); nothing was saved")
    opt.zero_grad(set_to_none=True)
    losses["loss"].backward()
    torch.nn.utils.clip_grad_norm_(trainable, 1.0)
    opt.step()
    return losses


def trainable_parameters(model, freeze_embeddings: bool) -> list[torch.nn.Parameter]:
    """Every parameter, or all but the input embedding and the LM head (which stop requiring grad)."""
    if freeze_embeddings:
        for module in (model.get_input_embeddings(), model.get_output_embeddings()):
            module.weight.requires_grad_(False)
    return [p for p in model.parameters() if p.requires_grad]


def save_checkpoint(model, tokenizer, out_dir: Path, cfg: TrainConfig, log: list[dict], extra: dict | None = None) -> None:
    """Half-precision weights (of a copy: the model in memory is left as it is), tokenizer,
    training config and log; written to a temporary folder that then replaces `out_dir`, so a
    crash never leaves a mix of old and new files."""
    tmp, old = out_dir.with_name(out_dir.name + ".tmp"), out_dir.with_name(out_dir.name + ".old")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    copy.deepcopy(model).to(torch.float16).save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    (tmp / "train_config.json").write_text(json.dumps({"config": asdict(cfg), **(extra or {})}, indent=2, default=str))
    (tmp / "train_log.jsonl").write_text("".join(json.dumps(r) + "\n" for r in log))
    shutil.rmtree(old, ignore_errors=True)
    if out_dir.exists():
        out_dir.rename(old)
    tmp.rename(out_dir)
    shutil.rmtree(old, ignore_errors=True)
