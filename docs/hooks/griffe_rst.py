"""Griffe extension: the reStructuredText in the package's docstrings, rendered as Markdown.

The docstrings are Google style with a few reStructuredText habits that Markdown shows
raw: cross-reference roles (``:class:`~urban_gym.world.City```, ``:func:`load_city```),
simple tables (columns drawn with ``=====  =====`` borders) and ``::`` before a literal
block. mkdocstrings loads the package with this extension (``extensions`` in
``mkdocs.yml``), which rewrites each docstring's text before it is rendered:

* a role becomes an optional cross-reference in code font: a link where the target is on
  the site, plain code where it is not (an unresolved optional reference is no warning);
  a name is resolved in the scope of the object that holds the docstring, and ``~``
  shows only its last component, as in Sphinx;
* a simple table becomes a Markdown table (continuation lines joined to their row);
* ``text::`` before an indented block becomes ``text:``.

The Python sources stay as they are.
"""

from __future__ import annotations

import html
import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(?:class|mod|func|meth|attr|data|exc|obj|const):`(~?)([^`<>]+?)`")
BORDER = re.compile(r"^=+(?: +=+)+ *$")
LITERAL = re.compile(r"(\S)::\n(\n+ {4})")


def _qualify(obj: griffe.Object, name: str) -> str:
    """The full path of ``name`` seen from ``obj``'s scope, or ``name`` when unknown."""
    head, _, rest = name.partition(".")
    try:
        path = obj.resolve(head)
    except Exception:  # any failure leaves the name as written
        return name
    return f"{path}.{rest}" if rest else path


def convert_roles(text: str, obj: griffe.Object) -> str:
    """Sphinx roles as optional autorefs in code font."""

    def replace(m: re.Match[str]) -> str:
        name = m.group(2).strip().removesuffix("()")
        title = name.rsplit(".", 1)[-1] if m.group(1) else name
        identifier = html.escape(_qualify(obj, name), quote=True)
        return f'<autoref identifier="{identifier}" optional><code>{html.escape(title)}</code></autoref>'

    return ROLE.sub(replace, text)


def _cells(line: str, starts: list[int]) -> list[str]:
    bounds = [*starts[1:], None]
    return [line[a:b].strip().replace("|", "\\|") for a, b in zip(starts, bounds)]


def _table(lines: list[str], borders: list[int]) -> list[str]:
    """A Markdown table from the lines of a simple table and the indices of its borders."""
    starts = [m.start() for m in re.finditer(r"=+", lines[borders[0]])]
    header = lines[borders[0] + 1 : borders[1]] if len(borders) == 3 else []
    rows: list[list[str]] = []
    for line in lines[borders[-2] + 1 : borders[-1]]:
        cells = _cells(line, starts)
        if rows and not cells[0]:
            rows[-1] = [f"{a} {b}".strip() for a, b in zip(rows[-1], cells)]
        else:
            rows.append(cells)
    head = _cells(header[0], starts) if header else [""] * len(starts)
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(starts)]
    out += ["| " + " | ".join(row) + " |" for row in rows]
    return ["", *out, ""]


def convert_tables(text: str) -> str:
    """Simple tables (at the docstring's margin) as Markdown tables."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        if not BORDER.match(lines[i]):
            out.append(lines[i])
            i += 1
            continue
        borders, j = [i], i + 1
        while j < len(lines) and lines[j].strip() and len(borders) < 3:
            if BORDER.match(lines[j]):
                borders.append(j)
                if j + 1 >= len(lines) or not lines[j + 1].strip():
                    break
            j += 1
        if len(borders) < 2:
            out.append(lines[i])
            i += 1
            continue
        out += _table(lines, borders)
        i = borders[-1] + 1
    return "\n".join(out)


def convert(text: str, obj: griffe.Object) -> str:
    """The docstring ``text`` of ``obj`` with its reStructuredText turned into Markdown."""
    return LITERAL.sub(r"\1:\n\2", convert_tables(convert_roles(text, obj)))


def _walk(obj: griffe.Object) -> Any:
    yield obj
    for member in obj.members.values():
        if not member.is_alias:
            yield from _walk(member)


class RstToMarkdown(griffe.Extension):
    """Rewrite every docstring of a loaded package (see the module docstring)."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        """Convert the docstrings of ``pkg`` and of everything defined in it."""
        for obj in _walk(pkg):
            if obj.docstring is not None:
                obj.docstring.value = convert(obj.docstring.value, obj)
