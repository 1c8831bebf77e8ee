"""Rebuild every PNG in `figures/` from results files only (no model is run).

Inputs: `figures/results/benchmark.json` (bench), `figures/results/ablation.json`
(pipeline), the `train_log.jsonl` of each trained checkpoint, and for the real
Qwen `qwen_exactness_float32.json` (exactness; optional `_extra.json` and
`_multiblock.json`: more methods, each against its own `generate` runs) with
`qwen_cost_model_float32.json` (cost-model).
"""
import json
from pathlib import Path

import matplotlib.pyplot as plt

from .model import CHECKPOINTS
from .plots import acceptance_histogram

FIGURES = Path(__file__).parent.parent / "figures"
JACOBI_METHODS = ["Jacobi (base)", "CLLM-style", "CLLM-style + MR", "Jacobi Forcing", "Jacobi Forcing + MR"]


def save(fig, path: Path) -> None:
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def by_method(results: dict) -> dict[str, list[dict]]:
    rows = {}
    for r in results["methods"]:
        rows.setdefault(r["method"], []).append(r)
    return rows


def metric_vs_block(results: dict, key: str, ylabel: str, path: Path) -> None:
    fig, ax = plt.subplots(figsize=(6, 4))
    rows = by_method(results)
    for method in JACOBI_METHODS:
        pts = sorted(rows.get(method, []), key=lambda r: r["block_size"])
        ax.plot([r["block_size"] for r in pts], [r[key] for r in pts], marker="o", label=method)
    for method in ("prompt lookup", "AR"):
        if method in rows:
            ax.axhline(rows[method][0][key], ls="--", lw=1, color="grey" if method == "AR" else "purple", label=method)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("block size n")
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=8)
    ax.set_title(f"{ylabel} vs block size ({results['meta']['device']}, {results['meta']['dtype']})")
    save(fig, path)


def accuracy_vs_speedup(results: dict, path: Path) -> None:
    """Speedup on the timed problems; accuracy of the method's model on the larger accuracy sample."""
    fig, ax = plt.subplots(figsize=(6, 4))
    for method, rows in by_method(results).items():
        best = max(rows, key=lambda r: r["speedup_median"])
        accuracy = results["accuracy"][best["model"]]["accuracy"]
        ax.scatter(best["speedup_median"], 100 * accuracy, s=60, label=f"{method} (n={best['block_size']})")
    ax.set_xlabel("wall-clock speedup over AR (median)")
    ax.set_ylabel(f"accuracy on {results['meta']['config']['accuracy_problems']} held-out problems (%)")
    ax.set_title("accuracy vs speedup, best block size per method")
    ax.legend(fontsize=7)
    save(fig, path)


def acceptance(results: dict, path: Path, block_size: int = 16) -> None:
    fig, ax = plt.subplots(figsize=(7, 4))
    counts = {}
    for r in results["methods"]:
        if r["block_size"] == block_size and r["method"] in JACOBI_METHODS:
            counts[r["method"]] = [int(k) for k, v in r["accepted_histogram"].items() for _ in range(v)]
    acceptance_histogram(ax, counts, max_count=block_size)
    ax.set_title(f"new tokens per forward at n = {block_size}")
    save(fig, path)


def cost_model(results: dict, path: Path) -> None:
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    ks, lat = results["cost_model"]["k"], results["cost_model"]["latency_s"]
    left.plot(ks, [1000 * t for t in lat])
    left.set_xlabel("tokens in one forward, k")
    left.set_ylabel("latency L(k) (ms)")
    left.set_title("cost of one forward on a cached context")
    rows = [r for r in results["methods"] if r["predicted_speedup"] is not None and r["method"] != "AR"]
    for method, pts in by_method({"methods": rows}).items():
        right.scatter([r["predicted_speedup"] for r in pts], [r["speedup_median"] for r in pts], label=method)
    top = max([r["predicted_speedup"] for r in rows] + [r["speedup_median"] for r in rows] + [1.0])
    right.plot([0, top], [0, top], ls="--", color="grey", label="measured = predicted")
    right.set_xlabel("predicted speedup  TPF·L(1)/L(n_eff)")
    right.set_ylabel("measured speedup")
    right.legend(fontsize=7)
    save(fig, path)


def ablation(data: dict, path: Path) -> None:
    fig, ax = plt.subplots(figsize=(5, 3.5))
    kinds = list(data["schedules"])
    ax.bar(kinds, [data["schedules"][k]["iterations_per_token"] for k in kinds], color="#5b8def")
    ax.set_ylabel("iterations per token (lower is better)")
    ax.set_title(f"noise schedule ablation ({data['steps']} steps, n = {data['block_size']})")
    save(fig, path)


def training_curves(logs: dict[str, list[dict]], path: Path) -> None:
    fig, (loss, tpf, accuracy) = plt.subplots(1, 3, figsize=(15, 4))
    for name, log in logs.items():
        loss.plot([r["step"] for r in log], [r["loss"] for r in log], lw=0.6, label=name)
        evals = [r for r in log if "tpf" in r]
        tpf.plot([r["step"] for r in evals], [r["tpf"] for r in evals], marker="o", label=name)
        accuracy.plot([r["step"] for r in evals], [100 * r["accuracy"] for r in evals], marker="o", label=name)
    loss.set_yscale("log")
    loss.set_ylabel("λ·L_AR + L_c/T")
    tpf.set_ylabel("held-out TPF, greedy Jacobi at n = 16")
    accuracy.set_ylabel("held-out accuracy (%)")
    for ax in (loss, tpf, accuracy):
        ax.set_xlabel("step")
        ax.legend()
    save(fig, path)


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


def real_model(reports: list[dict], costs: dict, tiny_costs: dict | None, path: Path) -> None:
    """TPF and wall-clock speedup over `generate` per method on real prompts, and L(k)/L(1)."""
    fig, (tpf, speed, cost) = plt.subplots(1, 3, figsize=(16, 4.5))
    names, tpfs, speedups = zip(*method_summaries(reports))
    tpf.bar(names, tpfs, color="#5b8def")
    tpf.axhline(1.0, ls="--", lw=1, color="grey")
    tpf.set_ylabel("tokens per forward (mean over prompts)")
    speed.bar(names, speedups, color="#e07b39")
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
    save(fig, path)


def read_log(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def build(results_dir: Path = FIGURES / "results", out_dir: Path = FIGURES, checkpoints: Path = CHECKPOINTS) -> list[Path]:
    """Write every figure whose inputs exist; returns the paths written."""
    written = []
    bench = results_dir / "benchmark.json"
    if bench.exists():
        results = json.loads(bench.read_text())
        jobs = {"speedup_vs_block_size.png": lambda p: metric_vs_block(results, "speedup_median", "speedup over AR", p),
                "tpf_vs_block_size.png": lambda p: metric_vs_block(results, "tpf", "tokens per forward", p),
                "accuracy_vs_speedup.png": lambda p: accuracy_vs_speedup(results, p),
                "acceptance_histogram.png": lambda p: acceptance(results, p),
                "cost_model.png": lambda p: cost_model(results, p)}
        for name, job in jobs.items():
            job(out_dir / name)
            written.append(out_dir / name)
    if (results_dir / "ablation.json").exists():
        ablation(json.loads((results_dir / "ablation.json").read_text()), out_dir / "noise_schedule_ablation.png")
        written.append(out_dir / "noise_schedule_ablation.png")
    reports = [results_dir / f"qwen_exactness_float32{part}.json" for part in ("", "_extra", "_multiblock")]
    costs = results_dir / "qwen_cost_model_float32.json"
    if reports[0].exists() and costs.exists():
        tiny_costs = json.loads(bench.read_text())["cost_model"] if bench.exists() else None
        real_model([json.loads(r.read_text()) for r in reports if r.exists()], json.loads(costs.read_text()),
                   tiny_costs, out_dir / "real_qwen.png")
        written.append(out_dir / "real_qwen.png")
    logs = {name: read_log(checkpoints / name / "train_log.jsonl") for name in ("jacobi-forcing", "cllm")
            if (checkpoints / name / "train_log.jsonl").exists()}
    if logs:
        training_curves(logs, out_dir / "training_curves.png")
        written.append(out_dir / "training_curves.png")
    return written
