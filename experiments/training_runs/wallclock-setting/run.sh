#!/usr/bin/env bash
# The wall-clock target ("the best Jacobi Forcing method at its best n in {8, 16, 32} >= 2.0x over AR on long
# answers") with the setting chosen by the cost model instead of by a timed sweep. Why: three one-thread timings of
# the shipped model's setting (n = 16, K = 2, r = 0.25, no pool) read 1.86x / 1.94x / 2.07x, and the 30-answer
# sweep that chose it cannot tell settings 0.27x apart; the forwards a setting feeds are deterministic, so the cost
# model ranks settings without timing noise (measured speedups have been 86-101 % of its prediction).
# Written before any result: 1. this machine's L(k), one thread; 2. every setting of choose.py on held-out long
# answers 301-360 (not the scoreboard's); 3. the setting with the highest prediction, both variants, timed against
# AR on the scoreboard's 300 long answers (one thread, interleaved per problem, alone), beside the shipped setting
# in the same process. Reported whatever they read; the target is met if the chosen variant's one run reads >= 2.0x.
# Usage: run.sh <work folder>
set -euo pipefail
work="$1"; here="$(cd "$(dirname "$0")" && pwd)"; mkdir -p "$work"
export OMP_NUM_THREADS=1
source "$here/../steps.sh"  # cost_model, wallclock
cost_model cost_model_1thread.json 1 8 16 24 32 48 64 96 128
rule="ks 1,8,16,24,32,48,64,96,128"
[ -f "$work/choose.json" ] || python "$here/choose.py" "$work/choose.json" "$rule=$work/cost_model_1thread.json" \
    2> "$work/choose.log"
# 3. Added after step 2 (its top rows: n = 8, K = 3, r = 0.1 ours 2.18x predicted at 4.12 TPF; the shipped setting
# n = 16, K = 2, r = 0.25 ours 2.11x, 4th): the top setting, both variants, then the shipped setting, each timed by
# `sweep` in one one-thread process on the scoreboard's 300 long answers, one after the other, alone (not in one
# process as planned above: `sweep` crosses the settings it is given, so each setting gets its own run; run then as
# `sweep --workers 1`, the same one one-thread process that `wallclock` starts).
read -r n k r < <(python -c "import json, sys; row = json.load(open(sys.argv[1]))['rows'][0]
print(row['block_size'], row['blocks'], row['spawn_ratio'])" "$work/choose.json")
wallclock jacobi-forcing sweep_chosen_300.json sweep_chosen_300.log "$n" "$k" "$r"
wallclock jacobi-forcing sweep_shipped_300.json sweep_shipped_300.log
# Results: n = 8, K = 3, r = 0.1: 2.09x ours (4.11 TPF), 2.04x official; the shipped setting 2.08x ours (4.29 TPF),
# 2.08x official. The target is met in this one run for both settings; the predicted 3 % gain of the chosen one is
# not measurable (+0.5 % ours, -2 % official).
# 4. Added after the results, at review: the same ranking with L(k) measured at every k of the benchmark's cost model
# (do the k left out above, 2-7, change it? The benchmark's cost model reads L(2)/L(1) = 1.42, far above a line from
# k = 1 to 8).
cost_model cost_model_dense_1thread.json 1 2 4 8 12 16 24 32 48 64 96 128
python "$here/choose.py" "$work/choose.json" "ks 1,2,4,8,12,16,24,32,48,64,96,128=$work/cost_model_dense_1thread.json"
# Result: measured alone here, L(2)/L(1) = 1.19 and L(4)/L(1) = 1.32; the same setting ranks first (2.14x predicted),
# the shipped one 9th (2.08x): the k left out of the rule's cost model do not change the choice.
# 5. Added later, before its result, on the 2-core machine at hand then (no way to tell whether it is one of the two
# above): that machine's one-thread L(k), then the shipped setting timed once more, as in step 3. Reported whatever
# it reads, beside the other runs; it decides nothing about the models.
cost_model cost_model_1thread_rerun.json 1 2 4 8 12 16 24 32 48 64 96 128
wallclock jacobi-forcing sweep_shipped_300_rerun.json sweep_shipped_300_rerun.log
# Result: this machine's L(16)/L(1) = 1.80, L(32)/L(1) = 2.36 (L(1) = 3.57 ms); the shipped setting 2.14x ours,
# 2.13x official, at the same 4.29 / 4.25 TPF.
# 6. Added later, before its result, once `cost-model` and `sweep` record the machine they ran on (`machine` in
# their files: the CPU's name and family/model/stepping, its cache, core count, and torch's vector instructions):
# step 5 once more, so that at least one run of the shipped setting says what it ran on. Reported whatever it reads,
# beside the other runs; it decides nothing about the models.
cost_model cost_model_1thread_machine.json 1 2 4 8 12 16 24 32 48 64 96 128
wallclock jacobi-forcing sweep_shipped_300_machine.json sweep_shipped_300_machine.log
# Result: on "Intel(R) Xeon(R) Processor", family/model/stepping 6/207/2, 2 cores, AVX512 (the `machine` of both
# files), L(16)/L(1) = 1.96, L(32)/L(1) = 2.72 (L(1) = 2.40 ms); the shipped setting 2.08x ours, 2.06x official, at
# the same 4.29 / 4.25 TPF.
