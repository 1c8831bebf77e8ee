"""Run under torchrun by test_train.py: train a few steps with DDP (rank 0 scores, logs and saves the
checkpoint to OUT_DIR/ddp), then every rank saves its own weights.

    python -m torch.distributed.run --nproc_per_node=2 tests/ddp_replicas.py TRAJECTORIES OUT_DIR
"""
import os
import sys
from pathlib import Path

import torch

import jacobi_min
from jacobi_min import trajectories
from jacobi_min.train import TrainConfig, train

if __name__ == "__main__":
    source, out = Path(sys.argv[1]), Path(sys.argv[2])
    model, tokenizer = jacobi_min.load()
    train(model, tokenizer, trajectories.load(source), TrainConfig(steps=3, batch_size=2, eval_problems=2),
          out_dir=out / "ddp", progress=False)
    torch.save(model.state_dict(), out / f"rank{os.environ['RANK']}.pt")
