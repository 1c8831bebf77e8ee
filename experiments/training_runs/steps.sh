# Steps shared by the training-run scripts (round4/run.sh, round5/run.sh, round5-seeds/run.sh,
# wallclock-*/run.sh), sourced after they set work (the work folder) and, to train, traj (the trajectories). Each
# step is skipped when its output exists, so a rerun resumes (training from its snapshot).
sweep="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/multiblock_sweep/run.py"  # the multi-block sweep
train() {  # out, start model, seed, lr, steps, further flags
  local resume=(); [ -f "$work/$1.resume.pt" ] && resume=(--resume)
  [ -f "$work/$1/model.safetensors" ] || python -m jacobi_min train --model "$2" --trajectories "$traj" \
      --seed "$3" --lr "$4" --steps "$5" --adam-eps 1e-4 "${@:6}" --out "$work/$1" "${resume[@]}" 2> "$work/train_$1.log"
}
average() {  # folder, start, end: θ = (θ_start + θ_end) / 2 in folder/soup-0.5
  [ -d "$work/$1/soup-0.5" ] || python "$(dirname "${BASH_SOURCE[0]}")/round3/interpolate.py" "$2" "$3" "$work/$1" 0.5
}
score() {  # out file, problems per bucket, models (in the work folder, or embedded names) and their labels
  local n=$(( ($# - 2) / 2 ))
  [ -f "$work/$1" ] || (cd "$work" && python -m jacobi_min eval --models "${@:3:n}" --labels "${@:3+n}" \
      --lengths short medium long --problems "$2" --workers 2 --out "$1" 2> "eval_$1.log")
}
wallclock() {  # model, out file, log[, n, K, r]: one multi-block setting, no pool, both variants, timed against AR on
  # the 300 long answers (default: the wall-clock setting of wallclock-300, n = 16, K = 2, r = 0.25)
  [ -f "$work/$2" ] || (cd "$work" && python "$sweep" --model "$1" --problems 300 --length long \
      --block-sizes "${4:-16}" --blocks "${5:-2}" --spawn-ratios "${6:-0.25}" --pool-sizes 0 --out "$2" 2> "$3")
}
cost_model() {  # out file, k...: the shipped model's L(k), one forward of k new tokens after 200 tokens of context,
  # on OMP_NUM_THREADS threads
  [ -f "$work/$1" ] || python -m jacobi_min cost-model --model jacobi-forcing --ks "${@:2}" --context 200 \
      --out "$work/$1"
}
jf_round() {  # start model, trajectories' block size, the round's model, its runs' prefix, suffix of the other
  # outputs[, training seed b: runs seeded 2b and 2b + 1, continuations 2b; default 0]: round 3's steps from the
  # start model on its right-answer trajectories of the 4,000 training prompts: two 800-step runs (lr 3e-4, λ 30, no 1/T, random offset), their average, its two 50-step continuations (AR only
  # on the answers; long answers' consistency kept), their average
  local start="$1" n="$2" name="$3" runs="$4" s="$5" b="${6:-0}"
  [ -f "$work/$name.jsonl" ] || python -m jacobi_min collect --model "$start" --block-size "$n" \
      --prompts 4000 --max-new-tokens 400 --workers 2 --out "$work/$name.jsonl" 2> "$work/collect$s.log"
  [ -f "$work/$name-right.jsonl" ] || python "$(dirname "${BASH_SOURCE[0]}")/round3/right_answers.py" \
      "$work/$name.jsonl" "$work/$name-right.jsonl" > "$work/right_answers$s.log"
  traj="$work/$name-right.jsonl"
  train "$runs-s0" "$start" $((2 * b)) 3e-4 800 --lam 30 --undivided-consistency --random-offset &
  train "$runs-s1" "$start" $((2 * b + 1)) 3e-4 800 --lam 30 --undivided-consistency --random-offset &
  wait
  average "seeds$s" "$work/$runs-s0" "$work/$runs-s1"
  train "polish-ar$s" "$work/seeds$s/soup-0.5" $((2 * b)) 3e-5 50 --ar-only --answer-only-ar &
  train "polish-long$s" "$work/seeds$s/soup-0.5" $((2 * b)) 3e-5 50 --answer-only-ar --consistency-on long \
      --lam 30 --undivided-consistency --random-offset &
  wait
  average "$name" "$work/polish-ar$s" "$work/polish-long$s"
}
