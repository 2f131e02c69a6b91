"""PoseGraph: a city as 360° trajectories of frames joined at junctions.

This is the world of the ``PoseGraph360`` family (after the 360CityArena benchmark: 360°
video segments, one per street and direction, joined at a pose graph's junction nodes).

* A :class:`Trajectory` is a directed street segment from one :class:`Junction` to
  another, sampled as frames (position in metres, travel heading in degrees) every
  ``spacing`` metres; frame 0 lies at the start junction and the last frame at the end
  junction. Every segment is present once per direction (``reverse`` links the twins).
* A :class:`PoseGraph` holds the junctions and trajectories and an optional
  *frame source* that supplies the equirectangular panorama of a frame:

  - :class:`RenderedFrames` -- rendered on demand by any ``render(x, y) -> rgb`` callable
    (the environment passes :class:`urban_gym.render.PanoramaRenderer`), memory-bounded
    LRU cache;
  - :class:`ImageFolderFrames` -- a folder of equirectangular images plus a pose CSV;
  - :class:`VideoFrames` -- a 360° equirectangular video plus a pose CSV by frame index
    or time, read with OpenCV.

* :meth:`PoseGraph.from_city` builds the graph from a :class:`~urban_gym.world.City`'s
  walkable network (streets: network kinds ``road`` and ``pedestrian``, no service
  roads); :meth:`PoseGraph.from_capture` imports real captures and finds the junctions
  from proximity and heading (:func:`detect_junctions`, the Movie Map recipe:
  geo-located frames -> intersections -> snippets joined into a graph).
* :func:`validate_posegraph` measures how well a graph agrees with a city's walkable
  network (node-to-street distances, path-length and turn-sequence agreement).

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

Units: metres, degrees clockwise from north (x east, y north).
"""

from __future__ import annotations

import csv
import heapq
import math
from collections import Counter, OrderedDict, defaultdict
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
from shapely.geometry import LineString, Point

from urban_gym.errors import UrbanGymError
from urban_gym.world.geo import GeoFrame, angle_diff, bearing

#: Default distance between frames along a trajectory, metres.
DEFAULT_SPACING_M = 3.0
#: Network edge kinds that count as streets for :meth:`PoseGraph.from_city`.
STREET_KINDS: tuple[str, ...] = ("road", "pedestrian")
#: ``highway=*`` values left out of the streets (driveways, parking aisles).
EXCLUDED_HIGHWAYS: tuple[str, ...] = ("service",)
#: Junctions joined by a street segment shorter than this (m) are merged into one.
DEFAULT_MERGE_RADIUS_M = 12.0
#: Dead-end stubs shorter than this (m) are pruned.
DEFAULT_MIN_STUB_M = 20.0
#: Bearings of a trajectory's departure/arrival are measured over this many metres.
BEARING_BASE_M = 10.0


class PoseGraphError(UrbanGymError):
    """A pose graph cannot be built or read: bad pose CSV, missing frames, unreadable
    video, an empty street selection."""


# ---------------------------------------------------------------------------- model
@dataclass(frozen=True)
class Junction:
    """A node of the pose graph at ``(x, y)`` metres. ``network_nodes`` are the City
    network nodes merged into it (empty for imported graphs)."""

    id: int
    x: float
    y: float
    network_nodes: tuple[int, ...] = ()


@dataclass(eq=False)
class Trajectory:
    """A directed street segment sampled as frames.

    Attributes:
        id: index in :attr:`PoseGraph.trajectories`.
        start, end: junction ids at frame 0 and at the last frame.
        xy: ``(n, 2)`` frame positions, metres.
        heading: ``(n,)`` travel heading at each frame, degrees.
        offsets: ``(n,)`` distance along the trajectory from frame 0, metres.
        keys: ``n`` frame-source keys ``(capture trajectory label, frame index)``.
        street: the street name (None when unnamed).
        reverse: id of the trajectory covering the same segment the other way, or None.
        segment: id of the undirected segment (shared by the two directions).
        departure, arrival: bearing (degrees) leaving the start junction and arriving
            at the end junction, measured over :data:`BEARING_BASE_M`.
        network_edges: City network edges the segment follows (from_city only).
    """

    id: int
    start: int
    end: int
    xy: np.ndarray
    heading: np.ndarray
    offsets: np.ndarray
    keys: tuple[tuple[str, int], ...]
    street: str | None = None
    reverse: int | None = None
    segment: int = -1
    departure: float = 0.0
    arrival: float = 0.0
    network_edges: tuple[tuple[int, int], ...] = ()

    @property
    def n_frames(self) -> int:
        return len(self.xy)

    @property
    def last(self) -> int:
        """Index of the last frame (at the end junction)."""
        return len(self.xy) - 1

    @property
    def length(self) -> float:
        """Length in metres."""
        return float(self.offsets[-1])


@dataclass(frozen=True)
class State:
    """Where an agent is: frame ``frame`` of trajectory ``trajectory``."""

    trajectory: int
    frame: int


# ---------------------------------------------------------------------------- sources
class FrameSource:
    """Supplies the equirectangular panorama of a frame.

    :meth:`panorama` returns ``(rgb, pano_heading)``: an ``(H, 2H, 3)`` uint8 image and
    the bearing (degrees) its centre column looks along.
    """

    def panorama(self, key: tuple[str, int], x: float, y: float) -> tuple[np.ndarray, float]:
        raise NotImplementedError

    def close(self) -> None:
        """Release file handles (a source reopens them on demand)."""


class _LRU:
    """A byte-bounded least-recently-used cache of numpy arrays."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = int(max_bytes)
        self.data: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self.nbytes = 0
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable) -> Any:
        v = self.data.get(key)
        if v is None:
            self.misses += 1
            return None
        self.data.move_to_end(key)
        self.hits += 1
        return v[0]

    def put(self, key: Hashable, value: Any, nbytes: int) -> None:
        if key in self.data:
            return
        self.data[key] = (value, int(nbytes))
        self.nbytes += int(nbytes)
        while self.nbytes > self.max_bytes and len(self.data) > 1:
            _, (_, n) = self.data.popitem(last=False)
            self.nbytes -= n

    def __len__(self) -> int:
        return len(self.data)

    def clear(self) -> None:
        self.data.clear()
        self.nbytes = 0


class RenderedFrames(FrameSource):
    """Panoramas rendered on demand by ``render(x, y) -> (H, 2H, 3) uint8`` (a rendered
    panorama's centre column looks north, ``pano_heading`` 0).

    Frames are cached by position (rounded to a centimetre) in an LRU holding at most
    ``cache_mb`` megabytes, so the frames that two trajectories share at a junction are
    rendered once.
    """

    def __init__(self, render: Callable[[float, float], np.ndarray], cache_mb: float = 512.0):
        self.render = render
        self.cache = _LRU(int(cache_mb * 1024 * 1024))

    def panorama(self, key: tuple[str, int], x: float, y: float) -> tuple[np.ndarray, float]:
        k = (round(float(x), 2), round(float(y), 2))
        img = self.cache.get(k)
        if img is None:
            img = np.ascontiguousarray(self.render(float(x), float(y)), dtype=np.uint8)
            self.cache.put(k, img, img.nbytes)
        return img, 0.0

    def __getstate__(self) -> dict[str, Any]:
        d = self.__dict__.copy()
        d["cache"] = _LRU(self.cache.max_bytes)
        return d


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
    (1 = the first row after the header) and the column."""
    p = Path(path)
    if kind not in ("folder", "video"):
        raise PoseGraphError(f"pose CSV kind={kind!r} must be 'folder' or 'video'")
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

    def fail(line: int, row: int, k: str, msg: str) -> PoseGraphError:
        return PoseGraphError(f"{p}, line {line}: {msg} (row {row}, column {k!r})")

    def num(r: dict, k: str, line: int, row: int) -> float | None:
        v = r.get(k, "")
        if v == "":
            return None
        try:
            out = float(v)
        except ValueError:
            raise fail(line, row, k, f"{k}={v!r} is not a number") from None
        if not math.isfinite(out):
            raise fail(line, row, k, f"{k}={v!r} is not finite")
        return out

    def degrees(r: dict, k: str, line: int, row: int) -> float:
        v = num(r, k, line, row)
        if v is None:
            raise fail(line, row, k, f"{k} is empty")
        lim = 90.0 if k == "lat" else 180.0
        if not -lim <= v <= lim:
            raise fail(line, row, k, f"{k}={r[k]!r} is out of range (-{lim:g}..{lim:g} degrees)")
        return v

    if has_ll and not has_xy and geo is None:
        line0, r0 = raw[0]
        geo = GeoFrame(degrees(r0, "lat", line0, 1), degrees(r0, "lon", line0, 1))
    groups: dict[str, list[PoseRow]] = {}
    for row_no, (line, r) in enumerate(raw, start=1):
        if has_xy:
            x, y = num(r, "x", line, row_no), num(r, "y", line, row_no)
            if x is None or y is None:
                raise fail(line, row_no, "x" if x is None else "y", "x/y is empty")
        else:
            lat, lon = degrees(r, "lat", line, row_no), degrees(r, "lon", line, row_no)
            x, y = geo.to_xy(lat, lon)  # type: ignore[union-attr]
        label = r.get("trajectory", "") or "0"
        g = groups.setdefault(label, [])
        heading = num(r, "heading", line, row_no)
        pano_heading = num(r, "pano_heading", line, row_no)
        row = PoseRow(label, len(g), float(x), float(y), heading, pano_heading)
        if kind == "folder":
            if not r.get("file"):
                raise fail(line, row_no, "file", "file is empty")
            row.file = r["file"]
        else:
            fr, t = num(r, "frame", line, row_no), num(r, "time", line, row_no)
            if fr is None and t is None:
                raise fail(line, row_no, "frame", "neither frame nor time is given")
            if fr is not None:
                if fr != int(fr) or fr < 0:
                    raise fail(line, row_no, "frame", f"frame={r['frame']!r} is not a frame index")
                row.frame = int(fr)
            if t is not None and t < 0:
                raise fail(line, row_no, "time", f"time={r['time']!r} is negative")
            row.time = t
        g.append(row)
    for rows in groups.values():
        _fill_headings(rows)
    return groups


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
        self.cache = _LRU(int(cache_mb * 1024 * 1024))

    def panorama(self, key: tuple[str, int], x: float, y: float) -> tuple[np.ndarray, float]:
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

    def __getstate__(self) -> dict[str, Any]:
        d = self.__dict__.copy()
        d["cache"] = _LRU(self.cache.max_bytes)
        return d


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
        self.cache = _LRU(int(cache_mb * 1024 * 1024))
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
        if self._cap is not None:
            self._cap.release()
        self._cap = None
        self._next = -1

    def __getstate__(self) -> dict[str, Any]:
        d = self.__dict__.copy()
        d["_cap"] = None
        d["_next"] = -1
        d["cache"] = _LRU(self.cache.max_bytes)
        return d


def _check_equirect(img: np.ndarray, what: str) -> np.ndarray:
    h, w = img.shape[:2]
    if img.ndim != 3 or w != 2 * h:
        raise PoseGraphError(
            f"{what}: an equirectangular panorama must be twice as wide as high, got {w}x{h}"
        )
    return np.ascontiguousarray(img)


# ---------------------------------------------------------------------------- the graph
@dataclass
class Branch:
    """An outgoing trajectory at a junction as seen from a camera bearing: ``relative``
    is its departure bearing minus the camera bearing, degrees in (-180, 180]."""

    trajectory: int
    bearing: float
    relative: float


#: Branch actions and the relative bearing (degrees) each one aims at; a branch is
#: selectable by the action whose sector (centre +-45 degrees) holds it.
BRANCH_SECTORS: dict[str, float] = {"LEFT": -90.0, "UP": 0.0, "RIGHT": 90.0}


class PoseGraph:
    """Junctions joined by directed trajectories of frames (see the module docstring).

    Build with :meth:`from_city` or :meth:`from_capture`. ``source`` supplies pixels
    (:meth:`panorama`); a graph without a source still answers every geometric query.
    """

    def __init__(
        self,
        junctions: Sequence[Junction],
        trajectories: Sequence[Trajectory],
        spacing: float,
        source: FrameSource | None = None,
        name: str = "",
        meta: dict[str, Any] | None = None,
    ) -> None:
        self.junctions: list[Junction] = list(junctions)
        self.trajectories: list[Trajectory] = list(trajectories)
        self.spacing = float(spacing)
        self.source = source
        self.name = name
        self.meta: dict[str, Any] = dict(meta or {})
        if not self.trajectories:
            raise PoseGraphError(f"pose graph {name!r} has no trajectories")
        out: dict[int, list[int]] = defaultdict(list)
        inc: dict[int, list[int]] = defaultdict(list)
        for t in self.trajectories:
            out[t.start].append(t.id)
            inc[t.end].append(t.id)
        self.out_of: dict[int, list[int]] = {
            j.id: sorted(out.get(j.id, []), key=lambda k: (self.trajectories[k].departure, k))
            for j in self.junctions
        }
        self.into: dict[int, list[int]] = {j.id: sorted(inc.get(j.id, [])) for j in self.junctions}
        self._frame_base = np.cumsum([0] + [t.n_frames for t in self.trajectories])
        self.frame_xy = np.concatenate([t.xy for t in self.trajectories])
        self.frame_traj = np.concatenate(
            [np.full(t.n_frames, t.id, dtype=np.int64) for t in self.trajectories]
        )
        self.frame_index = np.concatenate(
            [np.arange(t.n_frames, dtype=np.int64) for t in self.trajectories]
        )

    # ------------------------------------------------------------------ basics
    def __repr__(self) -> str:
        s = self.statistics()
        return (
            f"PoseGraph({self.name!r}, junctions={s['junctions']}, segments={s['segments']}, "
            f"trajectories={s['trajectories']}, frames={s['frames']})"
        )

    def __getstate__(self) -> dict[str, Any]:
        return self.__dict__.copy()

    @property
    def n_frames(self) -> int:
        return int(self._frame_base[-1])

    def with_source(self, source: FrameSource | None) -> PoseGraph:
        """The same graph drawing its pixels from ``source`` (shares the geometry)."""
        g = object.__new__(PoseGraph)
        g.__dict__.update(self.__dict__)
        g.source = source
        return g

    def position(self, state: State) -> tuple[float, float]:
        """``(x, y)`` metres of a state's frame."""
        p = self.trajectories[state.trajectory].xy[state.frame]
        return float(p[0]), float(p[1])

    def heading(self, state: State) -> float:
        """Travel heading (degrees) at a state's frame."""
        return float(self.trajectories[state.trajectory].heading[state.frame])

    def check_state(self, state: State) -> State:
        """``state`` if it names an existing frame, else :class:`PoseGraphError`."""
        if not (0 <= state.trajectory < len(self.trajectories)):
            raise PoseGraphError(
                f"trajectory {state.trajectory} does not exist "
                f"(the graph has {len(self.trajectories)})"
            )
        n = self.trajectories[state.trajectory].n_frames
        if not (0 <= state.frame < n):
            raise PoseGraphError(
                f"frame {state.frame} does not exist on trajectory {state.trajectory} ({n} frames)"
            )
        return state

    def junction_at(self, state: State) -> int | None:
        """The junction a state stands on (frame 0 or the last frame), else None."""
        t = self.trajectories[state.trajectory]
        if state.frame == t.last:
            return t.end
        if state.frame == 0:
            return t.start
        return None

    def panorama(self, state: State) -> tuple[np.ndarray, float]:
        """``(equirect rgb, pano_heading)`` of a state's frame from the frame source."""
        if self.source is None:
            raise PoseGraphError(f"pose graph {self.name!r} has no frame source")
        t = self.trajectories[state.trajectory]
        x, y = t.xy[state.frame]
        return self.source.panorama(t.keys[state.frame], float(x), float(y))

    def nearest_state(self, x: float, y: float, heading: float | None = None) -> State:
        """The frame nearest to ``(x, y)``; among frames within 1 m of the nearest, the one
        whose travel heading is closest to ``heading`` (when given)."""
        d = np.hypot(self.frame_xy[:, 0] - x, self.frame_xy[:, 1] - y)
        best = float(d.min())
        cand = np.flatnonzero(d <= best + 1.0)
        if heading is not None and len(cand) > 1:
            hd = np.array(
                [
                    abs(
                        angle_diff(
                            self.trajectories[self.frame_traj[c]].heading[self.frame_index[c]],
                            heading,
                        )
                    )
                    for c in cand
                ]
            )
            cand = cand[np.lexsort((d[cand], np.round(hd, 3)))]
        else:
            cand = cand[np.argsort(d[cand], kind="stable")]
        c = int(cand[0])
        return State(int(self.frame_traj[c]), int(self.frame_index[c]))

    def states_near(self, x: float, y: float, radius: float) -> list[State]:
        """Every frame within ``radius`` metres of ``(x, y)``."""
        d = np.hypot(self.frame_xy[:, 0] - x, self.frame_xy[:, 1] - y)
        return [
            State(int(self.frame_traj[c]), int(self.frame_index[c]))
            for c in np.flatnonzero(d <= radius)
        ]

    @property
    def bounds(self) -> tuple[float, float, float, float]:
        """``(xmin, ymin, xmax, ymax)`` over all frames, metres."""
        a = self.frame_xy
        return (
            float(a[:, 0].min()),
            float(a[:, 1].min()),
            float(a[:, 0].max()),
            float(a[:, 1].max()),
        )

    # ------------------------------------------------------------------ branches
    def branches(self, junction: int, camera_bearing: float) -> list[Branch]:
        """Outgoing trajectories at ``junction`` with their bearing relative to a camera
        looking along ``camera_bearing`` (degrees)."""
        out = []
        for k in self.out_of.get(junction, []):
            b = self.trajectories[k].departure
            out.append(Branch(k, b, float(angle_diff(b, camera_bearing))))
        return out

    def branch_choices(self, junction: int, camera_bearing: float) -> dict[str, int]:
        """Which trajectory each branch action selects at ``junction`` for a camera
        looking along ``camera_bearing``.

        ``LEFT``/``UP``/``RIGHT`` aim at -90/0/+90 degrees relative to the camera; a branch
        belongs to the sector whose centre is within 45 degrees of it (``LEFT`` takes
        [-135, -45), ``UP`` [-45, 45], ``RIGHT`` (45, 135]). When two branches share a
        sector the one closest to the sector centre is chosen (ties: lower id); a branch
        behind the camera (beyond 135 degrees) is not selectable until the camera turns.
        """
        best: dict[str, tuple[float, int]] = {}
        for br in self.branches(junction, camera_bearing):
            r = br.relative
            if -135.0 <= r < -45.0:
                name = "LEFT"
            elif -45.0 <= r <= 45.0:
                name = "UP"
            elif 45.0 < r <= 135.0:
                name = "RIGHT"
            else:
                continue
            key = (abs(r - BRANCH_SECTORS[name]), br.trajectory)
            if name not in best or key < best[name]:
                best[name] = key
        return {k: v[1] for k, v in sorted(best.items())}

    # ------------------------------------------------------------------ routes
    def goal_states(self, x: float, y: float, tolerance: float = 1.0) -> list[State]:
        """Frames that count as being at the goal point ``(x, y)``: every frame within
        ``tolerance`` metres of the frame nearest to it."""
        s = self.nearest_state(x, y)
        gx, gy = self.position(s)
        return self.states_near(gx, gy, tolerance)

    def distance_field(self, goals: Iterable[State]) -> GoalDistances:
        """Shortest travel distances (metres along trajectories) to the nearest of
        ``goals`` from every state (see :class:`GoalDistances`)."""
        return GoalDistances(self, list(goals))

    def shortest_route(self, start: State, goals: Iterable[State]) -> list[State]:
        """The states visited on a shortest route from ``start`` to the nearest goal frame:
        every frame along the way, with a branch switch recorded as the new
        trajectory's frame 0 (same position as the junction)."""
        return self.distance_field(goals).route(start)

    # ------------------------------------------------------------------ statistics
    def statistics(self) -> dict[str, Any]:
        """The figures the 360CityArena paper gives for its graph, and a few more.

        ``segments`` are undirected street segments (pose-graph edges), ``trajectories``
        the directed ones (video segments), ``mean_branching`` the mean junction degree
        ``2 * segments / junctions``, ``streets`` the distinct street names.
        """
        segs = {t.segment for t in self.trajectories}
        deg: Counter[int] = Counter()
        seen: set[int] = set()
        for t in self.trajectories:
            if t.segment in seen:
                continue
            seen.add(t.segment)
            deg[t.start] += 1
            deg[t.end] += 1
        n = len(self.junctions)
        x0, y0, x1, y1 = self.bounds
        seg_len = {t.segment: t.length for t in self.trajectories}
        named = {t.street for t in self.trajectories if t.street}
        return {
            "name": self.name,
            "junctions": n,
            "segments": len(segs),
            "trajectories": len(self.trajectories),
            "mean_branching": round(2.0 * len(segs) / n, 2) if n else 0.0,
            "dead_ends": sum(1 for j in self.junctions if deg[j.id] == 1),
            "degree_histogram": dict(sorted(Counter(deg[j.id] for j in self.junctions).items())),
            "streets": len(named),
            "frames": self.n_frames,
            "spacing_m": self.spacing,
            "length_km": round(sum(seg_len.values()) / 1000.0, 3),
            "mean_segment_m": round(sum(seg_len.values()) / max(1, len(segs)), 1),
            "extent_m": (round(x1 - x0, 1), round(y1 - y0, 1)),
        }

    # ------------------------------------------------------------------ builders
    @classmethod
    def from_city(
        cls,
        city: Any,
        spacing: float = DEFAULT_SPACING_M,
        kinds: Sequence[str] = STREET_KINDS,
        exclude_highways: Sequence[str] = EXCLUDED_HIGHWAYS,
        merge_radius: float = DEFAULT_MERGE_RADIUS_M,
        min_stub: float = DEFAULT_MIN_STUB_M,
        source: FrameSource | None = None,
    ) -> PoseGraph:
        """Build the pose graph of a City's streets.

        Streets are the network edges whose ``kind`` is in ``kinds`` and whose
        ``highway`` is not in ``exclude_highways``; the largest connected part is kept.
        Chains of degree-2 nodes become segments; junctions joined by a segment shorter
        than ``merge_radius`` metres merge into one (at their mean position); dead-end
        stubs shorter than ``min_stub`` metres are pruned. Each segment becomes two
        trajectories (one per direction) with a frame every ``spacing`` metres (evenly
        spread: ``round(length / spacing)`` intervals, at least one).
        """
        if not (0.5 <= spacing <= 50.0):
            raise PoseGraphError(f"spacing={spacing!r} must be in [0.5, 50] metres")
        G = city.network
        edges = [
            (u, v)
            for u, v, d in G.edges(data=True)
            if d.get("kind") in kinds and d.get("highway") not in exclude_highways
        ]
        if not edges:
            raise PoseGraphError(f"city {city.name!r} has no street edges of kinds {list(kinds)}")
        H = G.edge_subgraph(edges)
        comp = max(nx.connected_components(H), key=lambda c: (len(c), -min(c)))
        H = H.subgraph(comp)
        segs = _chains(city, H)
        junction_xy = {n: city.node_xy[n] for s in segs for n in (s.u, s.v)}
        segs, clusters = _merge_and_prune(segs, junction_xy, merge_radius, min_stub)
        return _assemble(
            segs,
            clusters,
            spacing,
            source,
            name=f"{city.name}",
            meta={
                "source": "city",
                "city": city.name,
                "spacing": spacing,
                "kinds": list(kinds),
                "exclude_highways": list(exclude_highways),
                "merge_radius": merge_radius,
                "min_stub": min_stub,
            },
        )

    @classmethod
    def from_capture(
        cls,
        capture: str | Path,
        poses: str | Path | None = None,
        geo: GeoFrame | None = None,
        radius: float = 6.0,
        merge: float = 10.0,
        min_crossing_angle: float = 30.0,
        cache_mb: float = 256.0,
        name: str | None = None,
    ) -> PoseGraph:
        """Import a real capture: a folder of equirectangular images (pose CSV default
        ``<folder>/poses.csv``) or a 360° video (pose CSV default ``<video>.csv``).

        Junctions are found by :func:`detect_junctions` (``radius``, ``merge`` metres;
        ``min_crossing_angle`` degrees). ``geo`` converts ``lat``/``lon`` columns (pass the
        City's ``frame`` to line the capture up with a city).
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
        g = detect_junctions(
            captured,
            radius=radius,
            merge=merge,
            min_crossing_angle=min_crossing_angle,
            source=src,
            name=name or p.stem,
        )
        g.meta.update({"source": "capture", "capture": str(p)})
        return g


# ---------------------------------------------------------------------------- distances
class GoalDistances:
    """Shortest travel distances (metres) to a set of goal frames.

    Movement follows the pose graph's rules: forward along a trajectory, and at a
    junction (frame 0 or the last frame of a trajectory) onto any trajectory leaving it.
    ``junction[j]`` is the distance from junction ``j``; :meth:`distance` gives it for
    any state.
    """

    def __init__(self, graph: PoseGraph, goals: list[State]) -> None:
        self.graph = graph
        self.goals = goals
        self.goal_on: dict[int, list[int]] = defaultdict(list)
        for s in goals:
            graph.check_state(s)
            self.goal_on[s.trajectory].append(s.frame)
        for v in self.goal_on.values():
            v.sort()
        inf = math.inf
        dist = {j.id: inf for j in graph.junctions}
        heap: list[tuple[float, int]] = []
        for t_id, frames in self.goal_on.items():
            t = graph.trajectories[t_id]
            d0 = float(t.offsets[frames[0]])
            if d0 < dist[t.start]:
                dist[t.start] = d0
            if frames[-1] == t.last and 0.0 < dist[t.end]:
                dist[t.end] = 0.0
        heap = [(d, j) for j, d in dist.items() if d < inf]
        heapq.heapify(heap)
        done: set[int] = set()
        while heap:
            d, j = heapq.heappop(heap)
            if j in done:
                continue
            done.add(j)
            for k in graph.into.get(j, []):
                t = graph.trajectories[k]
                nd = d + t.length
                if nd < dist[t.start]:
                    dist[t.start] = nd
                    heapq.heappush(heap, (nd, t.start))
        self.junction = dist

    def distance(self, state: State) -> float:
        """Travel distance in metres from ``state`` to the nearest goal frame (inf when
        unreachable)."""
        t = self.graph.trajectories[state.trajectory]
        i = state.frame
        best = math.inf
        for g in self.goal_on.get(t.id, ()):
            if g >= i:
                best = float(t.offsets[g] - t.offsets[i])
                break
        best = min(best, float(t.offsets[-1] - t.offsets[i]) + self.junction[t.end])
        if i == 0:
            best = min(best, self.junction[t.start])
        return best

    def branch_cost(self, trajectory: int) -> float:
        """Distance to the goal when entering ``trajectory`` at its frame 0 and moving on
        it (without switching back at its start junction)."""
        t = self.graph.trajectories[trajectory]
        goals = self.goal_on.get(trajectory)
        if goals:
            return float(t.offsets[goals[0]])
        return t.length + self.junction[t.end]

    def best_branch(self, junction: int) -> int | None:
        """The outgoing trajectory of a shortest route from ``junction`` (lowest id on
        ties), or None when the junction is a goal or nothing is reachable."""
        best: tuple[float, int] | None = None
        for k in self.graph.out_of.get(junction, []):
            c = self.branch_cost(k)
            if math.isfinite(c) and (best is None or (c, k) < best):
                best = (c, k)
        return None if best is None else best[1]

    def is_goal(self, state: State) -> bool:
        return state.frame in self.goal_on.get(state.trajectory, ())

    def route(self, start: State) -> list[State]:
        """Every state of a shortest route from ``start`` to a goal (see
        :meth:`PoseGraph.shortest_route`); raises :class:`PoseGraphError` if unreachable."""
        if not math.isfinite(self.distance(start)):
            raise PoseGraphError(f"no route from {start} to the goal")
        s = start
        out = [s]
        for _ in range(self.graph.n_frames + len(self.graph.trajectories) + 2):
            if self.is_goal(s):
                return out
            t = self.graph.trajectories[s.trajectory]
            j = self.graph.junction_at(s)
            if j is not None:
                stay = math.inf if s.frame == t.last else self.distance_along(s)
                if self.junction[j] + 1e-9 < stay:
                    k = self.best_branch(j)
                    if k is None:
                        break
                    s = State(k, 0)
                    out.append(s)
                    continue
            s = State(s.trajectory, s.frame + 1)
            out.append(s)
        raise PoseGraphError(f"route from {start} did not reach the goal")

    def geodesic(self, state: State) -> float:
        """Distance (metres) along the streets from ``state``'s position to the nearest
        goal frame in either direction of travel: :meth:`distance`, or back along the
        current trajectory to its start junction (or to a goal frame behind). This is the
        "distance to the goal" that ``AWAY_FROM_GOAL`` watches: walking the wrong way
        along a street increases it at every step."""
        t = self.graph.trajectories[state.trajectory]
        i = state.frame
        best = min(self.distance(state), float(t.offsets[i]) + self.junction[t.start])
        for g in self.goal_on.get(t.id, ()):
            if g <= i:
                best = min(best, float(t.offsets[i] - t.offsets[g]))
        return best

    def distance_along(self, state: State) -> float:
        """Distance when staying on the current trajectory (no switch at its start)."""
        t = self.graph.trajectories[state.trajectory]
        for g in self.goal_on.get(t.id, ()):
            if g >= state.frame:
                return float(t.offsets[g] - t.offsets[state.frame])
        return float(t.offsets[-1] - t.offsets[state.frame]) + self.junction[t.end]


# ---------------------------------------------------------------------------- from_city
@dataclass
class _Seg:
    u: int
    v: int
    coords: list[tuple[float, float]]
    names: Counter = field(default_factory=Counter)
    edges: list[tuple[int, int]] = field(default_factory=list)

    @property
    def length(self) -> float:
        return float(LineString(self.coords).length) if len(self.coords) > 1 else 0.0


def _chains(city: Any, H: nx.Graph) -> list[_Seg]:
    """Maximal chains of degree-2 nodes between junction nodes (degree != 2)."""
    junctions = {n for n, d in H.degree() if d != 2}
    for comp in nx.connected_components(H):  # pure cycles get one junction
        if not junctions & comp:
            junctions.add(min(comp))
    segs: list[_Seg] = []
    used: set[frozenset] = set()
    for a in sorted(junctions):
        for b in sorted(H.neighbors(a)):
            key = frozenset((a, b))
            if key in used:
                continue
            seg = _Seg(a, a, list(city.edge_geometry(a, b).coords))
            prev, cur = a, b
            while True:
                used.add(frozenset((prev, cur)))
                d = H.edges[prev, cur]
                seg.names[d.get("name")] += d["length"]
                seg.edges.append((prev, cur))
                if prev != a or len(seg.edges) > 1:
                    seg.coords += list(city.edge_geometry(prev, cur).coords)[1:]
                if cur in junctions:
                    break
                nxt = [n for n in H.neighbors(cur) if n != prev]
                prev, cur = cur, nxt[0]
            seg.v = cur
            segs.append(seg)
    return segs


def _merge_and_prune(
    segs: list[_Seg], xy: dict[int, tuple[float, float]], merge_radius: float, min_stub: float
) -> tuple[list[_Seg], dict[int, list[int]]]:
    """Merge junctions joined by short segments, prune short stubs, dissolve degree-2
    junctions. Returns the segments (ends are cluster ids) and cluster -> member nodes."""
    parent = {n: n for n in xy}

    def find(n: int) -> int:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    keep = []
    for s in segs:
        if s.u != s.v and s.length < merge_radius:
            a, b = find(s.u), find(s.v)
            if a != b:
                parent[max(a, b)] = min(a, b)
        else:
            keep.append(s)
    members: dict[int, list[int]] = defaultdict(list)
    for n in xy:
        members[find(n)].append(n)
    centre = {
        c: (float(np.mean([xy[m][0] for m in ms])), float(np.mean([xy[m][1] for m in ms])))
        for c, ms in members.items()
    }
    out: list[_Seg] = []
    for s in keep:
        cu, cv = find(s.u), find(s.v)
        coords = list(s.coords)
        if math.dist(coords[0], centre[cu]) > 0.01:
            coords.insert(0, centre[cu])
        if math.dist(coords[-1], centre[cv]) > 0.01:
            coords.append(centre[cv])
        if cu == cv and LineString(coords).length < 2 * merge_radius:
            continue  # a tiny loop inside a merged junction
        out.append(_Seg(cu, cv, coords, s.names, s.edges))
    # prune short dead-end stubs and dissolve degree-2 junctions until stable
    changed = True
    while changed:
        changed = False
        deg: Counter[int] = Counter()
        for s in out:
            deg[s.u] += 1
            deg[s.v] += 1
        dup = _parallel_duplicates(out, 2.0 * merge_radius)
        if dup:
            out = [s for s in out if id(s) not in dup]
            changed = True
            continue
        stubs = [
            s
            for s in out
            if s.u != s.v and (deg[s.u] == 1) != (deg[s.v] == 1) and s.length < min_stub
        ]
        if stubs:
            drop = {id(s) for s in stubs}
            out = [s for s in out if id(s) not in drop]
            changed = True
            continue
        for c in sorted(deg):
            if deg[c] != 2:
                continue
            pair = [s for s in out if c in (s.u, s.v)]
            if len(pair) != 2:  # a self-loop counts twice
                continue
            a, b = pair
            ca = a.coords if a.v == c else a.coords[::-1]
            ua = a.u if a.v == c else a.v
            cb = b.coords if b.u == c else b.coords[::-1]
            vb = b.v if b.u == c else b.u
            merged = _Seg(ua, vb, ca + cb[1:], a.names + b.names, a.edges + b.edges)
            out = [s for s in out if s is not a and s is not b] + [merged]
            changed = True
            break
    # largest connected part
    g = nx.MultiGraph()
    for i, s in enumerate(out):
        g.add_edge(s.u, s.v, key=i)
    if g.number_of_nodes() == 0:
        raise PoseGraphError("no street segments are left after merging and pruning")
    comp = max(nx.connected_components(g), key=lambda c: (len(c), -min(c)))
    out = [s for s in out if s.u in comp]
    return out, {c: members[c] for c in comp}


def _parallel_duplicates(segs: list[_Seg], within: float) -> set[int]:
    """ids of segments that run alongside a shorter segment joining the same two
    junctions (Hausdorff distance below ``within`` metres): parallel carriageways and
    ways mapped twice, which a camera would capture once."""
    groups: dict[frozenset, list[_Seg]] = defaultdict(list)
    for s in segs:
        groups[frozenset((s.u, s.v))].append(s)
    drop: set[int] = set()
    for g in groups.values():
        if len(g) < 2:
            continue
        kept: list[LineString] = []
        for s in sorted(g, key=lambda s: (s.length, s.coords[1])):
            line = LineString(s.coords)
            if any(line.hausdorff_distance(k) < within for k in kept):
                drop.add(id(s))
            else:
                kept.append(line)
    return drop


def _sample(coords: np.ndarray, spacing: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Frames every ~``spacing`` m along a polyline: positions, headings, offsets."""
    line = LineString(coords)
    L = float(line.length)
    n = max(1, int(round(L / spacing)))
    offs = np.linspace(0.0, L, n + 1)
    xy = np.array([line.interpolate(s).coords[0] for s in offs])
    h = np.empty(len(offs))
    for i, s in enumerate(offs):
        a = line.interpolate(max(0.0, s - 1.5))
        b = line.interpolate(min(L, s + 1.5))
        h[i] = bearing(b.x - a.x, b.y - a.y)
    return xy, h, offs


def _end_bearings(xy: np.ndarray, offs: np.ndarray) -> tuple[float, float]:
    L = float(offs[-1])
    base = min(BEARING_BASE_M, L)
    line = LineString(xy)
    p = line.interpolate(base)
    q = line.interpolate(L - base)
    dep = bearing(p.x - xy[0][0], p.y - xy[0][1])
    arr = bearing(xy[-1][0] - q.x, xy[-1][1] - q.y)
    return float(dep), float(arr)


def _assemble(
    segs: list[_Seg],
    clusters: dict[int, list[int]],
    spacing: float,
    source: FrameSource | None,
    name: str,
    meta: dict[str, Any],
) -> PoseGraph:
    used = sorted({c for s in segs for c in (s.u, s.v)})
    jid = {c: i for i, c in enumerate(used)}
    junctions = []
    for c in used:
        first = next(s for s in segs if c in (s.u, s.v))
        p = first.coords[0] if first.u == c else first.coords[-1]
        junctions.append(Junction(jid[c], float(p[0]), float(p[1]), tuple(sorted(clusters[c]))))
    segs = sorted(
        segs, key=lambda s: (jid[s.u], jid[s.v], round(s.coords[1][0], 3), round(s.coords[1][1], 3))
    )
    trajs: list[Trajectory] = []
    for k, s in enumerate(segs):
        street = None
        named = [(v, n) for n, v in s.names.items() if n]
        if named:
            street = max(named)[1]
        c = np.asarray(s.coords, dtype=float)
        for direction in (0, 1):
            cc = c if direction == 0 else c[::-1]
            xy, h, offs = _sample(cc, spacing)
            dep, arr = _end_bearings(xy, offs)
            tid = len(trajs)
            edges = tuple(s.edges) if direction == 0 else tuple((b, a) for a, b in s.edges[::-1])
            trajs.append(
                Trajectory(
                    tid,
                    jid[s.u] if direction == 0 else jid[s.v],
                    jid[s.v] if direction == 0 else jid[s.u],
                    xy,
                    h,
                    offs,
                    tuple((str(tid), i) for i in range(len(xy))),
                    street,
                    tid + 1 if direction == 0 else tid - 1,
                    k,
                    dep,
                    arr,
                    edges,
                )
            )
    return PoseGraph(junctions, trajs, spacing, source, name, meta)


# ---------------------------------------------------------------------------- imports
@dataclass
class CapturedTrajectory:
    """One captured trajectory before junction detection: ``xy`` ``(n, 2)`` metres,
    ``heading`` ``(n,)`` degrees, frames keyed ``(label, row index)``."""

    label: str
    xy: np.ndarray
    heading: np.ndarray


def detect_junctions(
    captured: Sequence[CapturedTrajectory],
    radius: float = 6.0,
    merge: float = 10.0,
    min_crossing_angle: float = 30.0,
    source: FrameSource | None = None,
    name: str = "capture",
) -> PoseGraph:
    """Join captured trajectories into a pose graph (the Movie Map recipe).

    1. Junction candidates: every trajectory's first and last frame, and every place
       where frames of two different trajectories come within ``radius`` metres of each
       other while their headings differ by at least ``min_crossing_angle`` degrees
       modulo 180 (streets that cross; the two directions of one street, being parallel,
       create none).
    2. Candidates closer than ``merge`` metres are clustered into one junction (at their
       mean position).
    3. Each trajectory is split at its frames nearest to every junction it passes within
       ``radius`` metres; the pieces become the graph's trajectories, and two pieces
       joining the same junctions the other way round along the same frames are
       ``reverse`` twins (one undirected segment).
    """
    if not captured:
        raise PoseGraphError("detect_junctions needs at least one trajectory")
    for c in captured:
        if len(c.xy) < 2:
            raise PoseGraphError(f"trajectory {c.label!r} has {len(c.xy)} frame(s); need 2")
    cand: list[tuple[float, float]] = []
    for c in captured:
        cand += [tuple(c.xy[0]), tuple(c.xy[-1])]
    allxy = np.concatenate([c.xy for c in captured])
    allh = np.concatenate([c.heading for c in captured])
    owner = np.concatenate([np.full(len(c.xy), i) for i, c in enumerate(captured)])
    cell = max(radius, 1e-6)
    grid: dict[tuple[int, int], list[int]] = defaultdict(list)
    keys = np.floor(allxy / cell).astype(np.int64)
    for i, (kx, ky) in enumerate(keys):
        grid[(int(kx), int(ky))].append(i)
    best_pair: dict[tuple[int, int], list[tuple[float, int, int]]] = defaultdict(list)
    for i, (kx, ky) in enumerate(keys):
        for dx in (-1, 0, 1):
            for dy in (-1, 0, 1):
                for j in grid.get((int(kx) + dx, int(ky) + dy), ()):
                    if j <= i or owner[j] == owner[i]:
                        continue
                    d = float(np.hypot(*(allxy[i] - allxy[j])))
                    if d > radius:
                        continue
                    a = abs(float(angle_diff(allh[i], allh[j]))) % 180.0
                    a = min(a, 180.0 - a)
                    if a >= min_crossing_angle:
                        best_pair[(int(owner[i]), int(owner[j]))].append((d, i, j))
    lines = [LineString(c.xy) for c in captured]

    def leaves(a: int, i: int, b: int) -> bool:
        """Whether capture ``a`` is farther than ``radius`` from capture ``b`` at
        ``2 * radius`` metres before and after its frame ``i`` (a crossing, not a bend
        of the same street or a shared stretch)."""
        la = lines[a]
        s = float(la.project(Point(allxy[i])))
        for v in (s - 2.0 * radius, s + 2.0 * radius):
            if 0.0 <= v <= la.length and la.interpolate(v).distance(lines[b]) <= radius:
                return False
        return True

    for (a, b), hits in best_pair.items():
        hits.sort()
        taken: list[np.ndarray] = []
        for _d, i, j in hits:  # one candidate per crossing (local closest pair)
            m = (allxy[i] + allxy[j]) / 2.0
            if any(np.hypot(*(m - t)) <= merge for t in taken):
                continue
            if leaves(a, i, b) and leaves(b, j, a):
                taken.append(m)
                cand.append((float(m[0]), float(m[1])))
    # cluster candidates
    pts = np.array(cand)
    parent = list(range(len(pts)))

    def find(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for i in range(len(pts)):
        d = np.hypot(pts[i + 1 :, 0] - pts[i, 0], pts[i + 1 :, 1] - pts[i, 1])
        for j in np.flatnonzero(d < merge) + i + 1:
            a, b = find(i), find(int(j))
            if a != b:
                parent[max(a, b)] = min(a, b)
    groups: dict[int, list[int]] = defaultdict(list)
    for i in range(len(pts)):
        groups[find(i)].append(i)
    centres = np.array([pts[g].mean(axis=0) for _, g in sorted(groups.items())])
    # split trajectories at junction passes
    pieces: list[tuple[int, int, int, int, int]] = []  # (capture, i0, i1, j0, j1)
    for ci, c in enumerate(captured):
        cuts: dict[int, int] = {}
        for jc, centre in enumerate(centres):
            d = np.hypot(c.xy[:, 0] - centre[0], c.xy[:, 1] - centre[1])
            near = d <= radius
            if not near.any():
                continue
            idx = np.flatnonzero(near)
            runs = np.split(idx, np.flatnonzero(np.diff(idx) > 1) + 1)
            for run in runs:
                k = int(run[np.argmin(d[run])])
                if k not in cuts or d[k] < np.hypot(*(c.xy[k] - centres[cuts[k]])):
                    cuts[k] = jc
        order = sorted(cuts)
        for a, b in zip(order[:-1], order[1:]):
            if b - a >= 1 and cuts[a] != cuts[b] or (b - a >= 2):
                pieces.append((ci, a, b, cuts[a], cuts[b]))
    used = sorted({p[3] for p in pieces} | {p[4] for p in pieces})
    jid = {c: i for i, c in enumerate(used)}
    junctions = [Junction(jid[c], float(centres[c][0]), float(centres[c][1])) for c in used]
    trajs: list[Trajectory] = []
    for ci, a, b, j0, j1 in pieces:
        c = captured[ci]
        xy = np.array(c.xy[a : b + 1], dtype=float)
        h = np.array(c.heading[a : b + 1], dtype=float)
        offs = np.concatenate([[0.0], np.cumsum(np.hypot(*np.diff(xy, axis=0).T))])
        if offs[-1] <= 0:
            continue
        dep, arr = _end_bearings(xy, offs)
        tid = len(trajs)
        trajs.append(
            Trajectory(
                tid,
                jid[j0],
                jid[j1],
                xy,
                h,
                offs,
                tuple((c.label, i) for i in range(a, b + 1)),
                c.label,
                None,
                -1,
                dep,
                arr,
            )
        )
    # reverse twins: same junctions swapped, frames close to each other
    seg = 0
    for t in trajs:
        if t.segment >= 0:
            continue
        t.segment = seg
        for u in trajs:
            if u.segment >= 0 or u.start != t.end or u.end != t.start:
                continue
            d = np.hypot(
                *(
                    np.asarray(
                        LineString(u.xy).interpolate(LineString(u.xy).length * 0.5).coords[0]
                    )
                    - np.asarray(
                        LineString(t.xy).interpolate(LineString(t.xy).length * 0.5).coords[0]
                    )
                )
            )
            if d <= 2 * radius:
                u.segment = seg
                u.reverse, t.reverse = t.id, u.id
                break
        seg += 1
    if not trajs:
        raise PoseGraphError("no trajectory pieces between junctions were found")
    meta = {
        "radius": radius,
        "merge": merge,
        "min_crossing_angle": min_crossing_angle,
        "spacing": None,
    }
    spacing = float(np.median(np.concatenate([np.diff(t.offsets) for t in trajs])))
    meta["spacing"] = spacing
    # keep only junctions used and re-check reachability
    return PoseGraph(junctions, trajs, spacing, source, name, meta)


# ---------------------------------------------------------------------------- exports
def export_capture(
    graph: PoseGraph,
    out: str | Path,
    trajectories: Sequence[int] | None = None,
    kind: str = "video",
    geo: GeoFrame | None = None,
    fps: float = 10.0,
) -> tuple[Path, Path]:
    """Write trajectories of ``graph`` (default: all) as a capture, the way a 360° camera
    would record them: ``kind="video"`` writes ``<out>/capture.mp4`` (OpenCV, mp4v) plus
    ``<out>/capture.csv``; ``kind="folder"`` writes ``<out>/frames/*.png`` plus
    ``<out>/frames/poses.csv``. With ``geo`` the CSV has ``lat``/``lon`` columns, else
    ``x``/``y``. Returns ``(capture path, pose CSV path)``."""
    import cv2

    if graph.source is None:
        raise PoseGraphError("export_capture needs a graph with a frame source")
    if kind not in ("video", "folder"):
        raise PoseGraphError(f"export kind={kind!r} must be 'video' or 'folder'")
    out = Path(out)
    ids = list(range(len(graph.trajectories))) if trajectories is None else list(trajectories)
    rows: list[dict[str, Any]] = []
    writer = None
    if kind == "folder":
        target = out / "frames"
        target.mkdir(parents=True, exist_ok=True)
        csv_path = target / "poses.csv"
    else:
        out.mkdir(parents=True, exist_ok=True)
        target = out / "capture.mp4"
        csv_path = out / "capture.csv"
    n = 0
    try:
        for t_id in ids:
            t = graph.trajectories[t_id]
            for i in range(t.n_frames):
                img, ph = graph.panorama(State(t_id, i))
                row: dict[str, Any] = {"trajectory": str(t_id)}
                x, y = (float(v) for v in t.xy[i])
                if geo is not None:
                    lat, lon = geo.to_latlon(x, y)
                    row.update(lat=f"{lat:.8f}", lon=f"{lon:.8f}")
                else:
                    row.update(x=f"{x:.3f}", y=f"{y:.3f}")
                row.update(heading=f"{float(t.heading[i]):.2f}", pano_heading=f"{ph:.2f}")
                bgr = cv2.cvtColor(img, cv2.COLOR_RGB2BGR)
                if kind == "folder":
                    fname = f"t{t_id:05d}_{i:04d}.png"
                    cv2.imwrite(str(target / fname), bgr)
                    row["file"] = fname
                else:
                    if writer is None:
                        h, w = bgr.shape[:2]
                        writer = cv2.VideoWriter(
                            str(target), cv2.VideoWriter_fourcc(*"mp4v"), fps, (w, h)
                        )
                        if not writer.isOpened():
                            raise PoseGraphError(f"{target}: OpenCV cannot write an mp4 video")
                    writer.write(bgr)
                    row["frame"] = n
                rows.append(row)
                n += 1
    finally:
        if writer is not None:
            writer.release()
    cols = ["trajectory", "file" if kind == "folder" else "frame"]
    cols += ["lat", "lon"] if geo is not None else ["x", "y"]
    cols += ["heading", "pano_heading"]
    with open(csv_path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        w.writerows(rows)
    return (target if kind == "video" else target), csv_path


# ---------------------------------------------------------------------------- validation
def turn_sequence(
    points: Sequence[tuple[float, float]],
    min_turn: float = 50.0,
    chord: float = 12.0,
    step: float = 2.0,
) -> str:
    """Turns along a polyline as a string of ``L``/``R``: places where the bearing over
    the next ``chord`` metres differs from the bearing over the previous ``chord`` metres
    by at least ``min_turn`` degrees (one turn per peak; peaks closer than ``2 * chord``
    are merged)."""
    if len(points) < 2:
        return ""
    line = LineString(points)
    L = float(line.length)
    if L < 2 * chord:
        return ""
    s = np.arange(chord, L - chord + 1e-9, step)
    change = []
    for v in s:
        a, b, c = (line.interpolate(w) for w in (v - chord, v, v + chord))
        change.append(
            float(angle_diff(bearing(c.x - b.x, c.y - b.y), bearing(b.x - a.x, b.y - a.y)))
        )
    ch = np.array(change)
    turns: list[tuple[float, float]] = []
    i = 0
    while i < len(ch):
        if abs(ch[i]) >= min_turn:
            j = i
            while (
                j + 1 < len(ch)
                and abs(ch[j + 1]) >= min_turn
                and np.sign(ch[j + 1]) == np.sign(ch[i])
            ):
                j += 1
            k = i + int(np.argmax(np.abs(ch[i : j + 1])))
            pos, val = float(s[k]), float(ch[k])
            if turns and pos - turns[-1][0] < 2 * chord and np.sign(val) == np.sign(turns[-1][1]):
                pass
            else:
                turns.append((pos, val))
            i = j + 1
        else:
            i += 1
    return "".join("R" if v > 0 else "L" for _, v in turns)


def edit_similarity(a: str, b: str) -> float:
    """``1 - Levenshtein(a, b) / max(len(a), len(b))`` (1.0 for two empty strings)."""
    if not a and not b:
        return 1.0
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        cur = [i]
        for j, cb in enumerate(b, start=1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return 1.0 - prev[-1] / max(len(a), len(b))


def route_points(graph: PoseGraph, route: Sequence[State]) -> list[tuple[float, float]]:
    """Positions of a route's states, consecutive duplicates removed."""
    pts: list[tuple[float, float]] = []
    for s in route:
        p = graph.position(s)
        if not pts or math.dist(pts[-1], p) > 1e-6:
            pts.append(p)
    return pts


def validate_posegraph(
    graph: PoseGraph,
    city: Any,
    pairs: int = 100,
    min_distance: float = 150.0,
    max_distance: float = 800.0,
    seed: int = 0,
) -> dict[str, Any]:
    """How well ``graph`` agrees with ``city``'s walkable network.

    * node-to-street distance: each junction's (and each frame's) distance to the
      nearest walkable network point, metres (median and 95th percentile);
    * for ``pairs`` random junction pairs ``min_distance``..``max_distance`` metres apart
      (straight line): the shortest route on the pose graph against the shortest walk on
      the network between the nearest network nodes -- the relative path-length
      disagreement ``|L_pose - L_net| / L_net`` (median, 95th percentile), the length
      ratio, and the agreement of the two turn sequences (:func:`turn_sequence`): the
      fraction of identical sequences and the mean :func:`edit_similarity`.
    """
    jxy = np.array([[j.x, j.y] for j in graph.junctions])
    _, jd = city.nearest_walkable_points(jxy)
    _, fd = city.nearest_walkable_points(graph.frame_xy)
    rng = np.random.default_rng(seed)
    rel, ratio, same, sim = [], [], [], []
    tried = unreachable = 0
    n = len(graph.junctions)
    while len(rel) < pairs and tried < pairs * 50:
        tried += 1
        a, b = (int(v) for v in rng.integers(n, size=2))
        d = float(np.hypot(*(jxy[a] - jxy[b])))
        if not (min_distance <= d <= max_distance):
            continue
        goal_states = [State(k, 0) for k in graph.out_of[b]] + [
            State(k, graph.trajectories[k].last) for k in graph.into[b]
        ]
        if not graph.out_of[a]:
            continue
        field_ = graph.distance_field(goal_states)
        lp = field_.junction[a]
        if not math.isfinite(lp):
            unreachable += 1
            continue
        start = State(graph.out_of[a][0], 0)
        pts_p = route_points(graph, field_.route(start))
        na, nb = city.nearest_node(*jxy[a]), city.nearest_node(*jxy[b])
        try:
            path = city.shortest_path(na, nb)
        except nx.NetworkXNoPath:
            unreachable += 1
            continue
        ln = city.path_length(path)
        if ln <= 0:
            continue
        pts_n: list[tuple[float, float]] = [tuple(jxy[a])]
        for u, v in zip(path[:-1], path[1:]):
            pts_n += list(city.edge_geometry(u, v).coords)
        pts_n.append(tuple(jxy[b]))
        rel.append(abs(lp - ln) / ln)
        ratio.append(lp / ln)
        ts_p, ts_n = turn_sequence(pts_p), turn_sequence(pts_n)
        same.append(ts_p == ts_n)
        sim.append(edit_similarity(ts_p, ts_n))

    def pct(v, q):
        return float(np.percentile(v, q)) if len(v) else float("nan")

    return {
        "junctions": n,
        "frames": graph.n_frames,
        "node_to_street_median_m": pct(jd, 50),
        "node_to_street_p95_m": pct(jd, 95),
        "frame_to_street_median_m": pct(fd, 50),
        "frame_to_street_p95_m": pct(fd, 95),
        "pairs": len(rel),
        "unreachable_pairs": unreachable,
        "length_disagreement_median": pct(rel, 50),
        "length_disagreement_p95": pct(rel, 95),
        "length_ratio_median": pct(ratio, 50),
        "turn_sequence_exact": float(np.mean(same)) if same else float("nan"),
        "turn_sequence_similarity": float(np.mean(sim)) if sim else float("nan"),
    }


def format_validation(v: dict[str, Any]) -> str:
    """:func:`validate_posegraph`'s result as a Markdown table."""
    rows = [
        ("junctions / frames", f"{v['junctions']} / {v['frames']}"),
        (
            "node-to-street distance, median / p95",
            f"{v['node_to_street_median_m']:.2f} m / {v['node_to_street_p95_m']:.2f} m",
        ),
        (
            "frame-to-street distance, median / p95",
            f"{v['frame_to_street_median_m']:.2f} m / {v['frame_to_street_p95_m']:.2f} m",
        ),
        ("start/goal pairs (unreachable)", f"{v['pairs']} ({v['unreachable_pairs']})"),
        (
            "path-length disagreement abs(Lp - Ln) / Ln, median / p95",
            f"{100 * v['length_disagreement_median']:.1f} % / "
            f"{100 * v['length_disagreement_p95']:.1f} %",
        ),
        ("path-length ratio Lp/Ln, median", f"{v['length_ratio_median']:.3f}"),
        ("turn sequences identical", f"{100 * v['turn_sequence_exact']:.1f} %"),
        ("turn-sequence similarity (1 - edit distance)", f"{v['turn_sequence_similarity']:.3f}"),
    ]
    out = ["| measure | value |", "|---|---|"]
    out += [f"| {a} | {b} |" for a, b in rows]
    return "\n".join(out)


def format_statistics(s: dict[str, Any]) -> str:
    """:meth:`PoseGraph.statistics` as the lines ``urban-gym info --posegraph`` prints."""
    w, h = s["extent_m"]
    hist = ", ".join(f"{k}: {v}" for k, v in s["degree_histogram"].items())
    return "\n".join(
        [
            f"pose graph         {s['name']} (frames every {s['spacing_m']:g} m)",
            f"nodes (junctions)  {s['junctions']}",
            f"edges (segments)   {s['segments']}",
            f"video segments     {s['trajectories']} (one per segment and direction)",
            f"mean branching     {s['mean_branching']:.2f}",
            f"degree histogram   {hist}",
            f"dead ends          {s['dead_ends']}",
            f"streets            {s['streets']} named",
            f"frames             {s['frames']}",
            f"street length      {s['length_km']:.2f} km (mean segment {s['mean_segment_m']:.0f} m)",
            f"extent             {w:.0f} m east-west x {h:.0f} m north-south",
        ]
    )


_GRAPHS: OrderedDict[tuple, PoseGraph] = OrderedDict()


def load_posegraph(city: str, spacing: float = DEFAULT_SPACING_M, **params: Any) -> PoseGraph:
    """The pose graph of ``load_city(city)`` built by :meth:`PoseGraph.from_city` with
    ``spacing`` and ``params``, memoised per process (without a frame source; attach one
    with :meth:`PoseGraph.with_source`)."""
    from urban_gym.world.loader import load_city

    key = (str(city), float(spacing), tuple(sorted((k, _freeze(v)) for k, v in params.items())))
    g = _GRAPHS.get(key)
    if g is None:
        g = PoseGraph.from_city(load_city(city), spacing=spacing, **params)
        g.meta["city_spec"] = str(city)
        _GRAPHS[key] = g
        while len(_GRAPHS) > 8:
            _GRAPHS.popitem(last=False)
    return g


def _freeze(v: Any) -> Any:
    return tuple(v) if isinstance(v, (list, tuple)) else v
