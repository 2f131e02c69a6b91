"""Touchdown-format street graphs: ``nodes.txt`` and ``links.txt``.

``nodes.txt`` lines are ``panoid,pano_yaw_angle,lat,lng`` (degrees); ``links.txt`` lines
``start_panoid,heading,end_panoid`` (heading in degrees; either file may be xz-compressed,
``nodes.txt.xz``), with an optional folder of
equirectangular images ``<panoid>.jpg|jpeg|png``. :func:`read_touchdown` reads them (every
bad line named by file and line number, or skipped and counted in a :class:`LoadReport`);
:func:`write_touchdown` writes them.
"""

from __future__ import annotations

import lzma
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from urban_gym.families.streetgraph.world.elements import StreetGraphError
from urban_gym.families.streetgraph.world.graph import StreetGraph
from urban_gym.world.geo import GeoFrame


@dataclass
class LoadReport:
    """What a Touchdown loader read: line counts, skipped bad lines and their messages
    (first 20), duplicate links merged.
    """

    nodes: int = 0
    links: int = 0
    nodes_skipped: int = 0
    links_skipped: int = 0
    duplicate_links: int = 0
    errors: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The counts as a plain dict."""
        return {
            "nodes": self.nodes,
            "links": self.links,
            "nodes_skipped": self.nodes_skipped,
            "links_skipped": self.links_skipped,
            "duplicate_links": self.duplicate_links,
            "errors": self.errors[:20],
        }


def read_text_lines(path: Path) -> list[str]:
    r"""The lines of a UTF-8 text file (a byte-order mark is dropped), split at ``\n``
    only, so that line numbers are those an editor shows. A ``.xz`` file is read
    decompressed.
    """
    try:
        if path.suffix == ".xz":
            text = lzma.decompress(path.read_bytes()).decode("utf-8-sig")
        else:
            text = path.read_text(encoding="utf-8-sig")
        return [line.removesuffix("\r") for line in text.split("\n")]
    except FileNotFoundError:
        raise StreetGraphError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError, lzma.LZMAError) as exc:
        raise StreetGraphError(f"{path}: cannot read ({exc})") from None


def read_touchdown(
    path: str | os.PathLike,
    links: str | os.PathLike | None = None,
    images: str | os.PathLike | None = None,
    skip_bad_lines: bool = False,
    name: str | None = None,
) -> StreetGraph:
    """Read a Touchdown-format graph.

    Args:
        path: a directory holding ``nodes.txt`` and ``links.txt`` (and optionally an
            ``images/`` folder), or the ``nodes.txt`` file itself.
        links: the ``links.txt`` file when ``path`` is a nodes file.
        images: folder of equirectangular images ``<panoid>.jpg|jpeg|png``; default the
            directory's ``images/`` when it exists.
        skip_bad_lines: skip malformed lines (counted in ``meta["load"]``) instead of
            raising :class:`StreetGraphError` with file, line number and what is wrong.
        name: graph name (default: the directory name).

    ``nodes.txt`` lines are ``panoid,pano_yaw_angle,lat,lng`` (degrees); ``links.txt``
    lines ``start_panoid,heading,end_panoid`` (heading in degrees). Blank lines are
    ignored. A repeated link keeps its first heading and is counted as a duplicate.
    """
    nodes_path, links_path, img, gname = _touchdown_paths(Path(path), links, images, name)
    lines = _LineReader(skip_bad_lines)
    rep = lines.report
    ids, yaw, lat, lng = lines.nodes(nodes_path)
    if not ids:
        raise StreetGraphError(f"{nodes_path}: no valid nodes")
    rep.nodes = len(ids)
    index = {pid: i for i, pid in enumerate(ids)}
    src, dst, hd = lines.links(links_path, nodes_path, index)
    rep.links = len(src)
    lat_a, lng_a = np.array(lat), np.array(lng)
    frame = GeoFrame(round(float(np.mean(lat_a)), 6), round(float(np.mean(lng_a)), 6))
    x, y = frame.to_xy(lat_a, lng_a)
    xy = np.column_stack([np.atleast_1d(x), np.atleast_1d(y)])
    meta = {
        "source": "touchdown",
        "nodes_file": str(nodes_path),
        "links_file": str(links_path),
        "load": rep.to_dict(),
    }
    return StreetGraph(
        ids,
        xy,
        np.array(yaw),
        np.array(src, dtype=np.int64),
        np.array(dst, dtype=np.int64),
        np.array(hd),
        frame,
        latlon=np.column_stack([lat_a, lng_a]),
        name=gname,
        image_dir=str(img) if img is not None else None,
        meta=meta,
    )


def _touchdown_paths(
    p: Path,
    links: str | os.PathLike | None,
    images: str | os.PathLike | None,
    name: str | None,
) -> tuple[Path, Path, Path | None, str]:
    """``(nodes file, links file, image folder or None, graph name)`` of
    :func:`read_touchdown`'s arguments.
    """
    if p.is_dir():
        nodes_path, links_path = _plain_or_xz(p / "nodes.txt"), _plain_or_xz(p / "links.txt")
        img = (
            Path(images)
            if images is not None
            else (p / "images" if (p / "images").is_dir() else None)
        )
        gname = name or p.name
    else:
        if links is None:
            raise StreetGraphError(f"{p}: not a directory; pass links= for the links file")
        nodes_path, links_path = p, Path(links)
        img = Path(images) if images is not None else None
        gname = name or p.parent.name
    if img is not None and not img.is_dir():
        raise StreetGraphError(f"image folder {img} does not exist")
    return nodes_path, links_path, img, gname


def _plain_or_xz(path: Path) -> Path:
    """``path``, or ``path.xz`` when only the compressed file exists."""
    xz = path.with_name(path.name + ".xz")
    return xz if not path.exists() and xz.is_file() else path


class _LineReader:
    """Reads the lines of ``nodes.txt`` and ``links.txt``: a bad line raises
    :class:`StreetGraphError` naming file, line and value, or, with ``skip_bad_lines``,
    is counted and its message kept in :attr:`report`.
    """

    def __init__(self, skip_bad_lines: bool) -> None:
        self.skip_bad_lines = skip_bad_lines
        self.report = LoadReport()

    def bad(self, file: Path, no: int, msg: str) -> None:
        """Raise the error of a bad line, or count it when bad lines are skipped."""
        text = f"{file}, line {no}: {msg}"
        if not self.skip_bad_lines:
            raise StreetGraphError(text)
        self.report.errors.append(text)

    def nodes(self, nodes_path: Path) -> tuple[list[str], list[float], list[float], list[float]]:
        """Panorama ids, yaw angles, latitudes and longitudes (degrees) of the good lines."""
        bad, rep = self.bad, self.report
        ids: list[str] = []
        yaw: list[float] = []
        lat: list[float] = []
        lng: list[float] = []
        first_line: dict[str, int] = {}
        for no, line in enumerate(read_text_lines(nodes_path), start=1):
            if not line.strip():
                continue
            parts = [s.strip() for s in line.split(",")]
            if len(parts) not in (4, 5):  # a fifth column (VELMA's files) is not used
                bad(
                    nodes_path,
                    no,
                    "expected 4 fields panoid,pano_yaw_angle,lat,lng (and an optional fifth), "
                    f"got {len(parts)} in {line!r}",
                )
                rep.nodes_skipped += 1
                continue
            pid = parts[0]
            if no == 1 and parts[2].casefold() in ("lat", "latitude"):
                continue  # header line
            if not pid:
                bad(nodes_path, no, "empty panoid")
                rep.nodes_skipped += 1
                continue
            try:
                vals = [float(parts[1]), float(parts[2]), float(parts[3])]
            except ValueError:
                which = [
                    k
                    for k, s in zip(("pano_yaw_angle", "lat", "lng"), parts[1:])
                    if not _is_float(s)
                ]
                bad(
                    nodes_path,
                    no,
                    f"{which[0]}={parts[1 + ('pano_yaw_angle', 'lat', 'lng').index(which[0])]!r} is not a number",
                )
                rep.nodes_skipped += 1
                continue
            if (
                not all(math.isfinite(v) for v in vals)
                or not (-90.0 <= vals[1] <= 90.0)
                or not (-180.0 <= vals[2] <= 180.0)
            ):
                bad(
                    nodes_path,
                    no,
                    f"lat={parts[2]!r}, lng={parts[3]!r}, pano_yaw_angle={parts[1]!r} out of range",
                )
                rep.nodes_skipped += 1
                continue
            if pid in first_line:
                bad(nodes_path, no, f"duplicate panoid {pid!r} (first on line {first_line[pid]})")
                rep.nodes_skipped += 1
                continue
            first_line[pid] = no
            ids.append(pid)
            yaw.append(vals[0])
            lat.append(vals[1])
            lng.append(vals[2])
        return ids, yaw, lat, lng

    def links(
        self, links_path: Path, nodes_path: Path, index: dict[str, int]
    ) -> tuple[list[int], list[int], list[float]]:
        """Sources, targets and headings (degrees) of the good links between known nodes
        (a repeated link keeps its first heading and counts as a duplicate).
        """
        bad, rep = self.bad, self.report
        src: list[int] = []
        dst: list[int] = []
        hd: list[float] = []
        seen: set[tuple[int, int]] = set()
        for no, line in enumerate(read_text_lines(links_path), start=1):
            if not line.strip():
                continue
            parts = [s.strip() for s in line.split(",")]
            if len(parts) != 3:
                bad(
                    links_path,
                    no,
                    f"expected 3 fields start_panoid,heading,end_panoid, got {len(parts)} in {line!r}",
                )
                rep.links_skipped += 1
                continue
            a, h, b = parts
            if no == 1 and h.casefold() == "heading":
                continue
            ia, ib = index.get(a), index.get(b)
            if ia is None or ib is None:
                which = "start_panoid" if ia is None else "end_panoid"
                bad(
                    links_path,
                    no,
                    f"unknown {which} {(a if ia is None else b)!r} (not in {nodes_path.name})",
                )
                rep.links_skipped += 1
                continue
            try:
                hv = float(h)
            except ValueError:
                hv = math.nan
            if not math.isfinite(hv):
                bad(links_path, no, f"heading={h!r} is not a number")
                rep.links_skipped += 1
                continue
            if ia == ib:
                bad(links_path, no, f"link from {a!r} to itself")
                rep.links_skipped += 1
                continue
            if (ia, ib) in seen:
                rep.duplicate_links += 1
                continue
            seen.add((ia, ib))
            src.append(ia)
            dst.append(ib)
            hd.append(hv)
        return src, dst, hd


def _is_float(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


def write_touchdown(graph: StreetGraph, directory: str | os.PathLike) -> Path:
    """Write ``nodes.txt`` and ``links.txt`` in Touchdown format into ``directory``."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    with open(d / "nodes.txt", "w", encoding="utf-8") as f:
        for pid, yaw, (la, lo) in zip(
            graph.ids, graph.pano_heading.tolist(), graph.latlon.tolist()
        ):
            f.write(f"{pid},{yaw:.6g},{la:.8f},{lo:.8f}\n")
    ids = graph.ids
    with open(d / "links.txt", "w", encoding="utf-8") as f:
        for a, h, b in zip(graph.src.tolist(), graph.heading.tolist(), graph.dst.tolist()):
            f.write(f"{ids[a]},{h:.6g},{ids[b]}\n")
    return d
