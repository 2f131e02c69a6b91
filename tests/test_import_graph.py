"""The import graph of ``urban_gym``: no cycle among its modules.

The graph is read from the source (AST), so every ``import`` counts: at module level, inside
functions (a lazy import that closes a loop is still a loop), under ``if`` blocks. An edge
goes to the module named, or, for ``from package import name``, to ``package.name`` when
that is a module of its own. Importing ``a.b.c`` also runs ``a/__init__`` and ``a/b/__init__``,
but those implicit edges are left out: counting them would turn every package whose
``__init__`` re-exports its submodules into a cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import urban_gym

PKG = Path(urban_gym.__file__).parent


def module_name(path: Path) -> str:
    """``urban_gym.world.city`` for ``.../urban_gym/world/city.py`` (packages without
    ``.__init__``)."""
    parts = path.relative_to(PKG.parent).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def all_modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PKG.rglob("*.py"))}


def imported_modules(path: Path, modules: dict[str, Path]) -> set[str]:
    """The ``urban_gym`` modules that ``path`` imports anywhere in its body."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()

    def add(target: str) -> None:
        # the longest prefix that is a module of the package (``a.b.C`` -> ``a.b``)
        while target and target not in modules:
            target = target.rpartition(".")[0]
        if target and target != name:
            out.add(target)

    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "urban_gym":
                    add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if mod.split(".")[0] != "urban_gym":
                continue
            for alias in node.names:
                sub = f"{mod}.{alias.name}"
                add(sub if sub in modules else mod)
    return out


def import_graph() -> dict[str, set[str]]:
    modules = all_modules()
    return {name: imported_modules(path, modules) for name, path in modules.items()}


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected component with more than one module (Tarjan), each as
    a sorted list; a module importing itself counts too."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0

    def visit(v: str) -> None:
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in graph.get(v, ()):
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def test_find_cycles_sees_function_level_and_from_imports(tmp_path: Path) -> None:
    """The walker on a hand-made package: ``a`` imports ``b`` at the top, ``b`` imports
    ``a`` inside a function (a cycle); ``c`` imports ``d`` one way only (none)."""
    graph = {"p.a": {"p.b"}, "p.b": {"p.a"}, "p.c": {"p.d"}, "p.d": set()}
    assert find_cycles(graph) == [["p.a", "p.b"]]
    # the AST reader: load_posegraph imports the loader inside its function body
    modules = all_modules()
    graph = imported_modules(modules["urban_gym.families.posegraph360.world.graph"], modules)
    assert "urban_gym.world.loader" in graph, graph
    city = imported_modules(modules["urban_gym.world.city"], modules)
    assert "urban_gym.world.bundle" in city, city  # City.save/load delegate to bundle
    assert "urban_gym.world.city" not in imported_modules(
        modules["urban_gym.world.bundle"], modules
    )
    loader = imported_modules(modules["urban_gym.world.loader"], modules)
    assert {"urban_gym.world.city", "urban_gym.world.osm"} <= loader


def test_no_import_cycle() -> None:
    cycles = find_cycles(import_graph())
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)
