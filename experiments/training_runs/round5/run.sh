#!/usr/bin/env bash
# Two more rounds: does the TPF target (3.0 / 3.5 / 4.0) come within reach of more rounds, and at what cost in
# answers? docs/results.md projects from rounds 3 and 4 (long answers +0.71, then +0.44) that 4.0 on long answers
# needs one or two rounds after round 4; this measures the fifth instead of projecting it.
#   round 4: ../round4's n = 16 round from the shipped model (its trajectories at n = 16 on the 4,000 training
#   prompts, right answers only; two 800-step runs, lr 3e-4, λ 30, no 1/T, random offset; their average; its
#   two 50-step continuations; their average), rebuilt here because its weights are not kept;
#   round 5: the same steps from the round-4 model.
# Written before any result: reported whatever it reads, on the scoreboard's 300 per bucket (scores.json). It
# decides nothing about the shipped models: two more rounds take the pipeline to about 3 h, past its 2 hours.
# Usage: run.sh <work folder> <the shipped Jacobi Forcing model>
# Each step is skipped when its output exists, so a rerun resumes (training from its snapshot).
set -euo pipefail
work="$1"; shipped="$2"; here="$(cd "$(dirname "$0")" && pwd)"; mkdir -p "$work"
source "$here/../steps.sh"  # jf_round (train, average), score
export OMP_NUM_THREADS=1
jf_round "$shipped" 16 round4-n16 r4n16 -n16  # ../round4's names
jf_round "$work/round4-n16/soup-0.5" 16 round5 r5 -r5
score scores.json 300 round4-n16/soup-0.5 seeds-r5/soup-0.5 round5/soup-0.5 round-4 round-5-runs-averaged round-5
# Results (scores.json): round 4 rebuilt 298 / 298 / 296 at 2.87 / 3.77 / 3.46 (as ../round4's n = 16 round);
# round 5's runs averaged 298 / 296 / 297 at 3.07 / 4.06 / 3.98; round 5 297 / 297 / 297 at 3.00 / 4.01 / 3.84.
# Added after those scores: the round-5 model on 1,200 per bucket (scores_1200.json, beside ../round4's and the
# shipped model's ../round3/scores_1200_polishes_averaged.json), reported whatever it reads.
score scores_1200.json 1200 round5/soup-0.5 round-5
# Result (scores_1200.json): 1,173 / 1,194 / 1,185 at 2.99 / 4.03 / 3.82 (the shipped model 1,177 / 1,193 / 1,180 at
# 2.59 / 3.45 / 3.00; the base 1,187 / 1,200 / 1,195).
