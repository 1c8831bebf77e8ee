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

Presets: "cpu" (a reduced run for 2 CPU cores) and "gpu" (on cuda, the paper's round-1
settings: every training question, lr 1e-5, λ = 10, w = 16, global batch 4, one pass over the data;
collection and evaluation decode 32 questions a forward with batch.py, and batched greedy AR is then
the reference each Jacobi row must equal). `--dry-run` runs a preset's steps at a toy size on the
embedded tiny model and its own task, on the CPU, in about 20 s.

Every stage's output lands in the work folder and a rerun resumes after the last finished stage
(`pipeline.Work`); training resumes mid-stage from its snapshot. The summary (settings, seconds per
stage, peak memory, before / after) is written to `results`. Why float32 on a CPU (no bfloat16
autocast) and why the LM head stays untied: docs/real_qwen.md.
"""
import json
import resource
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from pathlib import Path
from statistics import mean

from .. import trajectories
from ..batch import batch_jacobi_decode
from ..jacobi import jacobi_decode
from ..train import TrainConfig, save_checkpoint, train
from ..utils import eos_ids
from . import qwen, realtasks, task
from .cli import load_model
from .exactness import exactness, reference
from .pipeline import Work
from .timing import timed


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
    batch: int = 1  # questions per forward in collection and evaluation (1: each method timed against generate)
    questions: str = "gsm8k"  # or "tiny": the embedded task's problems, for --dry-run
    trajectory_tokens: int = 48  # new tokens of the recorded before / after trajectory
    seen_prompts: int = 2  # training questions decoded again after training
    train: TrainConfig = field(default_factory=lambda: TrainConfig(  # round 1 as the paper trains its 7B models:
        steps=32, batch_size=1, lr=1e-5, adam_eps=1e-8, random_offset=False, save_every=8,  # torch's ε, offset 0
        freeze_embeddings=True, ar_on_prompt=False))  # no held-out check in training: `evaluate` runs before and after

    def __post_init__(self):
        if not 1 <= self.seen_prompts <= self.train_prompts:
            raise ValueError(f"seen_prompts must be in [1, train_prompts = {self.train_prompts}], got {self.seen_prompts}")


RESULTS = Path("figures/results") / "qwen_jacobi_forcing.json"
PRESETS = {
    "cpu": Recipe(),
    "gpu": Recipe(device="cuda", train_prompts=800, eval_prompts=319, workers=1, batch=32, eval_multiblock_sizes=(),
                  train=replace(Recipe().train, steps=200, batch_size=4, lr=1e-5, save_every=50,
                                      autocast="bfloat16")),
}


def dry_run(cfg: Recipe) -> Recipe:
    """`cfg`'s steps at a toy size on the embedded tiny model, its task and the CPU (float32)."""
    return replace(cfg, base="base", device="cpu", questions="tiny", train_prompts=8, eval_start=100, eval_prompts=6,
                   batch=min(cfg.batch, 4), max_new_tokens=48, trajectory_tokens=16, seen_prompts=2,
                   train=replace(cfg.train, steps=2, save_every=2, autocast=None))


def checkers(cfg: Recipe, start: int, count: int) -> list:
    """is_correct(response) for questions [start, start + count): GSM8K test questions, or with
    questions = "tiny" the embedded task's held-out problems."""
    if cfg.questions == "tiny":
        return [partial(task.is_correct, answer=p.answer) for p in task.problems("test", start + count)[start:]]
    return [partial(realtasks.gsm8k_correct, answer=r["answer"]) for r in realtasks.gsm8k(start + count)[start:]]


def question_ids(tokenizer, cfg: Recipe, start: int, count: int) -> list[list[int]]:
    """The prompts of the same questions: GSM8K's in the chat template, or the tiny task's as they are."""
    if cfg.questions == "tiny":
        return [tokenizer(p.prompt)["input_ids"] for p in task.problems("test", start + count)[start:]]
    rows = realtasks.gsm8k(start + count)[start:]
    return [realtasks.chat_ids(tokenizer, realtasks.gsm8k_prompt(r)) for r in rows]


def finished(model, tokens: list[int]) -> bool:
    """Whether an answer ended with an EOS token rather than at the token limit."""
    return bool(tokens) and tokens[-1] in eos_ids(model)


def evaluate(model, tokenizer, cfg: Recipe) -> dict:
    """Every method against greedy `generate` on the held-out questions: exactness, TPF, speedup, and
    `generate`'s answers (their text, and whether each ended before max_new_tokens) for `score`."""
    ids = question_ids(tokenizer, cfg, cfg.eval_start, cfg.eval_prompts)
    if cfg.batch > 1:
        report = batched_exactness(model, ids, cfg)
    else:
        report = exactness(model, tokenizer, ids, cfg.eval_block_sizes, cfg.max_new_tokens, cfg.eval_multiblock_sizes)
    done = [finished(model, t) for t in report["reference_tokens"]]
    generate_seconds = sum(report["reference_seconds"])
    return {"ended": done, "reference_equals_generate": report.get("reference_equals_generate"),
            "answer_tokens": mean(len(t) for t in report["reference_tokens"]),
            "methods": {name: {"exact": row["exact"], "total": row["total"], "tpf": mean(row["tpf"]),
                               "speedup": generate_seconds / sum(row["seconds"])}
                        for name, row in report["methods"].items()},
            "texts": [tokenizer.decode(t, skip_special_tokens=True) for t in report["reference_tokens"]]}


def batched_exactness(model, ids: list[list[int]], cfg: Recipe, checked: int = 4) -> dict:
    """`exactness`'s report for batched decoding, `cfg.batch` questions a forward: batched greedy AR is the
    reference (it equals `generate`, checked on the first `checked` questions) and each Jacobi row must equal it;
    seconds are per batch."""
    def decode(n: int) -> tuple[list[list[int]], list[float], list[float]]:
        tokens, seconds, tpf = [], [], []
        for i in range(0, len(ids), cfg.batch):
            (results, _), t = timed(batch_jacobi_decode, model, ids[i:i + cfg.batch], n, cfg.max_new_tokens)
            tokens += [r.tokens for r in results]
            tpf += [r.tpf for r in results]
            seconds.append(t)
        return tokens, seconds, tpf

    expected, expected_seconds, _ = decode(1)
    report = {"methods": {}, "reference_seconds": expected_seconds, "reference_tokens": expected,
              "reference_equals_generate": sum(reference(model, q, cfg.max_new_tokens) == e
                                               for q, e in zip(ids[:checked], expected))}
    for n in cfg.eval_block_sizes:
        tokens, seconds, tpf = decode(n)
        report["methods"][f"jacobi n={n}"] = {"exact": sum(t == e for t, e in zip(tokens, expected)),
                                              "total": len(ids), "tpf": tpf, "seconds": seconds}
    return report


def score(result: dict, cfg: Recipe) -> dict:
    """`evaluate`'s result with how many answers ended and its GSM8K accuracy, scored when the
    summary is written (so a fixed checker re-scores a finished run). An answer cut at max_new_tokens has not given its final
    number and counts as wrong (the checker, which falls back to the last number in the text,
    would read one from a step such as "Step 1")."""
    checks = checkers(cfg, cfg.eval_start, cfg.eval_prompts)
    correct = [e and check(t) for e, t, check in zip(result["ended"], result["texts"], checks)]
    return result | {"finished": sum(result["ended"]), "accuracy": mean(correct)}


def trajectory(model, tokenizer, cfg: Recipe) -> list[dict]:
    """Every state of the first blocks of the first held-out question: [{"context", "states"}] per block."""
    ids = question_ids(tokenizer, cfg, cfg.eval_start, 1)[0]
    result = jacobi_decode(model, ids, cfg.block_size, cfg.trajectory_tokens, record=True)
    return [{"context": b.context, "states": b.states} for b in result.blocks]


def seen_tpf(model, tokenizer, cfg: Recipe) -> list[float]:
    """TPF of Jacobi at n = block_size on the first `seen_prompts` training questions."""
    ids = question_ids(tokenizer, cfg, 0, cfg.seen_prompts)
    return [jacobi_decode(model, q, cfg.block_size, cfg.max_new_tokens).tpf for q in ids]


def run(cfg: Recipe, folder: Path, results: Path | None = None) -> dict:
    """The whole recipe in `folder` (resuming), the trained checkpoint in `folder`/jacobi-forcing;
    returns the summary, also written to `results` when given."""
    work = Work(folder)
    model, tokenizer = load_model(cfg.base, cfg.device)
    traj = work.trajectories("collect", lambda: trajectories.collect(
        model, question_ids(tokenizer, cfg, 0, cfg.train_prompts), cfg.block_size, cfg.max_new_tokens,
        desc=f"trajectories n={cfg.block_size}", workers=cfg.workers, batch=cfg.batch))
    before = score(work.result("before", lambda: evaluate(model, tokenizer, cfg)), cfg)
    trajectory_before = work.result("trajectory_before", lambda: trajectory(model, tokenizer, cfg))
    seen_before = work.result("seen_before", lambda: seen_tpf(model, tokenizer, cfg))
    log = work.training("train", model, lambda resume: train(model, tokenizer, traj, cfg.train, resume=resume))
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
    cfg = replace(PRESETS[args.preset], device=args.device or PRESETS[args.preset].device)
    results = args.work / "summary.json" if args.dry_run else RESULTS
    summary = run(dry_run(cfg) if args.dry_run else cfg, args.work, results)
    for name in summary["before"]["methods"]:
        before, after = summary["before"]["methods"][name], summary["after"]["methods"][name]
        print(f"{name:16s} TPF {before['tpf']:.2f} -> {after['tpf']:.2f}, "
              f"speedup {before['speedup']:.2f}x -> {after['speedup']:.2f}x")
    print(f"accuracy {summary['before']['accuracy']:.1%} -> {summary['after']['accuracy']:.1%}")


def add_commands(commands) -> None:
    p = commands.add_parser("recipe", help="Jacobi Forcing on the real Qwen: its own GSM8K trajectories, round 1, "
                                           "before/after (needs requirements-qwen.txt; hours on a CPU)")
    p.add_argument("--preset", default="cpu", choices=list(PRESETS),
                   help="cpu: a reduced run for 2 cores; gpu: the paper's round-1 settings on cuda; the summary goes "
                        f"to {RESULTS}")
    p.add_argument("--device", help="where to run it (default: the preset's: cpu, or cuda for gpu)")
    p.add_argument("--work", type=Path, default=Path("runs/qwen"),
                   help="trajectories, snapshots and the trained checkpoint; a rerun resumes")
    p.add_argument("--dry-run", action="store_true", help="the preset's steps at a toy size on the embedded tiny "
                                                          "model, on the CPU (about 20 s); the summary goes to WORK/summary.json")
    p.set_defaults(run=recipe_command)
