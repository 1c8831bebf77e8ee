#!/usr/bin/env bash
# Round 1 as shipped (λ 10, lr 5e-4, AdamW ε 1e-4, 1,600 steps, seed 0) with the schedule as the paper
# defines it (every example's progressive schedule from block 0: --no-random-offset), then 300 held-out
# problems per bucket: does the 600-step study's faster offset 0 hold for a whole round 1 and every bucket?
# Usage: round1.sh <round-1 trajectories of the base (collect --block-size 16 --prompts 4000)> <work folder>
# Each step is skipped when its output exists, so a rerun resumes (training from its snapshot).
set -euo pipefail
traj1="$1"; work="$2"; name=round1-offset0; mkdir -p "$work"
export OMP_NUM_THREADS=1
resume=(); [ -f "$work/$name.resume.pt" ] && resume=(--resume)
[ -f "$work/$name/model.safetensors" ] || python -m jacobi_min train --model base --trajectories "$traj1" \
    --lr 5e-4 --lam 10 --adam-eps 1e-4 --no-random-offset --steps 1600 --seed 0 --out "$work/$name" "${resume[@]}" 2> "$work/train_$name.log"
[ -f "$work/scores_$name.json" ] || python -m jacobi_min eval --models "$work/$name" --labels "$name" \
    --lengths short medium long --problems 300 --workers 2 --out "$work/scores_$name.json" 2> "$work/eval_$name.log"
echo "$name done $(date -u +%H:%M:%S)"
