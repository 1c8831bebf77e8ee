#!/usr/bin/env bash
# A third round from the round-2 Jacobi Forcing model (shipped until the round-3 model below replaced it):
# n = 32 trajectories of that model on the
# 4,000 training prompts, then 800 steps (AdamW ε 1e-4, random offset, training seed 0 unless said) in one-thread processes,
# two at a time, each pair then scored on 300 held-out problems per bucket.
#   pair 1 (scores.json): without the official 1/T on each example's consistency loss (CLLM's weight per
#           example, which lifted round 1's long answers from 1.84 to 3.61 TPF), λ 30, lr 3e-4 (round 2's)
#           and lr 1e-4;
#   pair 2 (scores_2.json): the same at λ 100 (lr 3e-4), and the control: a third round of the shipped
#           recipe itself (official 1/T, λ 10, lr 3e-4);
#   then the multi-block sweep of the λ 30, lr 3e-4 run;
#   pair 3 (scores_3.json): without the 1/T at λ 50 (lr 3e-4), and training seed 1 of λ 30, lr 3e-4.
#   then the λ 30, lr 3e-4 run against the shipped model on 1,200 problems per bucket (scores_1200.json),
#   and halfway and three quarters of the way from the shipped model to it (scores_interpolated.json);
#   pair 4 (scores_right_answers.json): the same λ 30, lr 3e-4 on seeds 0 and 1, trained only on the trajectories
#           whose answer is right (right_answers.py drops 36 of 4,000);
#   then the weight average of each pair of seeds and of all four runs (scores_seed_averages.json), and the
#   average of the right-answer pair on 1,200 problems per bucket (scores_1200_seed_average.json);
#   then 50 or 200 AR-only steps from that average (scores_polish.json), the 50-step one on 1,200 problems
#   (scores_1200_polish.json), the same 50 steps from the other pair's average (scores_polish_seeds.json),
#   50 steps that keep the consistency loss on long answers (scores_polish_keeplong.json, and on 1,200),
#   the multi-block sweeps of the first and of that one, and the first one's wrong answers beside the shipped model's;
#   then averages of two continuations (scores_polishes_averaged.json): of the AR-only polishes from the two pairs'
#   averages, of two AR-only polishes of one average (training seeds 0 and 1), an AR-only polish of the four-run
#   average, and of the AR-only polish and the one keeping long answers' consistency (the model shipped since),
#   and that last one on 1,200 problems per bucket (scores_1200_polishes_averaged.json) and its sweep at n = 8; with a third argument,
#   the average of the round-2 model and its CPU rebuild (scores_round2_rebuild_average.json).
# Usage: run.sh <work folder> <round-2 model folder> [<its CPU rebuild>]
#   The round-2 model is the one shipped before the round-3 model: git archive 755a5a3 jacobi_min/checkpoints/jacobi-forcing
#   | tar -x -C <folder> unpacks it; the rebuild is pipeline-cpu/run.sh's.
# Each step is skipped when its output exists, so a rerun resumes (training from its snapshot).
sweep="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/multiblock_sweep/run.py"  # the multi-block sweep
set -euo pipefail
work="$1"; round2="$2"; mkdir -p "$work"
[ -f "$work/round3.jsonl" ] || python -m jacobi_min collect --model "$round2" --block-size 32 \
    --prompts 4000 --max-new-tokens 400 --workers 2 --out "$work/round3.jsonl" 2> "$work/collect.log"
export OMP_NUM_THREADS=1
train() {  # out, lr, λ, seed, further flags
  local resume=(); [ -f "$work/$1.resume.pt" ] && resume=(--resume)
  [ -f "$work/$1/model.safetensors" ] || python -m jacobi_min train --model "$round2" \
      --trajectories "$work/${TRAJECTORIES:-round3.jsonl}" --lr "$2" --lam "$3" --adam-eps 1e-4 --random-offset --steps 800 \
      --seed "$4" "${@:5}" --out "$work/$1" "${resume[@]}" 2> "$work/train_$1.log"
}
score() {  # out file, run names
  local models=(); for name in "${@:2}"; do models+=("$work/$name"); done
  [ -f "$work/$1" ] || python -m jacobi_min eval --models "${models[@]}" --labels "${@:2}" \
      --lengths short medium long --problems 300 --workers 2 --out "$work/$1" 2> "$work/eval_$1.log"
}
train r3-lr3e-4 3e-4 30 0 --undivided-consistency &
train r3-lr1e-4 1e-4 30 0 --undivided-consistency &
wait
score scores.json r3-lr3e-4 r3-lr1e-4
train r3-l100 3e-4 100 0 --undivided-consistency &
train r3-official 3e-4 10 0 &
wait
score scores_2.json r3-l100 r3-official
# The multi-block sweep (30 long answers, the shipped sweep's settings) of the fastest third round, alone
# on the machine so that its wall clock is not shared.
[ -f "$work/sweep_r3-lr3e-4.json" ] || python "$sweep" --model "$work/r3-lr3e-4" \
    --out "$work/sweep_r3-lr3e-4.json" 2> "$work/sweep_r3-lr3e-4.log"
train r3-l50 3e-4 50 0 --undivided-consistency &
train r3-lr3e-4-s1 3e-4 30 1 --undivided-consistency &
wait
score scores_3.json r3-l50 r3-lr3e-4-s1
# Plain Jacobi at n = 8 on the same model and problems (the wall-clock target's third block size).
[ -f "$work/sweep_r3-lr3e-4-n8.json" ] || python "$sweep" --model "$work/r3-lr3e-4" --block-sizes 8 \
    --blocks 1 --pool-sizes 0 --out "$work/sweep_r3-lr3e-4-n8.json" 2> "$work/sweep_r3-lr3e-4-n8.log"
# The fastest third round against the shipped model on 1,200 held-out problems per bucket (the
# scoreboard's 300, then 900 more): is its accuracy cost larger than the 300 can show?
[ -f "$work/scores_1200.json" ] || python -m jacobi_min eval --models "$round2" "$work/r3-lr3e-4" \
    --labels shipped r3-lam30-s0 --lengths short medium long --problems 1200 --workers 2 \
    --out "$work/scores_1200.json" 2> "$work/eval_scores_1200.json.log"
# Weight interpolation between the shipped model and the λ 30, lr 3e-4 third round (keeping half and three
# quarters of the third round's update): does it keep the speed with the shipped model's answers?
[ -d "$work/soup-0.75" ] || python "$(dirname "$0")/interpolate.py" "$round2" \
    "$work/r3-lr3e-4" "$work" 0.5 0.75
[ -f "$work/scores_interpolated.json" ] || (cd "$work" && python -m jacobi_min eval --models soup-0.5 soup-0.75 \
    --lengths short medium long --problems 300 --workers 2 --out scores_interpolated.json 2> eval_interpolated.log)
# Only the trajectories whose answer is right: the others teach the model its own mistakes.
[ -f "$work/round3-right.jsonl" ] || python "$(dirname "$0")/right_answers.py" "$work/round3.jsonl" "$work/round3-right.jsonl"
TRAJECTORIES=round3-right.jsonl train r3-right-s0 3e-4 30 0 --undivided-consistency &
TRAJECTORIES=round3-right.jsonl train r3-right-s1 3e-4 30 1 --undivided-consistency &
wait
score scores_right_answers.json r3-right-s0 r3-right-s1
# Weight averages of two training seeds, θ = (θ_seed0 + θ_seed1) / 2 (interpolate.py at α = 0.5, written to
# <folder>/soup-0.5), for each pair, and the average of the two averages (all four runs).
average() {  # folder, start, end
  [ -d "$work/$1/soup-0.5" ] || python "$(dirname "$0")/interpolate.py" "$2" "$3" "$work/$1" 0.5
}
average seeds-right "$work/r3-right-s0" "$work/r3-right-s1"
average seeds "$work/r3-lr3e-4" "$work/r3-lr3e-4-s1"
average seeds-four "$work/seeds-right/soup-0.5" "$work/seeds/soup-0.5"
[ -f "$work/scores_seed_averages.json" ] || python -m jacobi_min eval --models "$work/seeds-right/soup-0.5" \
    "$work/seeds/soup-0.5" "$work/seeds-four/soup-0.5" --labels seeds-right seeds seeds-four \
    --lengths short medium long --problems 300 --workers 2 --out "$work/scores_seed_averages.json" \
    2> "$work/eval_scores_seed_averages.json.log"
score_1200() {  # out file, label, model folder: the scoreboard's 300 and the next 900 held-out problems
  [ -f "$work/$1" ] || python -m jacobi_min eval --models "$3" --labels "$2" --lengths short medium long \
      --problems 1200 --workers 2 --out "$work/$1" 2> "$work/eval_$1.log"
}
score_1200 scores_1200_seed_average.json seeds-right "$work/seeds-right/soup-0.5"
# Short continuations of a seed average: out, start, trajectories, lr, steps, further flags.
polish() {
  [ -f "$work/$1/model.safetensors" ] || python -m jacobi_min train --model "$work/$2" --trajectories "$work/$3" \
      --lr "$4" --adam-eps 1e-4 --steps "$5" --seed 0 "${@:6}" --out "$work/$1" 2> "$work/train_$1.log"
}
# A short AR-only polish of the right-answer average (no noisy blocks, the AR loss on the answers alone):
# does its clean-context prediction, which the consistency loss bends, come back, and at what TPF?
ar_only=(--ar-only --answer-only-ar)
polish polish-3e-5 seeds-right/soup-0.5 round3-right.jsonl 3e-5 200 "${ar_only[@]}" &
polish polish-1e-4 seeds-right/soup-0.5 round3-right.jsonl 1e-4 200 "${ar_only[@]}" &
wait
polish polish-1e-5 seeds-right/soup-0.5 round3-right.jsonl 1e-5 200 "${ar_only[@]}" &
polish polish-3e-5-50 seeds-right/soup-0.5 round3-right.jsonl 3e-5 50 "${ar_only[@]}" &
wait
score scores_polish.json polish-3e-5 polish-1e-4 polish-1e-5 polish-3e-5-50
# The most accurate polish on the scoreboard's 300, then on 1,200 problems per bucket.
score_1200 scores_1200_polish.json polish-3e-5-50 "$work/polish-3e-5-50"
# The same 50 steps from the other pair's average (all 4,000 trajectories): does the polish's gain repeat?
polish polish-seeds-3e-5-50 seeds/soup-0.5 round3.jsonl 3e-5 50 "${ar_only[@]}"
score scores_polish_seeds.json polish-seeds-3e-5-50
# The same 50 steps with the consistency loss kept on long answers (the round's λ 30, no 1/T, random offset):
# is the polish's TPF cost the consistency loss's absence?
polish polish-keeplong seeds-right/soup-0.5 round3-right.jsonl 3e-5 50 --consistency-on long --undivided-consistency \
    --lam 30 --answer-only-ar --random-offset
score scores_polish_keeplong.json polish-keeplong
score_1200 scores_1200_polish_keeplong.json polish-keeplong "$work/polish-keeplong"
# The multi-block sweeps of the 50-step AR-only polish and of the polish that keeps long answers' consistency
# (the shipped sweep's settings, each alone on the machine).
[ -f "$work/sweep_polish-3e-5-50.json" ] || python "$sweep" --model "$work/polish-3e-5-50" \
    --out "$work/sweep_polish-3e-5-50.json" 2> "$work/sweep_polish-3e-5-50.log"
[ -f "$work/sweep_polish-keeplong.json" ] || python "$sweep" --model "$work/polish-keeplong" \
    --out "$work/sweep_polish-keeplong.json" 2> "$work/sweep_polish-keeplong.log"
# The wrong answers of the shipped model and of the 50-step AR-only polish on the scoreboard's 300 per bucket.
[ -f "$work/wrong_shipped.json" ] || python "$(dirname "$0")/wrong_answers.py" "$round2" "$work/wrong_shipped.json" &
[ -f "$work/wrong_polish-3e-5-50.json" ] || python "$(dirname "$0")/wrong_answers.py" "$work/polish-3e-5-50" \
    "$work/wrong_polish-3e-5-50.json" &
wait
# Averages of two continuations of a seed average: do they keep what each one bought?
polish polish-3e-5-50-s1 seeds-right/soup-0.5 round3-right.jsonl 3e-5 50 "${ar_only[@]}" --seed 1
polish polish-four-3e-5-50 seeds-four/soup-0.5 round3-right.jsonl 3e-5 50 "${ar_only[@]}"
average polished-pairs "$work/polish-3e-5-50" "$work/polish-seeds-3e-5-50"
average polished-seeds "$work/polish-3e-5-50" "$work/polish-3e-5-50-s1"
average polished-ar-long "$work/polish-3e-5-50" "$work/polish-keeplong"
[ -f "$work/scores_polishes_averaged.json" ] || python -m jacobi_min eval --models "$work/polished-pairs/soup-0.5" \
    "$work/polish-3e-5-50-s1" "$work/polished-seeds/soup-0.5" "$work/polish-four-3e-5-50" "$work/polished-ar-long/soup-0.5" \
    --labels polished-pairs polish-3e-5-50-s1 polished-seeds polish-four-3e-5-50 polished-ar-long \
    --lengths short medium long --problems 300 --workers 2 --out "$work/scores_polishes_averaged.json" \
    2> "$work/eval_scores_polishes_averaged.json.log"
score_1200 scores_1200_polishes_averaged.json polished-ar-long "$work/polished-ar-long/soup-0.5"
# The multi-block sweep at n = 8 of that model (shipped since: its n = 16 and 32 sweep is figures/results/multiblock_sweep.json).
[ -f "$work/sweep_polished-ar-long-n8.json" ] || python "$sweep" --model "$work/polished-ar-long/soup-0.5" \
    --block-sizes 8 --out "$work/sweep_polished-ar-long-n8.json" 2> "$work/sweep_polished-ar-long-n8.log"
# The round-2 model averaged with its CPU rebuild (two runs of the round-2 recipe): does a seed average help there?
if [ -n "${3:-}" ]; then
  average round2-rebuild "$round2" "$3"
  [ -f "$work/scores_round2_rebuild_average.json" ] || python -m jacobi_min eval --models "$work/round2-rebuild/soup-0.5" \
      --labels round2-rebuild --lengths short medium long --problems 300 --workers 2 \
      --out "$work/scores_round2_rebuild_average.json" 2> "$work/eval_scores_round2_rebuild_average.json.log"
fi
