"""A non-editable install works from an empty folder and writes only where it is told.

The wheel is built from a copy of the sources (a build writes `build/` and `*.egg-info` beside them) and installed
into a fresh virtual environment; torch and the other requirements come from the environment running the tests
(nothing is downloaded). From an empty folder, with the repository off the path, `demo`, `generate` and a small
`bench --out` must succeed, and afterwards the folder is still empty, the installed package and its parent hold no
new file and the repository's `git status` is unchanged.
"""
import importlib.util
import json
import os
import re
import shutil
import site
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.xdist_group("test_install")  # one worker: three model runs in subprocesses


def files_under(folder: Path) -> set[Path]:
    """Every file under `folder` but bytecode caches (the interpreter writes those on import)."""
    return {p.relative_to(folder) for p in folder.rglob("*") if "__pycache__" not in p.parts}


def git_status() -> str | None:
    if shutil.which("git") is None or not (REPO / ".git").exists():
        return None
    done = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=REPO,
                          capture_output=True, text=True)
    return done.stdout if done.returncode == 0 else None


def fresh_venv(folder: Path) -> tuple[Path, Path]:
    """A virtual environment at `folder` that sees this environment's packages but not this repository:
    (its python, its site-packages)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(folder)], check=True)
    python = folder / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                             check=True, capture_output=True, text=True).stdout.strip()
    # --system-site-packages reaches the base interpreter's packages only; when the tests run in a virtual
    # environment, its site-packages are added as plain path lines (their .pth files, an editable install's
    # finder among them, are not run), after the new environment's own site-packages.
    user = [site.getusersitepackages()] if site.ENABLE_USER_SITE else []
    here = [Path(p) for p in [*site.getsitepackages(), sysconfig.get_path("purelib"), *user] if Path(p).is_dir()]
    lines = [str(p) for p in dict.fromkeys(here) if REPO not in (p, *p.parents)]
    (Path(purelib) / "_test_environment.pth").write_text("\n".join(lines) + "\n")
    return python, Path(purelib)


def test_a_wheel_in_a_fresh_venv_runs_from_an_empty_folder_and_writes_only_where_asked(tmp_path):
    assert importlib.util.find_spec("setuptools") is not None, "building the wheel offline needs setuptools"
    source = tmp_path / "source"
    shutil.copytree(REPO / "jacobi_min", source / "jacobi_min", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    pip = [sys.executable, "-m", "pip", "-q", "--disable-pip-version-check", "--no-input"]
    built = subprocess.run(pip + ["wheel", "--no-deps", "--no-build-isolation", "--no-index",
                                  "-w", str(tmp_path / "wheel"), str(source)], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    wheel = next((tmp_path / "wheel").glob("jacobi_min-*.whl"))

    python, purelib = fresh_venv(tmp_path / "venv")
    installed = subprocess.run(pip + ["--python", str(python), "install", "--no-deps", "--no-index", str(wheel)],
                               capture_output=True, text=True)
    assert installed.returncode == 0, installed.stderr

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.update(CUDA_VISIBLE_DEVICES="", OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    empty = tmp_path / "empty"
    empty.mkdir()

    def run(*argv: str) -> str:
        done = subprocess.run([str(python), *argv], cwd=empty, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"{argv}:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
        return done.stdout

    # the wheel, not the repository (an editable install or the path), is what this interpreter imports;
    # find_spec locates the package without importing torch
    origin = Path(run("-c", "import importlib.util; print(importlib.util.find_spec('jacobi_min').origin)").strip())
    assert origin.is_relative_to(purelib / "jacobi_min"), origin
    venv_files, status = files_under(tmp_path / "venv"), git_status()

    demo = re.findall(r"identical outputs: (\d+)/(\d+)", run("-m", "jacobi_min", "demo", "--problems", "1"))
    assert len(demo) == 2 and all(same == total for same, total in demo), demo  # base and jacobi-forcing
    assert "TPF" in run("-m", "jacobi_min", "generate",
                        "Mia has 3 apples. She buys 4 more. How many apples does she have?")
    out = tmp_path / "results" / "bench.json"  # a folder that does not exist yet
    table = run("-m", "jacobi_min", "bench", "--problems", "2", "--lengths", "short", "--workers", "1",
                "--out", str(out))
    assert "Jacobi Forcing" in table

    results = json.loads(out.read_text())
    assert set(results) >= {"meta", "buckets", "cost_model"}
    assert list(results["buckets"]) == ["short"] and results["buckets"]["short"]["problems"] == 2
    assert {m["method"] for m in results["buckets"]["short"]["methods"]} >= {"Jacobi (base)", "Jacobi Forcing"}
    assert list(tmp_path.joinpath("results").iterdir()) == [out]

    assert list(empty.iterdir()) == [], "a command wrote into the current folder unasked"
    assert files_under(tmp_path / "venv") == venv_files, "a command wrote into the installed package or beside it"
    assert git_status() == status, "a command wrote into the repository"
