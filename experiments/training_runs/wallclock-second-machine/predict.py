"""The steady-state cost model's speedup at the wall-clock setting, for each machine's measured L(k):

    predicted = Σ tokens · L(1) / Σ_f L(fed_f)        (`timing.predicted_speedup`)

over the same 300 long answers the sweep timed (the shipped model, n = 16, K = 2, r = 0.25, no pool, ours and
official). What each forward feeds does not depend on the machine (greedy decoding is deterministic), so the
machines differ only in L: OUT keeps the count of forwards per fed size, and a later call with OUT in place
only adds predictions. Prefill is left out (the sweep's times include it, for AR and the method alike).

Usage: python predict.py OUT.json LABEL=COST_MODEL.json ...   (each cost model as `cost-model` writes it)
"""
import json
import os
import sys

import numpy as np

from jacobi_min.model import load
from jacobi_min.multiblock import multiblock_decode
from jacobi_min.tools import task
from jacobi_min.tools.timing import predicted_speedup

SETTING = {"block_size": 16, "max_new_tokens": task.MAX_ANSWER_TOKENS, "blocks": 2, "spawn_ratio": 0.25,
           "pool_size": 0}


def fed_counts() -> dict:
    """Per variant: tokens committed and {fed size: forwards} over the 300 long answers."""
    model, tokenizer = load("jacobi-forcing")
    prompts = [tokenizer(p.prompt)["input_ids"] for p in task.problems("test", 300, length="long")]
    variants = {}
    for variant, official in (("ours", False), ("official", True)):
        results = [multiblock_decode(model, ids, **SETTING, official=official) for ids in prompts]
        sizes, counts = np.unique([k for r in results for k in r.fed], return_counts=True)
        variants[variant] = {"tokens": sum(sum(r.accepted) for r in results),
                             "fed": {int(k): int(c) for k, c in zip(sizes, counts)}}
    return variants


def predicted(variant: dict, cost: dict) -> float:
    fed = [int(k) for k, count in variant["fed"].items() for _ in range(count)]
    return predicted_speedup(fed, variant["tokens"], cost["latency_s"], cost["k"])


out, cost_files = sys.argv[1], dict(arg.split("=", 1) for arg in sys.argv[2:])
result = json.load(open(out)) if os.path.exists(out) else {"setting": SETTING, "variants": fed_counts()}
for variant in result["variants"].values():
    variant["tpf"] = variant["tokens"] / sum(variant["fed"].values())
    variant.setdefault("predicted", {}).update({label: predicted(variant, json.load(open(path))) for label, path in cost_files.items()})
print(json.dumps({name: {k: v for k, v in variant.items() if k != "fed"} for name, variant in result["variants"].items()},
                 indent=1))
json.dump(result, open(out, "w"), indent=1)
