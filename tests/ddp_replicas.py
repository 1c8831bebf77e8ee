"""Run under torchrun by test_train.py: the `train` command (its parser and its function) for a few
steps with DDP — rank 0 scores, logs and saves the checkpoint to OUT_DIR/ddp — then every rank saves
its own weights.

    python -m torch.distributed.run --nproc_per_node=2 tests/ddp_replicas.py TRAJECTORIES OUT_DIR
"""
import os
import sys
from pathlib import Path

import torch

import jacobi_min
from jacobi_min.tools.commands import build_parser
from jacobi_min.tools.pipeline import train_command

if __name__ == "__main__":
    source, out = sys.argv[1], Path(sys.argv[2])
    args = build_parser().parse_args(["train", "--trajectories", source, "--steps", "3", "--batch-size", "2",
                                      "--eval-problems", "2", "--out", str(out / "ddp")])
    model, tokenizer = jacobi_min.load()
    train_command(args, model, tokenizer)
    torch.save(model.state_dict(), out / f"rank{os.environ['RANK']}.pt")
