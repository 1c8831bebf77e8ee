"""The equal-weight average of several checkpoints of one architecture, θ̄ = (1/k) Σ θ_i
(`jacobi_min.tools.pipeline.average`, in float32, stored in the first checkpoint's dtype).

Usage: python average_seeds.py OUT MODEL [MODEL ...]   (OUT gets the first model's files and the average)
run.sh uses it on round 3's three seeds (the shipped model and seeds 2 and 4): does averaging more
seeds close the point that each of them loses on long answers?
"""
import shutil
import sys
from pathlib import Path

from safetensors.torch import load_file, save_file

from jacobi_min.tools.pipeline import average

out, models = Path(sys.argv[1]), [Path(m) for m in sys.argv[2:]]
states = [load_file(m / "model.safetensors") for m in models]
mean = average([{k: v.float() for k, v in s.items()} for s in states])
shutil.copytree(models[0], out, dirs_exist_ok=True)
save_file({k: v.to(states[0][k].dtype) for k, v in mean.items()}, out / "model.safetensors", metadata={"format": "pt"})
