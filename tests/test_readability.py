"""The code a learner reads: the method on top, short, and apart from the tooling."""
import ast
from pathlib import Path

import jacobi_min

PACKAGE = Path(jacobi_min.__file__).parent
METHOD = sorted(p for p in PACKAGE.glob("*.py") if p.name != "__main__.py")  # __main__ only starts the command line
LONGEST = 50  # lines of a function, its docstring included


def lines(path: Path) -> int:
    return sum(1 for line in path.read_text().splitlines() if line.strip())


def test_no_function_is_longer_than_fifty_lines():
    too_long = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno >= LONGEST:
                too_long.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)")
    assert not too_long


def test_the_method_never_imports_the_tooling():
    arrows = []
    for path in METHOD:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                module = "." * node.level + (node.module or "")
                names = [a.name for a in node.names]
                if "tools" in module.split(".") or (module == "." and "tools" in names):
                    arrows.append(f"{path.name}:{node.lineno} from {module} import {', '.join(names)}")
            elif isinstance(node, ast.Import) and any("jacobi_min.tools" in a.name for a in node.names):
                arrows.append(f"{path.name}:{node.lineno}")
    assert not arrows


def test_the_method_is_a_short_read_and_the_package_stays_small():
    method = sum(lines(p) for p in METHOD)
    package = sum(lines(p) for p in PACKAGE.rglob("*.py"))
    assert method <= 1500, f"the method has {method} non-blank lines"
    # 4,243 before the method and the tools split, 3,941 after it; batched decoding and its throughput benchmark
    # (batch.py, tools/throughput.py, the recipe's batched evaluation) added about 380
    assert package <= 4400, f"the package has {package} non-blank lines"
