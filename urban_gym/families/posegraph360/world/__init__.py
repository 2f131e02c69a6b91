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

The package's modules, along its seams:

==================  =====================================================================
``elements``        junctions, trajectories, states, branches, defaults, the error type
``frames``          frame sources: the interface and panoramas rendered on demand
``capture``         real captures: the pose CSV, image folders and 360° videos
``from_city``       building the trajectories of a City's streets
``junctions``       junction detection: joining captured trajectories
``graph``           :class:`PoseGraph`, :class:`GoalDistances` (distances and routes)
``export``          writing trajectories as a capture (video or image folder + pose CSV)
``validation``      agreement with a city's walkable network, printed reports
==================  =====================================================================

The pose CSV format is described in :mod:`urban_gym.families.posegraph360.world.capture`.

Units: metres, degrees clockwise from north (x east, y north).
"""

from urban_gym.families.posegraph360.world.capture import (
    ImageFolderFrames,
    PoseRow,
    VideoFrames,
    open_capture,
    read_pose_csv,
)
from urban_gym.families.posegraph360.world.elements import (
    BEARING_BASE_M,
    BRANCH_SECTORS,
    DEFAULT_MERGE_RADIUS_M,
    DEFAULT_MIN_STUB_M,
    DEFAULT_SPACING_M,
    EXCLUDED_HIGHWAYS,
    STREET_KINDS,
    Branch,
    Junction,
    PoseGraphError,
    State,
    Trajectory,
)
from urban_gym.families.posegraph360.world.export import export_capture
from urban_gym.families.posegraph360.world.frames import FrameSource, RenderedFrames
from urban_gym.families.posegraph360.world.graph import (
    GoalDistances,
    PoseGraph,
    detect_junctions,
    load_posegraph,
)
from urban_gym.families.posegraph360.world.junctions import CapturedTrajectory, join_captures
from urban_gym.families.posegraph360.world.validation import (
    edit_similarity,
    format_statistics,
    format_validation,
    route_points,
    turn_sequence,
    validate_posegraph,
)

__all__ = [
    "BEARING_BASE_M",
    "BRANCH_SECTORS",
    "DEFAULT_MERGE_RADIUS_M",
    "DEFAULT_MIN_STUB_M",
    "DEFAULT_SPACING_M",
    "EXCLUDED_HIGHWAYS",
    "STREET_KINDS",
    "Branch",
    "CapturedTrajectory",
    "FrameSource",
    "GoalDistances",
    "ImageFolderFrames",
    "Junction",
    "PoseGraph",
    "PoseGraphError",
    "PoseRow",
    "RenderedFrames",
    "State",
    "Trajectory",
    "VideoFrames",
    "detect_junctions",
    "edit_similarity",
    "export_capture",
    "format_statistics",
    "format_validation",
    "join_captures",
    "load_posegraph",
    "open_capture",
    "read_pose_csv",
    "route_points",
    "turn_sequence",
    "validate_posegraph",
]
