"""Rebuild every PNG in `figures/` from results files only (no model is run).

Inputs: `figures/results/benchmark.json` (bench), `figures/results/ablation.json`
(pipeline) with the longer schedule studies' `eval` files
(`training_runs/schedules/`, `training_runs/schedules-offset0/`), `figures/results/training_runs.json` (eval of every training run),
`figures/results/controls.json` (controls), the
`train_log.jsonl` of each trained checkpoint, and for the real Qwen
`qwen_exactness_float32.json` (exactness; optional `_extra.json` and
`_multiblock.json`: more methods, each against its own `generate` runs) with
`qwen_cost_model_float32.json` (cost-model), and `qwen_jacobi_forcing.json`
(recipe). Every PNG carries the SHA-256 of its input files in a text chunk;
`stale` lists the figures whose inputs have changed since they were drawn (a
test keeps the committed ones current).
"""
import hashlib
import json
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from PIL import Image

from .model import CHECKPOINTS
from .plots import acceptance_histogram

FIGURES = Path(__file__).parent.parent / "figures"
JACOBI_METHODS = ["Jacobi (base)", "CLLM", "CLLM + MR", "Jacobi Forcing", "Jacobi Forcing + MR"]
SOURCE_KEY = "Source-SHA256"  # PNG text chunk: the digest of the figure's input files
COLORS = {"AR": "grey", "prompt lookup": "#9467bd", "Jacobi (base)": "#1f77b4", "CLLM": "#ff7f0e",
          "CLLM + MR": "#d4a017", "Jacobi Forcing": "#2ca02c", "Jacobi Forcing + MR": "#d62728"}


def digest(sources: list[Path]) -> str:
    """SHA-256 over the bytes of a figure's input files: written into the PNG, checked by `stale`."""
    h = hashlib.sha256()
    for path in sources:
        h.update(path.read_bytes())
    return h.hexdigest()


def save(fig, path: Path, sources: list[Path]) -> None:
    """Write the PNG with its sources' digest; the bounding box grows to take in legends and labels
    drawn outside the Axes, so nothing is clipped."""
    fig.tight_layout()
    fig.savefig(path, dpi=120, bbox_inches="tight", metadata={SOURCE_KEY: digest(sources)})
    plt.close(fig)


def by_method(rows: list[dict]) -> dict[str, list[dict]]:
    out = {}
    for r in rows:
        out.setdefault(r["method"], []).append(r)
    return out


def bucket_label(length: str, bucket: dict) -> str:
    return f"{length}\n(mean {bucket['answer_tokens']:.0f} tokens)"


def metric_vs_length(results: dict, key: str, ylabel: str):
    """One line per method and block size across the length buckets; error bars: the range over
    chunks of problems where the results hold one (speedups)."""
    fig, ax = plt.subplots(figsize=(9, 4.5))
    buckets = results["buckets"]
    x = range(len(buckets))
    names = list(buckets)
    sizes = sorted({r["block_size"] for b in buckets.values() for r in b["methods"] if r["method"] in JACOBI_METHODS})
    for method in ["AR", "prompt lookup"] + JACOBI_METHODS:
        for n, style in zip(sizes if method in JACOBI_METHODS else [None], ["-", "--", ":"]):
            rows = [next(r for r in buckets[b]["methods"] if r["method"] == method and n in (None, r["block_size"]))
                    for b in names]
            y = [r[key] for r in rows]
            err = None
            if f"{key.removesuffix('_median')}_range" in rows[0]:
                lo_hi = [r[f"{key.removesuffix('_median')}_range"] for r in rows]
                err = [[v - lo for v, (lo, _) in zip(y, lo_hi)], [hi - v for v, (_, hi) in zip(y, lo_hi)]]
            label = method if n is None else f"{method}, n = {n}"
            ax.errorbar(x, y, yerr=err, ls=style, marker="o", capsize=3, color=COLORS[method], label=label)
    ax.set_xticks(list(x), [bucket_label(b, buckets[b]) for b in names])
    ax.set_xlabel("answer length bucket")
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))  # beside the data, never over it
    meta = results["meta"]
    ax.set_title(f"{ylabel} vs answer length ({meta['device']}, {meta['dtype']}, {meta['threads']} thread)", fontsize=10)
    return fig


def accuracy_vs_speedup(results: dict):
    """Every method and block size, one panel per length bucket; x error bars: range over chunks."""
    buckets = results["buckets"]
    fig, axes = plt.subplots(1, len(buckets), figsize=(5 * len(buckets), 4.2), sharey=True)
    for ax, (length, bucket) in zip(axes if len(buckets) > 1 else [axes], buckets.items()):
        for r in bucket["methods"]:
            lo, hi = r["speedup_range"]
            marker = "^" if r["method"] == "prompt lookup" else "s" if r["method"].endswith("MR") else "o"
            ax.errorbar(r["speedup_median"], 100 * r["accuracy"], xerr=[[r["speedup_median"] - lo], [hi - r["speedup_median"]]],
                        marker=marker, capsize=3, ls="none", color=COLORS[r["method"]],
                        label=f"{r['method']} ({r['model']}, n = {r['block_size']})")
        ax.set_xlabel("wall-clock speedup over AR (median, prefill excluded)")
        ax.set_title(f"{length} answers, {bucket['problems']} problems", fontsize=10)
    axes_list = axes if len(buckets) > 1 else [axes]
    axes_list[0].set_ylabel("accuracy (%)")
    handles, labels = axes_list[-1].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, 0), ncol=3)  # below the panels
    return fig


def acceptance(results: dict, length: str = "long", block_size: int = 16):
    fig, ax = plt.subplots(figsize=(7, 4))
    counts = {}
    for r in results["buckets"][length]["methods"]:
        if r["block_size"] == block_size and r["method"] in JACOBI_METHODS:
            counts[r["method"]] = [int(k) for k, v in r["accepted_histogram"].items() for _ in range(v)]
    acceptance_histogram(ax, counts, max_count=block_size, colors=COLORS)
    ax.set_title(f"new tokens per forward at n = {block_size}, {length} answers")
    return fig


def cost_model(results: dict):
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    costs = results["cost_model"]
    left.plot(costs["k"], [1000 * t for t in costs["latency_s"]], marker=".")
    left.set_xlabel("tokens in one forward, k")
    left.set_ylabel("latency L(k) (ms)")
    left.set_title(f"steady-state decoding step on {costs['context']} cached tokens\n(dips between sizes: the CPU's "
                   "matrix kernels change with k)", fontsize=10)
    rows = [r for b in results["buckets"].values() for r in b["methods"]
            if r["predicted_speedup"] is not None and r["method"] != "AR"]
    for method, pts in by_method(rows).items():
        right.scatter([r["predicted_speedup"] for r in pts], [r["speedup_median"] for r in pts],
                      color=COLORS[method], label=method)
    top = max([r["predicted_speedup"] for r in rows] + [r["speedup_median"] for r in rows] + [1.0])
    right.plot([0, top], [0, top], ls="--", color="grey", label="measured = predicted")
    right.set_xlabel("predicted speedup  TPF·L(1)/L(n_eff)  (n_eff: tokens fed per forward)")
    right.set_ylabel("measured speedup")
    right.set_title("every method, block size and length bucket", fontsize=10)
    right.legend(fontsize=7)
    return fig


PAPER_ABLATION = {"progressive": 0.48, "random": 0.53, "reverse": 0.62}  # the paper's iterations per token


def schedule_config(path: Path) -> Path:
    """The settings of the run that an `eval` file `<label>.json` scored: `<label>/train_config.json`."""
    return path.with_suffix("") / "train_config.json"


def schedule_files(folder: Path, seeds: int = 3, random_from: Path | None = None) -> list[Path]:
    """The `eval` files `<schedule>-s<seed>.json` of a schedule study run with `train` and `eval`
    (training_runs/schedules/run.sh), the random schedule's from `random_from` when given (it takes
    no offset, so one set of its runs serves a study of each offset); [] until every schedule and
    seed has one and its settings."""
    paths = [((random_from or folder) if name == "random" else folder) / f"{name}-s{seed}.json"
             for name in PAPER_ABLATION for seed in range(seeds)]
    return paths if all(path.exists() and schedule_config(path).exists() for path in paths) else []


def schedule_study(paths: list[Path]) -> dict:
    """Those files in the layout of `pipeline`'s ablation.json; the steps come from each run's settings."""
    runs, problems, block_sizes, steps = {name: [] for name in PAPER_ABLATION}, set(), set(), set()
    offsets = set()
    for path in paths:
        data = json.loads(path.read_text())
        config = json.loads(schedule_config(path).read_text())["config"]
        steps.add(config["steps"])
        if config["schedule"] != "random":  # a random schedule takes no offset
            offsets.add("random offset" if config["random_offset"] else "offset 0")
        (label, scores), = data["scores"].items()
        name, seed = label.rsplit("-s", 1)
        problems.add(data["problems"])
        block_sizes.add(data["block_size"])
        runs[name].append({"seed": int(seed), "iterations_per_token": 1 / scores["long"]["tpf"], **scores["long"]})
    if len(problems) != 1 or len(block_sizes) != 1 or len(steps) != 1 or len(offsets) != 1:
        raise ValueError(f"the runs of one study differ: problems {sorted(problems)}, block sizes {sorted(block_sizes)}, "
                         f"steps {sorted(steps)}, offsets {sorted(offsets)}")
    (count,), (block_size,), (step_count,), (offset,) = problems, block_sizes, steps, offsets
    return {"steps": step_count, "block_size": block_size, "problems": count, "length": "long", "offset": offset,
            "runs": runs}


def ablation(studies: list[dict]):
    """One panel per study: mean iterations per token over seeds (a labelled point), each seed (small
    dots), and the paper's value for the three schedules (a hollow diamond beside ours). Points, not
    bars: the axis is zoomed onto the values, so that their differences show, and a bar would mislead
    from a non-zero origin."""
    widths = [len(data["runs"]) + 1 for data in studies]
    fig, axes = plt.subplots(1, len(studies), figsize=(4.5 + 1.1 * sum(widths), 4.5), squeeze=False,
                             gridspec_kw={"width_ratios": widths})
    for ax, data in zip(axes[0], studies):
        ablation_panel(ax, data)
    axes[0][-1].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    return fig


def ablation_panel(ax, data: dict) -> None:
    """One study (ablation.json's layout) on `ax`: each variant's seeds, their mean and the paper's value."""
    names = list(data["runs"])
    for i, name in enumerate(names):
        values = [r["iterations_per_token"] for r in data["runs"][name]]
        mean = sum(values) / len(values)
        colour = "#1f77b4" if name in PAPER_ABLATION else "#7f7f7f"
        ax.errorbar(i, mean, yerr=[[mean - min(values)], [max(values) - mean]], marker="o", ms=8, capsize=4,
                    color=colour, label="here: mean over seeds (bar: min–max)" if i == 0 else None)
        ax.scatter([i] * len(values), values, color="black", s=10, zorder=3)
        accuracy = sum(r["accuracy"] for r in data["runs"][name]) / len(values)
        ax.annotate(f"{mean:.3f}\n{100 * accuracy:.0f}% right", (i, mean), xytext=(10, 0), textcoords="offset points",
                    va="center", fontsize=8)
        if name in PAPER_ABLATION:
            ax.scatter(i - 0.25, PAPER_ABLATION[name], marker="D", facecolor="none", edgecolor="#d62728", s=50,
                       label="the paper (7B, its own scale)" if name == "progressive" else None)
            ax.annotate(f"{PAPER_ABLATION[name]:.2f}", (i - 0.25, PAPER_ABLATION[name]), xytext=(-8, 0),
                        textcoords="offset points", ha="right", va="center", fontsize=8, color="#d62728")
    ax.set_xticks(range(len(names)), [f"{n.replace(', ', ',' + chr(10))}\n({len(data['runs'][n])} seed"
                                      f"{'s' * (len(data['runs'][n]) > 1)})" for n in names], fontsize=8)
    ax.set_xlim(-0.8, len(names) - 0.3)
    ax.set_ylabel("iterations per token (lower is better)")
    offset = f", {data['offset']}" if "offset" in data else ""
    ax.set_title(f"round 1: {data['steps']} steps{offset}, n = {data['block_size']},\n{data['problems']} held-out "
                 f"{data['length']} answers", fontsize=9)


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
                    ax.annotate(label.split(", ", 1)[-1], (x, y), textcoords="offset points", xytext=(4, 3),
                                fontsize=6.5, rotation=20, color=COLORS[method])
        ax.set_xlabel(f"tokens per forward (greedy Jacobi, n = {runs['block_size']})")
        ax.set_title(f"{length} answers, {runs['problems']} held-out problems", fontsize=10)
    axes[0].set_ylabel("accuracy (%)")
    axes[0].scatter([], [], s=130, facecolors="none", edgecolors="black", label="shipped")
    fig.legend(*axes[0].get_legend_handles_labels(), fontsize=8, loc="lower center", ncol=6,
               bbox_to_anchor=(0.5, 1.0))  # above the figure: `save` grows the box to take it in
    return fig


WHY_REFERENCE = "Jacobi Forcing, R1 λ 10"  # the arms' reference: round 1 as shipped, in training_runs.json
WHY_ARMS = {"reference": ("Jacobi Forcing, round 1 (reference)", COLORS["Jacobi Forcing"], "o"),
            "clean-context": ("the same + CLLM's mask (clean context)", "#17becf", "o"),
            "draw-by-blocks": ("the same + CLLM's draw (∝ blocks)", "#8c564b", "o"),
            "undivided": ("the same + CLLM's weight per example (no 1/T)", "#e377c2", "o"),
            "cllm-1600": ("CLLM, λ 10, after the same 1,600 steps", COLORS["CLLM"], "s")}  # eval label: legend, colour, marker
WHY_SWEEPS = {"reference": "round 1", "clean-context": "+ clean context", "draw-by-blocks": "+ draw ∝ blocks",
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
    positions of each kind a model, teacher-forced on the reference, would leave it (margin < 0), per
    model. Right: the share of each kind's positions that a greedy Jacobi forward had to correct (the
    draft had them wrong), per model."""
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.6))
    kinds = list(next(iter(margins["models"].values()))["kinds"])
    colors = dict(zip(margins["models"], plt.cm.tab10.colors))  # one colour per model in both panels
    left = f"positions where the model leaves the reference\n(teacher-forced, {margins['problems']:,} held-out long answers)"
    right = f"% of positions a Jacobi forward corrected\n(n = {corrections['block_size']}, {corrections['problems']} long answers)"
    panels = [(margins["models"], lambda kind: kind["below_0"], left),
              (corrections["models"], lambda kind: 100 * kind["rate"], right)]
    for ax, (models, height, ylabel) in zip(axes, panels):
        width = 0.8 / len(models)
        for i, (label, m) in enumerate(models.items()):
            at = [x + (i - (len(models) - 1) / 2) * width for x in range(len(kinds))]
            heights = [height(m["kinds"][k]) for k in kinds]
            ax.bar(at, heights, width, color=colors[label], label=label if ax is axes[0] else None)
            for x, y in zip(at, heights):
                ax.annotate(f"{y:.0f}", (x, y), ha="center", va="bottom", fontsize=6)
        ax.set_xticks(range(len(kinds)), [k.replace(" ", "\n") for k in kinds])
        ax.set_ylabel(ylabel, fontsize=9)
    fig.legend(loc="upper center", ncol=len(colors), fontsize=8, bbox_to_anchor=(0.5, 1.06))
    return fig


def control_curves(data: dict):
    """Held-out accuracy (the in-loop mixed problems) against training step, one panel per group of arms."""
    from .controls import ARMS, PANELS
    fig, axes = plt.subplots(1, len(PANELS), figsize=(7 * len(PANELS), 4.5), sharey=True)
    base = 100 * data["arms"]["base (no training)"]["log"][0]["accuracy"]
    colors = dict(zip(ARMS, plt.cm.tab20.colors))  # one colour per arm in every panel
    for ax, (title, names) in zip(axes, PANELS.items()):
        ax.axhline(base, color="grey", lw=1, label="base model")
        for name in (n for n in names if n in data["arms"]):
            evals = [r for r in data["arms"][name]["log"] if "accuracy" in r]
            ax.plot([r["step"] for r in evals], [100 * r["accuracy"] for r in evals], marker="o", ms=3,
                    color=colors[name], label=name)
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("training step")
        ax.legend(fontsize=7, loc="lower left")
    axes[0].set_ylabel(f"held-out accuracy (%), {data['eval_problems']} mixed problems")
    return fig


def frontier(data: dict):
    """Accuracy against TPF per length bucket on the controls' base: each method's λ sweep as a
    line (the controls, 3200 prompts) and the base model's accuracy."""
    from .controls import FRONTIERS
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2), sharey=True)
    for ax, length in zip(axes, ("short", "medium", "long")):
        ax.axhline(100 * data["arms"]["base (no training)"]["scores"][length]["accuracy"], color="grey", lw=1,
                   label="base model")
        for method, names in FRONTIERS.items():
            names = [n for n in names if n in data["arms"]]
            scores = [data["arms"][n]["scores"][length] for n in names]
            lams = ", ".join(f"{data['arms'][n]['config']['lam']:g}" for n in names)
            color = COLORS["Jacobi Forcing" if method == "Jacobi Forcing" else "CLLM"]
            ax.plot([s["tpf"] for s in scores], [100 * s["accuracy"] for s in scores], marker="o", color=color,
                    label=f"{method}, {data['steps']} steps (λ = {lams})")
        ax.set_xlabel(f"tokens per forward (greedy Jacobi, n = {data['block_size']})")
        ax.set_title(f"{length} answers, {data['problems']} held-out problems", fontsize=10)
    axes[0].set_ylabel("accuracy (%)")
    axes[0].legend(fontsize=7, loc="lower left")
    return fig


def training_curves(logs: dict[str, list[dict]]):
    """Loss, held-out TPF and held-out accuracy (the training loop's 40 problems) of the shipped
    checkpoints against training step; a dotted line is where a later round / phase starts."""
    fig, (loss, tpf, accuracy) = plt.subplots(1, 3, figsize=(15, 4))
    for name, log in logs.items():
        color = COLORS["Jacobi Forcing" if name == "jacobi-forcing" else "CLLM"]
        steps = [r for r in log if "loss" in r]  # score-only rows: before each round's first step
        loss.plot([r["step"] for r in steps], [r["loss"] for r in steps], lw=0.6, label=name, color=color)
        evals = [r for r in log if "tpf" in r]
        tpf.plot([r["step"] for r in evals], [r["tpf"] for r in evals], marker="o", label=name, color=color)
        accuracy.plot([r["step"] for r in evals], [100 * r["accuracy"] for r in evals], marker="o", label=name,
                      color=color)
    starts = {}
    for r in (r for log in logs.values() for r in log if r.get("round", 1) > 1):
        starts[r["round"]] = min(starts.get(r["round"], r["step"]), r["step"])
    for ax in (loss, tpf, accuracy):
        for step in starts.values():
            ax.axvline(step, color="grey", ls=":", lw=1)
    loss.set_yscale("log")
    loss.set_ylabel("λ·L_AR + L_c")
    tpf.set_ylabel("held-out TPF, greedy Jacobi at n = 16")
    accuracy.set_ylabel("held-out accuracy (%)")
    for ax in (loss, tpf, accuracy):
        ax.set_xlabel("step")
        ax.legend()
    return fig


def method_summaries(reports: list[dict]) -> list[tuple[str, float, float]]:
    """(label, mean TPF, speedup over its own report's `generate`) per method of every exactness report;
    the label names the prompt count where it differs from the first report's."""
    first = len(reports[0]["reference_seconds"])
    out = []
    for report in reports:
        prompts = len(report["reference_seconds"])
        for name, row in report["methods"].items():
            label = name if prompts == first else f"{name} ({prompts} prompts)"
            out.append((label, sum(row["tpf"]) / len(row["tpf"]), sum(report["reference_seconds"]) / sum(row["seconds"])))
    return out


def real_model(reports: list[dict], costs: dict, tiny_costs: dict | None):
    """TPF and wall-clock speedup over `generate` per method on real prompts, and L(k)/L(1)."""
    fig, (tpf, speed, cost) = plt.subplots(1, 3, figsize=(16, 4.5))
    names, tpfs, speedups = zip(*sorted(method_summaries(reports), key=lambda row: row[1]))  # by TPF
    tpf.bar_label(tpf.bar(names, tpfs, color="#5b8def"), fmt="%.2f", fontsize=7)
    tpf.axhline(1.0, ls="--", lw=1, color="grey")
    tpf.set_ylabel("tokens per forward (mean over prompts)")
    speed.bar_label(speed.bar(names, speedups, color="#e07b39"), fmt="%.2f", fontsize=7)
    speed.axhline(1.0, ls="--", lw=1, color="grey", label="AR generate")
    speed.set_ylabel("wall-clock speedup over generate")
    speed.legend(fontsize=8)
    meta = reports[0]["meta"]
    for ax in (tpf, speed):
        ax.set_xticks(range(len(names)), names, rotation=40, ha="right", fontsize=8)
        ax.set_title(f"{meta['model']}, {meta['dtype']}, {len(reports[0]['reference_seconds'])} real prompts, "
                     f"{meta['max_new_tokens']} tokens", fontsize=9)
    for label, data in (("real Qwen", costs), ("tiny Qwen2", tiny_costs)):
        if data:
            cost.plot(data["k"], [t / data["latency_s"][0] for t in data["latency_s"]], marker=".", label=label)
    cost.set_xscale("log", base=2)
    cost.set_xlabel("tokens in one forward, k")
    cost.set_ylabel("L(k) / L(1)")
    cost.set_title("cost of a k-token forward, relative to one token", fontsize=9)
    cost.legend(fontsize=8)
    return fig


def real_training(summary: dict):
    """The recipe on the real Qwen: TPF and wall-clock speedup per method before / after training on
    the held-out GSM8K questions (TPF on training questions too), and the training loss."""
    fig, (tpf, speed, loss) = plt.subplots(1, 3, figsize=(16, 4.5))
    cfg, names = summary["settings"], list(summary["before"]["methods"])
    x = np.arange(len(names) + 1)
    for offset, stage, colour in ((-0.2, "before", "#1f77b4"), (0.2, "after", "#2ca02c")):
        rows, seen = summary[stage]["methods"], summary["seen"][stage]
        label = (f"{stage} training: GSM8K {100 * summary[stage]['accuracy']:.0f}% correct, "
                 f"{summary[stage]['finished']} of {cfg['eval_prompts']} answers finished")
        bars = tpf.bar(x + offset, [rows[m]["tpf"] for m in names] + [np.mean(seen)], 0.4, color=colour, label=label)
        tpf.bar_label(bars, fmt="%.3f", fontsize=7)
        bars = speed.bar(x[:-1] + offset, [rows[m]["speedup"] for m in names], 0.4, color=colour, label=label)
        speed.bar_label(bars, fmt="%.2f", fontsize=7)
    tpf.set_xticks(x, names + [f"jacobi n={summary['settings']['block_size']}\n{len(seen)} training questions"])
    speed.set_xticks(x[:-1], names)
    tpf.set_ylabel("tokens per forward (mean over questions)")
    speed.set_ylabel("wall-clock speedup over generate")
    title = f"{cfg['eval_prompts']} held-out GSM8K questions, up to {cfg['max_new_tokens']} tokens"
    tpf.set_title(f"{title}\n(right: the same decoder on {len(seen)} of the training questions)", fontsize=9)
    speed.set_title(title, fontsize=9)
    for ax in (tpf, speed):
        ax.axhline(1.0, ls="--", lw=1, color="black", zorder=3)
        ax.set_ylim(0, 1.45 * max(1.0, ax.get_ylim()[1]))  # room for the legend above the bars
        ax.legend(fontsize=8, loc="upper left")
    log, lam = summary["log"], cfg["train"]["lam"]
    for key, label in (("loss", f"λ·L_AR + L_c (λ = {lam:g})"), ("consistency", "L_c"), ("ar", "L_AR")):
        steps = [r for r in log if key in r]  # step 0 holds only the scores before training
        loss.plot([r["step"] for r in steps], [r[key] for r in steps], marker=".", label=label)
    loss.set_yscale("log")
    loss.set_xlabel("step")
    loss.set_ylabel("training loss")
    loss.legend(fontsize=8)
    loss.set_title(f"round 1 on {summary['trajectories']} of its own trajectories (n = {cfg['block_size']})", fontsize=9)
    return fig


def read_log(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def jobs(results_dir: Path, checkpoints: Path) -> dict[str, tuple[list[Path], object]]:
    """figure name -> (its input files, a function drawing it) for every figure whose inputs exist."""
    out = {}
    bench = results_dir / "benchmark.json"
    if bench.exists():
        results = lambda: json.loads(bench.read_text())
        out |= {"speedup_vs_answer_length.png": ([bench], lambda: metric_vs_length(results(), "speedup_median", "speedup over AR")),
                "tpf_vs_answer_length.png": ([bench], lambda: metric_vs_length(results(), "tpf", "tokens per forward")),
                "accuracy_vs_speedup.png": ([bench], lambda: accuracy_vs_speedup(results())),
                "acceptance_histogram.png": ([bench], lambda: acceptance(results())),
                "cost_model.png": ([bench], lambda: cost_model(results()))}
    runs = results_dir / "training_runs.json"
    if runs.exists() and bench.exists():
        out["training_runs.png"] = ([runs, bench], lambda: training_runs(json.loads(runs.read_text()), results()))
    why = results_dir / "training_runs" / "frontier-why"
    arms = [why / name for name in ("scores.json", "scores_reference_seeds.json", "scores_s1.json", "scores_cllm-1600.json",
                                    "scores_undivided.json") if (why / name).exists()]
    sweeps = {label: why / f"sweep_{key}.json" for key, label in WHY_SWEEPS.items()}
    if runs.exists() and why / "scores.json" in arms and all(p.exists() for p in sweeps.values()):
        read = lambda path: json.loads(path.read_text())
        out["frontier_why.png"] = ([runs, *arms, *sweeps.values()], lambda: frontier_why(
            read(runs), [read(path) for path in arms], {label: read(path) for label, path in sweeps.items()}))
    round4 = results_dir / "training_runs" / "round4"
    positions = [round4 / "margins_1200.json", round4 / "corrections_300.json"]
    if all(path.exists() for path in positions):
        out["long_answer_positions.png"] = (positions, lambda: long_answer_positions(
            *(json.loads(path.read_text()) for path in positions)))
    controls = results_dir / "controls.json"
    if controls.exists():
        data = lambda: json.loads(controls.read_text())
        out["controls.png"] = ([controls], lambda: control_curves(data()))
        out["frontier.png"] = ([controls], lambda: frontier(data()))
    if (results_dir / "ablation.json").exists():
        folder = results_dir / "training_runs"
        longer = [files for files in (schedule_files(folder / "schedules"),
                                      schedule_files(folder / "schedules-offset0", random_from=folder / "schedules")) if files]
        studies = lambda: ([json.loads((results_dir / "ablation.json").read_text())]
                           + [schedule_study(files) for files in longer])
        inputs = [results_dir / "ablation.json", *dict.fromkeys(path for files in longer for path in files)]
        inputs += [schedule_config(path) for path in inputs[1:]]
        out["noise_schedule_ablation.png"] = (inputs, lambda: ablation(studies()))
    reports = [r for r in (results_dir / f"qwen_exactness_float32{part}.json" for part in ("", "_extra", "_multiblock"))
               if r.exists()]
    costs = results_dir / "qwen_cost_model_float32.json"
    if reports and costs.exists():
        tiny = [bench] if bench.exists() else []
        out["real_qwen.png"] = (reports + [costs] + tiny, lambda: real_model(
            [json.loads(r.read_text()) for r in reports], json.loads(costs.read_text()),
            json.loads(bench.read_text())["cost_model"] if tiny else None))
    recipe = results_dir / "qwen_jacobi_forcing.json"
    if recipe.exists():
        out["qwen_jacobi_forcing.png"] = ([recipe], lambda: real_training(json.loads(recipe.read_text())))
    logs = [checkpoints / name / "train_log.jsonl" for name in ("jacobi-forcing", "cllm")]
    if all(log.exists() for log in logs):
        out["training_curves.png"] = (logs, lambda: training_curves({log.parent.name: read_log(log) for log in logs}))
    return out


def build(results_dir: Path = FIGURES / "results", out_dir: Path = FIGURES, checkpoints: Path = CHECKPOINTS) -> list[Path]:
    """Write every figure whose inputs exist, each stamped with the digest of its inputs; returns the paths."""
    written = []
    for name, (sources, draw) in jobs(results_dir, checkpoints).items():
        save(draw(), out_dir / name, sources)
        written.append(out_dir / name)
    return written


def stale(results_dir: Path = FIGURES / "results", out_dir: Path = FIGURES, checkpoints: Path = CHECKPOINTS) -> list[str]:
    """Figures missing, or drawn from inputs that have changed since (rebuild: python -m jacobi_min figures)."""
    out = []
    for name, (sources, _) in jobs(results_dir, checkpoints).items():
        path = out_dir / name
        if not path.exists() or Image.open(path).text.get(SOURCE_KEY) != digest(sources):
            out.append(name)
    return out


def figures_command(args) -> None:
    print("\n".join(str(p) for p in build()))


def add_commands(commands) -> None:
    p = commands.add_parser("figures", help="rebuild every PNG in figures/ from the results files (seconds)")
    p.set_defaults(run=figures_command)
