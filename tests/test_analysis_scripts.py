"""The one-off run scripts under experiments/ still parse. They are not imported or run: the suite does not
depend on them, and their results are reported in docs/results.md (experiments/README.md maps each one)."""
import shutil
import subprocess
from pathlib import Path

import pytest

EXPERIMENTS = Path(__file__).resolve().parent.parent / "experiments"
PYTHON = sorted(EXPERIMENTS.rglob("*.py"))
SHELL = sorted(EXPERIMENTS.rglob("*.sh"))


def name(path: Path) -> str:
    return str(path.relative_to(EXPERIMENTS))


def test_the_scripts_are_found():
    assert (EXPERIMENTS / "README.md").is_file()
    assert PYTHON and SHELL


@pytest.mark.parametrize("path", PYTHON, ids=name)
def test_python_script_compiles(path: Path):
    compile(path.read_text(encoding="utf-8"), str(path), "exec")  # a SyntaxError fails the test


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@pytest.mark.parametrize("path", SHELL, ids=name)
def test_shell_script_parses(path: Path):
    result = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
