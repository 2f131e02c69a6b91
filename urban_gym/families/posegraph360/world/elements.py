"""The elements of a pose graph: junctions, trajectories of frames, states and branches.

A :class:`Trajectory` is a directed street segment from one :class:`Junction` to another,
sampled as frames (position in metres, travel heading in degrees) every ``spacing`` metres;
frame 0 lies at the start junction and the last frame at the end junction. A
:class:`State` names one frame. The constants are the defaults of the builders.

Units: metres, degrees clockwise from north (x east, y north).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from shapely.geometry import LineString

from urban_gym.errors import GraphError
from urban_gym.world.geo import bearing

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


class PoseGraphError(GraphError):
    """A pose graph cannot be built or read: bad pose CSV, missing frames, unreadable
    video, an empty street selection.
    """


@dataclass(frozen=True)
class Junction:
    """A node of the pose graph at ``(x, y)`` metres. ``network_nodes`` are the City
    network nodes merged into it (empty for imported graphs).
    """

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
        """The number of frames along the trajectory."""
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


@dataclass
class Branch:
    """An outgoing trajectory at a junction as seen from a camera bearing: ``relative``
    is its departure bearing minus the camera bearing, degrees in (-180, 180].
    """

    trajectory: int
    bearing: float
    relative: float


#: Branch actions and the relative bearing (degrees) each one aims at; a branch is
#: selectable by the action whose sector (centre +-45 degrees) holds it.
BRANCH_SECTORS: dict[str, float] = {"LEFT": -90.0, "UP": 0.0, "RIGHT": 90.0}


def end_bearings(xy: np.ndarray, offs: np.ndarray) -> tuple[float, float]:
    """Departure and arrival bearings (degrees) of a trajectory with frame positions
    ``xy`` (metres) at arc lengths ``offs``, measured over :data:`BEARING_BASE_M`.
    """
    L = float(offs[-1])
    base = min(BEARING_BASE_M, L)
    line = LineString(xy)
    p = line.interpolate(base)
    q = line.interpolate(L - base)
    dep = bearing(p.x - xy[0][0], p.y - xy[0][1])
    arr = bearing(xy[-1][0] - q.x, xy[-1][1] - q.y)
    return float(dep), float(arr)
