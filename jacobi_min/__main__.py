"""Command line: `python -m jacobi_min --help` lists every command."""
import argparse
from pathlib import Path

from . import tiny
from .model import CHECKPOINTS


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m jacobi_min", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    base = commands.add_parser("train-base", help="train the embedded tiny Qwen2 and its tokenizer from scratch (~25 min on 2 CPU cores)")
    base.add_argument("--out", type=Path, default=CHECKPOINTS / "base")
    base.add_argument("--steps", type=int, default=tiny.BaseConfig.steps)
    args = parser.parse_args(argv)
    if args.command == "train-base":
        print(tiny.train_base(args.out, tiny.BaseConfig(steps=args.steps)))


if __name__ == "__main__":
    main()
