"""The noise-schedule studies in one small file: figures/results/noise_schedules.json (with the
paper's values), which `python experiments/lab_figures.py` draws as experiments/figures/noise_schedule_ablation.png.

    python experiments/training_runs/schedules/summarise.py <work folder> <offset0 work folder> [out]

The work folders are those of `run.sh <trajectories> <work folder>` and `run.sh … <work folder> offset0`:
one `eval` file `<schedule>-s<seed>.json` per run beside the run's folder (its `train_config.json`). The
random schedule takes no offset, so the study from block 0 takes its runs from the first folder. Each study
is written in the layout `lab_figures.ablation` draws (one study: its settings and each schedule's runs).
"""
import json
import sys
from pathlib import Path

SCHEDULES = ("progressive", "random", "reverse")
PAPER = {"iterations_per_token": {"progressive": 0.48, "random": 0.53, "reverse": 0.62},
         "source": "the paper's noise-schedule ablation (a 7B model, its own scale)"}
SEEDS = 3


def files(folder: Path, random_from: Path | None = None) -> list[Path]:
    """The eval files of one study, the random schedule's from `random_from` when given."""
    paths = [((random_from or folder) if name == "random" else folder) / f"{name}-s{seed}.json"
             for name in SCHEDULES for seed in range(SEEDS)]
    missing = [str(path) for path in paths if not (path.exists() and config_of(path).exists())]
    if missing:
        raise SystemExit(f"not every run has its eval file and settings yet: {missing}")
    return paths


def config_of(path: Path) -> Path:
    """The settings of the run that an eval file `<label>.json` scored: `<label>/train_config.json`."""
    return path.with_suffix("") / "train_config.json"


def study(paths: list[Path]) -> dict:
    """One study: each schedule's runs (seed, iterations per token = 1 / TPF, the long bucket's scores)."""
    runs, seen = {name: [] for name in SCHEDULES}, {"problems": set(), "block_size": set(), "steps": set(), "offset": set()}
    for path in paths:
        data, config = json.loads(path.read_text()), json.loads(config_of(path).read_text())["config"]
        (label, scores), = data["scores"].items()
        name, seed = label.rsplit("-s", 1)
        seen["problems"].add(data["problems"])
        seen["block_size"].add(data["block_size"])
        seen["steps"].add(config["steps"])
        if config["schedule"] != "random":  # a random schedule takes no offset
            seen["offset"].add("random offset" if config["random_offset"] else "offset 0")
        long = {key: value for key, value in scores["long"].items() if key != "correct"}
        runs[name].append({"seed": int(seed), "iterations_per_token": 1 / long["tpf"], **long})
    if any(len(values) != 1 for values in seen.values()):
        raise SystemExit(f"the runs of one study differ: { {key: sorted(v) for key, v in seen.items()} }")
    (problems,), (block_size,), (steps,), (offset,) = (seen[key] for key in ("problems", "block_size", "steps", "offset"))
    return {"steps": steps, "block_size": block_size, "problems": problems, "length": "long", "offset": offset,
            "runs": runs}


def main(work: Path, offset0: Path, out: Path = Path("figures/results/noise_schedules.json")) -> None:
    studies = [study(files(offset0, random_from=work)), study(files(work))]
    out.write_text(json.dumps({"paper": PAPER, "studies": studies}, indent=1) + "\n")
    print(out)


if __name__ == "__main__":
    main(*map(Path, sys.argv[1:]))
