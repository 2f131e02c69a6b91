"""The family's modules import each other's names from the module that defines them.

``env.py`` re-exports a few helpers of its seams (``actions``, ``dynamics``) for code
outside the family; inside it, importing through those re-exports ties a module to
``env.py`` for names it does not own. A package's ``__init__`` is its public face and may
be imported from.
"""

from __future__ import annotations

import ast
from pathlib import Path

import urban_gym

ROOT = Path(urban_gym.__file__).resolve().parent.parent
FAMILY = ROOT / "urban_gym" / "families" / "streetgraph"
PREFIX = "urban_gym.families.streetgraph"


def defined_names(path: Path) -> set[str]:
    """The names a module binds at its top level (functions, classes, assignments)."""
    names: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
    return names


def reexported_imports(path: Path) -> list[str]:
    """``path``'s imports of a family name from a family module (not a package) that
    does not define it.
    """
    bad = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not (isinstance(node, ast.ImportFrom) and (node.module or "").startswith(PREFIX)):
            continue
        module = ROOT.joinpath(*node.module.split("."))  # type: ignore[union-attr]
        if (module / "__init__.py").exists():
            continue
        own = defined_names(module.with_suffix(".py"))
        bad += [
            f"{path.name}:{node.lineno} imports {a.name} from {node.module}"
            for a in node.names
            if a.name not in own
        ]
    return bad


def test_the_checker_sees_a_reexport(tmp_path):
    # env.py re-exports missing_option (defined in actions.py): importing it through
    # env.py is flagged, from actions.py it is not
    probe = tmp_path / "probe.py"
    probe.write_text(
        f"from {PREFIX}.env import StreetGraphEnv, missing_option\n"
        f"from {PREFIX}.actions import missing_option as m\n"
    )
    assert reexported_imports(probe) == [
        "probe.py:1 imports missing_option from urban_gym.families.streetgraph.env"
    ]


def test_family_modules_import_names_from_where_they_are_defined():
    bad = [b for f in sorted(FAMILY.rglob("*.py")) for b in reexported_imports(f)]
    assert bad == []
