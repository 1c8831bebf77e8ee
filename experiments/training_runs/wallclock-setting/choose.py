"""The cost model's speedup of every multi-block setting on development long answers, to choose the wall-clock
setting without timing noise:

    predicted = Σ tokens · L(1) / Σ_f L(fed_f)        (`timing.predicted_speedup`, this machine's L(k))

Greedy decoding is deterministic, so what each forward feeds depends only on the setting; the answers are held-out
long answers 301-360, after the scoreboard's 300 (the setting is chosen on them, then timed on the 300). OUT keeps
each setting's count of forwards per fed size, so a later call with OUT in place only adds predictions for other
cost models; rows are ranked by the first cost model given.

Usage: python choose.py OUT.json LABEL=COST_MODEL.json ...   (LABEL without '='; files as `cost-model` writes them)
"""
import itertools
import json
import os
import sys
from functools import partial

import numpy as np

from jacobi_min.model import load
from jacobi_min.multiblock import multiblock_decode
from jacobi_min.tools import task
from jacobi_min.tools.timing import predicted_speedup
from jacobi_min.utils import pmap

SCOREBOARD = 300


def settings() -> list[tuple]:
    """(n, K, r, official): plain Jacobi (K = 1) and K = 2-4 blocks with early to late spawning; no pool
    (its extra rows cost more than they save on a CPU: docs/results.md, the multi-block sweep)."""
    plain = [(n, 1, 1.0, False) for n in (8, 16, 32)]
    multi = list(itertools.product((8, 16, 32), (2, 3, 4), (0.1, 0.25, 0.5), (False, True)))
    return plain + multi


def forwards(model, prompts: list[list[int]], setting: tuple) -> dict:
    """One setting's tokens committed and {fed size: forwards} over the prompts' answers."""
    n, k, r, official = setting
    results = [multiblock_decode(model, ids, n, task.MAX_ANSWER_TOKENS, k, r, 0, official=official) for ids in prompts]
    sizes, counts = np.unique([f for result in results for f in result.fed], return_counts=True)
    return {"block_size": n, "blocks": k, "spawn_ratio": r, "official": official,
            "tokens": sum(sum(result.accepted) for result in results),
            "fed": {int(size): int(count) for size, count in zip(sizes, counts)}}


def decoded(answers: int = 60) -> dict:
    model, tokenizer = load("jacobi-forcing")
    problems = task.problems("test", SCOREBOARD + answers, length="long")[SCOREBOARD:]
    prompts = [tokenizer(p.prompt)["input_ids"] for p in problems]
    return {"answers": f"held-out long answers {SCOREBOARD + 1}-{SCOREBOARD + answers}",
            "rows": pmap(partial(forwards, model, prompts), settings(), workers=2, desc="settings")}


def predict(row: dict, cost: dict) -> float:
    fed = [int(size) for size, count in row["fed"].items() for _ in range(count)]
    return predicted_speedup(fed, row["tokens"], cost["latency_s"], cost["k"])


def main(out: str, cost_files: dict[str, str]) -> None:
    result = json.load(open(out)) if os.path.exists(out) else decoded()
    costs = {label: json.load(open(path)) for label, path in cost_files.items()}
    for row in result["rows"]:
        row.update(forwards=sum(row["fed"].values()), tpf=row["tokens"] / sum(row["fed"].values()))
        row.setdefault("predicted", {}).update({label: predict(row, cost) for label, cost in costs.items()})
    first = next(iter(result["rows"][0]["predicted"]))
    result["rows"].sort(key=lambda row: -row["predicted"][first])
    json.dump(result, open(out, "w"), indent=1)
    for row in result["rows"][:10]:
        print({key: value for key, value in row.items() if key != "fed"})


if __name__ == "__main__":
    main(sys.argv[1], dict(arg.split("=", 1) for arg in sys.argv[2:]))
