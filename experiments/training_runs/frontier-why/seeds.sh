#!/usr/bin/env bash
# The clean-context arm of run.sh for training seed 1, beside the scores of the reference's seeds 1
# and 2 (the GPU batch's round-1 models r1-s1-l10 and r1-s2-l10, never scored before), in
# one-thread processes on 2 CPU cores; then the new arm's scores.
# Usage: seeds.sh <round-1 trajectories of the base> <work folder> <folder of the GPU round-1 models>
# Each step is skipped when its output exists, so a rerun resumes (training from its snapshot).
set -euo pipefail
traj1="$1"; work="$2"; gpu="$3"; mkdir -p "$work"
export OMP_NUM_THREADS=1
resume=(); [ -f "$work/clean-context-s1.resume.pt" ] && resume=(--resume)
[ -f "$work/clean-context-s1/model.safetensors" ] || python -m jacobi_min train --model base --trajectories "$traj1" \
    --lr 5e-4 --lam 10 --adam-eps 1e-4 --random-offset --steps 1600 --seed 1 --clean-context \
    --out "$work/clean-context-s1" "${resume[@]}" 2> "$work/train_clean-context-s1.log" &
[ -f "$work/scores_reference_seeds.json" ] || python -m jacobi_min eval --models "$gpu/r1-s1-l10" "$gpu/r1-s2-l10" \
    --labels reference-s1 reference-s2 --lengths short medium long --problems 300 --workers 1 \
    --out "$work/scores_reference_seeds.json" 2> "$work/eval_reference_seeds.log"
wait
[ -f "$work/scores_s1.json" ] || python -m jacobi_min eval --models "$work/clean-context-s1" --labels clean-context-s1 \
    --lengths short medium long --problems 300 --workers 2 --out "$work/scores_s1.json" 2> "$work/eval_s1.log"
