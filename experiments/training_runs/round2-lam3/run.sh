#!/usr/bin/env bash
# Round 2 of Jacobi Forcing from the round-1 model trained at λ = 3 (seed 0), at λ = 3, on 2 CPU
# cores: n = 32 trajectories of that model on the 4,000 round-1 prompts, then 800 steps at lr 3e-4
# (AdamW ε 1e-4, random offset: the shipped round 2 but for λ), then 300 held-out problems per bucket.
# Usage: run.sh <round-1 λ = 3 model> <work folder>
# Each step is skipped when its output exists, so a rerun resumes (training from its snapshot).
set -euo pipefail
r1="$1"; work="$2"; mkdir -p "$work"
[ -f "$work/round2.jsonl" ] || python -m jacobi_min collect --model "$r1" --block-size 32 --prompts 4000 \
    --max-new-tokens 400 --workers 2 --out "$work/round2.jsonl" 2> "$work/collect.log"
resume=(); [ -f "$work/jf-lam3.resume.pt" ] && resume=(--resume)
[ -f "$work/jf-lam3/model.safetensors" ] || python -m jacobi_min train --model "$r1" \
    --trajectories "$work/round2.jsonl" --lr 3e-4 --lam 3 --adam-eps 1e-4 --random-offset --steps 800 --seed 0 \
    --out "$work/jf-lam3" "${resume[@]}" 2> "$work/train.log"
python -m jacobi_min eval --models "$work/jf-lam3" --labels lam3 --lengths short medium long --problems 300 \
    --workers 2 --out "$work/scores.json" 2> "$work/eval.log"
