"""Seconds of AR and of multi-block decoding (n = 16, K = 2, r = 0.25, no pool, ours and official) on one and on
two threads: is the 2-thread speedup over AR a faster method, or a slower AR?

    speedup(threads) = T_AR(threads) / T_method(threads);   fair: min over threads of T_AR / T_method(threads)

Usage: python threads.py THREADS PROBLEMS OUT.json  (one process per thread count, alone on the machine;
the shipped Jacobi Forcing model; held-out long answers 1 to PROBLEMS, answer 0 warming up, every decoder
on each problem in turn). Writes the total seconds of each decoder; run.sh calls it.
"""
import json
import sys

import torch

from jacobi_min.jacobi import greedy_decode
from jacobi_min.model import load
from jacobi_min.multiblock import multiblock_decode
from jacobi_min.tools import task
from jacobi_min.tools.timing import timed

threads, count, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
torch.set_num_threads(threads)
model, tokenizer = load("jacobi-forcing")
prompts = [tokenizer(p.prompt)["input_ids"] for p in task.problems("test", count + 1, length="long")]
setting = {"block_size": 16, "max_new_tokens": task.MAX_ANSWER_TOKENS, "blocks": 2, "spawn_ratio": 0.25, "pool_size": 0}
decoders = {"AR": lambda ids: greedy_decode(model, ids, task.MAX_ANSWER_TOKENS),
            "ours": lambda ids: multiblock_decode(model, ids, **setting),
            "official": lambda ids: multiblock_decode(model, ids, **setting, official=True)}
for decode in decoders.values():
    decode(prompts[0])  # warm-up
seconds = dict.fromkeys(decoders, 0.0)
for ids in prompts[1:]:
    for name, decode in decoders.items():
        seconds[name] += timed(decode, ids)[1]
print(threads, {k: round(v, 2) for k, v in seconds.items()})
with open(out, "w") as f:
    json.dump({"threads": threads, "problems": count, "seconds": seconds}, f, indent=1)
