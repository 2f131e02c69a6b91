"""MkDocs hook: links from a page to repository files outside ``docs/`` resolve on the site.

The pages link to code as GitHub shows them, relative to the page (``../tests/toy_family.py``
from ``docs/extending.md``). Such a target is not a documentation file, so MkDocs would warn
and the site would have a dead link. This hook gives every such file a generated page,
``repository/<path>.md``, holding the file's text in a code block, and points the link
there; the Markdown sources stay as they are. Links inside fenced code are left alone.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

PREFIX = "repository"
LINK = re.compile(r"(\]\()([^)\s#]+)(#[^)\s]*)?(\))")
FENCE = re.compile(r"^\s*(```|~~~)")
LANGUAGES = {".py": "python", ".toml": "toml", ".yml": "yaml", ".yaml": "yaml", ".sh": "bash"}


def _outside_lines(markdown: str) -> list[tuple[bool, str]]:
    """The lines of ``markdown``, each marked True when it is outside fenced code."""
    out, fenced = [], False
    for line in markdown.splitlines(keepends=True):
        if FENCE.match(line):
            fenced = not fenced
            out.append((False, line))
        else:
            out.append((not fenced, line))
    return out


def _repo_target(target: str, src_uri: str, docs_dir: Path, root: Path) -> str | None:
    """The repository path a relative link points to, when it is a file outside docs/."""
    if "://" in target or target.startswith(("/", "mailto:")):
        return None
    path = (docs_dir / posixpath.dirname(src_uri) / target).resolve()
    if path.is_relative_to(docs_dir) or not path.is_relative_to(root) or not path.is_file():
        return None
    return path.relative_to(root).as_posix()


def _page_text(root: Path, rel: str) -> str:
    text = (root / rel).read_text(encoding="utf-8")
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    language = LANGUAGES.get(Path(rel).suffix, "text")
    return f"# `{rel}`\n\n{fence}{language}\n{text.rstrip()}\n{fence}\n"


def _links(config: Any, file: File) -> list[str]:
    docs_dir = Path(config["docs_dir"]).resolve()
    root = docs_dir.parent
    found = []
    for outside, line in _outside_lines(file.content_string):
        if outside:
            for m in LINK.finditer(line):
                rel = _repo_target(m.group(2), file.src_uri, docs_dir, root)
                if rel:
                    found.append(rel)
    return found


def on_files(files: Files, config: Any) -> Files:
    """Add a generated page for every repository file a page links to."""
    root = Path(config["docs_dir"]).resolve().parent
    wanted = {rel for f in files.documentation_pages() for rel in _links(config, f)}
    for rel in sorted(wanted):
        files.append(File.generated(config, f"{PREFIX}/{rel}.md", content=_page_text(root, rel)))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    """Point links to repository files at their generated pages."""
    docs_dir = Path(config["docs_dir"]).resolve()
    root = docs_dir.parent
    src_uri = page.file.src_uri

    def rewrite(m: re.Match[str]) -> str:
        rel = _repo_target(m.group(2), src_uri, docs_dir, root)
        if rel is None:
            return m.group(0)
        new = posixpath.relpath(f"{PREFIX}/{rel}.md", posixpath.dirname(src_uri) or ".")
        return f"{m.group(1)}{new}{m.group(3) or ''}{m.group(4)}"

    return "".join(
        LINK.sub(rewrite, line) if outside else line for outside, line in _outside_lines(markdown)
    )
