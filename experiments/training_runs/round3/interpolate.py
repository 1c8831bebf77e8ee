"""Weight interpolation between two checkpoints of the same architecture (a "weight soup"):

    θ(α) = (1 − α)·θ_start + α·θ_end

Usage: python interpolate.py START END OUT_ROOT α [α ...]   (writes OUT_ROOT/soup-α for each α)
run.sh uses it twice: START the shipped Jacobi Forcing model, END its third round (λ 30, lr 3e-4,
no 1/T): does keeping a fraction α of the third round's update keep its speed with the shipped
model's answers? And at α = 0.5 with START and END two training seeds of the same round: their average.
"""
import shutil
import sys
from pathlib import Path

from safetensors.torch import load_file, save_file

start_dir, end_dir, out_root = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
start, end = load_file(start_dir / "model.safetensors"), load_file(end_dir / "model.safetensors")
for alpha in map(float, sys.argv[4:]):
    out = out_root / f"soup-{alpha:g}"
    shutil.copytree(end_dir, out, dirs_exist_ok=True)
    mixed = {k: ((1 - alpha) * start[k].float() + alpha * end[k].float()).to(end[k].dtype) for k in end}
    save_file(mixed, out / "model.safetensors", metadata={"format": "pt"})
