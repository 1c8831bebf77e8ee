#!/usr/bin/env bash
# CLLM's trainer at λ 10 for 1,600 steps (the first phase of the GPU batch's cllm-l10: lr 5e-4,
# AdamW ε 1e-4, label smoothing 0.1, seed 0; --random-offset as there, which CLLM ignores) on the
# same round-1 trajectories, then 300 held-out problems per bucket: CLLM at the step count of the
# Jacobi Forcing arms of run.sh.
# Usage: equal-steps.sh <round-1 trajectories of the base> <work folder>
# Each step is skipped when its output exists, so a rerun resumes (training from its snapshot).
set -euo pipefail
traj1="$1"; work="$2"; mkdir -p "$work"
export OMP_NUM_THREADS=1
resume=(); [ -f "$work/cllm-1600.resume.pt" ] && resume=(--resume)
[ -f "$work/cllm-1600/model.safetensors" ] || python -m jacobi_min train --model base --trajectories "$traj1" \
    --method cllm --lam 10 --label-smoothing 0.1 --lr 5e-4 --adam-eps 1e-4 --random-offset --steps 1600 --seed 0 \
    --out "$work/cllm-1600" "${resume[@]}" 2> "$work/train_cllm-1600.log"
[ -f "$work/scores_cllm-1600.json" ] || python -m jacobi_min eval --models "$work/cllm-1600" --labels cllm-1600 \
    --lengths short medium long --problems 300 --workers 2 --out "$work/scores_cllm-1600.json" 2> "$work/eval_cllm-1600.log"
