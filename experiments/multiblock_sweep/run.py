"""The multi-block sweep of docs/results.md ("Multi-block decoding and the wall clock").

TPF and wall-clock speedup over greedy AR of `multiblock_decode` for every (n, K, r, pool), ours
and the official variant, on one model and one length bucket; every output is checked equal to
greedy decoding. One process of one thread per block size (`--workers 1`: all of them in this
process, on its threads; the thread count is written to the output).

    python experiments/multiblock_sweep/run.py                      # the results page's run, ~12 min on 2 cores
    python experiments/multiblock_sweep/run.py --model DIR --problems 300 --block-sizes 16 --blocks 2 \\
        --spawn-ratios 0.25 --pool-sizes 0 --out sweep.json          # one setting, as the wall-clock runs use it

Output (default: figures/results/multiblock_sweep.json, from the repository's root): {model, problems, length, threads,
machine, rows: [{block_size, blocks, spawn_ratio, pool_size, official, tpf, speedup}]}.
"""
import argparse
import json
from functools import partial
from pathlib import Path

from jacobi_min import greedy_decode, load, multiblock_decode
from jacobi_min.tools import task
from jacobi_min.tools.timing import machine, timed, timed_threads
from jacobi_min.utils import pmap


def settings(args, n: int) -> list[tuple]:
    """(n, K, r, pool, official) to measure: r only matters with K > 1, `official` with K > 1 or a pool."""
    return [(n, k, r, pool, official) for k in args.blocks for r in args.spawn_ratios for pool in args.pool_sizes
            for official in (False, True)
            if (k > 1 or r == args.spawn_ratios[0]) and (not official or k > 1 or pool > 0)]


def block_size(args, n: int) -> list[dict]:
    """Every setting at block size n: TPF and speedup over AR, summed over the problems."""
    model, tokenizer = load(args.model)
    prompts = [tokenizer(p.prompt)["input_ids"] for p in task.problems("test", args.problems, length=args.length)]
    rows = []
    for n, k, r, pool, official in settings(args, n):
        tokens = forwards = 0
        ar_time = method_time = 0.0
        for ids in prompts:
            ar, t_ar = timed(greedy_decode, model, ids, task.MAX_ANSWER_TOKENS)
            result, t = timed(lambda: multiblock_decode(model, ids, n, task.MAX_ANSWER_TOKENS, k, r, pool, official=official))
            assert result.tokens == ar.tokens, "multi-block decoding diverged from greedy decoding"
            tokens, forwards = tokens + sum(result.accepted), forwards + result.forwards
            ar_time, method_time = ar_time + t_ar, method_time + t
        rows.append({"block_size": n, "blocks": k, "spawn_ratio": r, "pool_size": pool, "official": official,
                     "tpf": tokens / forwards, "speedup": ar_time / method_time})
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="jacobi-forcing")
    p.add_argument("--problems", type=int, default=30)
    p.add_argument("--length", default="long", choices=list(task.BUCKETS))
    p.add_argument("--block-sizes", type=int, nargs="+", default=[16, 32], help="n")
    p.add_argument("--blocks", type=int, nargs="+", default=[1, 2, 3], help="K")
    p.add_argument("--spawn-ratios", type=float, nargs="+", default=[0.25, 0.85], help="r")
    p.add_argument("--pool-sizes", type=int, nargs="+", default=[0, 4])
    p.add_argument("--workers", type=int, default=2, help="processes of one thread, one block size each")
    p.add_argument("--out", type=Path, default=Path("figures/results/multiblock_sweep.json"))
    args = p.parse_args()
    parts = pmap(partial(block_size, args), args.block_sizes, args.workers, "multi-block sweep")
    rows = [row for part in parts for row in part]
    args.out.write_text(json.dumps({"model": args.model, "problems": args.problems, "length": args.length,
                                    "threads": timed_threads(args.workers), "machine": machine(), "rows": rows},
                                   indent=1))
    for row in rows:
        print(row)


if __name__ == "__main__":
    main()
