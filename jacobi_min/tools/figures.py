"""Rebuild every PNG in `figures/` from results files only (no model is run).

Inputs: `figures/results/benchmark.json` (bench), `figures/results/ablation.json`
(pipeline) with the longer schedule studies' `eval` files
(`experiments/training_runs/schedules/`, `…/schedules-offset0/`),
the `train_log.jsonl` of each trained checkpoint, and for the real Qwen
`qwen_exactness_float32.json` (exactness; optional `_extra.json` and
`_multiblock.json`: more methods, each against its own `generate` runs) with
`qwen_cost_model_float32.json` (cost-model), and `qwen_jacobi_forcing.json`
(recipe), and `batch_throughput.json` (bench --batch). Every PNG carries the SHA-256 of its input files in a text chunk;
`stale` lists the figures whose inputs have changed since they were drawn (a
test keeps the committed ones current).
"""
import hashlib
import json
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from PIL import Image

from ..model import CHECKPOINTS
from .plots import acceptance_histogram

RUNS = Path("experiments/training_runs")  # the kept training runs, relative to the current folder
FIGURES = Path("figures")  # relative to the current folder: run from a clone, it rebuilds the clone's figures
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


def batch_speedup(results: dict):
    """Speedup of batched Jacobi Forcing over batched AR against the batch size: measured and the cost
    model's prediction, one colour per answer-length bucket."""
    fig, ax = plt.subplots(figsize=(7, 4))
    for (length, rows), color in zip(results["buckets"].items(), ["#1f77b4", "#ff7f0e", "#2ca02c"]):
        sizes = [int(b) for b in rows]
        ax.plot(sizes, [r["speedup"] for r in rows.values()], marker="o", color=color, label=f"{length}: measured")
        ax.plot(sizes, [r["predicted_speedup"] for r in rows.values()], ls="--", marker="x", color=color,
                label=f"{length}: predicted")
    ax.axhline(1.0, color="grey", lw=0.8)
    ax.set_xscale("log", base=2)
    ax.set_xticks(sizes, [str(b) for b in sizes])
    ax.set_xlabel("prompts decoded together (batch size B)")
    ax.set_ylabel("speedup over AR at the same B")
    ax.set_title(f"Jacobi Forcing (n = {results['config']['block_size']}) against greedy AR, "
                 f"{results['threads']} thread", fontsize=10)
    ax.legend(fontsize=8, ncol=3)
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
    start = {"offset 0": "every schedule starts at block 0 (the paper's)",
             "random offset": "each example starts at a random block (the shipped recipe)"}.get(data.get("offset"), "")
    ax.set_title(f"{start}\nround 1, {data['steps']} steps, n = {data['block_size']}, {data['problems']} held-out "
                 f"{data['length']} answers", fontsize=9)


NAMES = {"jacobi-forcing": "Jacobi Forcing", "cllm": "CLLM"}


def smoothed(values: list[float], window: int = 50) -> list[float]:
    """The running mean over the last `window` values (training losses are noisy step to step)."""
    sums = np.cumsum([0.0, *values])
    return [(sums[i + 1] - sums[max(0, i + 1 - window)]) / min(i + 1, window) for i in range(len(values))]


def training_curves(logs: dict[str, list[dict]]):
    """The two loss terms (each unweighted: CLLM trains at another λ), held-out TPF and held-out
    accuracy (the training loop's 40 problems) of the shipped checkpoints against training step; a
    dotted line is where a later round (CLLM: phase) starts."""
    fig, (consistency, ar, tpf, accuracy) = plt.subplots(1, 4, figsize=(18, 4))
    for name, log in logs.items():
        style = {"label": NAMES.get(name, name), "color": COLORS[NAMES.get(name, "CLLM")]}
        steps = [r for r in log if "loss" in r]  # score-only rows: before each round's first step
        for ax, key in ((consistency, "consistency"), (ar, "ar")):
            ax.plot([r["step"] for r in steps], smoothed([r[key] for r in steps]), lw=1, **style)
        evals = [r for r in log if "tpf" in r]
        tpf.plot([r["step"] for r in evals], [r["tpf"] for r in evals], marker="o", ms=3, **style)
        accuracy.plot([r["step"] for r in evals], [100 * r["accuracy"] for r in evals], marker="o", ms=3, **style)
    starts = {}
    for r in (r for log in logs.values() for r in log if r.get("round", 1) > 1):
        starts[r["round"]] = min(starts.get(r["round"], r["step"]), r["step"])
    for ax in (consistency, ar, tpf, accuracy):
        for step in starts.values():
            ax.axvline(step, color="grey", ls=":", lw=1)
        ax.set_xlabel("training step (dotted: the next round begins)")
    for ax in (consistency, ar):
        ax.set_yscale("log")
    consistency.set_ylabel("consistency loss L_c (mean of 50 steps)")
    ar.set_ylabel("AR loss L_AR, not times λ (mean of 50 steps)")
    tpf.set_ylabel("held-out tokens per forward (n = 16)")
    accuracy.set_ylabel("held-out accuracy (%), 40 problems")
    accuracy.legend()
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


def jobs(results_dir: Path, checkpoints: Path, runs_dir: Path = RUNS) -> dict[str, tuple[list[Path], object]]:
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
    batches = results_dir / "batch_throughput.json"
    if batches.exists():
        out["batch_speedup.png"] = ([batches], lambda: batch_speedup(json.loads(batches.read_text())))
    if (results_dir / "ablation.json").exists():
        folder = runs_dir
        longer = [files for files in (schedule_files(folder / "schedules-offset0", random_from=folder / "schedules"),
                                      schedule_files(folder / "schedules")) if files]
        studies = lambda: ([schedule_study(files) for files in longer]
                           or [json.loads((results_dir / "ablation.json").read_text())])
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


def build(results_dir: Path = FIGURES / "results", out_dir: Path = FIGURES, checkpoints: Path = CHECKPOINTS,
          runs_dir: Path = RUNS) -> list[Path]:
    """Write every figure whose inputs exist, each stamped with the digest of its inputs; returns the paths."""
    written = []
    for name, (sources, draw) in jobs(results_dir, checkpoints, runs_dir).items():
        save(draw(), out_dir / name, sources)
        written.append(out_dir / name)
    return written


def stale(results_dir: Path = FIGURES / "results", out_dir: Path = FIGURES, checkpoints: Path = CHECKPOINTS,
          runs_dir: Path = RUNS) -> list[str]:
    """Figures missing, or drawn from inputs that have changed since (rebuild: python -m jacobi_min figures)."""
    out = []
    for name, (sources, _) in jobs(results_dir, checkpoints, runs_dir).items():
        path = out_dir / name
        if not path.exists() or Image.open(path).text.get(SOURCE_KEY) != digest(sources):
            out.append(name)
    return out


def figures_command(args) -> None:
    print("\n".join(str(p) for p in build(args.out / "results", args.out, runs_dir=args.experiments)))


def add_commands(commands) -> None:
    p = commands.add_parser("figures", help="rebuild every PNG in figures/ from the results files (seconds)")
    p.add_argument("--out", type=Path, default=FIGURES,
                   help="figures folder: reads OUT/results, writes OUT/*.png (default: figures/ of the current folder)")
    p.add_argument("--experiments", type=Path, default=RUNS,
                   help="the training runs' folder some figures read (default: experiments/training_runs of the current folder)")
    p.set_defaults(run=figures_command)
