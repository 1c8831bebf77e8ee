"""The one-off run scripts under experiments/ still parse. They are not imported or run: the suite does not
depend on them, and their results are reported in docs/results.md (experiments/README.md maps each one). The
package never reaches into experiments/, and the folder keeps only the scripts and summaries the results
page needs."""
import ast
import importlib
import importlib.util
import shutil
import subprocess
from pathlib import Path

import pytest

import jacobi_min

EXPERIMENTS = Path(__file__).resolve().parent.parent / "experiments"
PACKAGE = Path(jacobi_min.__file__).parent
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


def test_the_package_never_reaches_into_experiments():
    """No command runs an experiment script and no default path points there: apart from docstrings, no string
    in the package's code names the folder."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text())
        docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                      if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)) and node.body
                      and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
        found += [f"{path.relative_to(PACKAGE)}:{node.lineno}" for node in ast.walk(tree)
                  if isinstance(node, ast.Constant) and isinstance(node.value, str) and "experiments" in node.value
                  and id(node) not in docstrings]
    assert found == []


def test_the_lab_record_stays_small():
    """Scripts and summary files only (issue 68: at most 80 files and 1.5 MB); the rest is in git history."""
    files = [p for p in EXPERIMENTS.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    assert len(files) <= 80 and sum(p.stat().st_size for p in files) <= 1_500_000


@pytest.mark.parametrize("path", PYTHON, ids=name)
def test_every_name_a_script_imports_from_the_package_exists(path: Path):
    """A script that imports what the package no longer has (a name that moved or left) fails here, not when run."""
    missing = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "jacobi_min":
            module = importlib.import_module(node.module)
            missing += [f"{node.module}.{a.name}" for a in node.names if not hasattr(module, a.name) and not (
                hasattr(module, "__path__") and importlib.util.find_spec(f"{node.module}.{a.name}"))]  # a submodule
    assert missing == [], missing
