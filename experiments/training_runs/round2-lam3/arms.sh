#!/usr/bin/env bash
# Two more round-2 arms from the round-1 λ = 3 model, on the same n = 32 trajectories as run.sh
# (both side by side in one-thread processes): λ 10 at lr 3e-4 (the shipped round 2's anchor),
# and λ 3 at lr 1e-4; then 300 held-out problems per bucket.
# Usage: arms.sh <round-1 λ = 3 model> <work folder of run.sh>
set -euo pipefail
r1="$1"; work="$2"
export OMP_NUM_THREADS=1
arm() {  # name, λ, lr
  local resume=(); [ -f "$work/$1.resume.pt" ] && resume=(--resume)
  [ -f "$work/$1/model.safetensors" ] || python -m jacobi_min train --model "$r1" --trajectories "$work/round2.jsonl" \
      --lam "$2" --lr "$3" --adam-eps 1e-4 --random-offset --steps 800 --seed 0 --out "$work/$1" "${resume[@]}" \
      2> "$work/train_$1.log"
}
arm jf-lam3-r2lam10 10 3e-4 &
arm jf-lam3-lr1e-4 3 1e-4 &
wait
python -m jacobi_min eval --models "$work/jf-lam3-r2lam10" "$work/jf-lam3-lr1e-4" --labels r2-lam10 lr1e-4 \
    --lengths short medium long --problems 300 --workers 2 --out "$work/scores_arms.json" 2> "$work/eval_arms.log"
