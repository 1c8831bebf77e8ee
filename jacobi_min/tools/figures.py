"""Rebuild every PNG in `figures/` from the results files in `figures/results/` only (no model is run).

Inputs: `benchmark.json` (bench), `training_curves.json`
(the shipped checkpoints' training logs, summarised by `write_training_summary`: `figures --training-logs`),
and for the real Qwen `qwen_exactness_float32.json` (exactness; optional `_extra.json` and
`_multiblock.json`: more methods, each against its own `generate` runs) with `qwen_cost_model_float32.json`
(cost-model), `qwen_jacobi_forcing.json` (recipe), and `batch_throughput.json` (bench --batch). Every PNG
carries the SHA-256 of its input files in a text chunk; `stale` lists the figures whose inputs have changed
since they were drawn (a test keeps the committed ones current).
"""
import hashlib
import json
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from PIL import Image

from .plots import acceptance_histogram

FIGURES = Path("figures")  # relative to the current folder: run from a clone, it rebuilds the clone's figures
JACOBI_METHODS = ["Jacobi (base)", "CLLM", "CLLM + MR", "Jacobi Forcing", "Jacobi Forcing + MR"]
FAMILIES = {"block diffusion": ("#8c564b", "v"), "draft model": ("#e377c2", "D")}  # colour, marker
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


def look(method: str) -> tuple[str, str]:
    """A method's colour and marker; a family the paper argues against by the start of its name."""
    family = next((f for f in FAMILIES if method.startswith(f)), None)
    if family:
        return FAMILIES[family]
    return COLORS[method], "^" if method == "prompt lookup" else "s" if method.endswith("MR") else "o"


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
            rows = [next((r for r in buckets[b]["methods"] if r["method"] == method and n in (None, r["block_size"])), None)
                    for b in names]
            if None in rows:  # a method measured at fewer block sizes (the other Jacobi methods: n = 16 only)
                continue
            y = [r[key] for r in rows]
            err = None
            if f"{key.removesuffix('_median')}_range" in rows[0]:
                lo_hi = [r[f"{key.removesuffix('_median')}_range"] for r in rows]
                err = [[v - lo for v, (lo, _) in zip(y, lo_hi)], [hi - v for v, (_, hi) in zip(y, lo_hi)]]
            label = method if n is None else f"{method}, n = {n}"
            ax.errorbar(x, y, yerr=err, ls=style, marker="o", capsize=3, color=COLORS[method], label=label)
    ax.set_xticks(list(x), [f"{b}\n(mean {buckets[b]['answer_tokens']:.0f} tokens)" for b in names])
    ax.set(xlabel="answer length bucket", ylabel=ylabel)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))  # beside the data, never over it
    meta = results["meta"]
    ax.set_title(f"{ylabel} vs answer length ({meta['device']}, {meta['dtype']}, {meta['threads']} thread)", fontsize=10)
    return fig


def bucket_panels(results: dict, draw, xlabel: str):
    """One panel per length bucket drawn by draw(ax, bucket), sharing the accuracy axis; the legend below them."""
    buckets = results["buckets"]
    fig, axes = plt.subplots(1, len(buckets), figsize=(5 * len(buckets), 4.2), sharey=True, squeeze=False)
    for ax, (length, bucket) in zip(axes[0], buckets.items()):
        draw(ax, bucket)
        ax.set_xlabel(xlabel)
        ax.set_title(f"{length} answers, {bucket['problems']} problems", fontsize=10)
    axes[0][0].set_ylabel("accuracy (%)")
    handles, labels = axes[0][-1].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, 0), ncol=3)  # below the panels
    return fig


def settings(bucket: dict) -> dict[str, list[tuple[dict, str]]]:
    """Each method's rows across its settings, in order of TPF, with the setting in words: after the comma of a
    family's name (block diffusion's threshold τ, the draft model's draft length k), else the block size n."""
    curves = {}
    for row in bucket["methods"]:
        name, _, value = row["method"].partition(", ")
        curves.setdefault(name, []).append((row, value or f"n = {row['block_size']}"))
    return {name: sorted(rows, key=lambda pair: pair[0]["tpf"]) for name, rows in curves.items()}


def accuracy_curves(results: dict, x: str, xlabel: str):
    """Accuracy against `x` (a row's key), one panel per length bucket: each method a line through its
    settings, each point labelled with its setting; x error bars where the rows hold the range."""
    def draw(ax, bucket):
        for name, rows in settings(bucket).items():
            colour, marker = look(name)
            xs, ys = [r[x] for r, _ in rows], [100 * r["accuracy"] for r, _ in rows]
            ranges = [r.get(x.replace("_median", "_range")) for r, _ in rows]
            err = np.abs(np.array(ranges, dtype=float).T - xs) if x.endswith("_median") else None
            label = f"{name} ({', '.join(words for _, words in rows)})"
            ax.errorbar(xs, ys, xerr=err, marker=marker, capsize=2, color=colour, label=label, lw=1)
            for (_, words), xi, yi in zip(rows, xs, ys):
                if len(rows) > 1:
                    ax.annotate(words, (xi, yi), xytext=(3, 3), textcoords="offset points", fontsize=6, color=colour)
    return bucket_panels(results, draw, xlabel)


def accuracy_vs_speedup(results: dict):
    return accuracy_curves(results, "speedup_median", "wall-clock speedup over AR (median, prefill excluded)")


def accuracy_vs_tpf(results: dict):
    return accuracy_curves(results, "tpf", "tokens per forward (the draft model: per forward of the base)")


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
    left.set(xlabel="tokens in one forward, k", ylabel="latency L(k) (ms)")
    left.set_title(f"steady-state decoding step on {costs['context']} cached tokens\n(dips between sizes: the CPU's "
                   "matrix kernels change with k)", fontsize=10)
    rows = [r for b in results["buckets"].values() for r in b["methods"]
            if r["predicted_speedup"] is not None and r["method"] != "AR"]
    for method in dict.fromkeys(r["method"] for r in rows):  # in order of first appearance
        pts = [r for r in rows if r["method"] == method]
        right.scatter([r["predicted_speedup"] for r in pts], [r["speedup_median"] for r in pts],
                      color=look(method)[0], label=method)
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
    ax.set(xlabel="prompts decoded together (batch size B)", ylabel="speedup over AR at the same B")
    ax.set_title(f"Jacobi Forcing (n = {results['config']['block_size']}) against greedy AR, "
                 f"{results['threads']} thread", fontsize=10)
    ax.legend(fontsize=8, ncol=3)
    return fig


NAMES = {"jacobi-forcing": "Jacobi Forcing", "cllm": "CLLM"}  # the checkpoints whose training is drawn
SMOOTHING, EVERY = 50, 10  # training curves: the mean of a round's last 50 steps, kept at every 10th step


def read_log(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def curve_summary(log: list[dict]) -> dict:
    """One `train_log.jsonl`, small: per round (CLLM: phase), each loss term's mean over the round's last
    SMOOTHING steps at every EVERY-th step and the round's last; every held-out check (step, round, TPF,
    accuracy). Rows without a loss hold only a check (before a round's first step)."""
    steps, rounds = [r for r in log if "loss" in r], []
    for number in sorted({r.get("round", 1) for r in steps}):
        rows = [r for r in steps if r.get("round", 1) == number]
        window = min(SMOOTHING, len(rows))
        kept = [i for i in range(window - 1, len(rows)) if (i + 1) % EVERY == 0 or i == len(rows) - 1]
        mean = lambda key, i: round(float(np.mean([r[key] for r in rows[i + 1 - window:i + 1]])), 6)
        rounds.append({"round": number, "start": rows[0]["step"] - 1, "step": [rows[i]["step"] for i in kept],
                       **{key: [mean(key, i) for i in kept] for key in ("consistency", "ar")}})
    checks = [{"step": r["step"], "round": r.get("round", 1), "tpf": round(r["tpf"], 4), "accuracy": r["accuracy"]}
              for r in log if "tpf" in r]
    return {"rounds": rounds, "checks": checks}


def write_training_summary(checkpoints: Path, out: Path) -> None:
    """`out` (figures/results/training_curves.json) from the `train_log.jsonl` of the NAMES checkpoints in
    `checkpoints`, as `pipeline --out` or `train --out` writes them."""
    models = {name: curve_summary(read_log(checkpoints / name / "train_log.jsonl")) for name in NAMES}
    out.write_text(json.dumps({"smoothing": SMOOTHING, "every": EVERY, "models": models}, indent=1) + "\n")


def training_curves(summary: dict):
    """The two loss terms (each unweighted: CLLM trains at another λ), held-out TPF and held-out
    accuracy (the training loop's 40 problems) of the shipped checkpoints against training step, from
    `write_training_summary`'s file; a dotted line is where a later round (CLLM: phase) starts."""
    fig, (consistency, ar, tpf, accuracy) = plt.subplots(1, 4, figsize=(18, 4))
    starts = set()
    for name, model in summary["models"].items():
        style = {"label": NAMES.get(name, name), "color": COLORS[NAMES.get(name, "CLLM")]}
        for part in model["rounds"]:
            if part["round"] > 1:
                starts.add(part["start"])
            for ax, key in ((consistency, "consistency"), (ar, "ar")):  # one line per round, labelled once
                ax.plot(part["step"], part[key], lw=1, color=style["color"], label=style["label"] if part["round"] == 1 else None)
        checks = model["checks"]
        tpf.plot([c["step"] for c in checks], [c["tpf"] for c in checks], marker="o", ms=3, **style)
        accuracy.plot([c["step"] for c in checks], [100 * c["accuracy"] for c in checks], marker="o", ms=3, **style)
    for ax in (consistency, ar, tpf, accuracy):
        for step in sorted(starts):
            ax.axvline(step, color="grey", ls=":", lw=1)
        ax.set_xlabel("training step (dotted: the next round, CLLM: phase, begins)")
    for ax in (consistency, ar):
        ax.set_yscale("log")
    mean = f"mean of the last {summary['smoothing']} steps"
    consistency.set_ylabel(f"consistency term as trained: L_c / T\n(round 3 and CLLM: L_c; {mean})")
    ar.set_ylabel(f"AR loss L_AR, not times λ ({mean})")
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
    fewer = ["prompts)" in name for name in names]  # measured on fewer prompts: hatched, lighter
    for ax, values, colour in ((tpf, tpfs, "#5b8def"), (speed, speedups, "#e07b39")):
        ax.bar_label(ax.bar(names, values, color=[colour + ("66" if f else "") for f in fewer],
                            hatch=["//" if f else None for f in fewer]), fmt="%.2f", fontsize=7)
    tpf.axhline(1.0, ls="--", lw=1, color="grey")
    tpf.set_ylabel("tokens per forward (mean over prompts)")
    speed.axhline(1.0, ls="--", lw=1, color="grey", label="AR generate")
    speed.set_ylabel("wall-clock speedup over generate")
    speed.legend(fontsize=8)
    meta = reports[0]["meta"]
    for ax in (tpf, speed):
        ax.set_xticks(range(len(names)), names, rotation=40, ha="right", fontsize=8)
        ax.set_title(f"{meta['model']}, {meta['dtype']}, {meta['max_new_tokens']} tokens\n"
                     f"{len(reports[0]['reference_seconds'])} real prompts (hatched: fewer, as labelled)", fontsize=9)
    for label, data in (("real Qwen", costs), ("tiny Qwen2", tiny_costs)):
        if data:
            cost.plot(data["k"], [t / data["latency_s"][0] for t in data["latency_s"]], marker=".", label=label)
    cost.set_xscale("log", base=2)
    cost.set(xlabel="tokens in one forward, k", ylabel="L(k) / L(1)")
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
    loss.set(xlabel="step", ylabel="training loss")
    loss.legend(fontsize=8)
    loss.set_title(f"round 1 on {summary['trajectories']} of its own trajectories (n = {cfg['block_size']})", fontsize=9)
    return fig


def read(path: Path):
    return json.loads(path.read_text())


def jobs(results_dir: Path) -> dict[str, tuple[list[Path], object]]:
    """figure name -> (its input files, a function drawing it) for every figure whose inputs exist."""
    out = {}
    bench = results_dir / "benchmark.json"
    if bench.exists():
        out |= {"speedup_vs_answer_length.png": ([bench], lambda: metric_vs_length(read(bench), "speedup_median", "speedup over AR")),
                "tpf_vs_answer_length.png": ([bench], lambda: metric_vs_length(read(bench), "tpf", "tokens per forward")),
                "accuracy_vs_speedup.png": ([bench], lambda: accuracy_vs_speedup(read(bench))),
                "accuracy_vs_tpf.png": ([bench], lambda: accuracy_vs_tpf(read(bench))),
                "acceptance_histogram.png": ([bench], lambda: acceptance(read(bench))),
                "cost_model.png": ([bench], lambda: cost_model(read(bench)))}
    batches = results_dir / "batch_throughput.json"
    if batches.exists():
        out["batch_speedup.png"] = ([batches], lambda: batch_speedup(read(batches)))
    reports = [r for r in (results_dir / f"qwen_exactness_float32{part}.json" for part in ("", "_extra", "_multiblock"))
               if r.exists()]
    costs = results_dir / "qwen_cost_model_float32.json"
    if reports and costs.exists():
        tiny = [bench] if bench.exists() else []
        out["real_qwen.png"] = (reports + [costs] + tiny, lambda: real_model(
            [read(r) for r in reports], read(costs), read(bench)["cost_model"] if tiny else None))
    recipe = results_dir / "qwen_jacobi_forcing.json"
    if recipe.exists():
        out["qwen_jacobi_forcing.png"] = ([recipe], lambda: real_training(read(recipe)))
    curves = results_dir / "training_curves.json"
    if curves.exists():
        out["training_curves.png"] = ([curves], lambda: training_curves(read(curves)))
    return out


def build(results_dir: Path = FIGURES / "results", out_dir: Path = FIGURES) -> list[Path]:
    """Write every figure whose inputs exist, each stamped with the digest of its inputs; returns the paths."""
    written = []
    for name, (sources, draw) in jobs(results_dir).items():
        save(draw(), out_dir / name, sources)
        written.append(out_dir / name)
    return written


def stale(results_dir: Path = FIGURES / "results", out_dir: Path = FIGURES) -> list[str]:
    """Figures missing, or drawn from inputs that have changed since (rebuild: python -m jacobi_min figures)."""
    out = []
    for name, (sources, _) in jobs(results_dir).items():
        path = out_dir / name
        if not path.exists() or Image.open(path).text.get(SOURCE_KEY) != digest(sources):
            out.append(name)
    return out


def figures_command(args) -> None:
    if args.training_logs:
        write_training_summary(args.training_logs, FIGURES / "results" / "training_curves.json")
    print("\n".join(str(p) for p in build()))


def add_commands(commands) -> None:
    p = commands.add_parser("figures", help="rebuild every PNG in figures/ (of the current folder) from the results "
                                            "files in figures/results (seconds)")
    p.add_argument("--training-logs", type=Path, metavar="CHECKPOINTS",
                   help="first summarise the train_log.jsonl of CHECKPOINTS/jacobi-forcing and CHECKPOINTS/cllm (as "
                        "pipeline --out writes them) into figures/results/training_curves.json")
    p.set_defaults(run=figures_command)
