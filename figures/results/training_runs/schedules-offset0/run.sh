#!/usr/bin/env bash
# The noise-schedule ablation of ../schedules with the schedule as the paper defines it: every example's
# progressive (or reverse) schedule starts at block 0 (no random offset). Otherwise the same: round 1 of the
# shipped recipe (λ 10, lr 5e-4, AdamW ε 1e-4) for 600 steps from the base, training seeds 0, 1, 2, then greedy
# Jacobi at n = 16 on 300 held-out long answers. The random schedule draws every level at random and takes no
# offset, so its three runs in ../schedules serve both studies. Two jobs at a time, one thread each.
# Usage: run.sh <round-1 trajectories of the base (collect --block-size 16 --prompts 4000)> <work folder>
# Each step is skipped when its output exists, so a rerun resumes (training from its snapshot).
set -euo pipefail
traj1="$1"; work="$2"; mkdir -p "$work"
export OMP_NUM_THREADS=1 traj1 work
job() {  # schedule, seed
  local name="$1-s$2" resume=()
  [ -f "$work/$name.resume.pt" ] && resume=(--resume)
  [ -f "$work/$name/model.safetensors" ] || python -m jacobi_min train --model base --trajectories "$traj1" \
      --lr 5e-4 --lam 10 --adam-eps 1e-4 --steps 600 --schedule "$1" --seed "$2" \
      --out "$work/$name" "${resume[@]}" 2> "$work/train_$name.log"
  [ -f "$work/$name.json" ] || python -m jacobi_min eval --models "$work/$name" --labels "$name" \
      --lengths long --problems 300 --workers 1 --out "$work/$name.json" 2> "$work/eval_$name.log"
  echo "$name done $(date -u +%H:%M:%S)"
}
export -f job
for seed in 0 1 2; do for s in progressive reverse; do echo "$s $seed"; done; done \
  | xargs -P 2 -L 1 bash -c 'job "$0" "$1"'
