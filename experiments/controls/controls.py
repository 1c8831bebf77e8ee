"""Controls: which part of the fine-tuning recipe costs held-out accuracy, and what buys TPF.

Usage (from the repository's root; about 90 min on 2 cores):
    python experiments/controls/controls.py [--arms ARM ...] [--work runs/controls]
It writes figures/results/controls.json and draws experiments/controls/controls.png from it
(docs/results.md, "The controls").

Every arm is one round-1 fine-tune of the base model on its own n = 16
trajectories — `steps` steps of `batch_size` examples drawn from the first
`prompts` training prompts — that differs from the reference arm (Jacobi
Forcing, λ = 10, lr 1e-4, 1,500 prompts) in the setting its name gives:

    AR only            the same packed batches without noisy blocks (L = λ·L_AR)
    λ, lr              the AR weight and the peak learning rate (the base's: 2e-3)
    answer-only AR     the AR loss on the answer's tokens only
    prompts            how many trajectories the steps draw from (memorisation)
    no short consistency   short answers train on the AR loss alone
    random schedule offset each example's progressive schedule starts at a random
                       block of the window (a short answer's T ≈ 3 blocks otherwise
                       always get t = 0, 1/15, 2/15: one to three positions, the
                       same every epoch, each weighted 1/(C·T))
    CLLM               CLLM's trainer (one example per block, ε = 0.1) on the same data

plus the base model itself (no training), scored on the same problems. The
figure groups the arms as PANELS does.

Held-out accuracy is scored during training (steps 0, 50, 100, 200 and the
last, on `eval_problems` mixed problems) and, at the end, per length bucket on
the benchmark's first `problems` problems (`bench.scores`' problems, the same
`evaluate`). Arms run one per one-thread process; each keeps a snapshot
every 100 steps and its finished result in the work folder, so a rerun resumes.

The arms train with the settings the controls had when they ran (figures/results/controls.json
records them): torch's AdamW ε 1e-8 and every schedule from block 0, not the shipped recipe's
ε 1e-4 and random offset.
"""
import argparse
import json
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from pathlib import Path

import matplotlib.pyplot as plt

from jacobi_min.model import load
from jacobi_min.tools import task
from jacobi_min.tools.cli import at_least
from jacobi_min.tools.evaluate import HeldOutCheck, evaluate, train_and_check
from jacobi_min.tools.figures import save
from jacobi_min.tools.pipeline import RECIPE, PipelineConfig, Work, collect
from jacobi_min.train import TrainConfig
from jacobi_min.utils import atomic_write, pmap

HERE = Path(__file__).parent

REFERENCE = {"lam": 10.0, "lr": 1e-4}
OLD_RECIPE = {"lam": 3.0, "lr": 5e-4}  # round 1 of the models this round replaced
CLLM = {key: RECIPE["cllm"][key] for key in ("method", "label_smoothing")}  # CLLM's trainer, at the arm's λ
ARMS = {  # name -> (training prompts, TrainConfig settings)
    "base (no training)": (1500, {"steps": 0}),
    "old recipe (λ 3, lr 5e-4)": (1500, OLD_RECIPE),
    "λ 10, lr 1e-4 (reference)": (1500, REFERENCE),
    "3200 prompts": (3200, REFERENCE),
    "AR only (λ 3, lr 5e-4)": (1500, {**OLD_RECIPE, "consistency_on": ()}),
    "AR only (λ 10, lr 1e-4)": (1500, {**REFERENCE, "consistency_on": ()}),
    "AR only, answer-only (λ 10, lr 1e-4)": (1500, {**REFERENCE, "consistency_on": (), "ar_on_prompt": False}),
    "CLLM, 3200 prompts, λ 10": (3200, {**REFERENCE, **CLLM}),
    "λ 10, lr 5e-4": (1500, {"lam": 10.0, "lr": 5e-4}),
    "answer-only AR": (1500, {**REFERENCE, "ar_on_prompt": False}),
    "no short consistency": (1500, {**REFERENCE, "consistency_on": ("medium", "long")}),
    "random schedule offset": (1500, {**REFERENCE, "random_offset": True}),
    "3200 prompts, λ 3": (3200, {**REFERENCE, "lam": 3.0}),
    "3200 prompts, λ 30": (3200, {**REFERENCE, "lam": 30.0}),
    "CLLM, 3200 prompts, λ 3": (3200, {**REFERENCE, **CLLM, "lam": 3.0}),
    "CLLM, 3200 prompts, λ 30": (3200, {**REFERENCE, **CLLM, "lam": 30.0}),
    "300 prompts": (300, REFERENCE),
}

PANELS = {
    "the set-up alone: the same fine-tunes without consistency (AR only)": [
        "old recipe (λ 3, lr 5e-4)", "AR only (λ 3, lr 5e-4)", "λ 10, lr 1e-4 (reference)", "AR only (λ 10, lr 1e-4)",
        "AR only, answer-only (λ 10, lr 1e-4)"],
    "one change to the starting recipe (λ 10, lr 1e-4, 1,500 prompts)": [
        "λ 10, lr 1e-4 (reference)", "λ 10, lr 5e-4", "answer-only AR", "no short consistency", "random schedule offset",
        "300 prompts", "3200 prompts", "3200 prompts, λ 3", "3200 prompts, λ 30", "CLLM, 3200 prompts, λ 3",
        "CLLM, 3200 prompts, λ 10", "CLLM, 3200 prompts, λ 30"],
}


@dataclass
class ControlsConfig:
    arms: dict = field(default_factory=lambda: dict(ARMS))
    steps: int = 250
    batch_size: int = 8
    eval_problems: int = 30  # mixed, scored during training
    problems: int = 100  # per length bucket, scored at the end
    block_size: int = 16
    workers: int = 2
    base: str = "base"
    results: Path = Path("figures/results") / "controls.json"


def arm_config(cfg: ControlsConfig, name: str) -> TrainConfig:
    settings = cfg.arms[name][1]
    return replace(TrainConfig(steps=cfg.steps, batch_size=cfg.batch_size, save_every=100, adam_eps=1e-8,
                               random_offset=False), **settings)


def slug(name: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in name).strip("-")


def run_arm(cfg: ControlsConfig, folder: Path, traj: list[dict], name: str) -> dict:
    """Train one arm from the base model (resuming a snapshot), then score it per bucket."""
    path = folder / f"{slug(name)}.json"
    if path.exists():
        return json.loads(path.read_text())
    prompts, config = cfg.arms[name][0], arm_config(cfg, name)
    model, tokenizer = load(cfg.base)
    check = HeldOutCheck(every=200, problems=cfg.eval_problems, block_size=cfg.block_size)
    log = train_and_check(model, tokenizer, traj[:prompts], config, check=check, progress=False,
                          resume=folder / f"{slug(name)}.resume.pt")
    scores = {length: evaluate(model, tokenizer, task.problems("test", cfg.problems, seed=0, length=length),
                               cfg.block_size, progress=False) for length in task.BUCKETS}
    kept = [r for r in log if "accuracy" in r or r["step"] % 20 == 0]  # the scores, and the losses every 20 steps
    result = {"prompts": prompts, "config": asdict(config), "log": kept, "scores": scores}
    atomic_write(path, json.dumps(result))
    return json.loads(path.read_text())  # as a rerun reads it back


def run(cfg: ControlsConfig = ControlsConfig(), folder: Path = Path("runs/controls")) -> dict:
    """Every arm (the finished ones read back); writes `cfg.results` and returns it."""
    work = Work(folder)
    need = max(prompts for prompts, _ in cfg.arms.values())
    model, tokenizer = load(cfg.base)
    traj = work.trajectories("round1", lambda: collect(model, tokenizer, replace(
        PipelineConfig(), train_prompts=need, workers=cfg.workers, base=cfg.base), 16, "trajectories n=16 (base)"))
    names = list(cfg.arms)
    results = dict(zip(names, pmap(partial(run_arm, cfg, folder, traj), names, cfg.workers, "controls")))
    summary = {"steps": cfg.steps, "batch_size": cfg.batch_size, "eval_problems": cfg.eval_problems,
               "problems": cfg.problems, "block_size": cfg.block_size, "arms": results}
    cfg.results.parent.mkdir(parents=True, exist_ok=True)
    cfg.results.write_text(json.dumps(summary, indent=1))
    return summary


def controls_command(args) -> None:
    """Run (or read back) the chosen arms; print each one's accuracy and TPF per bucket."""
    cfg = ControlsConfig(arms={a: ARMS[a] for a in args.arms}, steps=args.steps, problems=args.problems,
                         workers=args.workers, results=args.results)
    for name, arm in run(cfg, args.work)["arms"].items():
        print(f"{name:32s} " + "  ".join(f"{length} {s['accuracy']:.0%} / TPF {s['tpf']:.2f}"
                                         for length, s in arm["scores"].items()))


def control_curves(data: dict):
    """Held-out accuracy (the in-loop mixed problems) against training step, one panel per group of arms."""
    fig, axes = plt.subplots(1, len(PANELS), figsize=(7 * len(PANELS), 4.5), sharey=True)
    base = 100 * data["arms"]["base (no training)"]["log"][0]["accuracy"]
    colors = dict(zip(ARMS, plt.cm.tab20.colors))  # one colour per arm in every panel
    for ax, (title, names) in zip(axes, PANELS.items()):
        ax.axhline(base, color="grey", lw=1, label="base model")
        for name in (n for n in names if n in data["arms"]):
            evals = [r for r in data["arms"][name]["log"] if "accuracy" in r]
            ax.plot([r["step"] for r in evals], [100 * r["accuracy"] for r in evals], marker="o", ms=3,
                    color=colors[name], label=name.replace("(reference)", "(the starting recipe)"))
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("training step")
        ax.legend(fontsize=7, loc="lower left")
    axes[0].set_ylabel(f"held-out accuracy (%), {data['eval_problems']} mixed problems")
    return fig


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--work", type=Path, default=Path("runs/controls"), help="trajectories and finished arms; a rerun resumes")
    p.add_argument("--arms", nargs="+", choices=list(ARMS), default=list(ARMS), metavar="ARM",
                   help="arms to run (default: all of " + ", ".join(ARMS) + ")")
    p.add_argument("--steps", type=at_least(1), default=ControlsConfig.steps)
    p.add_argument("--problems", type=at_least(1), default=ControlsConfig.problems, help="per length bucket")
    p.add_argument("--workers", type=at_least(1), default=ControlsConfig.workers)
    p.add_argument("--results", type=Path, default=ControlsConfig.results)
    p.add_argument("--figures", type=Path, default=HERE, help="folder for controls.png")
    args = p.parse_args(argv)
    controls_command(args)
    data = json.loads(args.results.read_text())
    save(control_curves(data), args.figures / "controls.png", [args.results])


if __name__ == "__main__":
    main()
