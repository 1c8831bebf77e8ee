"""The real Qwen on 2 CPU cores: trajectory collection (n = 16, 256 tokens) of GSM8K questions, one prompt a
forward against batches; questions per minute, and the trajectories must not change."""
import json
import sys
import time

import torch

import jacobi_min
from jacobi_min import trajectories
from jacobi_min.tools import qwen, recipe
from jacobi_min.tools.timing import machine

model, tokenizer = jacobi_min.load(qwen.local_dir())
cfg = recipe.PRESETS["cpu"]
ids = recipe.question_ids(tokenizer, cfg, 0, int(sys.argv[1]))
rows, first = [], None
for workers, batch in [(2, 1), (1, len(ids)), (2, len(ids) // 2)]:
    torch.set_num_threads(2)
    start = time.perf_counter()
    out = trajectories.collect(model, ids, 16, 256, workers=workers, batch=batch)
    seconds = time.perf_counter() - start
    first = first or out
    rows.append({"workers": workers, "batch": batch, "questions": len(ids), "seconds": round(seconds, 1),
                 "questions_per_minute": round(60 * len(ids) / seconds, 2), "same_trajectories": out == first})
    print(rows[-1], flush=True)
json.dump({"model": "qwen2.5-coder-0.5b-instruct", "block_size": 16, "max_new_tokens": 256, "machine": machine(),
           "runs": rows}, open(sys.argv[2], "w"), indent=1)
