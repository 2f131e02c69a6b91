"""Real captures: a folder of equirectangular images or a 360° video, with a pose CSV.

Pose CSV columns (header row required, order free):

=================  ===========================================================
``file``           image file name relative to the folder (folder captures)
``frame``/``time`` video frame index, or time in seconds (video captures)
``x``, ``y``       metres in the city frame -- or ``lat``, ``lon`` in degrees
``heading``        travel heading, degrees clockwise from north (optional:
                   computed from the positions)
``pano_heading``   bearing of the panorama's centre column (optional: the
                   travel heading, i.e. a camera facing forward)
``trajectory``     trajectory id (optional: one trajectory); rows of one
                   trajectory are in travel order
=================  ===========================================================

:func:`read_pose_csv` reads one; :class:`ImageFolderFrames` and :class:`VideoFrames` are
the frame sources of the two kinds of capture, and :func:`open_capture` opens either as a
source plus the captured trajectories that junction detection joins
(:mod:`urban_gym.families.posegraph360.world.junctions`).

Units: metres, degrees clockwise from north (x east, y north).
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from urban_gym.caching import LRUCache
from urban_gym.families.posegraph360.world.elements import PoseGraphError
from urban_gym.families.posegraph360.world.frames import FrameSource
from urban_gym.families.posegraph360.world.junctions import CapturedTrajectory
from urban_gym.world.geo import GeoFrame, bearing


@dataclass
class PoseRow:
    """One row of a pose CSV, in city metres."""

    label: str
    index: int
    x: float
    y: float
    heading: float | None
    pano_heading: float | None
    file: str | None = None
    frame: int | None = None
    time: float | None = None


def read_pose_csv(
    path: str | Path, kind: str, geo: GeoFrame | None = None
) -> dict[str, list[PoseRow]]:
    """Read a pose CSV (see the module docstring) into rows grouped by trajectory label,
    in file order. ``kind`` is ``"folder"`` (needs ``file``) or ``"video"`` (needs
    ``frame`` or ``time``). ``lat``/``lon`` (degrees, within -90..90 and -180..180) are
    converted with ``geo`` (default: a frame at the first row).

    The file is UTF-8; a byte-order mark (as spreadsheet programs write) is accepted.
    A bad value raises :class:`PoseGraphError` naming the file, the line, the data row
    (1 = the first row after the header) and the column.
    """
    p = Path(path)
    if kind not in ("folder", "video"):
        raise PoseGraphError(f"pose CSV kind={kind!r} must be 'folder' or 'video'")
    fields, raw = _read_csv_rows(p)
    has_xy, has_ll = _check_columns(p, kind, fields, raw)
    cells = _PoseCells(p, kind, has_xy, geo)
    if has_ll and not has_xy and geo is None:
        line0, r0 = raw[0]
        cells.geo = GeoFrame(cells.degrees(r0, "lat", line0, 1), cells.degrees(r0, "lon", line0, 1))
    groups: dict[str, list[PoseRow]] = {}
    for row_no, (line, r) in enumerate(raw, start=1):
        label, row = cells.row(r, line, row_no, groups)
        groups[label].append(row)
    for rows in groups.values():
        _fill_headings(rows)
    return groups


def _read_csv_rows(p: Path) -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    """The case-folded header and ``(line number, {column: cell})`` of every data row."""
    try:
        with p.open(newline="", encoding="utf-8-sig") as f:
            reader = csv.DictReader(f)
            fields = [h.strip().casefold() for h in (reader.fieldnames or [])]
            raw: list[tuple[int, dict[str, str]]] = []
            for r in reader:
                row = {k.strip().casefold(): (v or "").strip() for k, v in r.items() if k}
                raw.append((reader.line_num, row))
    except FileNotFoundError as exc:
        raise PoseGraphError(f"{p}: no such pose CSV") from exc
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise PoseGraphError(f"{p}: cannot read pose CSV ({exc})") from exc
    return fields, raw


def _check_columns(
    p: Path, kind: str, fields: list[str], raw: list[tuple[int, dict[str, str]]]
) -> tuple[bool, bool]:
    """``(has x/y, has lat/lon)``; :class:`PoseGraphError` listing the missing columns,
    or when there is no data row.
    """
    missing: list[str] = []
    has_xy = "x" in fields and "y" in fields
    has_ll = "lat" in fields and "lon" in fields
    if not (has_xy or has_ll):
        missing.append("x,y or lat,lon")
    if kind == "folder" and "file" not in fields:
        missing.append("file")
    if kind == "video" and "frame" not in fields and "time" not in fields:
        missing.append("frame or time")
    if missing:
        raise PoseGraphError(
            f"{p}: pose CSV is missing column(s) {', '.join(missing)}; it has {fields}"
        )
    if not raw:
        raise PoseGraphError(f"{p}: pose CSV has no rows")
    return has_xy, has_ll


class _PoseCells:
    """Reads the cells of one pose CSV's rows; a bad cell raises :class:`PoseGraphError`
    naming the file, the line, the data row and the column.
    """

    def __init__(self, path: Path, kind: str, has_xy: bool, geo: GeoFrame | None) -> None:
        self.path = path
        self.kind = kind
        self.has_xy = has_xy
        self.geo = geo

    def fail(self, line: int, row: int, k: str, msg: str) -> PoseGraphError:
        return PoseGraphError(f"{self.path}, line {line}: {msg} (row {row}, column {k!r})")

    def num(self, r: dict, k: str, line: int, row: int) -> float | None:
        """Cell ``k`` as a finite number, None when empty."""
        v = r.get(k, "")
        if v == "":
            return None
        try:
            out = float(v)
        except ValueError:
            raise self.fail(line, row, k, f"{k}={v!r} is not a number") from None
        if not math.isfinite(out):
            raise self.fail(line, row, k, f"{k}={v!r} is not finite")
        return out

    def degrees(self, r: dict, k: str, line: int, row: int) -> float:
        """Cell ``lat`` (within +-90) or ``lon`` (within +-180), degrees."""
        v = self.num(r, k, line, row)
        if v is None:
            raise self.fail(line, row, k, f"{k} is empty")
        lim = 90.0 if k == "lat" else 180.0
        if not -lim <= v <= lim:
            raise self.fail(
                line, row, k, f"{k}={r[k]!r} is out of range (-{lim:g}..{lim:g} degrees)"
            )
        return v

    def row(
        self, r: dict, line: int, row_no: int, groups: dict[str, list[PoseRow]]
    ) -> tuple[str, PoseRow]:
        """The trajectory label and the :class:`PoseRow` of data row ``row_no`` (its index
        is the number of rows ``groups`` already holds for the label).
        """
        if self.has_xy:
            x, y = self.num(r, "x", line, row_no), self.num(r, "y", line, row_no)
            if x is None or y is None:
                raise self.fail(line, row_no, "x" if x is None else "y", "x/y is empty")
        else:
            lat, lon = self.degrees(r, "lat", line, row_no), self.degrees(r, "lon", line, row_no)
            x, y = self.geo.to_xy(lat, lon)  # type: ignore[union-attr]
        label = r.get("trajectory", "") or "0"
        g = groups.setdefault(label, [])
        heading = self.num(r, "heading", line, row_no)
        pano_heading = self.num(r, "pano_heading", line, row_no)
        row = PoseRow(label, len(g), float(x), float(y), heading, pano_heading)
        if self.kind == "folder":
            if not r.get("file"):
                raise self.fail(line, row_no, "file", "file is empty")
            row.file = r["file"]
        else:
            self._video_index(row, r, line, row_no)
        return label, row

    def _video_index(self, row: PoseRow, r: dict, line: int, row_no: int) -> None:
        """Set ``row.frame`` and ``row.time`` from the ``frame``/``time`` cells."""
        fr, t = self.num(r, "frame", line, row_no), self.num(r, "time", line, row_no)
        if fr is None and t is None:
            raise self.fail(line, row_no, "frame", "neither frame nor time is given")
        if fr is not None:
            if fr != int(fr) or fr < 0:
                raise self.fail(line, row_no, "frame", f"frame={r['frame']!r} is not a frame index")
            row.frame = int(fr)
        if t is not None and t < 0:
            raise self.fail(line, row_no, "time", f"time={r['time']!r} is negative")
        row.time = t


def _fill_headings(rows: list[PoseRow]) -> None:
    """Travel headings from neighbouring positions where the CSV gives none."""
    n = len(rows)
    for i, r in enumerate(rows):
        if r.heading is None:
            a, b = rows[max(0, i - 1)], rows[min(n - 1, i + 1)]
            if (a.x, a.y) == (b.x, b.y):
                r.heading = 0.0
            else:
                r.heading = bearing(b.x - a.x, b.y - a.y)
        if r.pano_heading is None:
            r.pano_heading = r.heading


class ImageFolderFrames(FrameSource):
    """Equirectangular images in a folder, indexed by a pose CSV.

    Every file named in the CSV must exist (checked on construction); an image that is
    not a 2:1 equirectangular picture raises :class:`PoseGraphError` when read. Decoded
    frames are cached in an LRU of ``cache_mb`` megabytes.
    """

    def __init__(
        self,
        folder: str | Path,
        poses: str | Path | None = None,
        geo: GeoFrame | None = None,
        cache_mb: float = 256.0,
    ) -> None:
        self.folder = Path(folder)
        if not self.folder.is_dir():
            raise PoseGraphError(f"{self.folder}: no such capture folder")
        self.poses = Path(poses) if poses is not None else self.folder / "poses.csv"
        self.rows = read_pose_csv(self.poses, "folder", geo)
        self._by_key: dict[tuple[str, int], PoseRow] = {}
        absent = []
        for label, rows in self.rows.items():
            for r in rows:
                self._by_key[(label, r.index)] = r
                if not (self.folder / str(r.file)).is_file():
                    absent.append(str(r.file))
        if absent:
            raise PoseGraphError(
                f"{self.poses}: {len(absent)} frame file(s) do not exist in {self.folder}, "
                f"e.g. {absent[:3]}"
            )
        self.cache: LRUCache[Any, np.ndarray] = LRUCache(int(cache_mb * 1024 * 1024))

    def panorama(self, key: tuple[str, int], x: float, y: float) -> tuple[np.ndarray, float]:
        """Frame ``key``'s image from the folder (cached) and its ``pano_heading`` (degrees)."""
        row = self._row(key)
        img = self.cache.get(key)
        if img is None:
            import cv2

            path = self.folder / str(row.file)
            bgr = cv2.imread(str(path), cv2.IMREAD_COLOR)
            if bgr is None:
                raise PoseGraphError(f"{path}: cannot read the image")
            img = _check_equirect(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB), str(path))
            self.cache.put(key, img, img.nbytes)
        return img, float(row.pano_heading or 0.0)

    def _row(self, key: tuple[str, int]) -> PoseRow:
        try:
            return self._by_key[(str(key[0]), int(key[1]))]
        except KeyError:
            raise PoseGraphError(f"frame {key!r} is not in {self.poses}") from None


class VideoFrames(FrameSource):
    """A 360° equirectangular video read with OpenCV, indexed by a pose CSV whose rows
    give a ``frame`` index or a ``time`` in seconds (``frame = round(time * fps)``).

    The video must open and every referenced frame must exist (checked on construction).
    Consecutive frames are read sequentially; others by seeking. Decoded frames are
    cached in an LRU of ``cache_mb`` megabytes.
    """

    def __init__(
        self,
        video: str | Path,
        poses: str | Path | None = None,
        geo: GeoFrame | None = None,
        cache_mb: float = 256.0,
    ) -> None:
        import cv2

        self.video = Path(video)
        if not self.video.is_file():
            raise PoseGraphError(f"{self.video}: no such video file")
        self.poses = Path(poses) if poses is not None else self.video.with_suffix(".csv")
        cap = cv2.VideoCapture(str(self.video))
        if not cap.isOpened():
            raise PoseGraphError(f"{self.video}: OpenCV cannot open the video")
        self.fps = float(cap.get(cv2.CAP_PROP_FPS)) or 0.0
        self.n_video_frames = int(cap.get(cv2.CAP_PROP_FRAME_COUNT))
        cap.release()
        self.rows = read_pose_csv(self.poses, "video", geo)
        self._by_key: dict[tuple[str, int], PoseRow] = {}
        bad = []
        for label, rows in self.rows.items():
            for r in rows:
                if r.frame is None:
                    if self.fps <= 0:
                        raise PoseGraphError(
                            f"{self.video}: the video has no frame rate; give 'frame' columns"
                        )
                    r.frame = int(round(float(r.time or 0.0) * self.fps))
                if not (0 <= r.frame < self.n_video_frames):
                    bad.append(r.frame)
                self._by_key[(label, r.index)] = r
        if bad:
            raise PoseGraphError(
                f"{self.poses}: frame(s) {sorted(set(bad))[:5]} do not exist in {self.video} "
                f"({self.n_video_frames} frames)"
            )
        self.cache: LRUCache[Any, np.ndarray] = LRUCache(int(cache_mb * 1024 * 1024))
        self._cap: Any = None
        self._next = -1

    def read_frame(self, index: int) -> np.ndarray:
        """Frame ``index`` of the video as RGB."""
        import cv2

        if self._cap is None:
            self._cap = cv2.VideoCapture(str(self.video))
            if not self._cap.isOpened():
                raise PoseGraphError(f"{self.video}: OpenCV cannot open the video")
            self._next = 0
        if index != self._next:
            self._cap.set(cv2.CAP_PROP_POS_FRAMES, index)
        ok, bgr = self._cap.read()
        if not ok or bgr is None:
            self._next = -1
            raise PoseGraphError(f"{self.video}: cannot read frame {index}")
        self._next = index + 1
        return _check_equirect(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB), f"{self.video}[{index}]")

    def panorama(self, key: tuple[str, int], x: float, y: float) -> tuple[np.ndarray, float]:
        """Frame ``key``'s image from the video (cached) and its ``pano_heading`` (degrees)."""
        try:
            row = self._by_key[(str(key[0]), int(key[1]))]
        except KeyError:
            raise PoseGraphError(f"frame {key!r} is not in {self.poses}") from None
        img = self.cache.get(row.frame)
        if img is None:
            img = self.read_frame(int(row.frame))  # type: ignore[arg-type]
            self.cache.put(row.frame, img, img.nbytes)
        return img, float(row.pano_heading or 0.0)

    def close(self) -> None:
        """Release the video (it reopens on demand)."""
        if self._cap is not None:
            self._cap.release()
        self._cap = None
        self._next = -1

    def __getstate__(self) -> dict[str, Any]:
        d = self.__dict__.copy()
        d["_cap"] = None
        d["_next"] = -1
        return d


def _check_equirect(img: np.ndarray, what: str) -> np.ndarray:
    h, w = img.shape[:2]
    if img.ndim != 3 or w != 2 * h:
        raise PoseGraphError(
            f"{what}: an equirectangular panorama must be twice as wide as high, got {w}x{h}"
        )
    return np.ascontiguousarray(img)


def open_capture(
    capture: str | Path,
    poses: str | Path | None = None,
    geo: GeoFrame | None = None,
    cache_mb: float = 256.0,
) -> tuple[FrameSource, list[CapturedTrajectory]]:
    """Open a capture folder (:class:`ImageFolderFrames`) or video (:class:`VideoFrames`):
    the frame source and one :class:`CapturedTrajectory` per trajectory of its pose CSV,
    frames keyed ``(label, row index)``.
    """
    p = Path(capture)
    if p.is_dir():
        src: FrameSource = ImageFolderFrames(p, poses, geo, cache_mb)
    elif p.is_file():
        src = VideoFrames(p, poses, geo, cache_mb)
    else:
        raise PoseGraphError(f"{p}: no such capture folder or video file")
    captured = [
        CapturedTrajectory(
            label,
            np.array([[r.x, r.y] for r in rows], dtype=float),
            np.array([r.heading for r in rows], dtype=float),
        )
        for label, rows in src.rows.items()  # type: ignore[attr-defined]
    ]
    return src, captured
