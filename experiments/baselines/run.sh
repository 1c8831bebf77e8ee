#!/usr/bin/env bash
# Issue #69: train the two baselines once each, by their pre-registered recipes (the defaults of
# DiffusionConfig and DrafterConfig: seed 0, 4,000 training problems), into the embedded checkpoints.
# Budgets on 2 CPU cores: block diffusion <= 40 min, drafter <= 20 min (each includes its data).
# Run from the repository root on an otherwise idle machine; an interrupted run resumes from
# <checkpoint>/resume.pt when started again. Output: experiments/baselines/train.log.
set -euo pipefail
cd "$(dirname "$0")/../.."
LOG=experiments/baselines/train.log
{
  echo "== $(date -u +%FT%TZ) $(git rev-parse --short HEAD) $(nproc) cores"
  echo "-- block-diffusion"
  time python -c "
from jacobi_min.baselines import DiffusionConfig, train_diffusion
log = train_diffusion('base', 'jacobi_min/checkpoints/block-diffusion', DiffusionConfig())
print(DiffusionConfig(), 'final loss', log[-1])"
  echo "-- drafter"
  time python -c "
from jacobi_min.baselines import DrafterConfig, train_drafter
log = train_drafter('base', 'jacobi_min/checkpoints/drafter', DrafterConfig())
print(DrafterConfig(), 'final loss', log[-1])"
} 2>&1 | tee -a "$LOG"
