"""The seven PoseGraph360 task types: generators with ground truth from the city data,
difficulty thresholds, per-difficulty statistics, and the evaluator.

Task types (after the 360CityArena benchmark):

==================  ==========================================================================
``localization``    answer the 5x5 grid cell (``x:i y:j``) of the start; reference: grid map
``landmark_name``   go to a named place "not far from the start" and answer there
``landmark_image``  the same targets and starts, the place shown as a photo of its facade
``map_navigation``  go to the red marker of a reference map (blue marker: the start)
``vln``             follow numbered directions built from the route, ending
                    "Stop in front of <POI>"
``object_count``    count mapped objects of one kind in a range ("along the road up to the
                    next crosswalk", "up to the next junction", "around the block to your
                    left")
``relational``      name the store to the left / right of X, two or three doors to the left /
                    right of X, or across the street from X (facade order along the street)
==================  ==========================================================================

Difficulty thresholds (``[low, high)``, the hardest band ``[low, high]``; route lengths
are metres along the pose graph):

* ``localization``: the start's distance to the nearest cell border as a fraction of
  the half cell size -- easy >= 0.5, medium [0.2, 0.5), hard < 0.2.
* ``landmark_name``/``landmark_image``: route length easy [15, 80), medium [80, 150),
  hard [150, 250].
* ``map_navigation``: the shortest route's length, 360CityArena's average +-15%: easy
  [105.4, 142.6), medium [209.9, 284.0), hard [294.9, 399.0) (its 124 / 247 / 347 m);
  within a band the suite keeps the routes whose decision points bring the average
  closest to the paper's 3.3 / 6.4 / 9.0 (:mod:`.calibration`: a pool of 32 candidates
  per task, each the start of 64 in the band closest to the paper's count).
* ``vln``: instruction steps (numbered sentences) easy 4, medium 5-6, hard 7-9 (the
  paper: 4.4 / 5.9 / 7.4); route length [40, 700].
* ``object_count``: the true count easy 3-4, medium 5, hard 8-11 (the paper: 3.5 / 4.6 /
  9.0). Each task draws its kind first, every kind the city maps with the same chance,
  then looks for a range holding a count in the band: the kinds share the tasks equally
  where the city allows it (see :meth:`PoseGraphTaskGenerator._gen_object_count`).
* ``relational``: route length from the start to the reference store X easy < 15
  (standing at X), medium [15, 80), hard [80, 200].

Places: landmark, VLN and relational targets are POIs on a building facade with a
unique name whose sign is within 20 m of a frame; landmark and VLN targets also have no
other sign within 6 m (so the name and the photo pick out one sign).

Grounded types outside the seven (the strict-JSON grounding protocol, their own suite
``helsinki-grounded``): ``landmark_bbox``, the image tasks and the video tasks
(:mod:`.grounded`) and the four image tasks ``relative_position``,
``future_observation``, ``self_position``, ``action_decision`` (:mod:`.grounded_image`).

On-the-fly tasks on held-out procedural cities (``suite="procedural:..."``, train / val /
test cities by seed): :mod:`urban_gym.families.posegraph360.tasks.procedural`.

Every task is feasible for the oracle within 60% of the step limit (30 of 50 steps,
:data:`~.types.ORACLE_BUDGET_SHARE`): a navigation task's planned action count (answer
included) is at most 30 and it never makes 5 consecutive moves away from the goal
(checked at generation); a question's oracle answers at once (1 step). The count is in
``meta["oracle_steps"]``.

Task fields used by this family (see :class:`~urban_gym.tasks.spec.TaskSpec`):

* ``start``: ``trajectory``, ``frame`` (pose-graph state), ``x``, ``y`` (m), ``heading``
  (travel bearing, degrees), ``yaw`` (camera offset from the travel direction, degrees),
  ``pitch`` (degrees).
* ``goal`` (navigation): ``x``, ``y`` (m) of the goal frame, ``radius`` (m: 10, 20 for map
  navigation), ``trajectory``/``frame`` of the goal frame, ``route_length`` (m) and, for
  places, ``poi`` (name) and ``anchor`` (sign position); ``landmark_image`` adds ``view``
  (``trajectory``, ``frame``, ``bearing``, ``pitch``, ``fov``: where its photo is taken);
  ``map_navigation`` adds ``map`` (``center`` (m), ``extent`` (m)).
  ``localization``: ``grid`` (bounds, m) and ``nx``/``ny``.
* ``answer`` / ``options``: the truth and the multiple-choice candidates (grid labels,
  counts ``"0"``..``"24"``, five store names); navigation tasks have no answer.
* ``meta``: ``posegraph`` (the graph parameters), ``route_length``, ``decision_points``,
  ``instruction_steps``, ``count``, ``range``/``relation``, ``oracle_steps`` and the
  generator seed.
"""

from urban_gym.families.posegraph360.tasks.evaluate import EpisodeOutcome, check_task, evaluate
from urban_gym.families.posegraph360.tasks.generate import PoseGraphTaskGenerator
from urban_gym.families.posegraph360.tasks.places import (
    RELATIONS,
    Place,
    count_objects,
    places,
    relation_of,
    relation_phrase,
)
from urban_gym.families.posegraph360.tasks.procedural import (
    PoseGraph360ProceduralTasks,
    procedural_source,
)
from urban_gym.families.posegraph360.tasks.routes import (
    EpisodeStart,
    RouteInfo,
    away_moves,
    goal_states,
    graph_for,
    graph_params,
    localization_grid,
    plan_actions,
    plan_route,
    route_info,
    start_state,
    task_start,
    tasks_spacing,
)
from urban_gym.families.posegraph360.tasks.suites import (
    DEFAULT_SUITES,
    SUITE_DIR,
    format_statistics,
    generate,
    generate_grounded,
    grounded_suite_path,
    suite_path,
    suite_statistics,
    write_suite,
)
from urban_gym.families.posegraph360.tasks.types import (
    AWAY_LIMIT,
    COUNT_CORRIDOR_M,
    COUNT_KINDS,
    DEFAULT_FORWARD_FRAMES,
    DEFAULT_STEP_LIMIT,
    DIFFICULTY_LEVELS,
    FAMILY,
    GOAL_RADIUS_M,
    GROUNDED_TASK_TYPES,
    LANDMARK_FOV,
    LANDMARK_ISOLATION_M,
    MAP_GOAL_RADIUS_M,
    MAX_COUNT,
    MAX_POI_OFFSET_M,
    NAVIGATION_TYPES,
    ORACLE_BUDGET_SHARE,
    PAPER_STATISTICS,
    PAPER_TASK_TYPES,
    PITCH_LIMIT,
    QUESTION_TYPES,
    RENAMED_TYPES,
    ROTATIONS,
    STALL_ATTEMPTS,
    TASK_TYPES,
    THRESHOLDS,
    VIDEO_TASK_TYPES,
    ZERO_COUNT_SHARE,
)
from urban_gym.families.posegraph360.tasks.video import FPS, FRAME_SIZE, VIDEO_FRAMES

__all__ = [
    "AWAY_LIMIT",
    "COUNT_CORRIDOR_M",
    "COUNT_KINDS",
    "DEFAULT_FORWARD_FRAMES",
    "DEFAULT_STEP_LIMIT",
    "DEFAULT_SUITES",
    "DIFFICULTY_LEVELS",
    "FAMILY",
    "GOAL_RADIUS_M",
    "LANDMARK_FOV",
    "LANDMARK_ISOLATION_M",
    "MAP_GOAL_RADIUS_M",
    "MAX_COUNT",
    "MAX_POI_OFFSET_M",
    "NAVIGATION_TYPES",
    "ORACLE_BUDGET_SHARE",
    "PAPER_STATISTICS",
    "PITCH_LIMIT",
    "QUESTION_TYPES",
    "ROTATIONS",
    "STALL_ATTEMPTS",
    "SUITE_DIR",
    "TASK_TYPES",
    "THRESHOLDS",
    "ZERO_COUNT_SHARE",
    "EpisodeOutcome",
    "Place",
    "PoseGraphTaskGenerator",
    "PoseGraph360ProceduralTasks",
    "RouteInfo",
    "away_moves",
    "check_task",
    "count_objects",
    "evaluate",
    "format_statistics",
    "generate",
    "goal_states",
    "graph_for",
    "graph_params",
    "localization_grid",
    "places",
    "procedural_source",
    "plan_actions",
    "plan_route",
    "relation_of",
    "relation_phrase",
    "RELATIONS",
    "route_info",
    "start_state",
    "EpisodeStart",
    "task_start",
    "suite_path",
    "suite_statistics",
    "generate_grounded",
    "grounded_suite_path",
    "PAPER_TASK_TYPES",
    "GROUNDED_TASK_TYPES",
    "FPS",
    "FRAME_SIZE",
    "VIDEO_FRAMES",
    "RENAMED_TYPES",
    "VIDEO_TASK_TYPES",
    "tasks_spacing",
    "write_suite",
]
