"""The code a learner reads: the method on top, short, and apart from the tooling; no hidden channels.

Every import is written as an import statement (no module named by a string: `importlib`'s import
machinery, `runpy`, `__import__`), so the import graph read from the source is the whole of it; the
graph has no cycle, and the method reaches no tooling through it."""
import ast
from pathlib import Path

import jacobi_min

PACKAGE = Path(jacobi_min.__file__).parent
METHOD = sorted(p for p in PACKAGE.glob("*.py") if p.name != "__main__.py")  # __main__ only starts the command line
LONGEST = 50  # lines of a function, its docstring included
# Lines (non-blank) the code may take, at what issue #68 reached (tools 2,913 -> 2,650, package without
# jacobi_min/baselines/ 4,346 -> 4,172) by removing what no doc, notebook or user path needs. Its targets, tools
# 2,400 and package 3,800, are not reached: what is left is called by a command, a notebook or a doc. Lower these
# whenever the code shrinks. jacobi_min/baselines/ (issue #69) has its own ceiling; #69's rows of the benchmark,
# its pipeline stage and its accuracy-against-TPF figure added 34 lines to the tooling.
CEILINGS = {"method": 1520, "tools": 2685, "package": 4210, "baselines": 450}
STRING_MODULES = {"runpy", "importlib.util", "importlib.machinery"}  # they import or run a module a string names
STRING_CALLS = {"__import__", "import_module", "reload", "run_path", "run_module", "spec_from_file_location",
                "module_from_spec"}  # importlib.metadata and importlib.resources read a package's files only


def lines(path: Path) -> int:
    return sum(1 for line in path.read_text().splitlines() if line.strip())


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path, modules: set[str]) -> set[str]:
    """The package's modules that `path` imports (anywhere in it, relative imports resolved): for
    `from X import name`, the submodule X.name where there is one, else X."""
    name = module_name(path)
    here = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(here.split(".")[:len(here.split(".")) - node.level + 1]) if node.level else ""
            source = ".".join(part for part in (base, node.module) if part)
            found |= {f"{source}.{a.name}" if f"{source}.{a.name}" in modules else source for a in node.names}
    return found & modules


def import_graph() -> dict[str, set[str]]:
    """Each module of the package -> the package's modules it imports."""
    paths = sorted(PACKAGE.rglob("*.py"))
    modules = {module_name(p) for p in paths}
    return {module_name(p): imported(p, modules) for p in paths}


def cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle (its modules, the first repeated at the end), or [] when there is none."""
    state = {}  # module -> "open" while its imports are walked, "done" after

    def walk(module: str, path: list[str]) -> list[str]:
        state[module] = "open"
        for target in sorted(graph[module]):
            if state.get(target) == "open":
                return path[path.index(target):] + [target]
            if target not in state and (found := walk(target, path + [target])):
                return found
        state[module] = "done"
        return []

    return next((found for module in sorted(graph) if module not in state and (found := walk(module, [module]))), [])


def string_imports(path: Path) -> list[str]:
    """Where `path` imports a module named by a string (importlib's import machinery, runpy, __import__)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names] + [a.name for a in node.names]
        else:
            names = [node.id] if isinstance(node, ast.Name) else [node.attr] if isinstance(node, ast.Attribute) else []
        found += [f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {n}" for n in names
                  if n in STRING_MODULES | STRING_CALLS]
    return found


def test_no_function_is_longer_than_fifty_lines():
    too_long = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno >= LONGEST:
                too_long.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)")
    assert too_long == [], too_long


def test_no_module_is_imported_by_a_string():
    """importlib.metadata and importlib.resources (package files, no code) are the only parts of importlib used."""
    hits = [hit for path in sorted(PACKAGE.rglob("*.py")) for hit in string_imports(path)]
    assert hits == [], hits


def test_the_package_has_no_import_cycle():
    assert cycle(import_graph()) == [], "an import cycle"


def test_the_method_never_imports_the_tooling_by_any_route():
    graph = import_graph()
    for path in METHOD:
        reached, todo = set(), [module_name(path)]
        while todo:
            for target in graph[todo.pop()] - reached:
                reached.add(target)
                todo.append(target)
        tooling = sorted(m for m in reached if m.startswith("jacobi_min.tools"))
        assert tooling == [], f"{path.name} reaches {tooling}"


def test_the_method_is_a_short_read_and_the_package_stays_small():
    baselines = sorted((PACKAGE / "baselines").rglob("*.py"))
    tools = sorted((PACKAGE / "tools").rglob("*.py"))
    counts = {"method": sum(map(lines, METHOD)), "tools": sum(map(lines, tools)), "baselines": sum(map(lines, baselines)),
              "package": sum(lines(p) for p in PACKAGE.rglob("*.py") if p not in baselines)}
    assert {k: v for k, v in counts.items() if v > CEILINGS[k]} == {}, counts


def test_the_exactness_specification_is_marked_in_every_file_that_holds_it():
    """`pytest -m exactness` (the README's one-minute check) runs each decoder's token-for-token tests: the
    single-prompt, multi-block, batched and sampling decoders, transformers' hook, the shipped models and the
    baselines' lossless path."""
    tests = Path(__file__).parent
    for name in ("jacobi", "multiblock", "batch", "generate", "properties", "shipped", "baselines"):
        source = (tests / f"test_{name}.py").read_text()
        assert source.count("@pytest.mark.exactness") >= 2, name
