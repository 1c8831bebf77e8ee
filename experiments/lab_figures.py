"""The lab's figures, drawn from the experiments' results (not part of the package, not tested).

    python experiments/lab_figures.py     (from the repository's root; seconds)

writes experiments/figures/training_runs.png (accuracy against TPF of every training run,
experiments/training_runs.json), frontier_why.png (CLLM's ingredients added to Jacobi Forcing one
at a time, training_runs/frontier-why/) and long_answer_positions.png (long answers by kind of
position, training_runs/round4/) and noise_schedule_ablation.png (iterations per token of each
noise schedule, figures/results/noise_schedules.json), each stamped with the digest of its
inputs. docs/results.md shows them.
"""
import json
import re
from pathlib import Path

import matplotlib.pyplot as plt

from jacobi_min.tools.figures import COLORS, save

HERE = Path(__file__).parent
RUNS = HERE / "training_runs"


def frontier_points(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The (TPF, accuracy) points no other point beats on both, in order of TPF."""
    return sorted(p for p in points if not any(q != p and q[0] >= p[0] and q[1] >= p[1] for q in points))


def training_runs(runs: dict, results: dict):
    """Accuracy against TPF (greedy Jacobi, n = 16) of every trained model, one panel per length
    bucket: each method's runs as dots (`runs["methods"]` names each run's method, `runs["shipped"]`
    the shipped ones, circled) and its frontier as a line, the base model's accuracy, and the
    targets 1 and 3 points below it. The frontier's and the shipped runs' dots are labelled by what follows
    the first comma of their label; the others stay unlabelled (their numbers are in `runs`)."""
    buckets = results["buckets"]
    fig, axes = plt.subplots(1, len(buckets), figsize=(6 * len(buckets), 4.8), squeeze=False)
    axes = axes[0]
    for ax, (length, bucket) in zip(axes, buckets.items()):
        base = 100 * bucket["methods"][0]["accuracy"]
        ax.axhline(base, color="grey", lw=1, label="base model (AR)")
        ax.axhline(base - 1, color="grey", ls="--", lw=1, label="target: 1 point below the base")
        ax.axhline(base - 3, color="grey", ls=":", lw=1, label="must: 3 points below the base")
        for method in ("Jacobi Forcing", "CLLM"):
            labels = [label for label, m in runs["methods"].items() if m == method]
            points = [(runs["scores"][label][length]["tpf"], 100 * runs["scores"][label][length]["accuracy"])
                      for label in labels]
            line = frontier_points(points)
            ax.plot(*zip(*line), color=COLORS[method], lw=1.5, label=f"{method}: frontier")
            ax.scatter(*zip(*points), color=COLORS[method], zorder=3, s=18)
            for label, (x, y) in zip(labels, points):
                if label in runs["shipped"]:
                    ax.scatter(x, y, s=130, facecolors="none", edgecolors="black", zorder=4)
                if label in runs["shipped"] or (x, y) in line:
                    ax.annotate(in_words(label.split(", ", 1)[-1]), (x, y), textcoords="offset points", xytext=(4, 3),
                                fontsize=6.5, rotation=20, color=COLORS[method])
        ax.set_xlabel(f"tokens per forward (greedy Jacobi, n = {runs['block_size']})")
        ax.set_title(f"{length} answers, {runs['problems']} held-out problems", fontsize=10)
    axes[0].set_ylabel("accuracy (%)")
    axes[0].scatter([], [], s=130, facecolors="none", edgecolors="black", label="shipped")
    fig.legend(*axes[0].get_legend_handles_labels(), fontsize=8, loc="lower center", ncol=6,
               bbox_to_anchor=(0.5, 1.0))  # above the figure: `save` grows the box to take it in
    return fig


RUN_WORDS = [("R3 avg of both polishes", "round 3 as shipped"), ("R4 avg of both polishes", "round 4, finished as round 3"),
             ("avg + AR polish", "averaged, + 50 AR-only steps"), ("avg + long polish", "averaged, + 50 steps on long answers"),
             ("R3/R4 halfway", "weights halfway between rounds 3 and 4"), ("seed average", "two seeds averaged"),
             ("R1+R2", "rounds 1 and 2,"), ("no 1/T", "without 1/T"), (" seed ", ", training seed ")]
POSITION_MODELS = {"base": "base model", "shipped": "round 3 (shipped)", "round-4-runs-averaged": "round 4, two seeds averaged",
                   "round-4-runs-no-long-consistency": "round 4 without long answers' consistency", "round-4": "round 4, one seed",
                   "halfway": "weights halfway between rounds 3 and 4"}  # margins' and corrections' model keys, in words


def in_words(label: str) -> str:
    """A training run's label (`training_runs.json`) in words: rounds spelled out, no lab shorthand."""
    for run, words in RUN_WORDS:
        label = label.replace(run, words)
    return re.sub(r"\bR(\d)\b", r"round \1", label)


WHY_REFERENCE = "Jacobi Forcing, R1 λ 10"  # the arms' reference: round 1 as shipped, in training_runs.json
WHY_ARMS = {"reference": ("Jacobi Forcing, round 1 as shipped", COLORS["Jacobi Forcing"], "o"),
            "clean-context": ("the same + CLLM's mask (clean context)", "#17becf", "o"),
            "draw-by-blocks": ("the same + CLLM's draw (answers in proportion to their blocks)", "#8c564b", "o"),
            "undivided": ("the same + CLLM's weight per example (no 1/T)", "#e377c2", "o"),
            "cllm-1600": ("CLLM, λ 10, after the same 1,600 steps", COLORS["CLLM"], "s")}  # eval label: legend, colour, marker
WHY_SWEEPS = {"reference": "round 1", "clean-context": "+ clean context", "draw-by-blocks": "+ CLLM's draw",
              "undivided": "+ no 1/T", "cllm": "CLLM, λ 30"}  # sweep_<key>.json: the label of its bars
WHY_DECODERS = {"Jacobi": ((1, 0), "#9e9e9e"), "recycling only (pool 4)": ((1, 4), COLORS["prompt lookup"]),
                "multi-block + recycling (K 2, pool 4)": ((2, 4), COLORS["Jacobi Forcing + MR"])}


def frontier_why(runs: dict, arms: list[dict], sweeps: dict[str, dict]):
    """Left, one panel per length bucket: accuracy against TPF of round 1 of Jacobi Forcing (the
    reference, seed 0 from `runs`), the same with one of CLLM's ingredients added, and CLLM's λ
    sweep (from `runs`); `arms` are eval files whose labels are a `WHY_ARMS` key, with "-s<seed>"
    for seeds other than 0 (small dots). Right: TPF of three decoders (n = 16; `WHY_DECODERS`: K and
    pool, r 0.25, ours) on the sweep's long answers, per model (`sweeps`: label -> a sweep file)."""
    scores = {"reference": runs["scores"][WHY_REFERENCE]} | {k: v for arm in arms for k, v in arm["scores"].items()}
    buckets = list(scores["clean-context"])
    fig, axes = plt.subplots(1, len(buckets) + 1, figsize=(5 * len(buckets) + 6, 4.4))
    cllm = [label for label, method in runs["methods"].items() if method == "CLLM"]
    for ax, length in zip(axes, buckets):
        xy = lambda score: (score[length]["tpf"], 100 * score[length]["accuracy"])
        line = sorted((xy(runs["scores"][label]), label.split(", ")[-1]) for label in cllm)
        ax.plot(*zip(*(p for p, _ in line)), color=COLORS["CLLM"], marker="o", ms=4, label="CLLM, its λ sweep (1,600 + 800 steps)")
        for p, lam in line:
            ax.annotate(lam, p, textcoords="offset points", xytext=(4, 3), fontsize=7, color=COLORS["CLLM"])
        for label, score in scores.items():
            arm, _, seed = label.partition("-s")
            name, color, marker = WHY_ARMS[arm]
            ax.scatter(*xy(score), color=color, marker=marker, s=14 if seed else 45, zorder=3, label=None if seed else name)
        ax.scatter([], [], color="black", s=14, label="other training seeds of the same")
        ax.margins(x=0.12)
        ax.set_xlabel(f"tokens per forward (greedy Jacobi, n = {runs['block_size']})")
        ax.set_title(f"{length} answers, {arms[0]['problems']} held-out problems", fontsize=10)
    axes[0].set_ylabel("accuracy (%)")
    axes[0].legend(fontsize=7, loc="lower left")
    multiblock_bars(axes[-1], sweeps)
    return fig


def multiblock_bars(ax, sweeps: dict[str, dict]) -> None:
    """TPF of each `WHY_DECODERS` decoder per model, from sweep files (ours, not the official variant)."""
    width = 0.8 / len(WHY_DECODERS)
    for i, (decoder, ((k, pool), color)) in enumerate(WHY_DECODERS.items()):
        tpf = [next(r["tpf"] for r in sweep["rows"] if (r["blocks"], r["pool_size"], r["official"]) == (k, pool, False))
               for sweep in sweeps.values()]
        at = [x + (i - (len(WHY_DECODERS) - 1) / 2) * width for x in range(len(sweeps))]
        ax.bar(at, tpf, width, color=color, label=decoder)
        for x, y in zip(at, tpf):
            ax.annotate(f"{y:.2f}", (x, y), ha="center", va="bottom", fontsize=7)
    ax.set_xticks(range(len(sweeps)), list(sweeps), fontsize=7, rotation=15)
    ax.set_ylabel("tokens per forward")
    first = next(iter(sweeps.values()))
    ax.set_title(f"{first['problems']} {first['length']} answers, n = 16", fontsize=10)
    ax.legend(fontsize=7, loc="upper left")
    ax.set_ylim(0, 1.3 * ax.get_ylim()[1])


def long_answer_positions(margins: dict, corrections: dict):
    """Long answers by kind of position (`round4/margins.py`, `round4/corrections.py`). Left: how many
    positions of each kind a model, teacher-forced on the worked solution, would leave it (margin < 0), per
    model. Right: the share of each kind's positions that a greedy Jacobi forward had to correct (the
    draft had them wrong), per model."""
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.6))
    kinds = list(next(iter(margins["models"].values()))["kinds"])
    colors = dict(zip(margins["models"], plt.cm.tab10.colors))  # one colour per model in both panels
    left = f"positions where the model leaves the worked solution\n(teacher-forced, {margins['problems']:,} held-out long answers)"
    right = f"% of positions a Jacobi forward corrected\n(n = {corrections['block_size']}, {corrections['problems']} long answers)"
    panels = [(margins["models"], lambda kind: kind["below_0"], left),
              (corrections["models"], lambda kind: 100 * kind["rate"], right)]
    for ax, (models, height, ylabel) in zip(axes, panels):
        width = 0.8 / len(models)
        for i, (label, m) in enumerate(models.items()):
            at = [x + (i - (len(models) - 1) / 2) * width for x in range(len(kinds))]
            heights = [height(m["kinds"][k]) for k in kinds]
            ax.bar(at, heights, width, color=colors[label], label=POSITION_MODELS.get(label, label) if ax is axes[0] else None)
            for x, y in zip(at, heights):
                ax.annotate(f"{y:.0f}", (x, y), ha="center", va="bottom", fontsize=6)
        ax.set_xticks(range(len(kinds)), [k.replace(" ", "\n") for k in kinds])
        ax.set_ylabel(ylabel, fontsize=9)
    fig.legend(loc="upper center", ncol=len(colors), fontsize=8, bbox_to_anchor=(0.5, 1.06))
    return fig


def ablation(summary: dict):
    """One panel per study: mean iterations per token over seeds (a labelled point), each seed (small
    dots), and the paper's value for the three schedules (a hollow diamond beside ours). Points, not
    bars: the axis is zoomed onto the values, so that their differences show, and a bar would mislead
    from a non-zero origin."""
    studies, paper = summary["studies"], summary["paper"]["iterations_per_token"]
    widths = [len(data["runs"]) + 1 for data in studies]
    fig, axes = plt.subplots(1, len(studies), figsize=(4.5 + 1.1 * sum(widths), 4.5), squeeze=False,
                             gridspec_kw={"width_ratios": widths})
    for ax, data in zip(axes[0], studies):
        ablation_panel(ax, data, paper)
    axes[0][-1].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    return fig


def ablation_panel(ax, data: dict, paper: dict) -> None:
    """One study of noise_schedules.json on `ax`: each variant's seeds, their mean and the paper's value."""
    names = list(data["runs"])
    for i, name in enumerate(names):
        values = [r["iterations_per_token"] for r in data["runs"][name]]
        mean = sum(values) / len(values)
        colour = "#1f77b4" if name in paper else "#7f7f7f"
        ax.errorbar(i, mean, yerr=[[mean - min(values)], [max(values) - mean]], marker="o", ms=8, capsize=4,
                    color=colour, label="here: mean over seeds (bar: min–max)" if i == 0 else None)
        ax.scatter([i] * len(values), values, color="black", s=10, zorder=3)
        accuracy = sum(r["accuracy"] for r in data["runs"][name]) / len(values)
        ax.annotate(f"{mean:.3f}\n{100 * accuracy:.0f}% right", (i, mean), xytext=(10, 0), textcoords="offset points",
                    va="center", fontsize=8)
        if name in paper:
            ax.scatter(i - 0.25, paper[name], marker="D", facecolor="none", edgecolor="#d62728", s=50,
                       label="the paper (7B, its own scale)" if name == "progressive" else None)
            ax.annotate(f"{paper[name]:.2f}", (i - 0.25, paper[name]), xytext=(-8, 0),
                        textcoords="offset points", ha="right", va="center", fontsize=8, color="#d62728")
    ax.set_xticks(range(len(names)), [f"{n.replace(', ', ',' + chr(10))}\n({len(data['runs'][n])} seed"
                                      f"{'s' * (len(data['runs'][n]) > 1)})" for n in names], fontsize=8)
    ax.set_xlim(-0.8, len(names) - 0.3)
    ax.set_ylabel("iterations per token (lower is better)")
    start = {"offset 0": "every schedule starts at block 0 (the paper's)",
             "random offset": "each example starts at a random block (the shipped recipe)"}.get(data.get("offset"), "")
    ax.set_title(f"{start}\nround 1, {data['steps']} steps, n = {data['block_size']}, {data['problems']} held-out "
                 f"{data['length']} answers", fontsize=9)


def jobs(runs: Path, bench: Path, runs_dir: Path = RUNS) -> dict:
    """figure name -> (its input files, a function drawing it) for every figure whose inputs exist."""
    out = {}
    results = lambda: json.loads(bench.read_text())
    if runs.exists() and bench.exists():
        out["training_runs.png"] = ([runs, bench], lambda: training_runs(json.loads(runs.read_text()), results()))
    why = runs_dir / "frontier-why"
    arms = [why / name for name in ("scores.json", "scores_reference_seeds.json", "scores_s1.json", "scores_cllm-1600.json",
                                    "scores_undivided.json") if (why / name).exists()]
    sweeps = {label: why / f"sweep_{key}.json" for key, label in WHY_SWEEPS.items()}
    if runs.exists() and why / "scores.json" in arms and all(p.exists() for p in sweeps.values()):
        read = lambda path: json.loads(path.read_text())
        out["frontier_why.png"] = ([runs, *arms, *sweeps.values()], lambda: frontier_why(
            read(runs), [read(path) for path in arms], {label: read(path) for label, path in sweeps.items()}))
    schedules = bench.with_name("noise_schedules.json")  # beside the benchmark, in figures/results/
    if schedules.exists():
        out["noise_schedule_ablation.png"] = ([schedules], lambda: ablation(json.loads(schedules.read_text())))
    round4 = runs_dir / "round4"
    positions = [round4 / "margins_1200.json", round4 / "corrections_300.json"]
    if all(path.exists() for path in positions):
        out["long_answer_positions.png"] = (positions, lambda: long_answer_positions(
            *(json.loads(path.read_text()) for path in positions)))
    return out


def main() -> None:
    (HERE / "figures").mkdir(exist_ok=True)
    for name, (sources, draw) in jobs(HERE / "training_runs.json", Path("figures/results/benchmark.json")).items():
        save(draw(), HERE / "figures" / name, sources)
        print(HERE / "figures" / name)


if __name__ == "__main__":
    main()
