"""The PoseGraph360 type table and the constants its generators and evaluator share
(lengths in metres, angles in degrees).
"""

from __future__ import annotations

from urban_gym.tasks.spec import TaskType
from urban_gym.world.city import OBJECT_KINDS
from urban_gym.world.osm_tags import kind_phrase

FAMILY = "posegraph360"
#: The type table (see the package docstring); generators draw their random numbers
#: seeded by a type's position in it, so new types go at the end.
TASK_TYPES: dict[str, TaskType] = {
    t.name: t
    for t in (
        TaskType("localization", "question", "answer the 5x5 grid cell of the start"),
        TaskType("landmark_name", "navigation", "go to a named place and answer there"),
        TaskType("landmark_image", "navigation", "go to the place shown in a photo"),
        TaskType("map_navigation", "navigation", "go to the red marker of a reference map"),
        TaskType("vln", "navigation", "follow numbered directions to a place"),
        TaskType("object_count", "question", "count mapped objects of one kind in a range"),
        TaskType("relational", "question", "name the place left/right of/across from X"),
        # grounded types outside 360CityArena's seven (urban_gym.families.posegraph360.tasks.grounded)
        TaskType("landmark_bbox", "question", "box a named sign in the current view"),
        TaskType("landmark_intervals", "question", "frame intervals a sign is visible in"),
    )
}
#: 360CityArena's seven task types (its 175-task suite); the default suite has these.
PAPER_TASK_TYPES: tuple[str, ...] = tuple(TASK_TYPES)[:7]
#: The grounded types, generated into their own committed suite (``suite="grounded"``).
GROUNDED_TASK_TYPES: tuple[str, ...] = ("landmark_bbox", "landmark_intervals")
NAVIGATION_TYPES = frozenset(n for n, t in TASK_TYPES.items() if t.kind == "navigation")
QUESTION_TYPES = frozenset(n for n, t in TASK_TYPES.items() if t.kind == "question")
DIFFICULTY_LEVELS = ("easy", "medium", "hard")

#: Difficulty bands ``[low, high)`` by task type (see the module docstring).
THRESHOLDS: dict[str, dict[str, tuple[float, float]]] = {
    "localization": {"easy": (0.5, 1.01), "medium": (0.2, 0.5), "hard": (0.0, 0.2)},
    "landmark": {"easy": (15.0, 80.0), "medium": (80.0, 150.0), "hard": (150.0, 250.0)},
    # map navigation is graded by the route's decision points (360CityArena: 3.3 / 6.4 /
    # 9.0 on average); starts are drawn 60-900 m from the goal along the pose graph
    "map_navigation": {"easy": (3, 5), "medium": (5, 8), "hard": (8, 13)},
    "vln": {"easy": (3, 5), "medium": (5, 7), "hard": (7, 9)},
    "object_count": {"easy": (3, 5), "medium": (5, 7), "hard": (8, 13)},
    "relational": {"easy": (0.0, 15.0), "medium": (15.0, 80.0), "hard": (80.0, 200.0)},
}

#: Map navigation starts are drawn this far (m) from the goal along the pose graph.
MAP_NAVIGATION_RANGE_M = (60.0, 900.0)
#: VLN starts are drawn this far (m) from the landmark along the pose graph.
VLN_RANGE_M = (40.0, 700.0)

#: 360CityArena's per-difficulty statistics (its section 3.3): map navigation route
#: length (m) and decision points, object-count ground truth, VLN instruction steps.
PAPER_STATISTICS: dict[str, dict[str, dict[str, float]]] = {
    "map_navigation": {
        "easy": {"route_length_m": 124.0, "decision_points": 3.3},
        "medium": {"route_length_m": 247.0, "decision_points": 6.4},
        "hard": {"route_length_m": 347.0, "decision_points": 9.0},
    },
    "object_count": {
        "easy": {"count": 3.5},
        "medium": {"count": 4.6},
        "hard": {"count": 9.0},
    },
    "vln": {
        "easy": {"instruction_steps": 4.4},
        "medium": {"instruction_steps": 5.9},
        "hard": {"instruction_steps": 7.4},
    },
}

#: A landmark's sign has no other POI sign within this distance (metres).
LANDMARK_ISOLATION_M = 6.0
#: Horizontal field of view (degrees) of a landmark's reference photo.
LANDMARK_FOV = 45.0
#: Goal radius in metres (coordinate match).
GOAL_RADIUS_M = 10.0
MAP_GOAL_RADIUS_M = 20.0
#: Objects count when within this many metres of the range's centreline.
COUNT_CORRIDOR_M = 15.0
#: Share of candidate ranges with a zero count that are kept (they are common).
ZERO_COUNT_SHARE = 0.15
#: Count answers are chosen among "0".."MAX_COUNT".
MAX_COUNT = 24
#: A place's sign must be within this distance (m) of its goal frame.
MAX_POI_OFFSET_M = 20.0
#: The default step limit of the environment (the generator checks feasibility with it).
DEFAULT_STEP_LIMIT = 50
#: The default number of consecutive moves away from the goal that end an episode.
AWAY_LIMIT = 5
#: A task type gives up after this many failed attempts in a row (the city lacks what it needs).
STALL_ATTEMPTS = 2000
#: Frames moved by W SMALL / MEDIUM / LARGE.
DEFAULT_FORWARD_FRAMES: tuple[int, int, int] = (1, 3, 5)
#: Camera rotation of A/D by size (degrees); ``None`` is the default rotation.
ROTATIONS: dict[str | None, float] = {None: 24.0, "SMALL": 30.0, "MEDIUM": 60.0, "LARGE": 90.0}


def _objects_phrase(kind: str) -> str:
    """The plural phrase of a street-object kind, from the first OSM tag that makes it."""
    tag = next(t for t, k in OBJECT_KINDS.items() if k == kind)
    return kind_phrase(*tag, plural=True)


#: The street-object kinds that object-count tasks count -> how the question names them
#: (plural, from the one tag-to-English table :func:`~urban_gym.world.osm_tags.kind_phrase`).
COUNT_KINDS: dict[str, str] = {
    k: _objects_phrase(k)
    for k in (
        "tree",
        "street_lamp",
        "bench",
        "bus_stop",
        "waste_basket",
        "bicycle_parking",
        "vending_machine",
        "traffic_signals",
        "crossing",
    )
}
