#!/usr/bin/env bash
# Does the noisy context buy multi-block decoding? TPF on the sweep's 30 long answers at n = 16 of
# plain Jacobi, prompt lookup (pool 4) and multi-block + recycling (K 2, r 0.25, pool 4; ours and
# the official variant), for each model given, one after the other in one-thread processes.
# Usage: multiblock.sh <work folder> <label>=<model> ...   (a label whose JSON exists is skipped)
sweep="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/multiblock_sweep/run.py"  # the multi-block sweep
set -euo pipefail
work="$1"; shift
export OMP_NUM_THREADS=1
for pair in "$@"; do
  label="${pair%%=*}"; model="${pair#*=}"
  [ -f "$work/sweep_$label.json" ] || python "$sweep" --model "$model" --block-sizes 16 --blocks 1 2 \
      --spawn-ratios 0.25 --pool-sizes 0 4 --out "$work/sweep_$label.json" > /dev/null 2> "$work/sweep_$label.log"
done
