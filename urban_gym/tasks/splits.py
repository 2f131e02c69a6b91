"""Held-out splits: ``train`` / ``val`` / ``test`` task sets that share nothing a policy
could memorise.

Two kinds of split, after VELMA's seen/unseen areas and the procedural worlds of MiniGrid:

* **By area** (one real city, or a Touchdown graph): a *held-out area* of the city -- a
  polygon (metres in the world's frame, or latitude/longitude when ``latlon``) -- holds
  the test tasks, a second one the validation tasks. A task is a ``test`` task when its
  start and every goal place lie inside the test area (``val`` likewise); a ``train``
  task has its start and every goal place outside both areas; tasks that straddle a
  border are left out, and so are train tasks whose destination (its name, or its
  position to the metre) is also a val or test destination. So train and test share no
  destination and no train start lies in a held-out area. Without polygons
  :func:`default_areas` holds out the eastern 20% of the tasks' extent for test and the
  10% next to it for val.
* **By seed** (procedural cities): city seed ``s`` belongs to ``val`` when ``s % 10 ==
  8``, to ``test`` when ``s % 10 == 9`` and to ``train`` otherwise
  (:func:`split_of_seed`), so train and test never share a city.

:func:`spatial_split` returns the three lists; :func:`write_splits` writes them as
``<prefix>_train.jsonl`` etc. (``urban-gym split-suite``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shapely.geometry import Point, Polygon, box

from urban_gym.tasks.spec import TaskError, TaskSpec

SPLITS: tuple[str, ...] = ("train", "val", "test")


def split_of_seed(seed: int) -> str:
    """The split of procedural city seed ``seed`` (see the module docstring)."""
    r = int(seed) % 10
    return "val" if r == 8 else "test" if r == 9 else "train"


def seeds_of(split: str, n: int, start: int = 0) -> list[int]:
    """The first ``n`` city seeds >= ``start`` of ``split``."""
    if split not in SPLITS:
        raise TaskError(f"split={split!r} must be one of {', '.join(SPLITS)}")
    out: list[int] = []
    s = int(start)
    while len(out) < n:
        if split_of_seed(s) == split:
            out.append(s)
        s += 1
    return out


@dataclass(frozen=True)
class HeldOutAreas:
    """The held-out ``test`` and ``val`` areas (shapely polygons, metres)."""

    test: Polygon
    val: Polygon | None = None

    def split_of(self, start: tuple[float, float], goals: Sequence[tuple[float, float]]) -> str:
        """``train``, ``val``, ``test`` or ``""`` (straddles a border) for a task."""
        pts = [Point(start), *(Point(g) for g in goals)]
        for name, area in (("test", self.test), ("val", self.val)):
            if area is None:
                continue
            inside = [area.covers(p) for p in pts]
            if all(inside):
                return name
            if any(inside):
                return ""
        return "train"


def default_areas(
    points: Sequence[tuple[float, float]], test_fraction: float = 0.2, val_fraction: float = 0.1
) -> HeldOutAreas:
    """Eastern stripes of the extent of ``points``: the last ``test_fraction`` of the width
    for test, the ``val_fraction`` west of it for val.
    """
    xs = [p[0] for p in points]
    ys = [p[1] for p in points]
    x0, x1, y0, y1 = min(xs), max(xs), min(ys), max(ys)
    w = x1 - x0
    xt = x1 - test_fraction * w
    xv = xt - val_fraction * w
    pad = 1.0
    return HeldOutAreas(
        test=box(xt, y0 - pad, x1 + pad, y1 + pad),
        val=box(xv, y0 - pad, xt, y1 + pad) if val_fraction > 0 else None,
    )


def polygon(points: Sequence[Sequence[float]], latlon: bool = False, frame: Any = None) -> Polygon:
    """A polygon from ``[[x, y], ...]`` metres, or ``[[lat, lon], ...]`` degrees converted
    with ``frame`` (a :class:`~urban_gym.world.geo.GeoFrame`) when ``latlon``.
    """
    pts = [tuple(float(v) for v in p) for p in points]
    if len(pts) < 3 or any(len(p) != 2 for p in pts):
        raise TaskError(f"a held-out polygon needs 3 or more [x, y] points, got {points!r}")
    if latlon:
        if frame is None:
            raise TaskError("a latitude/longitude polygon needs the world's frame")
        pts = [tuple(float(v) for v in frame.to_xy(lat, lon)) for lat, lon in pts]
    return Polygon(pts)


# ---------------------------------------------------------------- task positions
def task_points(task: TaskSpec) -> tuple[tuple[float, float], list[tuple[float, float]]]:
    """A task's start and goal places (metres in its world's frame); no goal places for a
    question task. Its family says where they are
    (:meth:`~urban_gym.tasks.families.Family.task_points`).
    """
    from urban_gym.tasks.families import get_family

    return get_family(task.family).task_points(task)


def destination_keys(task: TaskSpec, goals: Sequence[tuple[float, float]]) -> set[str]:
    """What names a task's destinations: names and positions rounded to the metre."""
    g = task.goal or {}
    keys = {f"@{round(x)},{round(y)}" for x, y in goals}
    for k in ("name", "poi", "poi_id", "osm_id"):
        if g.get(k) not in (None, ""):
            keys.add(f"{k}={g[k]}")
    for st in g.get("stops") or []:
        for k in ("name", "poi_id"):
            if st.get(k) not in (None, ""):
                keys.add(f"{k}={st[k]}")
    return keys


def spatial_split(
    tasks: Sequence[TaskSpec],
    areas: HeldOutAreas | None = None,
    points: Callable[[TaskSpec], Any] = task_points,
) -> dict[str, list[TaskSpec]]:
    """``{"train": [...], "val": [...], "test": [...]}`` of ``tasks`` by area (see the
    module docstring; ``areas`` default: :func:`default_areas` of the tasks' starts and
    goals).
    """
    located = [(t, *points(t)) for t in tasks]
    if areas is None:
        every = [p for _, s, gs in located for p in (s, *gs)]
        if not every:
            raise TaskError("no tasks to split")
        areas = default_areas(every)
    out: dict[str, list[TaskSpec]] = {s: [] for s in SPLITS}
    keys: dict[str, set[str]] = {s: set() for s in SPLITS}
    for t, start, goals in located:
        name = areas.split_of(start, goals)
        if name:
            out[name].append(t)
            keys[name] |= destination_keys(t, goals) if goals else set()
    held = keys["val"] | keys["test"]
    train = {id(t) for t in out["train"]}
    out["train"] = [
        t for t, s, gs in located if id(t) in train and not destination_keys(t, gs) & held
    ]
    return out


def write_splits(
    tasks: Sequence[TaskSpec], prefix: str | os.PathLike, areas: HeldOutAreas | None = None
) -> dict[str, Path]:
    """Write :func:`spatial_split` of ``tasks`` to ``<prefix>_<split>.jsonl``; returns the
    paths (a split may be empty: then it is not written and is missing here).
    """
    from urban_gym.tasks.suite import save_suite

    parts = spatial_split(tasks, areas)
    base = Path(prefix)
    out: dict[str, Path] = {}
    for name, ts in parts.items():
        if ts:
            out[name] = save_suite(base.parent / f"{base.name}_{name}.jsonl", ts)
    return out


__all__ = [
    "SPLITS",
    "HeldOutAreas",
    "default_areas",
    "destination_keys",
    "polygon",
    "seeds_of",
    "spatial_split",
    "split_of_seed",
    "task_points",
    "write_splits",
]
