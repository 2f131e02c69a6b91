"""``UrbanGym/PoseGraph360-v0``: a city as 360° video trajectories joined at junctions."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium import spaces

from urban_gym.envs.actions import (
    InvalidAction,
    describe_value,
    table_index,
)
from urban_gym.envs.base import UrbanEnv
from urban_gym.envs.spaces import SharedMemoryText
from urban_gym.envs.text import clean_text, task_charset
from urban_gym.errors import InputError, UrbanGymError
from urban_gym.families.posegraph360 import tasks as T
from urban_gym.families.posegraph360.actions import (
    _SIZES,
    ANSWER_BASE,
    BRANCH_ACTIONS,
    MOVE_TABLE,
    N_ANSWER_HEADS,
    make_action_set,
)
from urban_gym.families.posegraph360.world import DEFAULT_SPACING_M, PoseGraph, State
from urban_gym.families.posegraph360.worlds import (
    FRAME_CACHE_MB,
    WorldCaches,
    compose_frame,
    reference_image,
    rendered_source,
    rendered_world,
    task_markers,
    view_pano_width,
    world_caches,
)
from urban_gym.render import perspective
from urban_gym.render.overlays import draw_branch_arrows
from urban_gym.tasks.spec import TaskError, TaskSpec
from urban_gym.tasks.suite import load_suite
from urban_gym.world.names import DEFAULT_NAMES

#: Max length of the instruction text.
MAX_INSTRUCTION = 2048
#: Fill colour (RGB) of the agent's arrow on the map of the current location: red, as
#: 360CityArena's prompt describes that map to the model (its appendix B.1).
LOCATION_ARROW = (220, 30, 30)


def default_suite_path(city: str) -> Path:
    """Where the committed default suite of a city lives (see
    :func:`urban_gym.families.posegraph360.tasks.suite_path`).
    """
    return T.suite_path(city)


class PoseGraph360Env(UrbanEnv):
    """Walk a city recorded as 360° video: move along streets, look around, choose branches
    at junctions, and answer.

    ## Description

    The 360CityArena setting on a :class:`~urban_gym.families.posegraph360.world.PoseGraph`: every
    street is a trajectory of panorama frames (one per ``spacing`` = 3 m, one trajectory
    per direction), joined at junctions. The agent sees a perspective crop of the current
    frame; moving forward plays the video forward, the camera turns freely, and at a
    junction (the first or last frame of a trajectory) the branches it may take are drawn
    into the view as red arrows labelled ``LEFT``/``UP``/``RIGHT``. Seven task types
    (:mod:`urban_gym.families.posegraph360.tasks`): localization, landmark search by name and by
    image, map navigation, vision-language navigation, object count and relational
    spatial reasoning. As in the benchmark, an episode scores only if the agent ends it
    with ``ANSWER`` (navigation tasks: ANSWER where you think the goal is).

    ## Action Space

    ``Discrete(42)``; ``env.unwrapped.action_table`` maps an index to the structured action:

    ====== ===========================================================================
    0-2    ``W`` SMALL / MEDIUM / LARGE: forward 1 / 3 / 9 frames (3 / 9 / 27 m at 3 m
           spacing; the paper's short / normal / long move, sized in
           :data:`~urban_gym.families.posegraph360.tasks.types.DEFAULT_FORWARD_FRAMES`)
    3-6    ``A`` (24°), SMALL (30°), MEDIUM (60°), LARGE (90°): camera yaw left
    7-10   ``D`` (24°), SMALL, MEDIUM, LARGE: camera yaw right
    11, 12 ``Q`` / ``E``: tilt up / down 24° (pitch stays within +-90°, straight up or
           down: a tilt past the limit stops at it; at the limit the tilt is masked)
    13     ``S``: camera back to the direction of travel (yaw offset 0, pitch 0)
    14-16  ``LEFT`` / ``UP`` / ``RIGHT``: take that branch (only at a junction, only where it
           exists; see :meth:`PoseGraph.branch_choices` -- sectors relative to the camera)
    17-41  ``ANSWER_k``: answer option ``k`` of the task (grid cell, count, store name);
           navigation tasks: ``ANSWER_0`` = "arrived"
    ====== ===========================================================================

    W moves never pass the end of a trajectory; at its end W does not move (choose a
    branch). After a branch the camera looks along the new street (yaw offset 0).
    Structured actions (``{"action": "W", "size": "MEDIUM"}``, ``{"action": "ANSWER",
    "text": "x:2 y:3"}``) go through ``env.unwrapped.action_set``. As in 360CityArena's
    reply format the size may sit in ``"answer"`` (``{"action": "A", "answer": "LARGE"}``
    turns 90°); ``Q``/``E`` take SMALL/MEDIUM/LARGE too (30/60/90°, 24° without a size,
    so a LARGE tilt from level looks straight up or down; sized tilts exist only as
    structured actions: the table keeps the default tilt, which reaches any pitch in at
    most four presses, and its indices stay those trained policies use). An
    ``ANSWER`` with no or empty text confirms arrival in a navigation task. An unknown
    action or size, a branch where none exists, ``ANSWER`` without text in a question task,
    or a masked index is an invalid-action step (state unchanged, reward ``INVALID_ACTION_REWARD``, message in
    ``info["invalid_action"]``). With ``mask_noops=True`` the mask also hides the actions
    that would leave the state as it is -- W at the end of a street, the branch the agent
    already stands on (frame 0 of a street) and S with the camera along the street -- so
    that a policy without memory can tell the end of one street from the start of the
    next (the same place seen the same way: same view, same goal vector); their indices
    are then invalid-action steps.

    ## Observation Space

    A ``Dict``: ``view`` ``Box(0, 255, (view_size, view_size, 3), uint8)`` -- the
    perspective view (``fov`` degrees horizontal) with branch arrows at junctions;
    ``reference`` ``Box(0, 255, (reference_size, reference_size, 3), uint8)`` -- the task's
    reference image (grid map, route map with a blue start and red goal, or a photo of the
    landmark's facade; zeros when the task has none); ``map`` (only with
    ``location_prior=True``) -- a north-up map of the whole graph with the agent's marker;
    ``frames`` (only when the tasks include video types) ``Box(0, 255, (n, h, w, 3),
    uint8)`` -- the frames of the task's walk at ``frame_size`` (black for other tasks;
    :mod:`urban_gym.families.posegraph360.tasks.video`);
    ``instruction`` ``Text`` -- the task text; ``action_mask`` ``Box(0, 1, (42,), int8)``;
    with ``goal=`` also ``goal_vector`` / ``goal_landmarks`` / ``goal_image`` (the view at
    the goal frame) / ``goal_text``, the goal a policy conditions on
    (:mod:`urban_gym.envs.goals`).

    ``observation="symbolic"`` renders no pixels: ``view``, ``reference`` (and ``map``)
    give way to ``branch_bearings`` ``Box(0, 360, (3,), float32)`` -- the compass bearings
    (degrees) of the streets LEFT / UP / RIGHT would take, 0 where there is none (the
    mask says which exist), what the red arrows of the view show -- and ``heading``
    ``Box(0, 360, (1,), float32)``, the camera's compass bearing; a low-dimensional
    observation for RL (no ``goal="image"``, no ``location_prior``). ``render()`` still
    draws the frames.

    ## Starting State

    The task's start frame and camera (``yaw`` offset from the travel direction,
    ``pitch``). Without ``options`` the task is drawn from the suite with ``np_random``;
    ``reset(options={"task_id": ...})``, ``{"task_index": i}`` or ``{"task": TaskSpec}``
    picks one.

    ## Rewards

    At the end of an answered episode: the task's score (success 1/0; MRA for counts).
    ``INVALID_ACTION_REWARD`` (-0.01) for an invalid action; 0 otherwise. With
    ``reward_shaping=True`` (or ``"progress"``) a navigation step also earns (route
    distance before - after) / 100; ``reward_shaping="charged"`` adds to that, when a
    navigation episode ends without success (a wrong ANSWER, ``away_from_goal``,
    ``stagnation``, ``step_limit``), -(route distance left) / 100 -- so stopping short
    never pays: an episode's shaping is then (start distance - 2 x distance left) / 100.

    ## Episode End

    Terminated: ``ANSWER`` (``answered``); ``stagnation`` (the same action
    ``stagnation_limit`` = 20 times in a row without a change of position);
    ``away_from_goal`` (navigation tasks: ``away_limit`` = 5 consecutive moves that
    increase the distance to the goal along the streets, either way -- so walking the
    wrong way down a street counts; :meth:`GoalDistances.geodesic`). Truncated:
    ``step_limit`` (50 steps).
    A task's ``limits`` (``step_limit``, ``stagnation_limit``, ``away_limit``) override
    the constructor's.

    ## Information

    The schema of :mod:`urban_gym.envs.info`: ``pose`` (the frame's position, metres, and
    the camera's bearing), ``distance_to_goal_m`` (metres of the shortest route from here;
    ``inf`` in question tasks and when the goal cannot be reached), ``steps``,
    ``invalid_actions``, ``action_valid``, ``invalid_action``, ``task_id``; and the
    family's own keys: ``task`` (the :class:`TaskSpec`), ``state`` (``trajectory``,
    ``frame``), ``travel_heading`` (the bearing of travel), ``yaw_offset`` (the camera's
    offset from it), ``pitch``, ``junction`` (id, -1 when not at a junction), ``branches``
    (action -> trajectory), ``geodesic_to_goal`` (navigation: metres along the streets
    either way) and ``message`` (e.g. W at the end of a street). At the end:
    ``termination``, ``metrics`` (:func:`urban_gym.families.posegraph360.tasks.evaluate`),
    ``is_success``.

    ## Arguments

    ``city`` (load_city spec; default: the tasks' cities, ``"helsinki"`` for the default
    suite; when given, tasks that name another city are an error -- a task's world is its
    ``task.city``, its graph parameters ``meta["posegraph"]``; tasks of several cities
    each run in their own, loaded when their episode starts and cached per process:
    :mod:`urban_gym.families.posegraph360.worlds`); ``suite`` (None or ``"default"`` = the
    committed suite of the city, or a JSONL path; a procedural city without one gets 3
    generated tasks per type; ``"procedural:blocks=2x2-6x6,split=train"`` draws a new
    task on a procedural city of the split at every reset,
    :mod:`urban_gym.families.posegraph360.tasks.procedural`); ``tasks`` (TaskSpecs or dicts,
    instead of a suite); ``task_types``/``difficulties`` (filters); ``view_size`` (512, or 640x480 for a
    grounded suite; int or (w, h)), ``fov`` (90); ``reference_size`` (default: the view's height); ``location_prior``
    (False) and ``map_size``; ``step_limit`` (50), ``stagnation_limit`` (20),
    ``away_limit`` (5); ``forward_frames`` ((1, 3, 9)); ``spacing`` (frame spacing, m;
    default: the tasks' ``meta["posegraph"]["spacing"]``, 3 m);
    ``posegraph`` (a ready :class:`PoseGraph` with a frame source), or ``capture`` +
    ``poses`` (a folder of equirect images or a 360° video with its pose CSV, imported
    with junction detection); ``pano_width`` (rendered panorama width; default about
    ``4 * view width`` for a 90° view, what the view's centre pixels need: 2048 for 512),
    ``time_of_day``, ``weather``, ``cache_mb`` (48: the LRU of rendered or decoded frames,
    MB; rendered episodes' start frames have another as large); ``draw_branches`` (True); ``reward_shaping`` (False: see Rewards); ``mask_noops``
    (False: see Action Space); ``observation`` (``"images"``, or ``"symbolic"``: see
    Observation Space); ``answer_judge`` (the fuzzy name judge ``(prediction,
    candidate names) -> bool`` of relational answers; default: normalised names plus OSM
    aliases -- an LLM judge can be plugged in); ``render_mode``
    (``"rgb_array"``); ``track_visibility`` (False: True adds ``info["goal_visible"]``,
    :mod:`urban_gym.envs.visibility`); ``goal`` (``"none"``, the default, ``"vector"``,
    ``"landmarks"``, ``"image"`` or ``"text"``: :mod:`urban_gym.envs.goals`);
    ``frame_size`` ((640, 480): int or (w, h), the video tasks' frames); ``names``
    (``"both"``, the default, ``"local"`` or ``"english"``: which name of each place the
    rendered signs and maps show, :mod:`urban_gym.world.names`).

    ## Version History

    * v0: ``info`` in the shared schema (``pose``, ``distance_to_goal_m``) with the
      family's ``travel_heading``; 360CityArena's reply format (the size may be given in
      ``"answer"``, ``Q``/``E`` take sizes and tilt 24° without one, an empty ``ANSWER``
      confirms arrival in navigation tasks); suites of one city or of several (each task
      runs in its own world) and on-the-fly procedural suites
      (``suite="procedural:..."``); ``mask_noops``, ``reward_shaping="charged"`` and
      ``observation="symbolic"`` as options, all off by default. W LARGE moves 9 frames
      (was 5) and tilts reach +-90° (was +-60°), the default suite calibrated to the
      paper's per-difficulty statistics; ``forward_frames=(1, 3, 5)`` restores the
      earlier moves.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 4}
    family = "posegraph360"
    cache_attributes = (
        "city",
        "graph",
        "_field",
        "_map_renderer",
        "_table_cache",
        "_mask_cache",
        "_task_mask_cache",
        "_branch_cache",
        "_text_cache",
        "_prior_cache",
        "_caches_of",
        "_here_cache",
    )

    def __init__(
        self,
        city: str | None = None,
        suite: str | None = None,
        tasks: Sequence[TaskSpec | dict] | None = None,
        task_types: Sequence[str] | None = None,
        difficulties: Sequence[str] | None = None,
        view_size: int | Sequence[int] | None = None,
        fov: float = 90.0,
        reference_size: int | None = None,
        location_prior: bool = False,
        map_size: int | None = None,
        step_limit: int = 50,
        stagnation_limit: int = 20,
        away_limit: int = 5,
        forward_frames: Sequence[int] = T.DEFAULT_FORWARD_FRAMES,
        spacing: float | None = None,
        posegraph: PoseGraph | None = None,
        capture: str | None = None,
        poses: str | None = None,
        pano_width: int | None = None,
        time_of_day: str = "day",
        weather: str = "clear",
        cache_mb: float = FRAME_CACHE_MB,
        draw_branches: bool = True,
        reward_shaping: bool | str = False,
        mask_noops: bool = False,
        observation: str = "images",
        answer_judge: Callable[[str, Sequence[str]], bool] | None = None,
        render_mode: str | None = None,
        track_visibility: bool = False,
        goal: str = "none",
        frame_size: int | Sequence[int] = T.FRAME_SIZE,
        names: str = DEFAULT_NAMES,
    ) -> None:
        if observation not in ("images", "symbolic"):
            raise InputError(f"observation={observation!r} must be 'images' or 'symbolic'")
        if observation == "symbolic" and location_prior:
            raise InputError("location_prior=True adds a map image: not with 'symbolic'")
        self.images = observation == "images"
        self._init_base(render_mode, track_visibility, goal, names)
        if city is not None:
            self.load_world(city)  # an unknown city is named before anything else
        if view_size is None:
            from urban_gym.families.posegraph360.tasks.suites import default_view_size

            view_size = default_view_size(suite)
        self._set_camera(view_size, fov, reference_size, location_prior, map_size)
        self.frame_wh = _size_pair("frame_size", frame_size)
        self._set_limits(step_limit, stagnation_limit, away_limit, forward_frames)
        self.draw_branches = bool(draw_branches)
        shaping = reward_shaping
        if isinstance(shaping, (bool, np.bool_)):
            shaping = "progress" if shaping else "none"
        if shaping not in ("none", "progress", "charged"):
            raise InputError(
                f"reward_shaping={reward_shaping!r} must be False, True, 'progress' or 'charged'"
            )
        self.reward_shaping = shaping != "none"
        self.charge_failures = shaping == "charged"
        self.mask_noops = bool(mask_noops)
        self.answer_judge = answer_judge
        self._spacing_arg = None if spacing is None else float(spacing)
        self.spacing = float(spacing) if spacing is not None else DEFAULT_SPACING_M
        self.tasks = self._load_tasks(suite, tasks, task_types, difficulties, city)
        fixed = posegraph is not None or capture is not None
        self.city_spec = self._one_city(city) if fixed else str(city or self.tasks[0].city)
        self.spacing = T.tasks_spacing(self.tasks, self._spacing_arg)
        self._world: dict[str, Any] = {
            "posegraph": posegraph,
            "capture": capture,
            "poses": poses,
            "pano_width": int(pano_width)
            if pano_width
            else view_pano_width(max(self.view_wh[0], self.ref_size), self.fov),
            "time_of_day": time_of_day,
            "weather": weather,
            "cache_mb": cache_mb,
        }
        self._restore_caches()
        self._task_index = {t.id: i for i, t in enumerate(self.tasks)}
        #: frames of the longest walk video among the tasks (0: no video tasks, no
        #: ``frames`` observation)
        self.video_frames = max((len(_video(t).get("camera", ())) for t in self.tasks), default=0)
        self._build_spaces()
        self.task: TaskSpec = self.tasks[0]
        self._reset_episode_state()

    # ------------------------------------------------------------------ setup
    def _set_camera(
        self,
        view_size: int | Sequence[int],
        fov: float,
        reference_size: int | None,
        location_prior: bool,
        map_size: int | None,
    ) -> None:
        if isinstance(view_size, (int, np.integer)):
            self.view_wh = (int(view_size), int(view_size))
        elif isinstance(view_size, Sequence) and len(view_size) == 2:
            self.view_wh = (int(view_size[0]), int(view_size[1]))
        else:
            raise InputError(f"view_size={view_size!r} must be an int or (w, h)")
        if min(self.view_wh) < 8:
            raise InputError(f"view_size={view_size!r} must be at least 8 pixels")
        if not 10.0 <= float(fov) <= 170.0:
            raise InputError(f"fov={fov!r} must be in [10, 170] degrees")
        self.fov = float(fov)
        self.ref_size = int(reference_size or self.view_wh[1])
        self.location_prior = bool(location_prior)
        self.map_size = int(map_size or self.view_wh[1])
        self.pitch_limit = T.PITCH_LIMIT

    def _set_limits(
        self, step_limit: int, stagnation_limit: int, away_limit: int, forward_frames: Sequence[int]
    ) -> None:
        for name, v in (
            ("step_limit", step_limit),
            ("stagnation_limit", stagnation_limit),
            ("away_limit", away_limit),
        ):
            if not isinstance(v, (int, np.integer)) or v < 1:
                raise InputError(f"{name}={v!r} must be a positive integer")
        self.limits = {
            "step_limit": int(step_limit),
            "stagnation_limit": int(stagnation_limit),
            "away_limit": int(away_limit),
        }
        ff = tuple(int(v) for v in forward_frames)
        if len(ff) != 3 or min(ff) < 1:
            raise InputError(f"forward_frames={forward_frames!r} must be 3 positive ints")
        self.forward_frames = ff

    def _build_spaces(self) -> None:
        self.action_set = make_action_set()
        self.action_space = spaces.Discrete(ANSWER_BASE + N_ANSWER_HEADS)
        w, h = self.view_wh
        obs: dict[str, spaces.Space] = {
            "view": spaces.Box(0, 255, (h, w, 3), np.uint8),
            "reference": spaces.Box(0, 255, (self.ref_size, self.ref_size, 3), np.uint8),
        }
        if not self.images:
            obs = {
                "branch_bearings": spaces.Box(0.0, 360.0, (3,), np.float32),
                "heading": spaces.Box(0.0, 360.0, (1,), np.float32),
            }
        if self.location_prior:
            obs["map"] = spaces.Box(0, 255, (self.map_size, self.map_size, 3), np.uint8)
        if self.images and self.video_frames:
            fw, fh = self.frame_wh
            obs["frames"] = spaces.Box(0, 255, (self.video_frames, fh, fw, 3), np.uint8)
        self._charset = task_charset(self.tasks)
        obs["instruction"] = SharedMemoryText(MAX_INSTRUCTION, min_length=0, charset=self._charset)
        obs["action_mask"] = spaces.Box(0, 1, (self.action_space.n,), np.int8)
        self.observation_space = spaces.Dict({**obs, **self.goal_spaces()})

    def _default_tasks(self, city: str | None) -> list[TaskSpec]:
        spec = "helsinki" if city is None else str(city)
        p = default_suite_path(spec)
        if p.exists():
            return load_suite(p)
        if spec.startswith("procedural:"):
            gen = T.PoseGraphTaskGenerator(
                spec,
                seed=0,
                spacing=self.spacing,
                step_limit=self.limits["step_limit"],
                forward_frames=self.forward_frames,
            )
            return gen.suite(per_type=3)
        raise TaskError(
            f"no default PoseGraph360 suite for city {spec!r} (looked for "
            f"{p}); generate one with `urban-gym generate-suite posegraph360 --city ...`"
        )

    def _restore_caches(self) -> None:
        """The world (city, pose graph with its frame source) and the per-process caches."""
        w = self._world
        look = (w["pano_width"], w["time_of_day"], w["weather"], w["cache_mb"])
        if w["posegraph"] is None and w["capture"] is None:
            self.city, self.graph = rendered_world(
                self.city_spec, self.spacing, *look, names=self.names
            )
        else:
            self.city = self.load_world(self.city_spec)
            if w["posegraph"] is not None:
                self.graph = w["posegraph"]
            else:
                self.graph = PoseGraph.from_capture(
                    w["capture"], w["poses"], geo=self.city.frame, cache_mb=w["cache_mb"]
                )
            if self.graph.source is None:
                self.graph = self.graph.with_source(rendered_source(self.city, *look))
        self._map_renderer: Any = None
        self._table_cache: tuple[Any, Any] = (None, None)
        self._mask_cache: tuple[Any, Any] = (None, None)
        self._task_mask_cache: tuple[Any, Any] = (None, None)
        self._branch_cache: tuple[Any, Any] = (None, None)
        self._text_cache: tuple[Any, str] = (None, "")
        self._prior_cache: tuple[Any, Any] = (None, None)
        self._caches_of: tuple[Any, Any] = (None, None)
        self._here_cache: tuple[Any, Any, Any] = (None, None, None)
        self._field: Any = None
        task = getattr(self, "task", None)
        if task is not None and task.type in T.NAVIGATION_TYPES:
            self._field = self.graph.distance_field(T.goal_states(self.graph, task))

    @property
    def _caches(self) -> WorldCaches:
        """The caches of the graph the env runs now (:func:`world_caches`): a task's
        reference image and start, finished views -- what never changes on one graph, kept
        for the tasks and views that come back in this env and the others of the process.
        Looked up by the graph itself, so an env given another graph (another world, a
        new frame source) never reads the old one's.
        """
        if self._caches_of[0] is not self.graph:
            self._caches_of = (self.graph, world_caches(self.graph))
        return self._caches_of[1]

    def _reset_episode_state(self) -> None:
        self.state = State(0, 0)
        self.yaw = 0.0
        self.pitch = 0.0
        self.path: list[tuple[float, float]] = []
        self.answer: str | None = None
        self._same_key: Any = None
        self._same_count = 0
        self._away = 0
        self._field = None
        self._dist = math.nan
        self._geo = math.nan
        self._departures: list[tuple[float, float]] = []
        self._reference = np.zeros((self.ref_size, self.ref_size, 3), np.uint8)
        self._frames: np.ndarray | None = None
        self._ref_path: list[tuple[float, float]] = []
        self._shortest = 0.0
        self._message = ""
        self._shaping = 0.0
        self._step_key: Any = None
        self._task_limits = dict(self.limits)

    # ------------------------------------------------------------------ episode
    def _accept_task(self, task: TaskSpec) -> TaskSpec:
        T.tasks_spacing([task], self.spacing)  # a graph of other spacing is an error
        w = self._world
        fixed = w["posegraph"] is not None or w["capture"] is not None
        if task.city != self.city_spec and fixed:
            raise TaskError(
                f"task {task.id!r} names the city {task.city!r}, but this env runs the given "
                f"pose graph of {self.city_spec!r} (posegraph= / capture=)"
            )
        return task

    def _start_episode(self, task: TaskSpec) -> None:
        if task.city != self.city_spec:  # the task's own world (:mod:`.posegraph360_world`)
            self.city_spec = str(task.city)
            self._restore_caches()
        self._reset_episode_state()
        for k in self._task_limits:
            if k in task.limits:
                self._task_limits[k] = int(task.limits[k])
        key = (task.id, repr(task.start), repr(task.goal), task.type)
        start = self._caches.start.get_or_create(key, lambda: T.task_start(self.graph, task))
        self.state = start.state
        if self.images:
            self.graph.keep_frame(self.state)  # every episode of the task starts here
        self.yaw = float(task.start.get("yaw", 0.0))
        pitch = float(task.start.get("pitch", 0.0))
        self.pitch = float(min(max(pitch, -self.pitch_limit), self.pitch_limit))
        self.path = [self.graph.position(self.state)]
        if task.type in T.NAVIGATION_TYPES:
            self._field, self._dist, self._geo = start.field, start.distance, start.geodesic
            self._ref_path = list(start.route)
            self._shortest = float(self._dist)
        if self.images:  # symbolic: drawn only for render()
            self._reference = self._render_reference(task)  # read-only; obs gets a copy
            if self.video_frames:
                self._frames = self.walk_frames(task)

    def _begin_step(self) -> None:
        self._message = ""
        self._shaping = 0.0

    def _decode(self, action: Any) -> dict[str, Any]:
        """The structured action, and its stagnation key (the same key again without a
        change of position counts towards ``stagnation``).
        """
        i = table_index(action)
        if i is not None:
            in_table = 0 <= i < self.action_space.n
            self._step_key = ("index", i if in_table else describe_value(i))
            return super()._decode(action)
        try:
            a = super()._decode(action)
        except InvalidAction:
            self._step_key = ("raw", describe_value(action, 200))
            raise
        self._step_key = ("struct", tuple(sorted((k, str(v)) for k, v in a.items())))
        return a

    def _table_action(self, index: int) -> dict[str, Any]:
        if not self._mask_now()[index]:
            raise InvalidAction(self._masked_message(index))
        return dict(self._table()[index])

    def _after_action(self, valid: bool) -> None:
        x, y, _, _ = self._here()
        pos = (x, y)
        moved = pos != self.path[-1]
        if moved:
            self.path.append(pos)
        # stagnation: the same action again without a change of position
        if self._step_key == self._same_key and not moved:
            self._same_count += 1
        else:
            self._same_key, self._same_count = self._step_key, 1

    def _reward(self) -> float:
        return self._shaping

    def _check_end(self, valid: bool) -> tuple[str | None, bool]:
        if self.answer is not None:
            return "answered", False
        if self._away >= self._task_limits["away_limit"]:
            return "away_from_goal", False
        if self._same_count >= self._task_limits["stagnation_limit"]:
            return "stagnation", False
        if self.steps >= self._task_limits["step_limit"]:
            return "step_limit", True
        return None, False

    def _end_reward(self, metrics: dict[str, Any], valid: bool) -> float:
        score = float(metrics["score"]) if self.answer is not None else 0.0
        left = self._dist  # reward_shaping="charged": a failed navigation pays what is left
        if self.charge_failures and not metrics.get("success") and math.isfinite(left):
            return score - left / 100.0
        return score

    def render(self) -> np.ndarray | None:
        """The frame a person watches (``rgb_array`` mode), else None."""
        if self.render_mode != "rgb_array":
            return None
        return self._frame()

    def close(self) -> None:
        """Release the frame source's file handles (reopened on demand)."""
        if self.graph.source is not None:
            self.graph.source.close()

    # ------------------------------------------------------------------ actions
    @property
    def action_table(self) -> list[dict[str, Any]]:
        """Index -> structured action for the current task (ANSWER heads carry the task's
        options; a navigation task's ANSWER_0 is "arrived").
        """
        return [dict(a) for a in self._table()]

    def _table(self) -> tuple[dict[str, Any], ...]:
        if self._table_cache[0] != self.task.id:
            opts = self._answer_options()
            answers = tuple(
                {"action": "ANSWER", "text": opts[k] if k < len(opts) else None}
                for k in range(N_ANSWER_HEADS)
            )
            self._table_cache = (self.task.id, MOVE_TABLE + answers)
        return self._table_cache[1]

    def _answer_options(self) -> list[str]:
        if self.task.type in T.NAVIGATION_TYPES:
            return ["arrived"]
        choices = (self.task.goal or {}).get("choices")
        if isinstance(choices, dict):
            # an image task: each option in the protocol's contract, with the whole frame
            # as its box (a head chooses an option, it cannot draw a box)
            return [
                json.dumps({"answer_option_id": str(k), "bbox_xyxy_norm": [0.0, 0.0, 1.0, 1.0]})
                for k in choices
            ][:N_ANSWER_HEADS]
        return [str(o) for o in self.task.options[:N_ANSWER_HEADS]]

    def action_index(self, action: Any) -> int | None:
        """The table index of a structured action (None when no index matches, e.g. an
        ANSWER text that is not one of the options).
        """
        a = self.action_set.normalise(action)
        if a["action"] == "ANSWER":
            if self.task.type in T.NAVIGATION_TYPES:
                return ANSWER_BASE
            from urban_gym.tasks.metrics import normalize_text

            for k, o in enumerate(self._answer_options()):
                if normalize_text(o) == normalize_text(a["text"]):
                    return ANSWER_BASE + k
            return None
        for i, m in enumerate(MOVE_TABLE):
            if all(a.get(k) == v for k, v in m.items()):
                return i
        return None

    def _mask(self) -> np.ndarray:
        """The action mask (a fresh array)."""
        return self._mask_now().copy()

    def _mask_now(self) -> np.ndarray:
        """The action mask, cached per (task, state, camera); do not modify."""
        key = (self.task.id, self.state, self.yaw, self.pitch)
        if self._mask_cache[0] == key:
            return self._mask_cache[1]
        m = self._task_mask().copy()
        if self.pitch >= self.pitch_limit - 1e-9:
            m[11] = 0
        if self.pitch <= -self.pitch_limit + 1e-9:
            m[12] = 0
        choices = self._choices_now()
        for i, name in enumerate(BRANCH_ACTIONS):
            if name in choices:
                m[14 + i] = 1
        if self.mask_noops:  # actions that would leave the state as it is
            s = self.state
            if s.frame >= self.graph.trajectories[s.trajectory].last:
                m[0:3] = 0  # W at the end of a street
            for i, name in enumerate(BRANCH_ACTIONS):
                if s.frame == 0 and choices.get(name) == s.trajectory:
                    m[14 + i] = 0  # the branch the agent is already on
            if self.yaw == 0.0 and self.pitch == 0.0:
                m[13] = 0  # S with the camera already along the street
        self._mask_cache = (key, m)
        return m

    def _task_mask(self) -> np.ndarray:
        """The part of the mask the task alone sets (cached per task; do not modify): every
        move, no branch (the junction and camera choose them), the task's answer heads.
        """
        if self._task_mask_cache[0] != self.task.id:
            m = np.zeros(self.action_space.n, np.int8)
            m[:ANSWER_BASE] = 1
            m[14 : 14 + len(BRANCH_ACTIONS)] = 0
            m[ANSWER_BASE : ANSWER_BASE + len(self._answer_options())] = 1
            self._task_mask_cache = (self.task.id, m)
        return self._task_mask_cache[1]

    def _masked_message(self, i: int) -> str:
        if i < 3:  # only with mask_noops
            return "W: you are at the end of this street, W would not move; choose a branch"
        if i == 13:
            return "S: the camera already looks along the street, S would change nothing"
        if 14 <= i < 17:
            name = BRANCH_ACTIONS[i - 14]
            if self._branch_choices().get(name) == self.state.trajectory:
                return f"{name}: you are already on that street; W moves along it"
            return self._branch_error(name)
        if i == 11:
            return f"Q: the camera pitch is already {self.pitch:+.0f}° (limit +{self.pitch_limit:.0f}°)"
        if i == 12:
            return f"E: the camera pitch is already {self.pitch:+.0f}° (limit -{self.pitch_limit:.0f}°)"
        n = len(self._answer_options())
        return f"ANSWER_{i - ANSWER_BASE}: this task has only {n} answer option(s)"

    def _branch_choices(self) -> dict[str, int]:
        """Which trajectory each branch action selects now (a fresh dict)."""
        return dict(self._choices_now())

    def _choices_now(self) -> dict[str, int]:
        """:meth:`_branch_choices`, cached per (state, yaw); do not modify."""
        j = self._here()[3]
        if j is None:
            return _NO_CHOICES
        key = (self.state, self.yaw)
        if self._branch_cache[0] != key:
            self._branch_cache = (key, self.graph.branch_choices(j, self.camera_bearing))
        return self._branch_cache[1]

    def _branch_error(self, name: str) -> str:
        j = self.graph.junction_at(self.state)
        if j is None:
            return f"{name}: you are not at a junction; branches can only be taken at junctions"
        avail = ", ".join(self._branch_choices()) or "none in view (turn the camera)"
        return f"{name}: there is no branch {name} here; available: {avail}"

    def _apply(self, a: dict[str, Any]) -> None:
        """Carry out a valid structured action (its shaping reward goes to ``_shaping``)."""
        name = a["action"]
        g = self.graph
        if name == "W":
            n = self.forward_frames[_SIZES.index(a.get("size") or "SMALL")]
            t = g.trajectories[self.state.trajectory]
            if self.state.frame >= t.last:
                self._message = (
                    "W: you are at the end of this street; choose a branch (LEFT/UP/RIGHT), "
                    "look around for the red arrows"
                )
                return
            old = self.state
            self.state = State(t.id, min(t.last, self.state.frame + n))
            self._shaping = self._after_move(old)
            return
        if name in ("A", "D"):
            deg = T.ROTATIONS[a.get("size")]
            self.yaw = (self.yaw + (deg if name == "D" else -deg) + 180.0) % 360.0 - 180.0
            return
        if name in ("Q", "E"):
            sign = 1.0 if name == "Q" else -1.0
            if sign * self.pitch >= self.pitch_limit - 1e-9:
                raise InvalidAction(self._masked_message(11 if name == "Q" else 12))
            new = self.pitch + sign * T.ROTATIONS[a.get("size")]
            self.pitch = float(min(max(new, -self.pitch_limit), self.pitch_limit))
            return
        if name == "S":
            self.yaw, self.pitch = 0.0, 0.0
            return
        if name in BRANCH_ACTIONS:
            choices = self._choices_now()
            if name not in choices:
                raise InvalidAction(self._branch_error(name))
            self.state = State(choices[name], 0)
            self.yaw = 0.0
            return
        if name == "ANSWER":
            text = a.get("text")
            if text is None or not str(text).strip():
                if self.task.type not in T.NAVIGATION_TYPES:
                    raise InvalidAction(
                        "ANSWER: text must not be empty (this task asks a question)"
                    )
                text = "arrived"  # 360CityArena: ANSWER confirms arrival in navigation tasks
            self.answer = str(text)
            return
        raise InvalidAction(f"unknown action {name!r}")  # pragma: no cover - set checks names

    def _after_move(self, old: State) -> float:
        if self._field is None:
            return 0.0
        before = self._dist
        self._dist = self._field.distance(self.state)
        if old.frame == 0:
            self._departures.append((before, self._dist))
        geo = self._field.geodesic(self.state)
        self._away = self._away + 1 if geo > self._geo + 1e-6 else 0
        self._geo = geo
        if self.reward_shaping and math.isfinite(before) and math.isfinite(self._dist):
            return (before - self._dist) / 100.0
        return 0.0

    # ------------------------------------------------------------------ observation
    @property
    def camera_bearing(self) -> float:
        """The camera's compass bearing: travel heading + yaw offset (degrees)."""
        return float((self._here()[2] + self.yaw) % 360.0)

    def _here(self) -> tuple[float, float, float, int | None]:
        """``(x, y, travel heading, junction or None)`` of the current frame
        (:meth:`PoseGraph.position`, :meth:`~PoseGraph.heading`,
        :meth:`~PoseGraph.junction_at`), looked up once per state: a step asks a dozen
        times.
        """
        got = self._here_cache
        if got[0] is self.state and got[1] is self.graph:
            return got[2]
        g, s = self.graph, self.state
        x, y = g.position(s)
        facts = (x, y, g.heading(s), g.junction_at(s))
        self._here_cache = (s, g, facts)
        return facts

    def _observe(self) -> dict[str, Any]:
        if self.images:
            obs: dict[str, Any] = {"view": self._view(), "reference": self._reference.copy()}
        else:
            obs = self._symbolic()
        if self.location_prior:
            obs["map"] = self._prior_map()
        if self._frames is not None:
            obs["frames"] = self._frames.copy()
        if self._text_cache[0] != self.task.id:
            text = clean_text(self.task.instruction, self._charset, MAX_INSTRUCTION)
            self._text_cache = (self.task.id, text)
        obs["instruction"] = self._text_cache[1]
        obs["action_mask"] = self._mask()
        return obs

    def _symbolic(self) -> dict[str, np.ndarray]:
        """``branch_bearings`` (compass bearings of the LEFT / UP / RIGHT choices, 0 where
        there is none) and ``heading`` (the camera's bearing): what the view shows of where
        the streets go.
        """
        bearings = np.zeros(3, np.float32)
        choices = self._choices_now()
        for i, name in enumerate(BRANCH_ACTIONS):
            if name in choices:
                bearings[i] = self.graph.trajectories[choices[name]].departure % 360.0
        return {"branch_bearings": bearings, "heading": np.array([self.camera_bearing], np.float32)}

    def _view(self) -> np.ndarray:
        """The perspective view (a fresh array). A view is a function of the frame, the
        camera's yaw offset and pitch and the env's view settings alone (yaw and pitch
        change by whole degrees, so a turn undone gives the same floats again): finished
        views are kept per world and a repeat is a copy (episodes' first views in a cache
        of their own: a task's comes back with each of its episodes).
        """
        key = (self.state, self.yaw, self.pitch, self.fov, self.view_wh, self.draw_branches)
        caches = self._caches
        cache = caches.start_views if self.steps == 0 else caches.views
        img = cache.get(key)
        if img is None:
            img = self._draw_view()
            img.setflags(write=False)
            cache.put(key, img, img.nbytes)
        return img.copy()

    def _draw_view(self) -> np.ndarray:
        yaw = round(self.camera_bearing, 1)
        pano, ph = self.graph.view_panorama(self.state, yaw, self.pitch, self.fov, self.view_wh)
        img = perspective(pano, yaw, self.pitch, self.fov, self.view_wh, pano_heading=ph)
        if self.draw_branches:
            j = self._here()[3]
            if j is not None:
                img = draw_branch_arrows(
                    img, self.graph.branches(j, self.camera_bearing), self._choices_now()
                )
        return img

    def walk_frames(self, task: TaskSpec) -> np.ndarray:
        """The frames of a video task's walk (``goal["video"]["camera"]``: ``[trajectory,
        frame, yaw, pitch]`` per frame), ``frame_size`` pixels at the video's ``fov``,
        padded with black frames to the ``frames`` observation's length (all black for a
        task without a video).
        """
        fw, fh = self.frame_wh
        out = np.zeros((self.video_frames, fh, fw, 3), np.uint8)
        video = _video(task)
        fov = float(video.get("fov", self.fov))
        for k, (t, f, yaw, pitch) in enumerate(video.get("camera", ())):
            s = self.graph.check_state(State(int(t), int(f)))
            bearing = round(float(self.graph.heading(s) + yaw) % 360.0, 1)
            pano, ph = self.graph.view_panorama(s, bearing, float(pitch), fov, (fw, fh))
            out[k] = perspective(pano, bearing, float(pitch), fov, (fw, fh), pano_heading=ph)
        return out

    def _maps(self) -> Any:
        if self._map_renderer is None:
            from urban_gym.render import MapRenderer

            self._map_renderer = MapRenderer(self.city)
        return self._map_renderer

    def _render_reference(self, task: TaskSpec) -> np.ndarray:
        """The task's reference image, drawn once per world and kept (read-only) for the
        tasks that come back (:func:`~urban_gym.families.posegraph360.worlds.world_caches`).
        """
        key: tuple[str | int, ...] = (task.city, task.id, self.ref_size)
        key += tuple(map(repr, (task.reference_images, task.goal, task.start)))

        def draw() -> np.ndarray:
            img = reference_image(task, self.graph, self._maps, self.ref_size)
            img.setflags(write=False)
            return img

        return self._caches.reference.get_or_create(key, draw)

    def map_markers(self) -> Any:
        """The task markers the agent may see on a map
        (:func:`~urban_gym.families.posegraph360.worlds.task_markers`).
        """
        return task_markers(self.task)

    def location_map(self, size: int | None = None) -> np.ndarray:
        """The north-up map of the whole graph with the agent's marker (the ``map`` entry of
        ``location_prior=True``; 360CityArena's map of the current location).
        """
        return self._prior_map(size)

    def _prior_map(self, size: int | None = None) -> np.ndarray:
        from urban_gym.render import MapMarkers

        size = int(size or self.map_size)
        x, y = self.graph.position(self.state)
        key = (size, round(x, 2), round(y, 2), round(self.camera_bearing, 1))
        if self._prior_cache[0] != key:
            x0, y0, x1, y1 = self.graph.bounds
            mpp = max(x1 - x0, y1 - y0) * 1.05 / size
            img = self._maps().render(
                ((x0 + x1) / 2, (y0 + y1) / 2),
                mpp,
                size,
                markers=MapMarkers(agent=(x, y, self.camera_bearing), agent_fill=LOCATION_ARROW),
            )
            self._prior_cache = (key, img)
        return self._prior_cache[1].copy()

    # ------------------------------------------------------------------ info
    def _pose(self) -> tuple[float, float, float]:
        x, y, heading, _ = self._here()
        return x, y, float((heading + self.yaw) % 360.0)

    def _distance_to_goal(self) -> float:
        return float(self._dist) if self._field is not None else math.inf

    def _extra_info(self) -> dict[str, Any]:
        here = self._here()
        info: dict[str, Any] = {
            "task": self.task,
            "state": {"trajectory": self.state.trajectory, "frame": self.state.frame},
            "travel_heading": here[2],
            "yaw_offset": self.yaw,
            "pitch": self.pitch,
            "junction": _junction_id(here[3]),
            "branches": self._branch_choices(),
        }
        if self._field is not None:
            info["geodesic_to_goal"] = float(self._geo)
        if self._message:
            info["message"] = self._message
        return info

    # ------------------------------------------------------------------ goal modes
    no_view_reason = "observation='symbolic' renders no views"

    def _goal_point(self) -> tuple[float, float] | None:
        """The goal's ``x``/``y``; None for a localization task (its goal is a grid cell)."""
        if isinstance((self.task.goal or {}).get("grid"), list):
            return None
        return super()._goal_point()

    def _view_shape(self) -> tuple[int, int] | None:
        return (self.view_wh[1], self.view_wh[0]) if self.images else None

    def _goal_view(self, task: TaskSpec, goal: tuple[float, float]) -> np.ndarray:
        """The view of the goal's frame (``goal["trajectory"]``/``["frame"]`` where the
        task names one, else the frame nearest the goal), facing along its trajectory.
        """
        gl = task.goal
        graph = self.graph
        state = graph.nearest_state(goal[0], goal[1])
        if "trajectory" in gl and "frame" in gl:
            s = State(int(gl["trajectory"]), int(gl["frame"]))
            try:
                graph.check_state(s)
                state = s
            except UrbanGymError:
                pass
        pano, ph = graph.panorama(state)
        return perspective(pano, graph.heading(state), 0.0, self.fov, self.view_wh, pano_heading=ph)

    def _goal_visible(self) -> bool:
        """The goal place's sign in the current perspective view (ids sampled from an id
        panorama rendered at the frame's position: :mod:`urban_gym.envs.visibility`).
        """
        from urban_gym.envs.visibility import id_view_size, in_view, tracker_of

        tr = tracker_of(self, self.city)
        task, g = self.task, self.task.goal or {}
        # a relational task's place to find is its answer, nearest the reference
        named = (str(task.answer), (g.get("x"), g.get("y")))
        relational = task.type == "relational" and task.answer is not None
        targets = tr.targets(task, named if relational else None)
        if targets.size == 0:
            return False
        x, y = self.graph.position(self.state)
        bearing = self.camera_bearing

        def look() -> bool:
            size = id_view_size(self.view_wh)
            return in_view(tr.panoramas.view(x, y, bearing, self.pitch, self.fov, size), targets)

        return tr.remember((self.task.id, self.state, round(bearing, 3), self.pitch), look)

    def _outcome(self) -> T.EpisodeOutcome:
        return T.EpisodeOutcome(
            answer=self.answer,
            position=self.graph.position(self.state),
            path=list(self.path),
            reference_path=list(self._ref_path),
            shortest_length=self._shortest,
            departures=list(self._departures),
            steps=self.steps,
            invalid_actions=self.invalid_actions,
            judge=self.answer_judge,
        )

    # ------------------------------------------------------------------ rendering
    def _frame(self) -> np.ndarray:
        """The ``rgb_array`` frame (:func:`~urban_gym.families.posegraph360.worlds.compose_frame`):
        the view and beside it the location-prior map, or the task's reference image.
        """
        view = self._view()
        h = view.shape[0]
        if self.location_prior or not self.task.reference_images:
            side = self._prior_map(size=h)  # the map shows the person where the agent is
        else:
            side = self._reference if self.images else self._render_reference(self.task)
        return compose_frame(view, side, f"[step {self.steps}] {self.task.instruction}")


#: the branch choices away from a junction (shared: never modified)
_NO_CHOICES: dict[str, int] = {}


def _video(task: TaskSpec) -> dict[str, Any]:
    """A task's ``goal["video"]`` (empty when it has none)."""
    v = (task.goal or {}).get("video")
    return v if isinstance(v, dict) else {}


def _size_pair(name: str, size: int | Sequence[int]) -> tuple[int, int]:
    """``(w, h)`` of an int or a pair, at least 8 pixels a side."""
    if isinstance(size, (int, np.integer)):
        wh = (int(size), int(size))
    elif isinstance(size, Sequence) and len(size) == 2:
        wh = (int(size[0]), int(size[1]))
    else:
        raise InputError(f"{name}={size!r} must be an int or (w, h)")
    if min(wh) < 8:
        raise InputError(f"{name}={size!r} must be at least 8 pixels")
    return wh


def _junction_id(junction: int | None) -> int:
    """``info["junction"]``: the junction's id, -1 when not at a junction (one type on
    every step, so that vector envs can batch it).
    """
    return -1 if junction is None else int(junction)
