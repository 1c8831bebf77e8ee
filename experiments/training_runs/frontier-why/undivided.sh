#!/usr/bin/env bash
# The third of CLLM's ingredients, added to Jacobi Forcing alone: its weight per example. The official
# trainer divides each example's consistency loss by its T blocks; CLLM's examples are one block each,
# so a long answer's blocks weigh T times more there. Round 1 as shipped (λ 10, lr 5e-4, 1,600 steps,
# AdamW ε 1e-4, random offset, seed 0) with --undivided-consistency, then 300 held-out problems per bucket;
# at another λ when one is given (the run is then named undivided-l<λ>).
# Usage: undivided.sh <round-1 trajectories of the base> <work folder> [λ]
# Each step is skipped when its output exists, so a rerun resumes (training from its snapshot).
set -euo pipefail
traj1="$1"; work="$2"; lam="${3:-10}"; mkdir -p "$work"
name=undivided; [ "$lam" = 10 ] || name="undivided-l$lam"
export OMP_NUM_THREADS=1
resume=(); [ -f "$work/$name.resume.pt" ] && resume=(--resume)
[ -f "$work/$name/model.safetensors" ] || python -m jacobi_min train --model base --trajectories "$traj1" \
    --lr 5e-4 --lam "$lam" --adam-eps 1e-4 --random-offset --steps 1600 --seed 0 --undivided-consistency \
    --out "$work/$name" "${resume[@]}" 2> "$work/train_$name.log"
[ -f "$work/scores_$name.json" ] || python -m jacobi_min eval --models "$work/$name" --labels "$name" \
    --lengths short medium long --problems 300 --workers 1 --out "$work/scores_$name.json" 2> "$work/eval_$name.log"
