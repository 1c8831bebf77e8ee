"""Training a parallel decoder on its own Jacobi trajectories.

Each step draws a length bucket and a batch of its trajectories, picks for
block j the state whose noise level is closest to the schedule's t_j, packs
the response (see `packing`), runs ONE forward and minimises λ·L_AR + L_c
(see `losses`).

- Jacobi Forcing (`jacobi-forcing`): progressive schedule over a window of w
  blocks, noisy-context mask.
- CLLM (`cllm`), as CLLM's trainer does it: one example per (prompt, block),
  so a long answer contributes T examples; the block's state drawn uniformly
  from its intermediate states, after the clean blocks before it (clean-context
  mask); its consistency loss covers the block from the first mismatch on with
  the last position dropped, averaged over those positions (T = 1). CLLM's AR
  loss is λ = 10 with label smoothing ε = 0.1 and lr 2e-5 for one epoch: those
  are settings (`CLLM` below), not part of the method. Decision: one packed
  forward ([context][ỹ_j][y*_j], clean-context mask) instead of CLLM's two
  forwards (the packing test proves them equal), and the mean starts at the
  first wrong input token: CLLM's also counts the position before it, whose
  KL is 0 by construction (same prefix), so ours is the same loss over one
  position fewer.
- CLLM-style (`cllm-style`), this project's earlier baseline: one example per
  prompt with ONE noisy block (block drawn uniformly), the last position kept,
  under Jacobi Forcing's λ and optimiser settings.

Named departures, each measured in docs/results.md (the controls):
`adam_eps` is AdamW's ε. Adam moves a weight by lr·m̂/(√v̂ + ε): with torch's
ε = 1e-8 a weight whose gradient is only noise (|m̂| ≈ √v̂) still moves about
lr per step, and the base's median per-weight gradient under this loss is
~5e-4, so ε = 1e-4 damps exactly those weights (measured: docs/results.md).
`consistency_on` lists the length buckets whose examples get noisy blocks (the
others train on the AR loss alone; `()` is AR-only training on the same
packed batches), `ar_on_prompt=False` keeps only the answer's tokens in the AR
loss, `label_smoothing` is CLLM's ε.

Three of CLLM's ingredients, for the frontier experiment in docs/results.md
(each added to Jacobi Forcing alone): `clean_context` gives the noisy blocks
the clean-context mask (each sees the clean blocks before it, CLLM's training
condition, all blocks still in one packed forward); `draw_by_blocks` draws
prompts with probability ∝ their blocks (CLLM's draw, one example per prompt);
`undivided_consistency` drops the official 1/T from each example's consistency
loss, so a long answer's T blocks weigh T times more, as CLLM's T one-block
examples of it do.

Held-out accuracy is scored before the first step (step 0), early (steps 50
and 100) and every `eval_every` steps: an early collapse is a recipe fault.

Window: w = 16 as in the paper (linspace(0, 1, 16): steps of 1/15 in noise).
On the earlier short-answer task (round 1, 800 steps) w = 16 reached TPF 2.73 at
n = 16 where w = 4 reached 2.37: with four levels a quarter of the blocks are
clean (t = 0) and teach nothing, and neighbouring blocks jump by 1/3.

Progressive schedule as the paper defines it: block j gets t_j = W[j mod w]
from block 0 on. Decision: the recipe sets `random_offset=True`, starting each
example at a random place in the window: from block 0 a short answer's three
blocks get t = 0 (the fixed point itself, which teaches nothing), 1/15 and
2/15 every epoch. Measured (docs/results.md, the ablation): a round 1 from
block 0 decodes short / medium / long answers at 1.57 / 2.06 / 1.94 TPF, with
the offset at 2.05–2.09 / 2.21–2.48 / 1.84–1.91 (three seeds); the paper's
schedule order (progressive < random < reverse) shows from block 0 only.

A real model (`recipe`) trains with float32 master weights and the forward in bfloat16
autocast (`autocast="bfloat16"`), and may freeze the input embedding and the LM head
(`freeze_embeddings`: 272M of Qwen2.5-0.5B's 630M parameters, and their AdamW state).
Its AR loss covers the answer only (`ar_on_prompt=False`): measured on the first GSM8K
question, Qwen's cross-entropy on its own greedy answer is 0.07 but 5.7 on the chat prompt
(system message and question), so an AR term over the prompt would mostly train the model to
predict questions. The embedded models keep the design's AR loss over prompt and answer.

Runs on one process, or under `torchrun --nproc_per_node=N` with
DistributedDataParallel (gloo on CPU, nccl on CUDA): each rank draws its own
batches; rank 0 evaluates, logs and saves.
"""
import copy
import json
import math
import os
import random
import shutil
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.distributed as dist
from tqdm import tqdm

from . import realtasks, task
from .cli import at_least, model_args, with_model
from .jacobi import eos_ids, jacobi_decode
from .losses import jacobi_forcing_loss
from .packing import collate, pack
from .tiny import lr_at, restore, snapshot
from .trajectories import SCHEDULES, pick_state, schedule
from .trajectories import load as load_trajectories


@dataclass
class TrainConfig:
    method: str = "jacobi-forcing"  # or "cllm", "cllm-style"
    schedule: str = "progressive"  # progressive / random / reverse (Jacobi Forcing only)
    window: int = 16  # w: the schedule's window in blocks
    random_offset: bool = False  # start each example's progressive schedule at a random block of the window
    steps: int = 600
    batch_size: int = 8
    lr: float = 3e-4
    warmup_frac: float = 0.03
    weight_decay: float = 0.0
    adam_eps: float = 1e-8  # AdamW's ε (torch's default); 1e-4 keeps noise-only gradients from moving weights
    lam: float = 10.0  # λ, weight of the AR loss
    eval_every: int = 200
    eval_problems: int = 40
    eval_block_size: int = 16
    save_every: int = 200  # steps between resume snapshots (when train() is given `resume`)
    seed: int = 0
    autocast: str | None = None  # "bfloat16": float32 master weights, the forward in bfloat16 autocast
    freeze_embeddings: bool = False  # train neither the input embedding nor the LM head
    ar_on_prompt: bool = True  # the AR loss covers the prompt too (False: the answer only)
    label_smoothing: float = 0.0  # ε of the AR loss (CLLM: 0.1)
    consistency_on: tuple[str, ...] = tuple(task.BUCKETS)  # buckets whose examples get noisy blocks; (): AR only
    clean_context: bool = False  # Jacobi Forcing's noisy blocks see the clean blocks before them (CLLM's mask)
    draw_by_blocks: bool = False  # prompts drawn with probability ∝ their blocks (CLLM's draw)
    undivided_consistency: bool = False  # no 1/T on an example's consistency (CLLM's weight per example)


METHODS = ("jacobi-forcing", "cllm", "cllm-style")
EARLY_EVALS = (0, 50, 100)
CLLM = {"method": "cllm", "lam": 10.0, "label_smoothing": 0.1}  # CLLM's trainer (and lr 2e-5, one epoch)


def noisy_blocks(trajectory: dict, cfg: TrainConfig, rng: random.Random, block: int | None = None) -> list[list[int] | None]:
    """The noisy state packed for each block (None: the block appears only clean). CLLM makes
    `block` noisy (the example's block); CLLM-style draws the block itself."""
    states = trajectory["blocks"]
    if cfg.method in ("cllm", "cllm-style"):
        j = rng.randrange(len(states)) if block is None else block
        return [rng.choice(s[:-1] or s) if i == j else None for i, s in enumerate(states)]
    offset = rng.randrange(cfg.window) if cfg.random_offset else 0
    targets = schedule(len(states), cfg.window, cfg.schedule, rng, offset)
    return [pick_state(s, t) for s, t in zip(states, targets)]


def bucket(trajectory: dict) -> str:
    """The length bucket (`task.BUCKETS`) of a trajectory's answer."""
    return task.bucket_of(min(sum(len(states[-1]) for states in trajectory["blocks"]), task.MAX_ANSWER_TOKENS))


def length_groups(trajectories: list[dict]) -> list[list[dict]]:
    """Trajectories grouped by the length bucket of their answer."""
    groups = {}
    for t in trajectories:
        groups.setdefault(bucket(t), []).append(t)
    return [groups[name] for name in task.BUCKETS if name in groups]


def draw_examples(groups: list[list[dict]], cfg: TrainConfig, rng: random.Random) -> list[tuple[dict, int | None]]:
    """`batch_size` (trajectory, block) pairs from one length bucket (a batch of short answers is
    not padded to a long one's length). Jacobi Forcing and CLLM-style: one example per prompt,
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


def repetition(tokens: list[int]) -> float:
    """Share of tokens equal to the one before: ~0 for healthy text, → 1 in a collapse."""
    return sum(a == b for a, b in zip(tokens, tokens[1:])) / max(1, len(tokens) - 1)


def prompt_ids(tokenizer, problem: task.Problem) -> list[int]:
    """The embedded models' `Question: … Answer:` prompt; for a chat model (a tokenizer with a chat
    template), the question as the user's message with the GSM8K instruction (boxed answer)."""
    if tokenizer.chat_template:
        return realtasks.chat_ids(tokenizer, f"{problem.question}\n{realtasks.GSM8K_INSTRUCTION}")
    return tokenizer(problem.prompt)["input_ids"]


def is_correct(tokenizer, tokens: list[int], problem: task.Problem) -> bool:
    """`#### answer` for the embedded models; a chat model's final (boxed) number."""
    text = tokenizer.decode(tokens, skip_special_tokens=True)
    if tokenizer.chat_template:
        return realtasks.gsm8k_correct(text, f"#### {problem.answer}")
    return task.is_correct(text, problem.answer)


@torch.no_grad()
def evaluate(model, tokenizer, problems: list[task.Problem], block_size: int,
             max_new_tokens: int = task.MAX_ANSWER_TOKENS, progress: bool = True) -> dict:
    """Held-out accuracy, TPF of greedy Jacobi at `block_size`, and repetition."""
    model.eval()
    correct, tokens, forwards, rep = [], 0, 0, 0.0
    for p in tqdm(problems, desc="evaluate", leave=False, disable=not progress):
        result = jacobi_decode(model, prompt_ids(tokenizer, p), block_size, max_new_tokens)
        correct.append(is_correct(tokenizer, result.tokens, p))
        tokens, forwards = tokens + sum(result.accepted), forwards + result.forwards
        rep += repetition(result.tokens)
    model.train()
    n = len(problems)
    return {"accuracy": sum(correct) / n, "tpf": tokens / forwards, "repetition": rep / n,
            "correct": bucket_counts(problems, correct)}


def bucket_counts(problems: list[task.Problem], correct: list[bool]) -> dict[str, list[int]]:
    """{bucket: [correct, problems]} over the length buckets the problems fall in."""
    counts = {}
    for p, ok in zip(problems, correct):
        tally = counts.setdefault(task.bucket_of(task.answer_length(p)), [0, 0])
        tally[0], tally[1] = tally[0] + ok, tally[1] + 1
    return counts


def evaluates_at(step: int, cfg: TrainConfig) -> bool:
    """Step 0 (before training), the early steps and every `eval_every`-th step, and the last."""
    return step in EARLY_EVALS or step % cfg.eval_every == 0 or step == cfg.steps


def check_config(cfg: TrainConfig) -> None:
    """A clear error for a method that does not exist or an option the method already fixes."""
    if cfg.method not in METHODS:
        raise ValueError(f"unknown method {cfg.method!r}: choose one of {METHODS}")
    if cfg.method != "jacobi-forcing" and cfg.clean_context:
        raise ValueError(f"--clean-context is a Jacobi Forcing option: {cfg.method} always trains with the clean context")
    if cfg.method != "jacobi-forcing" and cfg.undivided_consistency:
        raise ValueError(f"--undivided-consistency is a Jacobi Forcing option: a {cfg.method} example has one noisy block (T = 1)")
    if cfg.method == "cllm" and cfg.draw_by_blocks:
        raise ValueError("--draw-by-blocks is CLLM's own draw: cllm always draws its examples by blocks")


def setup_distributed() -> tuple[int, int]:
    """(rank, world size); initialises the process group when launched by torchrun."""
    if "RANK" not in os.environ:
        return 0, 1
    dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    return dist.get_rank(), dist.get_world_size()


def train(model, tokenizer, trajectories: list[dict], cfg: TrainConfig, out_dir: Path | None = None,
          progress: bool = True, resume: Path | None = None) -> list[dict]:
    """AdamW β=(0.9, 0.95), warm-up then cosine; returns the log (and saves to out_dir on rank 0).

    With `resume`, a snapshot (weights, optimiser, sampler state, log) is written there every
    `cfg.save_every` steps, and a run that finds one continues from it: an interrupted run
    resumed ends with the same weights as one never interrupted.
    """
    if not trajectories:
        raise ValueError("no trajectories to train on: collect some first (python -m jacobi_min collect)")
    check_config(cfg)
    rank, world = setup_distributed()
    rng = random.Random(f"{cfg.seed}-{rank}")
    torch.manual_seed(cfg.seed)
    eos, pad_id = eos_ids(model), tokenizer.pad_token_id
    groups = length_groups(trajectories)
    held_out = task.problems("test", cfg.eval_problems, seed=1)
    trainable = trainable_parameters(model, cfg.freeze_embeddings)
    net = torch.nn.parallel.DistributedDataParallel(model) if world > 1 else model
    opt = torch.optim.AdamW(trainable, lr=cfg.lr, betas=(0.9, 0.95), eps=cfg.adam_eps, weight_decay=cfg.weight_decay)
    warmup = max(1, math.ceil(cfg.warmup_frac * cfg.steps))
    log, start = [], time.time()
    if world > 1:
        resume = None  # snapshots hold one sampler state: resuming is for single-process runs
    if resume is not None and resume.exists():
        state = restore(resume, model, opt)
        log = state["log"]
        rng.setstate(state["rng"])
        start -= log[-1]["seconds"]
    if not log and rank == 0 and held_out:
        log.append({"step": 0, "seconds": 0.0, **evaluate(model, tokenizer, held_out, cfg.eval_block_size, progress=progress)})
    done = log[-1]["step"] if log else 0
    model.train()
    for step in (bar := tqdm(range(done + 1, cfg.steps + 1), desc=f"train {cfg.method}", initial=done,
                             total=cfg.steps, disable=rank > 0 or not progress)):
        batch = make_batch(groups, cfg, rng, eos, pad_id)
        for group in opt.param_groups:
            group["lr"] = lr_at(step - 1, cfg.steps, warmup, cfg.lr)
        losses = optimise(net, model, batch, opt, trainable, cfg, step)
        row = {"step": step, **{k: round(v.item(), 5) for k, v in losses.items()}, "seconds": round(time.time() - start, 1)}
        if rank == 0 and held_out and evaluates_at(step, cfg):
            row.update(evaluate(model, tokenizer, held_out, cfg.eval_block_size, progress=progress))
        log.append(row)
        bar.set_postfix(loss=f"{row['loss']:.3f}", **({"tpf": f"{row['tpf']:.2f}"} if "tpf" in row else {}))
        if resume is not None and rank == 0 and step % cfg.save_every == 0 and step < cfg.steps:
            snapshot(resume, model, opt, log, rng=rng.getstate())
    model.eval()
    if rank == 0 and out_dir is not None:
        save_checkpoint(model, tokenizer, out_dir, cfg, log)
    if resume is not None and rank == 0:
        resume.unlink(missing_ok=True)
    if world > 1:
        dist.destroy_process_group()
    return log


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


def train_config(args) -> TrainConfig:
    """The `train` command's TrainConfig."""
    return TrainConfig(method=args.method, schedule=args.schedule, window=args.window, random_offset=args.random_offset,
                       steps=args.steps, lr=args.lr, adam_eps=args.adam_eps, lam=args.lam,
                       label_smoothing=args.label_smoothing, ar_on_prompt=not args.answer_only_ar,
                       consistency_on=() if args.ar_only else tuple(args.consistency_on), batch_size=args.batch_size,
                       seed=args.seed, eval_problems=args.eval_problems, eval_every=args.eval_every,
                       clean_context=args.clean_context, draw_by_blocks=args.draw_by_blocks,
                       undivided_consistency=args.undivided_consistency)


def train_command(args, model, tokenizer) -> None:
    cfg = train_config(args)
    resume = args.out.with_name(args.out.name + ".resume.pt")
    if resume.exists() and not args.resume:
        sys.exit(f"{resume} holds an interrupted run: add --resume to continue it, or delete it to start over")
    train(model, tokenizer, load_trajectories(args.trajectories)[:args.limit], cfg, args.out, resume=resume)


def add_commands(commands) -> None:
    p = commands.add_parser("train", help="train on trajectories: Jacobi Forcing, CLLM or the CLLM-style variant")
    model_args(p)
    p.add_argument("--trajectories", type=Path, required=True)
    p.add_argument("--method", default="jacobi-forcing", choices=METHODS,
                   help="cllm: CLLM's trainer (one example per block); cllm-style: one noisy block per prompt")
    p.add_argument("--schedule", default="progressive", choices=SCHEDULES)
    p.add_argument("--window", type=at_least(1), default=TrainConfig.window)
    p.add_argument("--steps", type=at_least(1), default=TrainConfig.steps)
    p.add_argument("--lr", type=at_least(0.0, float), default=TrainConfig.lr)
    p.add_argument("--lam", type=at_least(0.0, float), default=TrainConfig.lam, help="λ, the AR loss weight")
    p.add_argument("--adam-eps", type=at_least(0.0, float), default=TrainConfig.adam_eps, help="AdamW's ε")
    p.add_argument("--random-offset", action="store_true",
                   help="start each example's progressive schedule at a random block of the window")
    p.add_argument("--label-smoothing", type=at_least(0.0, float), default=TrainConfig.label_smoothing,
                   help="ε of the AR loss (CLLM: 0.1)")
    p.add_argument("--answer-only-ar", action="store_true", help="the AR loss covers the answer's tokens only")
    p.add_argument("--consistency-on", nargs="+", default=list(TrainConfig.consistency_on), choices=list(task.BUCKETS),
                   help="length buckets whose examples get noisy blocks (the others train on the AR loss alone)")
    p.add_argument("--ar-only", action="store_true", help="no noisy blocks at all: the AR loss on the same packed batches")
    p.add_argument("--clean-context", action="store_true",
                   help="Jacobi Forcing's noisy blocks see the clean blocks before them (CLLM's mask), not the noisy ones")
    p.add_argument("--draw-by-blocks", action="store_true",
                   help="draw prompts with probability proportional to their blocks (CLLM's draw), one example each")
    p.add_argument("--undivided-consistency", action="store_true",
                   help="no 1/T on an example's consistency loss: a long answer's weighs as much as one block's (CLLM's weight)")
    p.add_argument("--limit", type=at_least(1), default=None, help="train on the first LIMIT trajectories of the file")
    p.add_argument("--batch-size", type=at_least(1), default=TrainConfig.batch_size)
    p.add_argument("--seed", type=at_least(0), default=TrainConfig.seed, help="seed of the batches and noisy states")
    p.add_argument("--eval-problems", type=at_least(0), default=TrainConfig.eval_problems)
    p.add_argument("--eval-every", type=at_least(1), default=TrainConfig.eval_every,
                   help="steps between held-out scores (also scored at steps 0, 50 and 100)")
    p.add_argument("--resume", action="store_true",
                   help="continue an interrupted run from its snapshot OUT.resume.pt (written every 200 steps)")
    p.add_argument("--out", type=Path, required=True)
    p.set_defaults(run=with_model(train_command))
