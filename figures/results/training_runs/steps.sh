# Steps shared by the training-run scripts (round3-seeds/run.sh, round4/run.sh, wallclock-*/run.sh), sourced
# after they set work (the work folder) and, to train, traj (the trajectories). Each step is skipped when its
# output exists, so a rerun resumes (training from its snapshot).
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
  [ -f "$work/$2" ] || (cd "$work" && python -m jacobi_min sweep --model "$1" --problems 300 --length long \
      --block-sizes "${4:-16}" --blocks "${5:-2}" --spawn-ratios "${6:-0.25}" --pool-sizes 0 --out "$2" 2> "$3")
}
cost_model() {  # out file, k...: the shipped model's L(k), one forward of k new tokens after 200 tokens of context,
  # on OMP_NUM_THREADS threads
  [ -f "$work/$1" ] || python -m jacobi_min cost-model --model jacobi-forcing --ks "${@:2}" --context 200 \
      --out "$work/$1"
}
