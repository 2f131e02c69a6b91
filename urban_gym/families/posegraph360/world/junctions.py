"""Junction detection: joining captured trajectories into a pose graph (the Movie Map
recipe: geo-located frames -> intersections -> snippets joined into a graph).

:func:`join_captures` finds the junctions and cuts the captures into trajectories between
them; :func:`~urban_gym.families.posegraph360.world.detect_junctions` wraps the result in a
:class:`~urban_gym.families.posegraph360.world.PoseGraph`.

Units: metres, degrees clockwise from north (x east, y north).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from shapely.geometry import LineString, Point

from urban_gym.families.posegraph360.world.elements import (
    Junction,
    PoseGraphError,
    Trajectory,
    end_bearings,
)
from urban_gym.world.geo import angle_diff


@dataclass
class CapturedTrajectory:
    """One captured trajectory before junction detection: ``xy`` ``(n, 2)`` metres,
    ``heading`` ``(n,)`` degrees, frames keyed ``(label, row index)``.
    """

    label: str
    xy: np.ndarray
    heading: np.ndarray


@dataclass
class JoinedCaptures:
    """What :func:`join_captures` found: the junctions, the trajectory pieces between them,
    their median frame spacing (metres) and the detection parameters (``meta``).
    """

    junctions: list[Junction]
    trajectories: list[Trajectory]
    spacing: float
    meta: dict[str, Any]


def join_captures(
    captured: Sequence[CapturedTrajectory],
    radius: float = 6.0,
    merge: float = 10.0,
    min_crossing_angle: float = 30.0,
) -> JoinedCaptures:
    """Find the junctions of captured trajectories and cut them into pieces between them.

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
    cand += _crossing_candidates(captured, radius, merge, min_crossing_angle)
    centres = _cluster(cand, merge)
    pieces = _split_at_junctions(captured, centres, radius)
    junctions, trajs = _piece_trajectories(captured, pieces, centres)
    _pair_reverse_twins(trajs, radius)
    if not trajs:
        raise PoseGraphError("no trajectory pieces between junctions were found")
    meta: dict[str, Any] = {
        "radius": radius,
        "merge": merge,
        "min_crossing_angle": min_crossing_angle,
        "spacing": None,
    }
    spacing = float(np.median(np.concatenate([np.diff(t.offsets) for t in trajs])))
    meta["spacing"] = spacing
    return JoinedCaptures(junctions, trajs, spacing, meta)


def _close_pairs(
    allxy: np.ndarray,
    allh: np.ndarray,
    owner: np.ndarray,
    radius: float,
    min_crossing_angle: float,
) -> dict[tuple[int, int], list[tuple[float, int, int]]]:
    """For each pair of captures ``(a, b)``, ``(distance, frame i, frame j)`` of the frames
    within ``radius`` metres of each other whose headings differ by at least
    ``min_crossing_angle`` degrees modulo 180 (found with a grid of ``radius`` cells).
    """
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
    return best_pair


def _crossing_candidates(
    captured: Sequence[CapturedTrajectory],
    radius: float,
    merge: float,
    min_crossing_angle: float,
) -> list[tuple[float, float]]:
    """Junction candidates where two captures cross (step 1 of :func:`join_captures`):
    one per crossing, the midpoint of the locally closest pair of frames.
    """
    allxy = np.concatenate([c.xy for c in captured])
    allh = np.concatenate([c.heading for c in captured])
    owner = np.concatenate([np.full(len(c.xy), i) for i, c in enumerate(captured)])
    best_pair = _close_pairs(allxy, allh, owner, radius, min_crossing_angle)
    lines = [LineString(c.xy) for c in captured]

    def leaves(a: int, i: int, b: int) -> bool:
        """Whether capture ``a`` is farther than ``radius`` from capture ``b`` at
        ``2 * radius`` metres before and after its frame ``i`` (a crossing, not a bend
        of the same street or a shared stretch).
        """
        la = lines[a]
        s = float(la.project(Point(allxy[i])))
        for v in (s - 2.0 * radius, s + 2.0 * radius):
            if 0.0 <= v <= la.length and la.interpolate(v).distance(lines[b]) <= radius:
                return False
        return True

    cand: list[tuple[float, float]] = []

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
    return cand


def _cluster(cand: list[tuple[float, float]], merge: float) -> np.ndarray:
    """Centres (metres) of the clusters of candidates closer than ``merge`` metres
    (single linkage), ordered by their first candidate.
    """
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
    return centres


def _split_at_junctions(
    captured: Sequence[CapturedTrajectory], centres: np.ndarray, radius: float
) -> list[tuple[int, int, int, int, int]]:
    """Pieces ``(capture, first frame, last frame, start junction, end junction)`` of each
    capture cut at its frames nearest to every junction it passes within ``radius``.
    """
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
    return pieces


def _piece_trajectories(
    captured: Sequence[CapturedTrajectory],
    pieces: list[tuple[int, int, int, int, int]],
    centres: np.ndarray,
) -> tuple[list[Junction], list[Trajectory]]:
    """The junctions the pieces use (renumbered) and one trajectory per piece of
    non-zero length.
    """
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
        dep, arr = end_bearings(xy, offs)
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
    return junctions, trajs


def _pair_reverse_twins(trajs: list[Trajectory], radius: float) -> None:
    """Give each trajectory its ``segment`` id, pairing ``reverse`` twins: the same
    junctions swapped, midpoints within ``2 * radius`` metres.
    """
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
