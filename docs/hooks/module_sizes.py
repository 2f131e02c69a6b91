"""MkDocs hook: fill ``module-sizes.md`` with the lines per module of ``urban_gym``.

The page holds the marker ``<!-- module-sizes -->``; at build time it is replaced by a
table of packages (modules, lines) and one table per package of its modules, largest
first. Lines are counted as ``wc -l`` counts them. ``mkdocs serve`` also watches the
package, so the page follows edits to the code.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

MARKER = "<!-- module-sizes -->"
PAGE = "module-sizes.md"
PACKAGE = "urban_gym"


def _package_dir(config: Any) -> Path:
    return Path(config["config_file_path"]).resolve().parent / PACKAGE


def module_sizes(package_dir: Path) -> dict[str, list[tuple[str, int]]]:
    """Lines per module, keyed by dotted package name, each list largest first."""
    groups: dict[str, list[tuple[str, int]]] = defaultdict(list)
    root = package_dir.parent
    for path in sorted(package_dir.rglob("*.py")):
        rel = path.relative_to(root).with_suffix("")
        package = ".".join(rel.parts[:-1])
        with path.open("rb") as f:
            lines = sum(1 for _ in f)
        groups[package].append((rel.parts[-1] + ".py", lines))
    for modules in groups.values():
        modules.sort(key=lambda m: (-m[1], m[0]))
    return dict(groups)


def render_tables(groups: dict[str, list[tuple[str, int]]]) -> str:
    """Markdown: a summary table of packages, then one table per package."""
    totals = {pkg: sum(n for _, n in mods) for pkg, mods in groups.items()}
    order = sorted(groups, key=lambda p: (-totals[p], p))
    n_modules = sum(len(m) for m in groups.values())
    out = [
        f"{n_modules} modules, {sum(totals.values()):,} lines in {len(groups)} packages.",
        "",
        "## Packages",
        "",
        "| package | modules | lines | largest module |",
        "|---|---:|---:|---|",
    ]
    for pkg in order:
        name, lines = groups[pkg][0]
        out.append(f"| `{pkg}` | {len(groups[pkg])} | {totals[pkg]:,} | `{name}` ({lines:,}) |")
    for pkg in order:
        out += ["", f"## `{pkg}`", "", "| module | lines |", "|---|---:|"]
        out += [f"| `{name}` | {lines:,} |" for name, lines in groups[pkg]]
    return "\n".join(out) + "\n"


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Replace the marker of the module-sizes page with the generated tables."""
    if page.file.src_uri != PAGE:
        return markdown
    if MARKER not in markdown:
        raise ValueError(f"{PAGE} lacks the marker {MARKER}")
    return markdown.replace(MARKER, render_tables(module_sizes(_package_dir(config))))


def on_serve(server: Any, config: Any, builder: Any) -> Any:
    """Rebuild on changes to the package's code under ``mkdocs serve``."""
    server.watch(str(_package_dir(config)))
    return server
