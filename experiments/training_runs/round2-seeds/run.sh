#!/usr/bin/env bash
# Round 2 of Jacobi Forcing for training seeds 1 and 2, on 2 CPU cores: the shipped model's
# round-2 recipe (n = 32 trajectories of the round-1 model on the 4,000 round-1 prompts; 800 steps
# at lr 3e-4, λ 10, AdamW ε 1e-4, random offset), then 300 held-out problems per bucket.
# Usage: run.sh <round-1 seed-1 model> <round-1 seed-2 model> <work folder>
# Each step is skipped when its output exists, so a rerun resumes (training from its snapshot).
set -euo pipefail
r1=([1]="$1" [2]="$2"); work="$3"; mkdir -p "$work"
export OMP_NUM_THREADS=1  # two one-thread processes side by side
for s in 1 2; do
  [ -f "$work/round2_s$s.jsonl" ] || python -m jacobi_min collect --model "${r1[$s]}" --block-size 32 \
      --prompts 4000 --max-new-tokens 400 --out "$work/round2_s$s.jsonl" 2> "$work/collect_s$s.log" &
done
wait
for s in 1 2; do
  resume=(); [ -f "$work/jf-s$s.resume.pt" ] && resume=(--resume)
  [ -f "$work/jf-s$s/model.safetensors" ] || python -m jacobi_min train --model "${r1[$s]}" \
      --trajectories "$work/round2_s$s.jsonl" --lr 3e-4 --lam 10 --adam-eps 1e-4 --random-offset \
      --steps 800 --seed "$s" --out "$work/jf-s$s" "${resume[@]}" 2> "$work/train_s$s.log" &
done
wait
python -m jacobi_min eval --models "$work/jf-s1" "$work/jf-s2" --labels seed1 seed2 \
    --lengths short medium long --problems 300 --workers 2 --out "$work/scores.json" 2> "$work/eval.log"
