"""The held-out problems a model gets wrong, with its answer beside the reference solution.

Usage: python wrong_answers.py MODEL OUT.json [PROBLEMS]
For each bucket, the scoreboard's first PROBLEMS (300) held-out problems, greedy Jacobi at n = 16
(the greedy answer): every wrong one with its index, the model's text, the reference and its
arithmetic slips (`task.wrong_equations`). Two models' files side by side tell which problems
only one of them gets wrong.
"""
import json
import sys
from pathlib import Path

import torch

from jacobi_min.jacobi import jacobi_decode
from jacobi_min.model import load
from jacobi_min.tools import task
from jacobi_min.tools.evaluate import is_correct, prompt_ids

torch.set_num_threads(1)
name, out = sys.argv[1], Path(sys.argv[2])
count = int(sys.argv[3]) if len(sys.argv) > 3 else 300
model, tokenizer = load(name)
wrong = {}
for length in task.BUCKETS:
    wrong[length] = []
    for i, problem in enumerate(task.problems("test", count, seed=0, length=length)):
        result = jacobi_decode(model, prompt_ids(tokenizer, problem), 16, task.MAX_ANSWER_TOKENS)
        if not is_correct(tokenizer, result.tokens, problem):
            text = tokenizer.decode(result.tokens, skip_special_tokens=True)
            wrong[length].append({"problem": i, "answer": text, "reference": problem.completion,
                                  "slips": task.wrong_equations(text)})
out.write_text(json.dumps({"model": name, "problems": count, "wrong": wrong}, indent=1) + "\n")
print({length: len(rows) for length, rows in wrong.items()})
