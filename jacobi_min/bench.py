"""Benchmark: every method on the same held-out problems, timed interleaved in one process.

Metrics (DESIGN §2):
- TPF = tokens committed by decoding forwards / decoding forwards (prefill and its token left out);
- TPS = generated tokens / generation time, prefill excluded: each prompt's
  prefill forward is timed on its own and subtracted;
- speedup = TPS(method) / TPS(AR greedy with KV cache), same model size, dtype, device;
- cost model: L(k) = latency of one forward of k new tokens on a cached
  context; predicted speedup = (tokens · L(1)) / Σ_forwards L(tokens fed),
  which is TPF · L(1) / L(n_eff) when every forward feeds n_eff tokens.

The problems are split into `chunks`; each chunk gives one TPS per method, and
the table reports the median and range over chunks. Methods run in the same
order on every problem, after one warm-up problem.

Accuracy does not depend on the decoder (every method reproduces its model's
greedy output), so each model's accuracy is also measured once on a larger,
separate sample (`accuracy_problems`, n = 16): a difference of 2 points on 200
problems is 4 problems, within the noise of one draw.
"""
import json
import platform
import statistics
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
import transformers
from tqdm import tqdm
from transformers import DynamicCache

from . import task
from .jacobi import DecodeResult, greedy_decode, jacobi_decode
from .model import load
from .multiblock import multiblock_decode
from .train import evaluate

RESULTS = Path(__file__).parent.parent / "figures" / "results"
MULTIBLOCK = {"blocks": 2, "spawn_ratio": 0.25, "pool_size": 4}  # among the best TPF of the sweep
MODELS = ("base", "cllm", "jacobi-forcing")


@dataclass
class BenchConfig:
    problems: int = 200
    block_sizes: list[int] = field(default_factory=lambda: [8, 16, 32, 64])
    chunks: int = 5
    max_new_tokens: int = 96
    prompt_lookup_tokens: int = 10
    multiblock: dict = field(default_factory=lambda: dict(MULTIBLOCK))
    cost_ks: list[int] = field(default_factory=lambda: list(range(1, 129)))
    accuracy_problems: int = 2000
    accuracy_seed: int = 5  # a draw of its own (the pipeline's settings were chosen on seed 4)
    device: str = "cpu"
    dtype: str = "float32"


class ForwardCounter:
    """Counts a model's forward calls (for `generate`, whose loop we do not own)."""

    def __init__(self, model):
        self.count = 0
        model.register_forward_pre_hook(self._hook)

    def _hook(self, module, args):
        self.count += 1


def generate_result(model, counter: ForwardCounter, ids: list[int], max_new_tokens: int, **kwargs) -> DecodeResult:
    """transformers' greedy `generate` (optionally with prompt lookup) as a DecodeResult.

    Only the number of forwards is known, so `accepted` spreads the tokens evenly over them.
    """
    x = torch.tensor([ids], device=model.device)
    before = counter.count
    out = model.generate(x, attention_mask=torch.ones_like(x), do_sample=False, max_new_tokens=max_new_tokens,
                         pad_token_id=model.generation_config.pad_token_id, **kwargs)
    tokens = out[0, len(ids):].tolist()
    forwards = counter.count - before - 1  # the prefill is not a decoding forward
    return DecodeResult(tokens, accepted=[(len(tokens) - 1) / max(forwards, 1)] * forwards)


def methods(models: dict, cfg: BenchConfig) -> list[dict]:
    """(name, model, block size, decode(ids) -> DecodeResult) for every method and block size."""
    n_max = cfg.max_new_tokens
    base, cllm, jf = models["base"], models["cllm"], models["jacobi-forcing"]
    rows = [
        {"method": "AR", "model": "base", "n": 1, "run": lambda ids: greedy_decode(base, ids, n_max)},
        {"method": "AR generate", "model": "base", "n": 1,
         "run": lambda ids: generate_result(base, models["counter"]["base"], ids, n_max)},
        {"method": "prompt lookup", "model": "jacobi-forcing", "n": cfg.prompt_lookup_tokens,
         "run": lambda ids: generate_result(jf, models["counter"]["jacobi-forcing"], ids, n_max,
                                            prompt_lookup_num_tokens=cfg.prompt_lookup_tokens)},
    ]
    for n in cfg.block_sizes:
        rows += [
            {"method": "Jacobi (base)", "model": "base", "n": n, "run": lambda ids, n=n: jacobi_decode(base, ids, n, n_max)},
            {"method": "CLLM-style", "model": "cllm", "n": n, "run": lambda ids, n=n: jacobi_decode(cllm, ids, n, n_max)},
            {"method": "CLLM-style + MR", "model": "cllm", "n": n,
             "run": lambda ids, n=n: multiblock_decode(cllm, ids, n, n_max, **cfg.multiblock)},
            {"method": "Jacobi Forcing", "model": "jacobi-forcing", "n": n,
             "run": lambda ids, n=n: jacobi_decode(jf, ids, n, n_max)},
            {"method": "Jacobi Forcing + MR", "model": "jacobi-forcing", "n": n,
             "run": lambda ids, n=n: multiblock_decode(jf, ids, n, n_max, **cfg.multiblock)},
        ]
    return rows


def sync() -> None:
    """Wait for queued GPU work, so wall-clock times cover it."""
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def timed(fn, *args):
    sync()
    start = time.perf_counter()
    result = fn(*args)
    sync()
    return result, time.perf_counter() - start


@torch.inference_mode()
def prefill_time(model, ids: list[int]) -> float:
    x = torch.tensor([ids], device=model.device)
    return timed(lambda: model(input_ids=x))[1]


@torch.inference_mode()
def cost_model(model, ks: list[int], context: int = 64, repeats: int = 5) -> list[float]:
    """L(k) in seconds: median latency of one forward of k tokens after `context` cached tokens."""
    ids = torch.arange(context, device=model.device)[None] % model.config.vocab_size
    latencies = []
    for k in tqdm(ks, desc="cost model L(k)"):
        block = torch.arange(k, device=model.device)[None] % model.config.vocab_size
        runs = []
        for _ in range(repeats):
            cache = DynamicCache(config=model.config)
            model(input_ids=ids, past_key_values=cache, use_cache=True)
            runs.append(timed(lambda: model(input_ids=block, past_key_values=cache, use_cache=True))[1])
        latencies.append(statistics.median(runs))
    return latencies


def predicted_speedup(fed: list[int], tokens: int, latency: list[float], ks: list[int]) -> float:
    """(tokens · L(1)) / Σ_f L(fed_f), with L beyond the measured range extrapolated linearly."""
    table = dict(zip(ks, latency))
    slope = (latency[-1] - latency[0]) / max(1, ks[-1] - ks[0])
    cost = lambda k: table.get(k, latency[-1] + slope * (k - ks[-1]))
    return tokens * table[1] / sum(cost(k) for k in fed)


def summarise(row: dict, chunk_tps: list[float], ar_tps: list[float], latency, ks) -> dict:
    speedups = [m / a for m, a in zip(chunk_tps, ar_tps)]
    return {
        "method": row["method"], "model": row["model"], "block_size": row["n"],
        "tpf": row["tokens"] / row["forwards"], "accuracy": row["correct"] / row["problems"],
        "tps_median": statistics.median(chunk_tps), "tps_range": [min(chunk_tps), max(chunk_tps)],
        "speedup_median": statistics.median(speedups), "speedup_range": [min(speedups), max(speedups)],
        "predicted_speedup": predicted_speedup(row["fed"], row["tokens"], latency, ks) if row["fed"] else None,
        "tokens": row["tokens"], "forwards": row["forwards"], "identical_to_first_method_of_model": row["identical"],
        "accepted_histogram": row["hist"],
    }


def run(cfg: BenchConfig = BenchConfig(), out: Path | None = RESULTS / "benchmark.json") -> dict:
    """Run every method on cfg.problems held-out problems; write and return the results."""
    dtype = getattr(torch, cfg.dtype)
    models = {name: load(name, cfg.device, dtype)[0] for name in MODELS}
    tokenizer = load("base")[1]
    models["counter"] = {name: ForwardCounter(models[name]) for name in ("base", "jacobi-forcing")}
    rows = methods(models, cfg)
    for row in rows:
        row.update(tokens=0, forwards=0, correct=0, problems=0, identical=0, fed=[], hist={}, chunks=[])
    problems = task.problems("test", cfg.problems)
    warm = tokenizer(problems[0].prompt)["input_ids"]
    for row in rows:
        row["run"](warm)
    chunk = max(1, len(problems) // cfg.chunks)
    for i, p in enumerate(tqdm(problems, desc="benchmark")):
        ids = tokenizer(p.prompt)["input_ids"]
        pre = prefill_time(models["base"], ids)
        references = {}
        for row in rows:
            result, seconds = timed(row["run"], ids)
            reference = references.setdefault(row["model"], result.tokens)
            if i % chunk == 0 and len(row["chunks"]) < cfg.chunks:
                row["chunks"].append([0, 0.0])
            row["chunks"][-1][0] += len(result.tokens) - 1
            row["chunks"][-1][1] += max(seconds - pre, 1e-9)
            row["tokens"] += len(result.tokens) - 1
            row["forwards"] += result.forwards
            row["correct"] += task.is_correct(tokenizer.decode(result.tokens), p.answer)
            row["problems"] += 1
            row["identical"] += result.tokens == reference
            row["fed"] += result.fed
            for a in result.accepted if result.fed else []:  # per-forward counts unknown inside generate
                key = str(a)
                row["hist"][key] = row["hist"].get(key, 0) + 1
    latency = cost_model(models["base"], cfg.cost_ks)
    held_out = task.problems("test", cfg.accuracy_problems, seed=cfg.accuracy_seed)
    accuracy = {name: evaluate(models[name], tokenizer, held_out, 16) for name in MODELS}
    ar_tps = [t / s for t, s in rows[0]["chunks"]]
    table = [summarise(r, [t / s for t, s in r["chunks"]], ar_tps, latency, cfg.cost_ks) for r in rows]
    results = {"meta": meta(cfg), "methods": table, "cost_model": {"k": cfg.cost_ks, "latency_s": latency},
               "accuracy": accuracy}
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(results, indent=1))
    return results


def meta(cfg: BenchConfig) -> dict:
    return {"config": asdict(cfg), "device": cfg.device, "dtype": cfg.dtype, "threads": torch.get_num_threads(),
            "processor": platform.processor() or platform.machine(), "python": platform.python_version(),
            "torch": torch.__version__, "transformers": transformers.__version__,
            "date": time.strftime("%Y-%m-%d"), "prefill": "excluded (timed separately and subtracted)"}


def format_table(results: dict) -> str:
    lines = [f"{'method':22s} {'model':15s} {'n':>3s} {'TPF':>6s} {'speedup':>8s} {'range':>13s} "
             f"{'predicted':>9s} {'accuracy':>8s}"]
    for r in results["methods"]:
        pred = f"{r['predicted_speedup']:.2f}x" if r["predicted_speedup"] else "-"
        lines.append(f"{r['method']:22s} {r['model']:15s} {r['block_size']:3d} {r['tpf']:6.2f} "
                     f"{r['speedup_median']:7.2f}x [{r['speedup_range'][0]:.2f}, {r['speedup_range'][1]:.2f}] "
                     f"{pred:>9s} {100 * r['accuracy']:7.1f}%")
    problems = results["meta"]["config"]["accuracy_problems"]
    for name, scores in results["accuracy"].items():
        lines.append(f"accuracy of {name} on {problems} other held-out problems: {100 * scores['accuracy']:.2f}%")
    return "\n".join(lines)


@dataclass
class SweepConfig:
    model: str = "jacobi-forcing"
    problems: int = 50
    block_sizes: list[int] = field(default_factory=lambda: [8, 16, 32])
    blocks: list[int] = field(default_factory=lambda: [1, 2, 3])
    spawn_ratios: list[float] = field(default_factory=lambda: [0.25, 0.5, 0.85])
    pool_sizes: list[int] = field(default_factory=lambda: [0, 4])
    max_new_tokens: int = 96


def sweep(cfg: SweepConfig = SweepConfig(), out: Path | None = RESULTS / "multiblock_sweep.json") -> list[dict]:
    """TPF and speedup over AR of multi-block + recycling for every (n, K, r, pool), on one model."""
    model, tokenizer = load(cfg.model)
    prompts = [tokenizer(p.prompt)["input_ids"] for p in task.problems("test", cfg.problems)]
    grid = [(n, k, r, pool) for n in cfg.block_sizes for k in cfg.blocks for r in cfg.spawn_ratios
            for pool in cfg.pool_sizes if k > 1 or r == cfg.spawn_ratios[0]]  # r is unused with one block
    rows = []
    for n, k, r, pool in tqdm(grid, desc="multi-block sweep"):
        tokens = forwards = 0
        ar_time = method_time = 0.0
        for ids in prompts:
            ar, t_ar = timed(greedy_decode, model, ids, cfg.max_new_tokens)
            result, t = timed(lambda: multiblock_decode(model, ids, n, cfg.max_new_tokens, k, r, pool))
            assert result.tokens == ar.tokens, "multi-block decoding diverged from greedy decoding"
            tokens, forwards = tokens + sum(result.accepted), forwards + result.forwards
            ar_time, method_time = ar_time + t_ar, method_time + t
        rows.append({"block_size": n, "blocks": k, "spawn_ratio": r, "pool_size": pool,
                     "tpf": tokens / forwards, "speedup": ar_time / method_time})
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"model": cfg.model, "problems": cfg.problems, "rows": rows}, indent=1))
    return rows
