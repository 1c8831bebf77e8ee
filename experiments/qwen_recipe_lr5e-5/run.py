"""The recipe on the real Qwen at lr 5e-5: the cpu preset with five times its learning rate
(docs/real_qwen.md, "An earlier run at lr 5e-5"). From the repository's root, with the real model
available as docs/real_qwen.md describes (about 45 min on 2 cores; a rerun resumes):

    python experiments/qwen_recipe_lr5e-5/run.py [work folder, default runs/qwen-lr5e-5]

It writes the summary to WORK/summary.json. The committed summary.json beside this script (and
seen_before.json, the training questions' TPF before training) came from the code of its day; this
repeats the run with today's code.
"""
import sys
from dataclasses import replace
from pathlib import Path

from jacobi_min.tools import recipe


def main(work: Path = Path("runs/qwen-lr5e-5")) -> None:
    cpu = recipe.PRESETS["cpu"]
    recipe.run(replace(cpu, train=replace(cpu.train, lr=5e-5)), work, results=work / "summary.json")
    print(work / "summary.json")


if __name__ == "__main__":
    main(*map(Path, sys.argv[1:]))
