"""No import cycle inside the extractor package.

Every module of the package is parsed with `ast`; each import, wherever it is written
(at the top, inside a function, a method, a try or an `if`), is an edge from the module
to the module it names, relative imports resolved as Python resolves them, and `from
PACKAGE import NAME` to the submodule NAME when there is one. A cycle is a design fault
even when Python happens to cope with it (an import done late, inside a function):
two modules that need each other are one module, or share a third.

An import made by a string (`importlib.import_module`, the package's lazy attributes) is
not seen; nor is a package's import of its parents, which Python makes first anyway.
"""

import ast
from pathlib import Path
from typing import Dict, List, Optional, Set

PACKAGE_DIR = Path(__file__).resolve().parent.parent / "extractor"


def _modules(root: Path) -> Dict[str, Path]:
    """{dotted module name: its file} for every .py file of the package under `root`."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _imported(module: str, path: Path, modules: Dict[str, Path]) -> Set[str]:
    """The package's modules that `module` (at `path`) imports, at any depth."""
    is_package = path.name == "__init__.py"
    names = set()
    for node in ast.walk(ast.parse(path.read_bytes(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: from the package holding `module` (or `module`'s own)
                base = module.split(".")
                if not is_package:
                    base.pop()
                if node.level > 1:
                    base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            names.add(target)
            names.update("{}.{}".format(target, alias.name) for alias in node.names)
    return {name for name in names if name in modules and name != module}


def import_graph(root: Path = PACKAGE_DIR) -> Dict[str, Set[str]]:
    modules = _modules(root)
    return {module: _imported(module, path, modules) for module, path in modules.items()}


def find_cycle(graph: Dict[str, Set[str]]) -> Optional[List[str]]:
    """One cycle as [a, b, ..., a], or None. Depth first, without recursion."""
    state: Dict[str, int] = {}  # absent: unseen; 1: on the current path; 2: done
    for start in sorted(graph):
        if start in state:
            continue
        path = [start]
        state[start] = 1
        pending = [iter(sorted(graph[start]))]
        while pending:
            following = next(pending[-1], None)
            if following is None:
                state[path.pop()] = 2
                pending.pop()
            elif state.get(following) == 1:
                return path[path.index(following) :] + [following]
            elif following not in state:
                state[following] = 1
                path.append(following)
                pending.append(iter(sorted(graph.get(following, ()))))
    return None


def cycles(graph: Dict[str, Set[str]], most: int = 20) -> List[List[str]]:
    """Up to `most` cycles, each found once the edge that closed the one before is taken
    out: a failure shows more than the first cycle met."""
    graph = {module: set(imported) for module, imported in graph.items()}
    found = []
    cycle = find_cycle(graph)
    while cycle is not None and len(found) < most:
        found.append(cycle)
        graph[cycle[-2]].discard(cycle[-1])
        cycle = find_cycle(graph)
    return found


def test_the_graph_sees_imports_at_every_depth():
    # What the check below relies on (a slip here would leave the graph empty, and pass):
    # an import inside a function (the CLI's of the batch command), one two levels up
    # (`..errors`), one of a submodule by `from PACKAGE import NAME`.
    graph = import_graph()
    assert "extractor.run.batch.command" in graph["extractor.cli.extraction"]
    assert "extractor.errors" in graph["extractor.run.batch.discover"]
    assert "extractor.core.metrics" in graph["extractor.compare.comparison"]  # from .. import
    assert len(graph) == len(list(PACKAGE_DIR.rglob("*.py")))


def test_find_cycle_finds_one():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set()}
    assert find_cycle(graph) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None
    assert cycles({"a": {"b"}, "b": {"a", "c"}, "c": {"b"}}) == [["a", "b", "a"], ["b", "c", "b"]]


def test_no_import_cycle_in_the_package():
    found = cycles(import_graph())
    assert not found, "import cycles:\n" + "\n".join(" -> ".join(c) for c in found)
