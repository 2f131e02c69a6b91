"""CityWalk tasks: the five-level ladder of thirteen task types, generated from city data.

Every task is a :class:`~urban_gym.tasks.spec.TaskSpec` with ``family="citywalk"`` and
``type`` one of :data:`TASK_TYPES`; ``difficulty`` is the ladder level ``l1`` .. ``l5``.

| level | type | what the agent does | ground truth from |
|---|---|---|---|
| L1 | ``VR`` visual recognition | names the place whose sign it faces (4 options) | the POI anchored on the facade ahead, its sign in the start view |
| L1 | ``OU`` orientation understanding | says whether a place is ahead / right / behind / left, its compass direction, or which way its sign faces | bearing from the start to the POI's sign; the sign's facing |
| L1 | ``AEQ`` active exploration | finds which place of a kind is next to a named one | the only POI of that kind within 80 m |
| L2 | ``SGN`` short-range goal | walks to a place whose sign is in sight | a POI 30-110 m away, its sign in the start view |
| L2 | ``LGN`` long-range goal | walks to a place out of sight, using the map | a POI 200-480 m away by the network |
| L2 | ``IN`` instructions | follows turn-by-turn directions | the shortest route to a POI |
| L2 | ``CN`` constrained | walks to a place without crossing a closure | a closure on the shortest route |
| L3 | ``PTS`` place-type search | finds "a pharmacy nearby" and faces its sign | any POI of the kind (``goal``: the nearest; ``goal.alternatives``: the others within reach); its sign in the final view |
| L3 | ``III`` implicit intent | finds a place for a need ("my eyes need checking") | :data:`INTENT_CATEGORIES` + any POI of those kinds |
| L4 | ``TWS`` time-window schedule | visits places in order before deadlines | routes at walking speed x 1.5 + 60 s |
| L4 | ``MSP`` multi-stop | visits several places in any order | the stops |
| L5 | ``DCR`` dynamic closure | replans when a closure appears mid-episode | a closure on the route, shown at 40 m |
| L5 | ``NP`` among pedestrians | an LGN task with moving pedestrians (contacts counted) | the LGN task (``meta.base_task``), pedestrians along its route |

"In the start view" is checked on pixels: the generator renders the start view at the
language-model size (960x540, 90° field of view, no pedestrians) and keeps a ``VR`` or
``SGN`` task only when at least :data:`~urban_gym.families.citywalk.tasks.context.MIN_SIGN_PIXELS`
pixels of the place's signboard show in its instance ids; a ``VR`` start looks up
(``start.pitch``) at a board stacked high on its facade.

L5 also holds the *condition variants* of ``VR``, ``OU``, ``AEQ`` and ``SGN``: every base
task of those types unchanged but for the conditions -- at dusk, at night, in fog or in
rain (``constraints.conditions``; ``meta.variant``, ``meta.base_task``; UrbanGround
Section 4.4). Question texts read ``<question> A. .. B. .. C. .. D. ..`` and say that the
answer comes in the turn after ``terminate``; ``meta.question`` and ``options`` hold the
parts. ``PTS`` and ``III`` arrival is judged from the final view by default (the env's
``arrival=``); their goal's sign shows from its front. ``SGN`` and ``IN`` tasks
carry ``meta.distance_bin`` (1-4, equal-count bins of the straight-line start-to-goal
distance ``meta.crow_m``). The default suite has UrbanGround's 810 base tasks
(:data:`PAPER_BASE_COUNTS`).

Spec fields used by the family (all lengths metres, angles degrees, times seconds):

* ``start``: ``x``, ``y``, ``heading``, ``pitch``, ``clock`` (seconds of day).
* ``goal`` (navigation): ``x``, ``y``, ``radius`` (15), ``name``, ``poi_id``,
  ``show_on_map`` (whether the map marks it), ``alternatives`` (PTS/III: ``[x, y, poi_id]``
  of every other suitable place; arriving at any of them succeeds). Multi-stop: ``stops`` (each ``x``, ``y``,
  ``name``, ``poi_id``, ``deadline`` seconds of day or None), ``ordered``, ``radius``,
  ``show_on_map``.
* ``answer`` / ``options`` (questions): four options; ``answer`` is the correct option's text.
* ``constraints``: ``closures`` (each ``id``, ``points`` [[x, y], ...], ``label``,
  ``closed_edges`` [[u, v], ...], ``trigger`` None or [x, y, radius]), ``pedestrians``
  (``count``, ``seed``, ``around`` node ids; contacts are counted, never a failure),
  ``conditions``
  (``time_of_day``, ``weather``, ``seed``).
* ``limits``: ``max_steps`` (150).
* ``meta``: ``level``, ``type_name``, ``shortest_m`` (walking distance of the task),
  ``reference_path`` (IN: the route, points every ~5 m), ``variant``, ``base_task``
  (condition variants and NP: the task it is made from), ``question`` (questions),
  ``ou_form`` (OU: ``relative``, ``compass`` or ``facing``), ``generator``.

:func:`generate_with_report` (and :func:`generate`, which writes a suite) makes the tasks a city supports and says, per type, how many
it made and -- where fewer -- what the city lacks; :func:`evaluate` turns an
:class:`EpisodeOutcome` into the task's metrics.
"""

from urban_gym.families.citywalk.tasks.evaluate import (
    EpisodeOutcome,
    check_task,
    evaluate,
)
from urban_gym.families.citywalk.tasks.generate import (
    FATAL_STAGE,
    generate,
    generate_tasks,
    generate_with_report,
    suite_statistics,
    type_lacks,
    write_suite,
)
from urban_gym.families.citywalk.tasks.generators import (
    GENERATORS,
    arrival_pose,
    closure_across,
    resample,
    route_instructions,
    route_legs,
)
from urban_gym.families.citywalk.tasks.procedural import CityWalkProceduralTasks, procedural_source
from urban_gym.families.citywalk.tasks.types import (
    CITY_SUITE_SIZES,
    CLOCK_RANGES,
    COMPASS_OPTIONS,
    DEFAULT_MAX_STEPS,
    DEFAULT_SUITE_PATH,
    DEFAULT_SUITES,
    EXCLUDED_KINDS,
    FAMILY,
    GENERATOR_VERSION,
    INTENT_CATEGORIES,
    OPTION_LETTERS,
    OU_FORMS,
    OU_OPTIONS,
    PAPER_BASE_COUNTS,
    SUCCESS_RADIUS,
    TASK_TYPES,
    VARIANT_CONDITIONS,
    VARIANT_TYPES,
    compass_name,
    format_hhmm,
)

__all__ = [
    "CITY_SUITE_SIZES",
    "CLOCK_RANGES",
    "COMPASS_OPTIONS",
    "CityWalkProceduralTasks",
    "DEFAULT_MAX_STEPS",
    "DEFAULT_SUITES",
    "DEFAULT_SUITE_PATH",
    "EXCLUDED_KINDS",
    "EpisodeOutcome",
    "FAMILY",
    "FATAL_STAGE",
    "GENERATORS",
    "GENERATOR_VERSION",
    "INTENT_CATEGORIES",
    "OPTION_LETTERS",
    "OU_FORMS",
    "OU_OPTIONS",
    "PAPER_BASE_COUNTS",
    "SUCCESS_RADIUS",
    "TASK_TYPES",
    "VARIANT_CONDITIONS",
    "VARIANT_TYPES",
    "check_task",
    "arrival_pose",
    "closure_across",
    "compass_name",
    "evaluate",
    "format_hhmm",
    "generate",
    "generate_tasks",
    "generate_with_report",
    "procedural_source",
    "resample",
    "route_instructions",
    "route_legs",
    "suite_statistics",
    "type_lacks",
    "write_suite",
]
