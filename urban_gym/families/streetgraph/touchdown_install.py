"""``urban-gym data touchdown``: install Touchdown's navigation routes.

Touchdown's ``data/{train,dev,test}.json`` (JSON lines, CC BY 4.0) are fetched from a
source -- by default the raw files of github.com/lil-lab/touchdown at the pinned commit
(:data:`~urban_gym.families.streetgraph.tasks.touchdown.DEFAULT_SOURCE`), or any URL or
local folder holding the three files -- checked, and written into
:func:`~urban_gym.families.streetgraph.tasks.touchdown.touchdown_data_dir` with a
``manifest.json`` recording where they came from.

Checks, per file: every line is a route in Touchdown's format
(:func:`~urban_gym.families.streetgraph.world.read_routes`: ``route_panoids``,
``navigation_text``, ``start_heading``), each route is counted as fitting the shipped
graph or not, and the file's git blob SHA-1 is compared with the one Touchdown's
repository records for it at the pinned commit (Touchdown publishes no SHA-256; the
manifest records the SHA-256 of what was installed). A file that differs is refused
unless ``allow_unverified`` (``--unverified``): then it is installed and marked
``"verified": false``. A file is written only once it passed, so an interrupted or
refused install leaves the earlier files as they were.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from urban_gym.errors import InputError, MissingFileError
from urban_gym.families.streetgraph.tasks.touchdown import (
    BLOB_SHA1,
    DEFAULT_SOURCE,
    SPLITS,
    TOUCHDOWN_COMMIT,
    check_split,
    touchdown_data_dir,
    touchdown_spec,
)
from urban_gym.families.streetgraph.world import (
    StreetGraphError,
    check_route,
    load_streetgraph,
    read_routes,
)

#: ``progress(file name, bytes so far, total bytes or None)``.
Progress = Callable[[str, int, int | None], None]
#: Bytes read per chunk while copying a file.
CHUNK = 1 << 16


@dataclass
class InstalledFile:
    """One installed split: its path, size (bytes), SHA-256 and git blob SHA-1, routes
    read, routes that are paths of the graph, and whether its git blob SHA-1 is the one
    Touchdown's repository records.
    """

    split: str
    path: Path
    bytes: int
    sha256: str
    git_blob_sha1: str
    routes: int
    routes_on_graph: int
    verified: bool

    def to_dict(self) -> dict[str, Any]:
        """The manifest entry of this file."""
        return {
            "file": self.path.name,
            "bytes": self.bytes,
            "sha256": self.sha256,
            "git_blob_sha1": self.git_blob_sha1,
            "routes": self.routes,
            "routes_on_graph": self.routes_on_graph,
            "verified": self.verified,
        }


@dataclass
class InstallReport:
    """What :func:`install_touchdown` installed, from where, into which folder."""

    source: str
    data_dir: Path
    files: list[InstalledFile] = field(default_factory=list)

    def format(self) -> str:
        """One line per file, and the folder."""
        lines = [f"Touchdown routes from {self.source} -> {self.data_dir}"]
        for f in self.files:
            mark = "verified" if f.verified else "UNVERIFIED (not Touchdown's published file)"
            lines.append(
                f"  {f.split}: {f.routes} routes ({f.routes_on_graph} on the graph), "
                f"{f.bytes / 1e6:.2f} MB, sha256 {f.sha256[:12]}..., {mark}"
            )
        return "\n".join(lines)


def git_blob_sha1(path: Path) -> str:
    r"""The git blob SHA-1 of a file: ``sha1(b"blob <size>\0" + content)``."""
    h = hashlib.sha1(f"blob {path.stat().st_size}\0".encode())
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _is_url(source: str) -> bool:
    return source.split(":", 1)[0].lower() in ("http", "https", "file")


def _fetch(
    source: str, name: str, out: IO[bytes], progress: Progress | None, timeout: float
) -> None:
    """Copy ``<source>/<name>`` (a URL or a folder) into ``out``, reporting progress;
    :class:`MissingFileError` when it cannot be read (offline, not found).
    """
    if not _is_url(source):
        p = Path(source).expanduser() / name
        if not p.is_file():
            raise MissingFileError(
                f"{p} does not exist: --source must be a folder holding Touchdown's "
                f"{', '.join(s + '.json' for s in SPLITS)} (or their URL)"
            )
        total = p.stat().st_size
        with open(p, "rb") as f:
            _copy(f, out, name, total, progress)
        return
    import urllib.error
    import urllib.request

    url = source.rstrip("/") + "/" + name
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 (http(s)/file)
            length = resp.headers.get("Content-Length")
            _copy(resp, out, name, int(length) if length and length.isdigit() else None, progress)
    except urllib.error.HTTPError as exc:
        raise MissingFileError(f"cannot download {url}: HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise MissingFileError(
            f"cannot download {url}: {reason}. This machine may be offline: fetch "
            f"{name} elsewhere (github.com/lil-lab/touchdown, data/ at commit "
            f"{TOUCHDOWN_COMMIT[:12]}) and run `urban-gym data touchdown --source DIR`"
        ) from None


def _copy(
    src: Any, out: IO[bytes], name: str, total: int | None, progress: Progress | None
) -> None:
    done = 0
    if progress is not None:
        progress(name, 0, total)
    while True:
        chunk = src.read(CHUNK)
        if not chunk:
            break
        out.write(chunk)
        done += len(chunk)
        if progress is not None:
            progress(name, done, total)


def _check_file(
    split: str, tmp: Path, allow_unverified: bool, graph: Any, where: str
) -> InstalledFile:
    """Check a fetched split (format, graph fit, git blob SHA-1); raise or describe it."""
    try:
        routes, _ = read_routes(tmp)
    except StreetGraphError as exc:
        msg = str(exc).replace(str(tmp), where)
        raise StreetGraphError(f"not Touchdown's route format: {msg}") from None
    if not routes:
        raise StreetGraphError(f"{where}: no routes (an empty file)")
    on_graph = 0
    for r in routes:
        try:
            check_route(graph, r)
            on_graph += 1
        except StreetGraphError:
            pass
    blob = git_blob_sha1(tmp)
    verified = blob == BLOB_SHA1[split]
    if not verified and not allow_unverified:
        raise InputError(
            f"{where}: git blob SHA-1 {blob} is not {BLOB_SHA1[split]}, the one of "
            f"Touchdown's data/{split}.json at commit {TOUCHDOWN_COMMIT[:12]}; pass "
            "--unverified to install this file anyway (marked unverified)"
        )
    sha = hashlib.sha256(tmp.read_bytes()).hexdigest()
    return InstalledFile(split, tmp, tmp.stat().st_size, sha, blob, len(routes), on_graph, verified)


def install_touchdown(
    source: str | os.PathLike = DEFAULT_SOURCE,
    data_dir: str | os.PathLike | None = None,
    splits: Sequence[str] = SPLITS,
    allow_unverified: bool = False,
    progress: Progress | None = None,
    timeout: float = 60.0,
) -> InstallReport:
    """Fetch, check and install Touchdown's route files (see the module docstring).

    Args:
        source: a URL (``http(s)://``, ``file://``) or a folder holding
            ``<split>.json``; default the pinned commit's raw files on GitHub.
        data_dir: where to install (default :func:`touchdown_data_dir`).
        splits: which of ``train``, ``dev``, ``test``.
        allow_unverified: install files whose git blob SHA-1 is not Touchdown's.
        progress: called as ``progress(file, bytes so far, total or None)``.
        timeout: seconds to wait for a server.

    Returns the :class:`InstallReport`; raises :class:`MissingFileError` when a file
    cannot be fetched, :class:`StreetGraphError` (an :class:`InputError`) when one is not
    in Touchdown's format, :class:`InputError` for a hash mismatch.
    """
    src = str(source)
    if not src.strip():
        raise InputError("source='' must be a URL or a folder")
    for s in splits:
        check_split(s)
    dest = Path(data_dir) if data_dir is not None else touchdown_data_dir()
    dest.mkdir(parents=True, exist_ok=True)
    graph = load_streetgraph(touchdown_spec())
    report = InstallReport(src, dest)
    manifest_path = dest / "manifest.json"
    manifest = _read_manifest(manifest_path)
    for split in splits:
        name = f"{split}.json"
        where = f"{src.rstrip('/')}/{name}"
        fd, tmp_name = tempfile.mkstemp(prefix=f".{split}.", suffix=".part", dir=dest)
        tmp = Path(tmp_name)
        try:
            with os.fdopen(fd, "wb") as out:
                _fetch(src, name, out, progress, timeout)
            info = _check_file(split, tmp, allow_unverified, graph, where)
            final = dest / name
            os.replace(tmp, final)
        finally:
            tmp.unlink(missing_ok=True)
        info.path = final
        report.files.append(info)
        manifest["files"][split] = {**info.to_dict(), "source": where}
        _write_manifest(manifest_path, manifest)
    return report


def _read_manifest(path: Path) -> dict[str, Any]:
    base: dict[str, Any] = {
        "dataset": "touchdown",
        "repository": "https://github.com/lil-lab/touchdown",
        "commit": TOUCHDOWN_COMMIT,
        "license": "CC BY 4.0 (Chen et al. 2019)",
        "files": {},
    }
    try:
        old = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return base
    if isinstance(old, dict) and isinstance(old.get("files"), dict):
        base["files"] = {k: v for k, v in old["files"].items() if k in SPLITS}
    return base


def _write_manifest(path: Path, manifest: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".part")
    tmp.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def print_progress(stream: IO[str] | None = None) -> Progress:
    """A progress callback printing ``name: done / total MB (pct)`` to ``stream``
    (stderr): rewritten in place on a terminal, else one line per 10%.
    """
    out = stream if stream is not None else sys.stderr
    tty = bool(getattr(out, "isatty", lambda: False)())
    last: dict[str, int] = {}

    def report(name: str, done: int, total: int | None) -> None:
        if total:
            step = min(10, done * 10 // total)
            text = f"{name}: {done / 1e6:.2f} / {total / 1e6:.2f} MB ({100 * done // total}%)"
        else:
            step = done >> 20  # one line per MiB when the size is unknown
            text = f"{name}: {done / 1e6:.2f} MB"
        if tty:
            out.write("\r" + text + ("\n" if total and done >= total else ""))
            out.flush()
        elif last.get(name) != step:
            last[name] = step
            out.write(text + "\n")

    return report
