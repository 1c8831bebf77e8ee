"""The one trajectory state that differed between one-prompt and batched (B = 32) collection in collect.sh: the
first differing prompt, block and position, and the top logits there from one full float32 forward.
Usage: python margin.py <collect.sh's work folder>"""
import json
import sys
from pathlib import Path

import torch

import jacobi_min

work = Path(sys.argv[1])
before = [json.loads(line) for line in (work / "before_jacobi-forcing.jsonl").read_text().splitlines()]
after = [json.loads(line) for line in (work / "after_jacobi-forcing_32.jsonl").read_text().splitlines()]
i = next(i for i, (a, b) in enumerate(zip(before, after)) if a != b)
a, b = before[i], after[i]
j = next(j for j, (x, y) in enumerate(zip(a["blocks"], b["blocks"])) if x != y)
k = next(k for k, (x, y) in enumerate(zip(a["blocks"][j], b["blocks"][j])) if x != y)
pos = next(p for p, (x, y) in enumerate(zip(a["blocks"][j][k], b["blocks"][j][k])) if x != y)
context = a["prompt"] + [t for states in a["blocks"][:j] for t in states[-1]]
draft = a["blocks"][j][k - 1]  # the state whose forward chose the differing token
model, _ = jacobi_min.load("jacobi-forcing")
with torch.inference_mode():
    logits = model(input_ids=torch.tensor([context + draft])).logits[0, len(context) + pos - 1]
one, batched = a["blocks"][j][k][pos], b["blocks"][j][k][pos]
print(f"prompt {i}, block {j}, state {k}, position {pos}: one prompt {one}, batched {batched}; fixed points equal: "
      f"{[s[-1] for s in a['blocks']] == [s[-1] for s in b['blocks']]}")
print(f"top-3 logits {[(t, round(v, 6)) for v, t in zip(*[x.tolist() for x in torch.topk(logits, 3)])]}; "
      f"margin {(logits[one] - logits[batched]).item():.3g}")
