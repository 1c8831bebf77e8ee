"""The analysis scripts behind docs/results.md's reading of long answers (figures/results/training_runs/round4):
the kind of every position and the positions a Jacobi forward corrected, on hand-made inputs."""
import importlib.util
import sys
from pathlib import Path

from jacobi_min.jacobi import DecodeResult

ROUND4 = Path(__file__).parent.parent / "figures" / "results" / "training_runs" / "round4"


def script(name: str):
    sys.path.insert(0, str(ROUND4))  # corrections.py imports margins.py beside it
    try:
        spec = importlib.util.spec_from_file_location(name, ROUND4 / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(ROUND4))


def test_kinds_of_a_two_day_answer():
    pieces = [" Ben", " starts", " with", " ", "2", "3", ".", " Day", " ", "1", " of", " ", "2", ":", " ", "2", "3",
              " +", " ", "6", " =", " ", "2", "9", ".", " Day", " ", "2", " of", " ", "2", ":", " ", "2", "9", " -",
              " ", "4", " =", " ", "2", "5", ".\n", "####", " ", "2", "5", "<|endoftext|>"]
    kinds = script("margins").kinds(pieces)
    assert len(kinds) == len(pieces)
    by_kind = lambda kind: [i for i, k in enumerate(kinds) if k == kind]
    assert by_kind("stop") == [42]
    assert by_kind("next day") == [24]  # the "." before Day 1 ends the opening sentence, not a day
    assert by_kind("day number") == [9, 27]
    assert by_kind("result") == [22, 23, 40, 41]
    assert by_kind("carried") == [15, 16, 33, 34, 45, 46]
    assert by_kind("constant") == [4, 5, 12, 19, 30, 37]
    assert set(kinds) == set(script("margins").KINDS)


def test_corrected_positions_are_the_last_token_of_each_rejected_forward():
    # out[0] from the prefill; forward 1 accepts its whole draft of 4 (bonus at 4), forward 2 keeps 2 of 4
    # (correction at 6), forward 3 keeps 1 of 3 (correction at 7), the last forward ends the answer
    result = DecodeResult(tokens=list(range(10)), accepted=[4, 2, 1, 2], fed=[4, 4, 3, 3])
    assert script("corrections").corrected(result) == [6, 7]
