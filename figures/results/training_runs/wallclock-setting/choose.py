"""The cost model's speedup of every multi-block setting on development long answers, to choose the wall-clock
setting without timing noise:

    predicted = Σ tokens · L(1) / Σ_f L(fed_f)        (`bench.predicted_speedup`, this machine's L(k))

Greedy decoding is deterministic, so what each forward feeds depends only on the setting; the answers are held-out
long answers 301-360, after the scoreboard's 300 (the setting is chosen on them, then timed on the 300).

Usage: python choose.py OUT.json COST_MODEL.json [ANSWERS]
"""
import itertools
import json
import sys
from pathlib import Path

from jacobi_min import task
from jacobi_min.bench import predicted_speedup
from jacobi_min.model import load
from jacobi_min.multiblock import multiblock_decode
from jacobi_min.workers import SHARED, pmap

SCOREBOARD = 300


def settings() -> list[tuple]:
    """(n, K, r, official): plain Jacobi (K = 1) and K = 2-4 blocks with early to late spawning; no pool
    (its extra rows cost more than they save on a CPU: docs/results.md, the multi-block sweep)."""
    plain = [(n, 1, 1.0, False) for n in (8, 16, 32)]
    multi = list(itertools.product((8, 16, 32), (2, 3, 4), (0.1, 0.25, 0.5), (False, True)))
    return plain + multi


def forwards(setting: tuple) -> dict:
    n, k, r, official = setting
    model, prompts = SHARED["model"], SHARED["prompts"]
    results = [multiblock_decode(model, ids, n, task.MAX_ANSWER_TOKENS, k, r, 0, official=official) for ids in prompts]
    fed = [f for result in results for f in result.fed]
    return {"block_size": n, "blocks": k, "spawn_ratio": r, "official": official,
            "tokens": sum(sum(result.accepted) for result in results), "fed": fed}


def main(out: str, cost_file: str, answers: int = 60) -> None:
    model, tokenizer = load("jacobi-forcing")
    problems = task.problems("test", SCOREBOARD + answers, length="long")[SCOREBOARD:]
    SHARED.update(model=model, prompts=[tokenizer(p.prompt)["input_ids"] for p in problems])
    cost = json.load(open(cost_file))
    rows = pmap(forwards, settings(), workers=2, desc="settings")
    for row in rows:
        fed = row.pop("fed")
        row.update(forwards=len(fed), tpf=row["tokens"] / len(fed), mean_fed=sum(fed) / len(fed),
                   predicted=predicted_speedup(fed, row["tokens"], cost["latency_s"], cost["k"]))
    rows.sort(key=lambda row: -row["predicted"])
    json.dump({"answers": f"held-out long answers {SCOREBOARD + 1}-{SCOREBOARD + answers}",
               "cost_model": Path(cost_file).name, "rows": rows}, open(out, "w"), indent=1)
    for row in rows[:10]:
        print({k: round(v, 3) if isinstance(v, float) else v for k, v in row.items()})


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], *map(int, sys.argv[3:]))
