#!/usr/bin/env bash
# The multi-block sweep (30 long answers, the shipped sweep's settings) of seeds 1 and 2 of the
# faster recipe, one after the other so that their wall clocks are not shared.
# Usage: sweep_seeds.sh <work folder of seeds.sh>
set -euo pipefail
work="$1"; here="$(dirname "$0")"
for s in 1 2; do
  [ -f "$here/sweep_s$s.json" ] || python -m jacobi_min sweep --model "$work/jf-s$s" --out "$here/sweep_s$s.json" \
      2> "$work/sweep_s$s.log"
done
