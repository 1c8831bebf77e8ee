#!/usr/bin/env bash
# Round 3 of the pipeline, timed alone on 2 CPU cores: `pipeline --stage jacobi-forcing` in a work folder that
# holds the finished rounds 1 and 2 of pipeline-cpu/run.sh (their trajectories, weights and settings), so the
# command reads them back and runs round 3 only; then the rebuilt model scored on 300 held-out problems per bucket.
# Usage: run.sh <pipeline-cpu work folder> <new work folder>
set -euo pipefail
done_stages="$1/work"; work="$2"; stages="$work/work"; mkdir -p "$stages"
for stage in round1 round2 train_round1 train_round2; do cp "$done_stages/$stage".* "$stages"; done
echo "start $(date -u +%FT%T)" >> "$work/times.log"
python -m jacobi_min pipeline --stage jacobi-forcing --work "$stages" --out "$work/checkpoints"
echo "end $(date -u +%FT%T)" >> "$work/times.log"
python -m jacobi_min eval --models "$work/checkpoints/jacobi-forcing" --labels jacobi-forcing-rebuilt \
    --lengths short medium long --problems 300 --workers 2 --out "$work/scores.json"
