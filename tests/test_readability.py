"""The code a learner reads: short functions."""
import ast
from pathlib import Path

import jacobi_min

LONGEST = 60  # lines of a function, its docstring included


def test_no_function_is_longer_than_sixty_lines():
    too_long = []
    for path in sorted(Path(jacobi_min.__file__).parent.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno >= LONGEST:
                too_long.append(f"{path.name}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)")
    assert not too_long
