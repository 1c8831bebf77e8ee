"""Timing: the wall clock of a call (GPU work included), the machine a timing ran on, and the cost
model L(k) = latency of one forward of k new tokens on a cached context, in steady state on the
decoder's own path (forward + argmax + crop, warm, median of many repeats).

With the forwards a decoder ran, feeding fed_f tokens each, the predicted speedup over AR is
(tokens · L(1)) / Σ_f L(fed_f), which is TPF · L(1) / L(n_eff) when every forward feeds n_eff tokens.
`bench` and the batched benchmark (`bench --batch`) time with it.
"""
import os
import platform
import statistics
import time
from pathlib import Path

import numpy as np
import torch
import transformers
from tqdm import tqdm
from transformers import DynamicCache

from ..jacobi import forward_argmax


def sync() -> None:
    """Wait for queued GPU work, so wall-clock times cover it."""
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def timed_threads(workers: int) -> int:
    """Threads each timed run gets: `pmap` gives each of several workers one, or runs in this process on its own."""
    return 1 if workers > 1 else torch.get_num_threads()


def machine() -> dict:
    """What a timing depends on beyond the code: the CPU (as /proc/cpuinfo names it, with its family /
    model / stepping, since a virtual machine may report a generic name), its core count, the vector
    instructions torch dispatches to, and the library versions."""
    info = cpuinfo()
    return {"cpu": info.get("model name") or platform.processor() or platform.machine(),
            "cpu_id": "/".join(info.get(k, "?") for k in ("cpu family", "model", "stepping")),
            "cache": info.get("cache size", "?"), "cpus": os.cpu_count(),
            "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "python": platform.python_version(), "torch": torch.__version__, "transformers": transformers.__version__}


def cpuinfo(path: Path = Path("/proc/cpuinfo")) -> dict:
    """The first processor's `key: value` lines of /proc/cpuinfo; empty where there is no such file."""
    if not path.exists():
        return {}
    first = path.read_text().split("\n\n")[0]
    return {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in first.splitlines())}


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
def cost_model(model, ks: list[int], context: int = 160, repeats: int = 30, warmup: int = 5) -> list[float]:
    """L(k) in seconds, in steady state: the median over `repeats` of one decoding step of k
    tokens on `context` cached tokens (forward + argmax + crop, as the decoder does), after
    `warmup` untimed steps."""
    ids = torch.arange(context, device=model.device)[None] % model.config.vocab_size
    cache = DynamicCache(config=model.config)
    model(input_ids=ids, past_key_values=cache, use_cache=True)
    latencies = []
    for k in tqdm(ks, desc="cost model L(k)"):
        block = [(7 * i) % model.config.vocab_size for i in range(k)]
        runs = []
        for r in range(warmup + repeats):
            seconds = timed(forward_argmax, model, block, cache)[1]
            cache.crop(-k)  # back to the context, as a rejected draft is
            runs.append(seconds)
        latencies.append(statistics.median(runs[warmup:]))
    return latencies


def forwards_cost(fed: list[int], latency: list[float], ks: list[int]) -> float:
    """Σ_f L(fed_f) for measured L(k), ks ascending: L interpolated linearly between the measured k, and
    extrapolated beyond the largest at the mean slope of the measured range."""
    fed = np.asarray(fed, dtype=float)
    slope = (latency[-1] - latency[0]) / max(1, ks[-1] - ks[0])
    return float((np.interp(fed, ks, latency) + slope * np.maximum(fed - ks[-1], 0)).sum())


def predicted_speedup(fed: list[int], tokens: int, latency: list[float], ks: list[int]) -> float:
    """(tokens · L(1)) / Σ_f L(fed_f), ks ascending from 1 (AR spends L(1) on each token)."""
    return tokens * latency[0] / forwards_cost(fed, latency, ks)
