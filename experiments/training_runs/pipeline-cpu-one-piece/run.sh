#!/usr/bin/env bash
# The pipeline's default command in one piece, timed alone on 2 CPU cores in a fresh clone (no earlier stage to
# resume from), then the rebuilt models scored on 300 held-out problems per bucket: CLLM's as soon as it was
# built, on the core that round 2 (one thread) leaves free, Jacobi Forcing's after the command. The two earlier
# timings (../pipeline-cpu, ../pipeline-cpu-round3) measured the same command in two parts, on another machine.
# Usage: run.sh <commit>   (run from a checkout; the clone and its runs/ go to a temporary folder)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
clone="$(mktemp -d)/jacobi-min"
git clone -q "$(git rev-parse --show-toplevel)" "$clone" && cd "$clone" && git checkout -q "${1:-HEAD}"
echo "start $(date -u +%FT%T)" >> "$here/times.log"
python -m jacobi_min pipeline &
pipeline=$!
until [ -f runs/checkpoints/cllm/model.safetensors ]; do sleep 60; done
OMP_NUM_THREADS=1 python -m jacobi_min eval --models runs/checkpoints/cllm --labels "CLLM (pipeline, one piece)" \
    --lengths short medium long --problems 300 --workers 1 --out "$here/scores_cllm.json"
wait "$pipeline"
echo "end $(date -u +%FT%T)" >> "$here/times.log"
python -m jacobi_min eval --models runs/checkpoints/jacobi-forcing --labels "Jacobi Forcing (pipeline, one piece)" \
    --lengths short medium long --problems 300 --workers 2 --out "$here/scores_jacobi_forcing.json"
