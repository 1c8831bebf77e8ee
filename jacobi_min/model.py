"""Loading models: the embedded checkpoints by name, or any local directory / hub id.

Names of the checkpoints that ship in `jacobi_min/checkpoints/`: `base` (the
default, `None`), and the trained parallel decoders once built.
"""
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

CHECKPOINTS = Path(__file__).parent / "checkpoints"


def resolve(name_or_path: str | Path | None) -> str:
    """An embedded checkpoint's directory, a local directory, or a hub id as given."""
    if name_or_path is None:
        name_or_path = "base"
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
    except (OSError, ValueError, RuntimeError) as err:
        raise ValueError(f"could not load checkpoint {source!r}: it is missing, corrupted or "
                         f"not reachable ({type(err).__name__}: {err})") from err
    return model.to(device).eval(), tokenizer
