"""Throughput of batched decoding: B prompts a forward, Jacobi Forcing against greedy AR (`bench --batch`).

For every batch size B and answer-length bucket, the same held-out prompts are decoded B at a
time (batch.py: continuous batching) by batched greedy AR (block size 1, the base model) and by
batched Jacobi Forcing (n = 16), alternating in chunks of 4·B prompts, in one process of one
thread. tokens/s = generated tokens / seconds, prefill included (both decoders prefill the same
prompts).

Cost model: a forward that feeds k tokens in all (rows × padded width, or a prefill's rows ×
prompt length) costs L(k), the latency of one forward of k new tokens on a cached context
(timing.cost_model). With the forwards each decoder actually ran, the predicted speedup is

    Σ_{AR forwards f} L(k_f)  /  Σ_{Jacobi forwards f} L(k_f)          (the same tokens)

At B = 1 it is about TPF · L(1) / L(n). Parallel decoding pays while L grows slower than the
tokens fed; once B one-token rows already keep the machine busy, L(B · n) ≈ n · L(B) and the
extra tokens cost as much as they save: the crossover.
"""
import json
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path

from tqdm import tqdm

from ..batch import batch_jacobi_decode
from ..model import load
from ..utils import num_threads, pmap
from . import task
from .timing import cost_model, forwards_cost, machine, timed, timed_threads
from .evaluate import prompt_ids

OUT = Path("figures/results/batch_throughput.json")


@dataclass
class ThroughputConfig:
    batch: list[int] = field(default_factory=lambda: [1, 8, 32])  # the batch sizes B measured (bench --batch)
    problems: int = 128  # per length bucket, decoded at every batch size
    lengths: list[str] = field(default_factory=lambda: list(task.BUCKETS))
    block_size: int = 16
    max_new_tokens: int = task.MAX_ANSWER_TOKENS
    cost_ks: list[int] = field(default_factory=lambda: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048])
    workers: int = 2
    seed: int = 0


def decode(model, prompts: list[list[int]], block_size: int, batch: int, max_new_tokens: int) -> dict:
    """The prompts, `batch` rows at a time, timed: tokens, seconds and the tokens fed by every forward."""
    (results, stats), seconds = timed(partial(batch_jacobi_decode, batch=batch), model, prompts, block_size,
                                     max_new_tokens)
    return {"tokens": sum(len(r.tokens) - 1 for r in results), "seconds": seconds, "rows": stats.rows,
            "fed": [rows * width for rows, width in zip(stats.rows, stats.width)] + stats.prefills}


def run_bucket(cfg: ThroughputConfig, length: str) -> dict:
    """Both decoders at every batch size on one bucket's problems: totals per batch size."""
    base, tokenizer = load("base")
    jf = load("jacobi-forcing")[0]
    prompts = [prompt_ids(tokenizer, p) for p in task.problems("test", cfg.problems, seed=cfg.seed, length=length)]
    for model, n in ((base, 1), (jf, cfg.block_size)):  # warm-up
        decode(model, prompts[:2], n, 2, 8)
    totals = {}
    for b in cfg.batch:
        total = {m: {"tokens": 0, "seconds": 0.0, "rows": [], "fed": []} for m in ("AR", "Jacobi Forcing")}
        for i in tqdm(range(0, len(prompts), 4 * b), desc=f"{length}, B = {b}", leave=False):
            chunk = prompts[i:i + 4 * b]
            for name, run in (("AR", decode(base, chunk, 1, b, cfg.max_new_tokens)),
                              ("Jacobi Forcing", decode(jf, chunk, cfg.block_size, b, cfg.max_new_tokens))):
                for key in run:
                    total[name][key] += run[key]
        totals[b] = total
    return totals


def summary(totals: dict, latency: list[float], ks: list[int]) -> dict:
    """tokens/s of both decoders, measured and predicted speedup, per batch size."""
    out = {}
    for b, total in totals.items():
        ar, jf = total["AR"], total["Jacobi Forcing"]
        tps = {name: t["tokens"] / t["seconds"] for name, t in total.items()}
        predicted = forwards_cost(ar["fed"], latency, ks) / forwards_cost(jf["fed"], latency, ks)
        out[str(b)] = {"tokens_per_s": tps, "speedup": tps["Jacobi Forcing"] / tps["AR"],
                       "predicted_speedup": predicted * jf["tokens"] / ar["tokens"],
                       "tpf": jf["tokens"] / sum(jf["rows"]),
                       "forwards": {name: len(t["rows"]) for name, t in total.items()}}
    return out


def run(cfg: ThroughputConfig = ThroughputConfig(), out: Path | None = OUT) -> dict:
    """Every bucket in its own one-thread process, then L(k) on one thread; written to `out`."""
    raw = pmap(partial(run_bucket, cfg), cfg.lengths, cfg.workers, "length buckets")
    with num_threads(timed_threads(cfg.workers)):
        latency = cost_model(load("base")[0], cfg.cost_ks)
    results = {"config": asdict(cfg), "threads": timed_threads(cfg.workers), "machine": machine(),
               "cost_model": {"k": cfg.cost_ks, "latency_s": latency},
               "buckets": {length: summary(rows, latency, cfg.cost_ks) for length, rows in zip(cfg.lengths, raw)}}
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(results, indent=1))
    return results


def format_table(results: dict) -> str:
    lines = [f"{'bucket':8s} {'B':>3s} {'AR tok/s':>9s} {'JF tok/s':>9s} {'speedup':>8s} {'predicted':>9s}"]
    for length, rows in results["buckets"].items():
        for b, r in rows.items():
            lines.append(f"{length:8s} {b:>3s} {r['tokens_per_s']['AR']:9.0f} {r['tokens_per_s']['Jacobi Forcing']:9.0f} "
                         f"{r['speedup']:7.2f}x {r['predicted_speedup']:8.2f}x")
    return "\n".join(lines)
