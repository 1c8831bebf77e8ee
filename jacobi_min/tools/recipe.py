"""Jacobi Forcing on a real chat model: its own GSM8K trajectories, one round of training, before/after.

    collect   greedy Jacobi at n = 16 on GSM8K test questions [0, train_prompts) in the chat template;
              the targets are the model's own fixed points (the dataset's answers are never read)
    train     round 1 of Jacobi Forcing (progressive schedule over w blocks, λ·L_AR + L_c / T) from the
              original model: float32 weights (on a GPU the forward in bfloat16 autocast), embedding
              and LM head frozen, the AR loss on the answer only, AdamW with warm-up + cosine, resume
              snapshots
    evaluate  GSM8K questions [eval_start, eval_start + eval_prompts), never trained on, for the original
              and the trained model: greedy `generate` (its output scores the accuracy), Jacobi at each
              n and multi-block + recycling, each timed right after `generate` and checked equal to it
    trajectory  the first held-out question's first blocks at n = 16, every state recorded, for the
              original and the trained model (notebook 06 draws them side by side)
    seen      TPF of Jacobi at n = 16 on the first `seen_prompts` training questions, before and after:
              set beside the held-out TPF, it tells fitting the training set from generalising

Presets: "cpu" (a reduced run for 2 CPU cores) and "gpu" (`--device cuda`, the paper's round-1
settings: every training question, lr 1e-5, λ = 10, w = 16, global batch 4, one pass over the data).

Every stage's output lands in the work folder and a rerun resumes after the last finished stage
(`pipeline.Work`); training resumes mid-stage from its snapshot. The summary (settings, seconds per
stage, peak memory, before / after) is written to `results`.

Decision: float32 on a CPU, no bfloat16 autocast. Measured on a CPU without native bfloat16
(no AVX512-BF16 / AMX), one training step of 133 tokens took 290 s in autocast against 9 s in
float32; the official trainer's bf16 is for GPUs, where the gpu preset keeps it.

Decision: the LM head stays untied. Qwen2.5-Coder-0.5B-Instruct ties it to the input embedding,
but the GGUF file stores the two separately quantized: after de-quantisation they differ (by up to
0.008), so tying them would change the model whose output we must reproduce.
"""
import json
import resource
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from statistics import mean

from .. import trajectories
from ..jacobi import jacobi_decode
from ..model import load
from ..train import TrainConfig, save_checkpoint
from . import qwen, realtasks
from .evaluate import train_and_check
from .exactness import exactness
from .pipeline import Work


@dataclass
class Recipe:
    base: str = qwen.ALIAS
    device: str = "cpu"
    train_prompts: int = 8  # GSM8K test questions [0, train_prompts)
    eval_start: int = 1000
    eval_prompts: int = 2  # GSM8K test questions [eval_start, eval_start + eval_prompts)
    max_new_tokens: int = 256
    block_size: int = 16
    eval_block_sizes: tuple = (16, 32)
    eval_multiblock_sizes: tuple = (16,)
    workers: int = 2  # CPU processes for collection
    trajectory_tokens: int = 48  # new tokens of the recorded before / after trajectory
    seen_prompts: int = 2  # training questions decoded again after training
    train: TrainConfig = field(default_factory=lambda: TrainConfig(
        steps=32, batch_size=1, lr=1e-5, lam=10.0, window=16, eval_problems=0, save_every=8,
        freeze_embeddings=True, ar_on_prompt=False))

    def __post_init__(self):
        if not 1 <= self.seen_prompts <= self.train_prompts:
            raise ValueError(f"seen_prompts must be in [1, train_prompts = {self.train_prompts}], got {self.seen_prompts}")


PRESETS = {
    "cpu": Recipe(),
    "gpu": Recipe(device="cuda", train_prompts=800, eval_prompts=319, workers=1,
                  train=replace(Recipe().train, steps=200, batch_size=4, lr=1e-5, save_every=50,
                                      autocast="bfloat16")),
}


def question_ids(tokenizer, start: int, count: int) -> list[list[int]]:
    rows = realtasks.gsm8k(start + count)[start:]
    return [realtasks.chat_ids(tokenizer, realtasks.gsm8k_prompt(r)) for r in rows]


def finished(model, tokens: list[int]) -> bool:
    """Whether an answer ended with an EOS token rather than at the token limit."""
    eos = model.generation_config.eos_token_id
    return bool(tokens) and tokens[-1] in (eos if isinstance(eos, list) else [eos])


def evaluate(model, tokenizer, cfg: Recipe) -> dict:
    """Every method against greedy `generate` on the held-out questions: exactness, TPF, speedup, and
    `generate`'s answers (their text, and whether each ended before max_new_tokens) for `score`."""
    ids = question_ids(tokenizer, cfg.eval_start, cfg.eval_prompts)
    report = exactness(model, tokenizer, ids, cfg.eval_block_sizes, cfg.max_new_tokens, cfg.eval_multiblock_sizes)
    done = [finished(model, t) for t in report["reference_tokens"]]
    generate_seconds = sum(report["reference_seconds"])
    return {"ended": done,
            "answer_tokens": mean(len(t) for t in report["reference_tokens"]),
            "methods": {name: {"exact": row["exact"], "total": row["total"], "tpf": mean(row["tpf"]),
                               "speedup": generate_seconds / sum(row["seconds"])}
                        for name, row in report["methods"].items()},
            "texts": [tokenizer.decode(t, skip_special_tokens=True) for t in report["reference_tokens"]]}


def score(result: dict, cfg: Recipe) -> dict:
    """`evaluate`'s result with how many answers ended and its GSM8K accuracy, scored when the
    summary is written (so a fixed checker re-scores a finished run). An answer cut at max_new_tokens has not given its final
    number and counts as wrong (the checker, which falls back to the last number in the text,
    would read one from a step such as "Step 1")."""
    answers = [r["answer"] for r in realtasks.gsm8k(cfg.eval_start + cfg.eval_prompts)[cfg.eval_start:]]
    correct = [e and realtasks.gsm8k_correct(t, a) for e, t, a in zip(result["ended"], result["texts"], answers)]
    return result | {"finished": sum(result["ended"]), "accuracy": mean(correct)}


def trajectory(model, tokenizer, cfg: Recipe) -> list[dict]:
    """Every state of the first blocks of the first held-out question: [{"context", "states"}] per block."""
    ids = question_ids(tokenizer, cfg.eval_start, 1)[0]
    result = jacobi_decode(model, ids, cfg.block_size, cfg.trajectory_tokens, record=True)
    return [{"context": b.context, "states": b.states} for b in result.blocks]


def seen_tpf(model, tokenizer, cfg: Recipe) -> list[float]:
    """TPF of Jacobi at n = block_size on the first `seen_prompts` training questions."""
    ids = question_ids(tokenizer, 0, cfg.seen_prompts)
    return [jacobi_decode(model, q, cfg.block_size, cfg.max_new_tokens).tpf for q in ids]


def run(cfg: Recipe, folder: Path, results: Path | None = None) -> dict:
    """The whole recipe in `folder` (resuming), the trained checkpoint in `folder`/jacobi-forcing;
    returns the summary, also written to `results` when given."""
    work = Work(folder)
    model, tokenizer = load(cfg.base, cfg.device)
    traj = work.trajectories("collect", lambda: trajectories.collect(
        model, question_ids(tokenizer, 0, cfg.train_prompts), cfg.block_size, cfg.max_new_tokens,
        desc=f"trajectories n={cfg.block_size}", workers=cfg.workers))
    before = score(work.result("before", lambda: evaluate(model, tokenizer, cfg)), cfg)
    trajectory_before = work.result("trajectory_before", lambda: trajectory(model, tokenizer, cfg))
    seen_before = work.result("seen_before", lambda: seen_tpf(model, tokenizer, cfg))
    log = work.training("train", model, lambda resume: train_and_check(model, tokenizer, traj, cfg.train, resume=resume))
    save_checkpoint(model, tokenizer, folder / "jacobi-forcing", cfg.train, log)
    after = score(work.result("after", lambda: evaluate(model, tokenizer, cfg)), cfg)
    trajectory_after = work.result("trajectory_after", lambda: trajectory(model, tokenizer, cfg))
    seen_after = work.result("seen_after", lambda: seen_tpf(model, tokenizer, cfg))
    summary = {"settings": asdict(cfg), "seconds": work.times, "peak_memory_gb": remember_peak(folder),
               "trajectories": len(traj), "log": log, "before": before, "after": after,
               "trajectory": {"before": trajectory_before, "after": trajectory_after},
               "seen": {"before": seen_before, "after": seen_after}}
    if results is not None:
        results.parent.mkdir(parents=True, exist_ok=True)
        results.write_text(json.dumps(summary, indent=1, default=str))
    return summary


def remember_peak(folder: Path) -> float:
    """The largest peak memory of every run of the recipe in `folder` so far (a resumed run
    remembers the peak of the runs before it)."""
    path = folder / "peak_memory_gb"
    peak = max(peak_memory_gb(), float(path.read_text()) if path.exists() else 0.0)
    path.write_text(f"{peak:.2f}")
    return peak


def peak_memory_gb() -> float:
    """The peak resident memory of this process or of its largest worker (Linux reports KiB)."""
    usage = max(resource.getrusage(who).ru_maxrss for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return usage / 2**20


def recipe_command(args) -> None:
    """The real-Qwen recipe; prints TPF, speedup and accuracy before and after."""
    summary = run(replace(PRESETS[args.preset], base=args.base), args.work, args.results)
    for name in summary["before"]["methods"]:
        before, after = summary["before"]["methods"][name], summary["after"]["methods"][name]
        print(f"{name:16s} TPF {before['tpf']:.2f} -> {after['tpf']:.2f}, "
              f"speedup {before['speedup']:.2f}x -> {after['speedup']:.2f}x")
    print(f"accuracy {summary['before']['accuracy']:.1%} -> {summary['after']['accuracy']:.1%}")


def add_commands(commands) -> None:
    p = commands.add_parser("recipe", help="Jacobi Forcing on the real Qwen: its own GSM8K trajectories, round 1, "
                                           "before/after (needs requirements-qwen.txt; hours on a CPU)")
    p.add_argument("--preset", default="cpu", choices=list(PRESETS),
                   help="cpu: a reduced run for 2 cores; gpu: the paper's round-1 settings (with --device cuda)")
    p.add_argument("--base", default=Recipe.base, help="a chat model: the alias, a directory or a hub id")
    p.add_argument("--work", type=Path, default=Path("runs/qwen"),
                   help="trajectories, snapshots and the trained checkpoint; a rerun resumes")
    p.add_argument("--results", type=Path, default=Path("figures/results") / "qwen_jacobi_forcing.json")
    p.set_defaults(run=recipe_command)
