"""The pieces every command line shares: the --model / --device / --dtype arguments,
argparse types that reject bad values with a clear message, and the loading of a command's
model (where the real Qwen's alias names its local copy).

Each module that owns a command registers it in its `add_commands(commands)`: one
subparser with its arguments and `set_defaults(run=<entry function>)`; `__main__`
is the table of those modules.
"""
import argparse
import functools

import torch

from ..model import load
from . import qwen

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
MODEL_HELP = "embedded name (base, jacobi-forcing, cllm, block-diffusion, drafter), qwen2.5-coder-0.5b-instruct, directory or hub id"


def device_args(parser, dtype: bool = True) -> None:
    """--device, and --dtype unless the command picks its own dtype."""
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    if dtype:
        parser.add_argument("--dtype", default=None, choices=DTYPES, help="default: float32 on cpu, bfloat16 on cuda")


def model_args(parser, default: str = "base") -> None:
    parser.add_argument("--model", default=default, help=MODEL_HELP)
    device_args(parser)


def dtype_of(args) -> torch.dtype:
    return DTYPES[args.dtype or ("bfloat16" if args.device.startswith("cuda") else "float32")]


def load_model(name, device: str = "cpu", dtype: torch.dtype = torch.float32):
    """`jacobi_min.load(name, device, dtype)`, where the alias `qwen.ALIAS` names the real Qwen's local
    copy (`qwen.local_dir()`, built on first use)."""
    return load(qwen.local_dir() if str(name) == qwen.ALIAS else name, device, dtype)


def with_model(command):
    """An entry function `command(args, model, tokenizer)` as one that takes `args` only and loads
    --model on --device in --dtype first."""
    @functools.wraps(command)
    def run(args):
        return command(args, *load_model(args.model, args.device, dtype_of(args)))
    return run


def at_least(low, cast=int):
    """An argparse type: `cast` of the argument, which must be >= low."""
    def parse(text: str):
        value = cast(text)
        if value < low:
            raise argparse.ArgumentTypeError(f"must be >= {low}, got {text}")
        return value
    parse.__name__ = cast.__name__  # argparse names it in "invalid int value"
    return parse


def probability(text: str) -> float:
    """An argparse type: a float in (0, 1]."""
    value = float(text)
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"must lie in (0, 1], got {text}")
    return value
