"""Keep the trajectories whose fixed point answers its problem right (rejection filtering).

    keep trajectory i  ⇔  is_correct(fixed points of its blocks, training problem i)

Usage: python right_answers.py IN.jsonl OUT.jsonl
IN holds `collect`'s trajectories: trajectory i is of the task's training problem i (seed 0), which is
checked prompt by prompt. The consistency and AR targets of a trajectory are the model's own answer, so a
wrong answer is trained on as if it were right: does dropping those (36 of the round-2 model's 4,000) keep
the third round's answers? The pipeline's round 3 keeps the same (`pipeline.right_answers`).
"""
import sys
from pathlib import Path

from jacobi_min import trajectories
from jacobi_min.model import load
from jacobi_min.tools import task
from jacobi_min.tools.evaluate import prompt_ids
from jacobi_min.tools.pipeline import right_answers

source, target = Path(sys.argv[1]), Path(sys.argv[2])
_, tokenizer = load("base")
records = trajectories.load(source)
problems = task.problems("train", len(records), seed=0)
for i, (record, problem) in enumerate(zip(records, problems)):
    if record["prompt"] != prompt_ids(tokenizer, problem):
        sys.exit(f"{source}, trajectory {i}: not the prompt of training problem {i} (collect's order)")
kept = right_answers(records, problems, tokenizer)
trajectories.save(target, kept)
print(f"{len(kept)} of {len(records)} trajectories answer right")
