#!/usr/bin/env bash
# The pipeline's default command (both checkpoints), timed alone on 2 CPU cores, then each
# rebuilt model scored on 300 held-out problems per bucket (CLLM's scoring ran on the core that
# round 2 left free). Rerunning the same command resumes after the last finished stage.
set -euo pipefail
work="${1:-runs/pipe}"
echo "start $(date -u +%FT%T)" >> "$work/times.log"
python -m jacobi_min pipeline --work "$work/work" --out "$work/checkpoints"
echo "end $(date -u +%FT%T)" >> "$work/times.log"
python -m jacobi_min eval --models "$work/checkpoints/cllm" --labels "CLLM (pipeline, CPU)" \
    --lengths short medium long --problems 300 --workers 1 --out "$work/scores_cllm.json"
python -m jacobi_min eval --models "$work/checkpoints/jacobi-forcing" --labels "Jacobi Forcing (pipeline, CPU)" \
    --lengths short medium long --problems 300 --workers 2 --out "$work/scores_jacobi_forcing.json"
# Then the ablation stage alone (it writes figures/results/ablation.json of the checkout it runs in: run
# from a clone, its file is kept here as ablation.json; it reuses the base's round-1 trajectories above).
echo "ablation start $(date -u +%FT%T)" >> "$work/times.log"
python -m jacobi_min pipeline --stage ablation --work "$work/work"
echo "ablation end $(date -u +%FT%T)" >> "$work/times.log"
