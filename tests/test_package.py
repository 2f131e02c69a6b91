"""Package-level contracts: import cost, the one-way import direction, a core that never
names a family, each family one folder, the data notice."""

import ast
import re
import subprocess
import sys
from pathlib import Path

import urban_gym

PKG = Path(urban_gym.__file__).parent
LAYERS = [
    "world",
    "render",
    "tasks",
    "envs",
    "wrappers",
    "baselines",
    "eval",
    "play",
    "families",
    "cli",
]
HEAVY = {
    "torch",
    "stable_baselines3",
    "sb3_contrib",
    "ray",
    "httpx",
    "requests",
    "matplotlib",
    "imageio",
    "starlette",
    "uvicorn",
    "selenium",
}
HEAVY_OK_LAYERS = {"baselines", "eval", "play", "families", "cli"}


def layer_of(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "urban_gym" or len(parts) < 2:
        return None
    name = parts[1]
    return name if name in LAYERS else None


def imports_of(path: Path, root: Path = PKG.parent) -> list[str]:
    tree = ast.parse(path.read_text())
    rel_pkg = ".".join(path.relative_to(root).with_suffix("").parts[:-1])
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = rel_pkg.split(".")
                base = base[: len(base) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out.append(mod)
    return out


def test_imports_flow_one_way():
    bad = []
    for path in PKG.rglob("*.py"):
        rel = path.relative_to(PKG.parent).with_suffix("")
        own = layer_of(".".join(rel.parts))
        if own is None:
            continue
        for mod in imports_of(path):
            other = layer_of(mod)
            if other is not None and LAYERS.index(other) > LAYERS.index(own):
                bad.append(f"{rel} ({own}) imports {mod} ({other})")
            if own not in HEAVY_OK_LAYERS and mod.split(".")[0] in HEAVY:
                bad.append(f"{rel} ({own}) imports heavy dependency {mod}")
    assert not bad, "\n".join(bad)


def test_import_does_not_pull_heavy_dependencies():
    code = (
        "import sys, urban_gym, urban_gym.world, urban_gym.envs, urban_gym.wrappers;"
        f"bad = [m for m in {sorted(HEAVY)!r} if m in sys.modules]; print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_embedded_data_and_notice():
    assert (PKG / "data" / "helsinki.osm.pbf").stat().st_size > 500_000
    notice = (PKG.parent / "NOTICE").read_text()
    assert "© OpenStreetMap contributors" in notice and "ODbL" in notice
    assert (PKG / "py.typed").exists()


def test_no_formatter_escapes():
    """DESIGN.md: ``ruff format`` is run as it is, never dodged with the formatter's skip or
    off comments (checked over the package, tests, benchmarks, examples, scripts).
    """
    root = PKG.parent
    marker = "# fmt: " + "(skip|off)"  # split so this file does not match itself
    pattern = re.compile(marker)
    found = [
        f"{p.relative_to(root)}:{i}"
        for folder in ("urban_gym", "tests", "benchmarks", "examples", "scripts")
        for p in sorted((root / folder).rglob("*.py"))
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if pattern.search(line)
    ]
    assert not found, found


# --------------------------------------------------------------------------- the families
#: What names a family: the built-in families' names and the words they are written with.
FAMILY_WORDS = re.compile(r"posegraph|streetgraph|citywalk", re.IGNORECASE)
#: The package's face: ``import urban_gym`` registers the families (urban_gym.families).
FACE = PKG / "__init__.py"


def core_files() -> list[Path]:
    """Every file of the package outside ``urban_gym/families/`` (sources, data, the play
    page), caches left out."""
    return [
        p
        for p in sorted(PKG.rglob("*"))
        if p.is_file()
        and "__pycache__" not in p.parts
        and (PKG / "families") not in p.parents
        and p.suffix not in (".pbf", ".ttf", ".pyc")
    ]


def test_the_core_names_no_family():
    """Nothing outside ``urban_gym/families/`` names a family -- code, docstrings,
    comments, data files, the play page: the core asks the family registry."""
    assert [n.name for n in (PKG / "families").iterdir() if (n / "__init__.py").exists()]
    found = [
        f"{p.relative_to(PKG.parent)}:{i}: {line.strip()}"
        for p in core_files()
        for i, line in enumerate(p.read_text(encoding="utf-8", errors="ignore").splitlines(), 1)
        if FAMILY_WORDS.search(line)
    ]
    assert not found, "the core names a family:\n" + "\n".join(found)


def test_the_core_imports_no_family():
    """No core module imports ``urban_gym.families`` (its face registers them: the one
    exception), and no family imports another family."""
    bad = []
    for path in PKG.rglob("*.py"):
        rel = path.relative_to(PKG.parent).with_suffix("")
        parts = rel.parts
        in_family = parts[1] == "families" and len(parts) > 2
        for mod in imports_of(path):
            m = mod.split(".")
            if m[:2] != ["urban_gym", "families"]:
                continue
            if not in_family and path != FACE:
                bad.append(f"{'.'.join(parts)} (core) imports {mod}")
            elif in_family and len(m) > 2 and parts[2] != "__init__" and m[2] != parts[2]:
                bad.append(f"{'.'.join(parts)} imports another family: {mod}")
    assert not bad, "\n".join(bad)


def test_the_family_checks_see_what_they_look_for(tmp_path):
    """The two checks above on made-up lines: a family's name in a docstring or a comment
    is found in any case; an import of ``urban_gym.families`` is found at any depth."""
    assert FAMILY_WORDS.search('"""Walk as in CityWalk."""') and FAMILY_WORDS.search(
        "# streetGraph"
    )
    assert not FAMILY_WORDS.search("a pose graph of a street network")
    f = tmp_path / "m.py"
    f.write_text("def f():\n    from urban_gym.families.citywalk import env\n")
    assert imports_of(f, tmp_path) == ["urban_gym.families.citywalk"]


def test_import_registers_the_families_without_loading_them():
    """``import urban_gym`` registers every family and its ids, and loads no family's
    tasks, env or world (they load with the first env)."""
    code = (
        "import sys, urban_gym, gymnasium as gym;"
        "from urban_gym.tasks.families import FAMILIES;"
        "heavy = [m for m in sys.modules if m.startswith('urban_gym.families.')"
        " and any(p in m.split('.') for p in ('tasks', 'env', 'world', 'render'))];"
        "print(len(FAMILIES), 'UrbanGym/CityWalk-v0' in gym.registry, heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split(" ", 2) == ["3", "True", "[]\n"], out.stdout
