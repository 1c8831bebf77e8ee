#!/usr/bin/env bash
# The best recipe measured (round 1 at λ = 3, round 2 at λ = 10) for training seeds 1 and 2, on
# 2 CPU cores, both seeds side by side in one-thread processes: round 1 from the shipped base on the
# base's n = 16 trajectories of the 4,000 round-1 prompts (1,600 steps at lr 5e-4, λ 3), n = 32
# trajectories of that model on the same prompts, round 2 (800 steps at lr 3e-4, λ 10; AdamW ε 1e-4
# and random offset in both rounds), then 300 held-out problems per bucket.
# Usage: seeds.sh <round-1 trajectories of the base> <work folder>
# Each step is skipped when its output exists, so a rerun resumes (training from its snapshot).
set -euo pipefail
traj1="$1"; work="$2"; mkdir -p "$work"
export OMP_NUM_THREADS=1
train() {  # out, model, trajectories, lr, λ, steps, seed
  local resume=(); [ -f "$work/$1.resume.pt" ] && resume=(--resume)
  [ -f "$work/$1/model.safetensors" ] || python -m jacobi_min train --model "$2" --trajectories "$3" \
      --lr "$4" --lam "$5" --adam-eps 1e-4 --random-offset --steps "$6" --seed "$7" --out "$work/$1" \
      "${resume[@]}" 2> "$work/train_$1.log"
}
seed() {
  train r1-s$1 base "$traj1" 5e-4 3 1600 "$1"
  [ -f "$work/round2_s$1.jsonl" ] || python -m jacobi_min collect --model "$work/r1-s$1" --block-size 32 \
      --prompts 4000 --max-new-tokens 400 --out "$work/round2_s$1.jsonl" 2> "$work/collect_s$1.log"
  train jf-s$1 "$work/r1-s$1" "$work/round2_s$1.jsonl" 3e-4 10 800 "$1"
}
seed 1 &
seed 2 &
wait
python -m jacobi_min eval --models "$work/jf-s1" "$work/jf-s2" --labels seed1 seed2 \
    --lengths short medium long --problems 300 --workers 2 --out "$work/scores_seeds.json" 2> "$work/eval_seeds.log"
