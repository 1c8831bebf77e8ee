#!/usr/bin/env bash
# Why CLLM decodes long answers faster than Jacobi Forcing here: round 1 of Jacobi Forcing (the
# shipped model's round 1: λ 10, lr 5e-4, 1,600 steps, AdamW ε 1e-4, random offset, seed 0) with
# ONE of CLLM's ingredients added, on 2 CPU cores, side by side in one-thread processes:
#   clean-context  the noisy blocks see the clean blocks before them (CLLM's mask),
#   draw-by-blocks prompts drawn with probability ∝ their blocks (CLLM's draw),
# then 300 held-out problems per bucket. The reference arm is the GPU batch's r1-s0-l10.
# Usage: run.sh <round-1 trajectories of the base> <work folder>
# Each step is skipped when its output exists, so a rerun resumes (training from its snapshot).
set -euo pipefail
traj1="$1"; work="$2"; mkdir -p "$work"
export OMP_NUM_THREADS=1
arm() {  # name, flag
  local resume=(); [ -f "$work/$1.resume.pt" ] && resume=(--resume)
  [ -f "$work/$1/model.safetensors" ] || python -m jacobi_min train --model base --trajectories "$traj1" \
      --lr 5e-4 --lam 10 --adam-eps 1e-4 --random-offset --steps 1600 --seed 0 "$2" --out "$work/$1" \
      "${resume[@]}" 2> "$work/train_$1.log"
}
arm clean-context --clean-context &
arm draw-by-blocks --draw-by-blocks &
wait
python -m jacobi_min eval --models "$work/clean-context" "$work/draw-by-blocks" --labels clean-context draw-by-blocks \
    --lengths short medium long --problems 300 --workers 2 --out "$work/scores.json" 2> "$work/eval.log"
