"""Benchmark: every method on the same held-out problems, timed interleaved in one process.

Metrics (as the paper defines them; the words are explained on docs/results.md):
- TPF = tokens committed by decoding forwards / decoding forwards (prefill and its token left out);
- TPS = generated tokens / generation time; reported with the prefill excluded (each
  prompt's prefill forward is timed on its own and subtracted) and included;
- speedup = TPS(method) / TPS(AR greedy with KV cache), same model size, dtype, device;
- cost model: L(k) and the predicted speedup (timing.py).

Every length bucket (`task.BUCKETS`) gets its own held-out problems and runs
in its own CPU process of one thread (`workers` at a time); within a process
the methods run in the same order on every problem, after one warm-up
problem, so each speedup is a ratio measured interleaved. The problems are
split into `chunks`; each chunk gives one TPS per method, and the table
reports the median and range over chunks. Accuracy does not depend on the
decoder: every method must reproduce its own model's greedy AR output, and
the results file counts, per method, the problems where it did (the base's
AR is the timed AR row; the trained models' AR runs untimed). The families the paper argues
against (`families`) are held to the base's AR: the base with its drafter must equal it, block
diffusion is not lossless and the count says how often it does.

Commands: `bench`, `eval` (held-out scores of any models) and `cost-model`.
"""
import json
import statistics
import time
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path

import torch
from tqdm import tqdm

from ..baselines import Speculative, diffusion_decode
from ..baselines.drafter import ForwardCounter, generate_result
from ..jacobi import DecodeResult, greedy_decode, jacobi_decode
from ..model import load
from ..multiblock import multiblock_decode
from ..utils import atomic_write, num_threads, pmap
from . import task, throughput
from .cli import at_least, device_args, dtype_of, model_args, with_model
from .evaluate import evaluate
from .timing import cost_model, machine, predicted_speedup, prefill_time, timed, timed_threads

RESULTS = Path("figures/results")  # relative to the current folder: a clone's own results
BENCHMARK_OUT = RESULTS / "benchmark.json"
MULTIBLOCK = {"blocks": 2, "spawn_ratio": 0.25, "pool_size": 4}  # among the best TPF of the multi-block sweep
MODELS = ("base", "cllm", "jacobi-forcing", "block-diffusion", "drafter")


@dataclass
class BenchConfig:
    problems: int = 300  # per length bucket
    lengths: list[str] = field(default_factory=lambda: list(task.BUCKETS))
    block_sizes: list[int] = field(default_factory=lambda: [16])  # every Jacobi method at each n
    forcing_block_sizes: list[int] = field(default_factory=lambda: [8, 32])  # Jacobi Forcing alone: its TPF curve
    chunks: int = 5
    max_new_tokens: int = task.MAX_ANSWER_TOKENS
    prompt_lookup_tokens: int = 10
    multiblock: dict = field(default_factory=lambda: dict(MULTIBLOCK))
    thresholds: list[float] = field(default_factory=lambda: [0.5, 0.7, 0.9, 0.99])  # block diffusion's τ, n = 16
    draft_tokens: list[int] = field(default_factory=lambda: [2, 4, 8])  # the drafter's k (docs/results.md's grid)
    cost_ks: list[int] = field(default_factory=lambda: [1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 96, 128])
    cost_context: int = 160  # tokens in the cache while L(k) is measured: about a mean answer's midpoint
    workers: int = 2
    seed: int = 0
    device: str = "cpu"
    dtype: str = "float32"


def methods(models: dict, cfg: BenchConfig) -> list[dict]:
    """(name, model, block size, decode(ids) -> DecodeResult) for every method and block size."""
    n_max = cfg.max_new_tokens
    base, cllm, jf = models["base"], models["cllm"], models["jacobi-forcing"]
    rows = [
        {"method": "AR", "model": "base", "n": 1, "run": lambda ids: greedy_decode(base, ids, n_max)},
        {"method": "prompt lookup", "model": "jacobi-forcing", "n": cfg.prompt_lookup_tokens,
         "run": lambda ids: generate_result(jf, models["counter"]["jacobi-forcing"], ids, n_max,
                                            prompt_lookup_num_tokens=cfg.prompt_lookup_tokens)},
    ]
    for n in cfg.block_sizes:
        rows += [
            {"method": "Jacobi (base)", "model": "base", "n": n, "run": lambda ids, n=n: jacobi_decode(base, ids, n, n_max)},
            {"method": "CLLM", "model": "cllm", "n": n, "run": lambda ids, n=n: jacobi_decode(cllm, ids, n, n_max)},
            {"method": "CLLM + MR", "model": "cllm", "n": n,
             "run": lambda ids, n=n: multiblock_decode(cllm, ids, n, n_max, **cfg.multiblock)},
            {"method": "Jacobi Forcing", "model": "jacobi-forcing", "n": n,
             "run": lambda ids, n=n: jacobi_decode(jf, ids, n, n_max)},
            {"method": "Jacobi Forcing + MR", "model": "jacobi-forcing", "n": n,
             "run": lambda ids, n=n: multiblock_decode(jf, ids, n, n_max, **cfg.multiblock)},
        ]
    rows += [{"method": "Jacobi Forcing", "model": "jacobi-forcing", "n": n, "run": lambda ids, n=n: jacobi_decode(jf, ids, n, n_max)}
             for n in cfg.forcing_block_sizes if n not in cfg.block_sizes]
    return rows + families(models, cfg)


def families(models: dict, cfg: BenchConfig) -> list[dict]:
    """The families the paper argues against, each held to the base's AR output: block diffusion at
    each threshold τ (n = 16, not lossless) and the base with its drafter at each draft length k."""
    n_max, diffusion = cfg.max_new_tokens, models["block-diffusion"]
    rows = [{"method": f"block diffusion, τ = {t}", "model": "block-diffusion", "reference": "base", "n": 16,
             "run": lambda ids, t=t: diffusion_decode(diffusion, ids, 16, t, n_max)} for t in cfg.thresholds]
    if cfg.draft_tokens:  # its forward counters hook the base's forwards: only when its rows run
        speculative = Speculative(models["base"], models["drafter"])
        rows += [{"method": f"draft model, k = {k}", "model": "base", "n": k,
                  "run": lambda ids, k=k: speculative(ids, n_max, k)} for k in cfg.draft_tokens]
    return rows


def summarise(row: dict, ar: dict, latency, ks) -> dict:
    """One method's table row; speedups per chunk against AR's chunk, prefill excluded and included."""
    tps = [t / s for t, s, _ in row["chunks"]]
    speedups = [(t / s) / (a / b) for (t, s, _), (a, b, _) in zip(row["chunks"], ar["chunks"])]
    with_prefill = [(t / s) / (a / b) for (t, _, s), (a, _, b) in zip(row["chunks"], ar["chunks"])]
    return {
        "method": row["method"], "model": row["model"], "block_size": row["n"],
        "tpf": row["tokens"] / row["forwards"], "accuracy": row["correct"] / row["problems"],
        "tps_median": statistics.median(tps), "tps_range": [min(tps), max(tps)],
        "speedup_median": statistics.median(speedups), "speedup_range": [min(speedups), max(speedups)],
        "speedup_with_prefill_median": statistics.median(with_prefill),
        "speedup_with_prefill_range": [min(with_prefill), max(with_prefill)],
        "predicted_speedup": predicted_speedup(row["fed"], row["tokens"], latency, ks) if row["fed"] else None,
        "tokens": row["tokens"], "forwards": row["forwards"], "identical_to_model_ar": row["identical"],
        "accepted_histogram": row["hist"],
    }


def record(row: dict, result: DecodeResult, seconds: float, prefill: float, correct: bool, reference: list[int]) -> None:
    """Add one problem's decode to a method's running totals (its chunk's tokens and times too)."""
    row["chunks"][-1][0] += len(result.tokens) - 1
    row["chunks"][-1][1] += max(seconds - prefill, 1e-9)
    row["chunks"][-1][2] += seconds
    row["tokens"] += len(result.tokens) - 1
    row["forwards"] += result.forwards
    row["correct"] += correct
    row["problems"] += 1
    row["identical"] += result.tokens == reference
    row["fed"] += result.fed
    for a in result.accepted if result.fed else []:  # per-forward counts unknown inside generate
        row["hist"][str(a)] = row["hist"].get(str(a), 0) + 1


def run_bucket(cfg: BenchConfig, length: str) -> dict:
    """Every method on cfg.problems held-out problems of one length bucket: the raw totals."""
    dtype = getattr(torch, cfg.dtype)
    models = {name: load(name, cfg.device, dtype)[0] for name in MODELS}
    tokenizer = load("base")[1]
    models["counter"] = {"jacobi-forcing": ForwardCounter(models["jacobi-forcing"])}
    rows = methods(models, cfg)
    for row in rows:
        row.update(tokens=0, forwards=0, correct=0, problems=0, identical=0, fed=[], hist={}, chunks=[])
    problems = task.problems("test", cfg.problems, seed=cfg.seed, length=length)
    trained = {row.get("reference", row["model"]) for row in rows} - {"base"}  # their AR runs untimed
    for row in rows:
        row["run"](tokenizer(problems[0].prompt)["input_ids"])  # warm-up
    chunk = max(1, len(problems) // cfg.chunks)
    for i, p in enumerate(tqdm(problems, desc=f"benchmark ({length})")):
        ids = tokenizer(p.prompt)["input_ids"]
        pre = prefill_time(models["base"], ids)
        references = {name: greedy_decode(models[name], ids, cfg.max_new_tokens).tokens for name in trained}
        for row in rows:
            result, seconds = timed(row["run"], ids)
            if i % chunk == 0 and len(row["chunks"]) < cfg.chunks:
                row["chunks"].append([0, 0.0, 0.0])
            if row["method"] == "AR":  # the base's greedy AR output is the timed AR row's
                references["base"] = result.tokens
            correct = task.is_correct(tokenizer.decode(result.tokens), p.answer)
            record(row, result, seconds, pre, correct, references[row.get("reference", row["model"])])
    return {"rows": [{k: v for k, v in r.items() if k != "run"} for r in rows],
            "answer_tokens": rows[0]["tokens"] / len(problems) + 1}


def run(cfg: BenchConfig = BenchConfig(), out: Path | None = BENCHMARK_OUT) -> dict:
    """Run every method on every length bucket; write and return the results."""
    workers = cfg.workers if cfg.device == "cpu" else 1
    longest_first = sorted(cfg.lengths, key=lambda length: -task.BUCKETS[length][1])
    raw = dict(zip(longest_first, pmap(partial(run_bucket, cfg), longest_first, workers, "length buckets")))
    with num_threads(timed_threads(workers)):  # L(k) on the timed runs' threads
        latency = cost_model(load("base", cfg.device, getattr(torch, cfg.dtype))[0], cfg.cost_ks, cfg.cost_context)
    buckets = {}
    for length in cfg.lengths:
        bucket = raw[length]
        ar = bucket["rows"][0]
        buckets[length] = {"problems": cfg.problems, "answer_tokens": bucket["answer_tokens"],
                           "methods": [summarise(r, ar, latency, cfg.cost_ks) for r in bucket["rows"]]}
    results = {"meta": meta(cfg, threads=timed_threads(workers)), "buckets": buckets,
               "cost_model": {"k": cfg.cost_ks, "latency_s": latency, "context": cfg.cost_context}}
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(out, json.dumps(results, indent=1))
    return results


def meta(cfg: BenchConfig, threads: int) -> dict:
    return {"config": asdict(cfg), "device": cfg.device, "dtype": cfg.dtype, "threads": threads,
            "machine": machine(), "date": time.strftime("%Y-%m-%d"),
            "prefill": "speedup excludes it (timed separately and subtracted); speedup_with_prefill includes it"}


def format_table(results: dict) -> str:
    lines = []
    for length, bucket in results["buckets"].items():
        lo, hi = task.BUCKETS[length]
        lines.append(f"{length} answers ({lo}-{hi} tokens, mean {bucket['answer_tokens']:.0f}), "
                     f"{bucket['problems']} held-out problems")
        lines.append(f"  {'method':25s} {'model':15s} {'n':>3s} {'TPF':>6s} {'speedup':>8s} {'range':>13s} "
                     f"{'+prefill':>8s} {'predicted':>9s} {'accuracy':>8s} {'same as AR':>10s}")
        for r in bucket["methods"]:
            pred = f"{r['predicted_speedup']:.2f}x" if r["predicted_speedup"] else "-"
            same = f"{r['identical_to_model_ar']}/{bucket['problems']}"
            lines.append(f"  {r['method']:25s} {r['model']:15s} {r['block_size']:3d} {r['tpf']:6.2f} "
                         f"{r['speedup_median']:7.2f}x [{r['speedup_range'][0]:.2f}, {r['speedup_range'][1]:.2f}] "
                         f"{r['speedup_with_prefill_median']:7.2f}x {pred:>9s} {100 * r['accuracy']:7.1f}% {same:>10s}")
    return "\n".join(lines)


def score_job(problems: int, block_size: int, seed: int, device: str, job: tuple[str, str]) -> dict:
    """`evaluate` of one model on `problems` held-out problems of one length bucket."""
    name, length = job
    model, tokenizer = load(name, device)
    held_out = task.problems("test", problems, seed=seed, length=length)
    return evaluate(model, tokenizer, held_out, block_size, progress=False)


def scores(models: list[str], lengths: list[str], problems: int, block_size: int = 16, workers: int = 2,
           seed: int = 0, device: str = "cpu") -> list[dict]:
    """For each model, {length: held-out accuracy, TPF of greedy Jacobi at `block_size`, repetition},
    on the benchmark's problems (the same `seed`), one (model, length) job per one-thread process."""
    jobs = [(name, length) for name in models for length in lengths]
    job = partial(score_job, problems, block_size, seed, device)
    results = iter(pmap(job, jobs, min(workers, len(jobs)) if device == "cpu" else 1, "evaluate"))
    return [{length: next(results) for length in lengths} for _ in models]


def bench_command(args) -> None:
    if args.batch:  # batched throughput: its own module
        cfg = throughput.ThroughputConfig(batch=args.batch, problems=args.problems or throughput.ThroughputConfig.problems,
                                          lengths=args.lengths, workers=args.workers)
        return print(throughput.format_table(throughput.run(cfg, args.out or throughput.OUT)))
    cfg = BenchConfig(problems=args.problems or BenchConfig.problems, lengths=args.lengths, block_sizes=args.block_sizes,
                      workers=args.workers, device=args.device, dtype=str(dtype_of(args)).removeprefix("torch."))
    print(format_table(run(cfg, args.out or BENCHMARK_OUT)))


def eval_command(args) -> None:
    """Scores of every model on every length bucket: printed, and written to --out."""
    labels = args.labels or args.models
    if len(labels) != len(args.models):
        raise ValueError(f"--labels names {len(labels)} models, --models {len(args.models)}")
    if len(set(labels)) != len(labels):
        raise ValueError(f"each model needs a label of its own, got {labels}")
    table = scores(args.models, args.lengths, args.problems, args.block_size, args.workers, seed=args.seed,
                   device=args.device)
    for label, row in zip(labels, table):
        for length, s in row.items():
            print(f"{label}  {length:6s}  accuracy {s['accuracy']:.1%}  TPF {s['tpf']:.2f}  repetition {s['repetition']:.3f}")
    if args.out:
        args.out.write_text(json.dumps({"problems": args.problems, "seed": args.seed, "block_size": args.block_size,
                                        "models": dict(zip(labels, args.models)),
                                        "scores": dict(zip(labels, table))}, indent=1))


def cost_model_command(args, model, tokenizer) -> None:
    latency = cost_model(model, args.ks, context=args.context)
    costs = {"k": args.ks, "latency_s": latency, "context": args.context,
             "meta": {"model": args.model, "dtype": str(model.dtype), "threads": torch.get_num_threads(),
                      "machine": machine()}}
    args.out.write_text(json.dumps(costs, indent=1))
    print({k: f"L(k)/L(1) = {t / latency[0]:.2f}" for k, t in zip(args.ks, latency)})


def add_commands(commands) -> None:
    p = commands.add_parser("bench", help="every method on held-out problems of each length bucket: TPF, speedup, "
                                          "accuracy, cost model; the baselines' rows too (~35 min on 2 cores)")
    p.add_argument("--problems", type=at_least(1), help="per length bucket (default: 300; with --batch, 128)")
    p.add_argument("--lengths", nargs="+", default=list(task.BUCKETS), choices=list(task.BUCKETS))
    p.add_argument("--block-sizes", type=at_least(1), nargs="+", default=BenchConfig().block_sizes)
    p.add_argument("--batch", type=at_least(1), nargs="+",
                   help="instead, the throughput of batched decoding at these batch sizes (e.g. 1 8 32): Jacobi "
                        "Forcing against greedy AR, measured and predicted by the cost model (1 2 4 8 16 32: ~12 min on 2 cores)")
    p.add_argument("--workers", type=at_least(1), default=2, help="CPU processes (one thread each), one length bucket each")
    device_args(p)
    p.add_argument("--out", type=Path, help=f"default: {BENCHMARK_OUT}; with --batch, figures/results/batch_throughput.json")
    p.set_defaults(run=bench_command)

    p = commands.add_parser("eval", help="held-out accuracy, TPF of greedy Jacobi and repetition of models, per length bucket")
    p.add_argument("--models", "--model", nargs="+", default=["base"],
                   help="embedded names (base, jacobi-forcing, cllm) or checkpoint directories")
    device_args(p, dtype=False)
    p.add_argument("--problems", type=at_least(1), default=500, help="per length bucket")
    p.add_argument("--lengths", nargs="+", default=["mix"], choices=task.LENGTHS,
                   help="length buckets (mix: all three, drawn together)")
    p.add_argument("--block-size", type=at_least(1), default=16)
    p.add_argument("--workers", type=at_least(1), default=2, help="CPU processes (one thread each)")
    p.add_argument("--seed", type=at_least(0), default=0,
                   help="which held-out problems (0: the scoreboard's; docs/results.md names the test seed)")
    p.add_argument("--labels", nargs="+", help="names the models are recorded under (default: --models)")
    p.add_argument("--out", type=Path, help="JSON file for the scores")
    p.set_defaults(run=eval_command)

    p = commands.add_parser("cost-model", help="L(k): latency of one forward of k new tokens on a cached context")
    model_args(p, default="qwen2.5-coder-0.5b-instruct")
    p.add_argument("--ks", type=at_least(1), nargs="+", default=[1, 2, 4, 8, 16, 32, 64, 128])
    p.add_argument("--context", type=at_least(1), default=256, help="tokens already in the KV cache")
    p.add_argument("--out", type=Path, required=True, help="JSON file")
    p.set_defaults(run=with_model(cost_model_command))
