"""The PoseGraph360 type table and the constants its generators and evaluator share
(lengths in metres, angles in degrees).
"""

from __future__ import annotations

from urban_gym.families.posegraph360 import paper
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
        TaskType("landmark_visibility", "question", "when a sign is visible in a walk's video"),
        # the protocol's four image tasks (urban_gym.families.posegraph360.tasks.grounded_image)
        TaskType("relative_position", "question", "where you stand in a landmark's frame + box"),
        TaskType("future_observation", "question", "which candidate follows a camera turn + box"),
        TaskType("self_position", "question", "where a landmark is relative to you + box"),
        TaskType("action_decision", "question", "which camera turn faces a landmark + box"),
        TaskType("composite_behaviour", "question", "composite behaviours of a walk's video"),
        TaskType("atomic_behaviour", "question", "atomic behaviours of a walk's video"),
    )
}
#: 360CityArena's seven task types (its 175-task suite); the default suite has these.
PAPER_TASK_TYPES: tuple[str, ...] = tuple(TASK_TYPES)[:7]
#: The grounded types, generated into their own committed suite (``suite="grounded"``).
GROUNDED_TASK_TYPES: tuple[str, ...] = (
    "landmark_bbox",
    "landmark_visibility",
    "relative_position",
    "future_observation",
    "self_position",
    "action_decision",
    "composite_behaviour",
    "atomic_behaviour",
)
#: The grounded track's video types (:mod:`~urban_gym.families.posegraph360.tasks.video`).
VIDEO_TASK_TYPES: tuple[str, ...] = (
    "landmark_visibility",
    "composite_behaviour",
    "atomic_behaviour",
)
#: Task types renamed since: old name -> new name.
RENAMED_TYPES: dict[str, str] = {"landmark_intervals": "landmark_visibility"}
NAVIGATION_TYPES = frozenset(n for n, t in TASK_TYPES.items() if t.kind == "navigation")
QUESTION_TYPES = frozenset(n for n, t in TASK_TYPES.items() if t.kind == "question")
DIFFICULTY_LEVELS = paper.DIFFICULTIES

#: 360CityArena's per-difficulty statistics (its section 3.3): map navigation route
#: length (m) and decision points, object-count ground truth, VLN instruction steps.
PAPER_STATISTICS = paper.STATISTICS
#: A suite's per-difficulty average counts as calibrated to the paper's when it lies
#: within this share of it (the check ``generate-suite`` prints).
CALIBRATION_TOLERANCE = 0.15

#: Difficulty bands ``[low, high)`` by task type (see the package docstring). Map
#: navigation is graded by route length (m): 360CityArena's average per difficulty +-
#: :data:`CALIBRATION_TOLERANCE`; within its band a suite keeps the routes whose decision
#: points bring the average closest to the paper's
#: (:mod:`~urban_gym.families.posegraph360.tasks.calibration`).
THRESHOLDS: dict[str, dict[str, tuple[float, float]]] = {
    "localization": {"easy": (0.5, 1.01), "medium": (0.2, 0.5), "hard": (0.0, 0.2)},
    "landmark": {"easy": (15.0, 80.0), "medium": (80.0, 150.0), "hard": (150.0, 250.0)},
    "map_navigation": {
        d: (
            round(v["route_length_m"] * (1.0 - CALIBRATION_TOLERANCE), 1),
            round(v["route_length_m"] * (1.0 + CALIBRATION_TOLERANCE), 1),
        )
        for d, v in PAPER_STATISTICS["map_navigation"].items()
    },
    "vln": {"easy": (4, 5), "medium": (5, 7), "hard": (7, 9)},
    "object_count": {"easy": (3, 5), "medium": (5, 6), "hard": (8, 11)},
    "relational": {"easy": (0.0, 15.0), "medium": (15.0, 80.0), "hard": (80.0, 200.0)},
}
#: The ``meta`` statistic each type's bands in :data:`THRESHOLDS` grade.
GRADED_BY: dict[str, str] = {
    "map_navigation": "route_length",
    "vln": "instruction_steps",
    "object_count": "count",
}

#: VLN starts are drawn this far (m) from the landmark along the pose graph.
VLN_RANGE_M = (40.0, 700.0)

#: A landmark's sign has no other POI sign within this distance (metres).
LANDMARK_ISOLATION_M = 6.0
#: Horizontal field of view (degrees) of a landmark's reference photo.
LANDMARK_FOV = 45.0
#: Goal radius in metres (coordinate match; 360CityArena section 3.4).
GOAL_RADIUS_M = paper.GOAL_RADIUS_M
MAP_GOAL_RADIUS_M = paper.MAP_GOAL_RADIUS_M
#: Objects count when within this many metres of the range's centreline.
COUNT_CORRIDOR_M = 15.0
#: Share of candidate ranges with a zero count that are kept (they are common).
ZERO_COUNT_SHARE = 0.15
#: Count answers are chosen among "0".."MAX_COUNT".
MAX_COUNT = 24
#: A place's sign must be within this distance (m) of its goal frame.
MAX_POI_OFFSET_M = 20.0
#: The default step limit of the environment (360CityArena appendix A.3).
DEFAULT_STEP_LIMIT = paper.STEP_LIMIT
#: The default number of consecutive moves away from the goal that end an episode.
AWAY_LIMIT = paper.AWAY_LIMIT
#: Every generated task's oracle needs at most this share of its step limit (30 of 50):
#: an agent that looks around has room to do so, as in the paper, where people solved
#: 92% of the map-navigation tasks within the 50 steps.
ORACLE_BUDGET_SHARE = 0.6
#: A task type gives up after this many failed attempts in a row (the city lacks what it needs).
STALL_ATTEMPTS = 2000
#: Frames moved by W SMALL / MEDIUM / LARGE (3 / 9 / 27 m at 3 m spacing), each size three
#: times the one before. The paper names the sizes "short / normal / long move" without a
#: distance; the long move is 9 frames so that the paper's own hard route (347 m, 9
#: decision points) can fit :data:`ORACLE_BUDGET_SHARE` of its step limit: it takes at
#: least 13 moves of 27 m, 9 branch choices and the answer, 23 of the 30 steps, where
#: 5-frame (15 m) moves would need at least 24 moves, 34 steps, in any city.
DEFAULT_FORWARD_FRAMES: tuple[int, int, int] = (1, 3, 9)
#: Camera rotation of A/D and tilt of Q/E by size (degrees; 360CityArena appendix B.1);
#: ``None`` is the default rotation.
ROTATIONS: dict[str | None, float] = dict(paper.ROTATION_DEG)
#: The camera's pitch stays within +-this (degrees): a LARGE tilt from level looks
#: straight up or down (the paper's 90 degrees; it states no other limit).
PITCH_LIMIT = 90.0


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
