#!/usr/bin/env bash
# The noise-schedule ablation, four times longer than the GPU batch's (150 steps, 40 problems):
# round 1 of the shipped recipe (λ 10, lr 5e-4, AdamW ε 1e-4, random offset) for 600 steps from
# the base, with each noise schedule (progressive, random, reverse) and training seed (0, 1, 2),
# then greedy Jacobi at n = 16 on 300 held-out long answers. Two jobs at a time, one thread each.
# With `offset0` (the study in ../schedules-offset0) every example's schedule starts at block 0, as the
# paper defines it, and only progressive and reverse run: the random schedule takes no offset, so its
# runs of the first study serve both.
# Usage: run.sh <round-1 trajectories of the base (collect --block-size 16 --prompts 4000)> <work folder> [offset0]
# Each step is skipped when its output exists, so a rerun resumes (training from its snapshot).
set -euo pipefail
traj1="$1"; work="$2"; mkdir -p "$work"
offset=--random-offset; schedules="progressive random reverse"
if [ "${3:-}" = offset0 ]; then offset=--no-random-offset; schedules="progressive reverse"; fi
export OMP_NUM_THREADS=1 traj1 work offset
job() {  # schedule, seed
  local name="$1-s$2" resume=()
  [ -f "$work/$name.resume.pt" ] && resume=(--resume)
  [ -f "$work/$name/model.safetensors" ] || python -m jacobi_min train --model base --trajectories "$traj1" \
      --lr 5e-4 --lam 10 --adam-eps 1e-4 $offset --steps 600 --schedule "$1" --seed "$2" \
      --out "$work/$name" "${resume[@]}" 2> "$work/train_$name.log"
  [ -f "$work/$name.json" ] || python -m jacobi_min eval --models "$work/$name" --labels "$name" \
      --lengths long --problems 300 --workers 1 --out "$work/$name.json" 2> "$work/eval_$name.log"
  echo "$name done $(date -u +%H:%M:%S)"
}
export -f job
for seed in 0 1 2; do for s in $schedules; do echo "$s $seed"; done; done \
  | xargs -P 2 -L 1 bash -c 'job "$0" "$1"'
