#!/usr/bin/env bash
# Trajectory collection one prompt a forward (the commit before batch.py) against --batch B, alone on 2 CPU cores:
# 1,000 training prompts at n = 16, 2 worker processes, for the base model (round 1's collection) and the shipped
# Jacobi Forcing model (round 4's), each output compared byte for byte with the one-prompt file.
# Usage: collect.sh <work folder> [commit before batch.py, default 76511f9]   (run from a checkout)
set -euo pipefail
work="$1"; before="${2:-76511f9}"; repo="$(git rev-parse --show-toplevel)"; mkdir -p "$work"
old="$work/before-tree"; [ -d "$old" ] || git -C "$repo" worktree add --detach "$old" "$before" > /dev/null
seconds() { local s; s=$(date +%s.%N); "$@" 2> /dev/null; python3 -c "print(round($(date +%s.%N) - $s, 1))"; }
for m in base jacobi-forcing; do
  echo "$m before 1000: $(cd "$work" && PYTHONPATH="$old" seconds python -m jacobi_min collect --model $m \
      --block-size 16 --prompts 1000 --workers 2 --out "$work/before_$m.jsonl") s"
  for b in 16 32; do
    echo "$m after B=$b 1000: $(cd "$work" && PYTHONPATH="$repo" seconds python -m jacobi_min collect --model $m \
        --block-size 16 --prompts 1000 --workers 2 --batch $b --out "$work/after_${m}_$b.jsonl") s; same: $(cmp -s \
        "$work/before_$m.jsonl" "$work/after_${m}_$b.jsonl" && echo yes || echo NO)"
  done
done
