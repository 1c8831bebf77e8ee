#!/usr/bin/env bash
# Round 3 of the pipeline, timed alone on 2 CPU cores: `pipeline --stage jacobi-forcing` in a work folder that
# holds the finished rounds 1 and 2 of pipeline-cpu/run.sh (their trajectories, weights and settings), so the
# command reads them back and runs round 3 only; then the rebuilt model scored on 300 held-out problems per bucket.
# Usage: run.sh <pipeline-cpu work folder> <new work folder>
set -euo pipefail
old="$1"; work="$2"; mkdir -p "$work/work"
cp "$old"/work/round1.* "$old"/work/round2.* "$old"/work/train_round1.* "$old"/work/train_round2.* "$work/work/"
echo "start $(date -u +%FT%T)" >> "$work/times.log"
python -m jacobi_min pipeline --stage jacobi-forcing --work "$work/work" --out "$work/checkpoints"
echo "end $(date -u +%FT%T)" >> "$work/times.log"
python -m jacobi_min eval --models "$work/checkpoints/jacobi-forcing" --labels jacobi-forcing-rebuilt \
    --lengths short medium long --problems 300 --workers 2 --out "$work/scores.json"
