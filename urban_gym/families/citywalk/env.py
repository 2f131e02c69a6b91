"""``UrbanGym/CityWalk-v0``: a continuous, real-scale city walked in first person.

The dynamics (walker, collisions, closures, pedestrians, clock) live in
:mod:`urban_gym.families.citywalk.dynamics`; the task ladder and its scoring in
:mod:`urban_gym.families.citywalk.tasks`.
"""

from __future__ import annotations

import math
import threading
import weakref
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium import spaces

from urban_gym.caching import LRUCache
from urban_gym.envs.base import UrbanEnv, is_success
from urban_gym.envs.spaces import SharedMemoryText, view_wh
from urban_gym.envs.text import clean_text, task_charset
from urban_gym.families.citywalk.actions import (
    ANSWER_ONLY,
    FIRST_PERSON,
    JUMP_HEIGHT,
    MAP_ONLY,
    MAX_DURATION,
    citywalk_action_set,
    citywalk_action_table,
)
from urban_gym.families.citywalk.closures import describe_closures
from urban_gym.families.citywalk.dynamics import (
    Closure,
    Crowd,
    MoveResult,
    SimClock,
    WalkerState,
    count_crossings,
    distance_field,
    format_clock,
    low_obstacles,
    walker_samples,
    walking_distance,
)
from urban_gym.families.citywalk.handlers import (
    ANSWER_TRIES,
    CityWalkControls,
    MapState,
    StepScratch,
    jump_eye_rise,
)
from urban_gym.families.citywalk.network import PedestrianNetwork
from urban_gym.families.citywalk.stops import StopsProgress, stops_progress
from urban_gym.families.citywalk.tasks import (
    DEFAULT_MAX_STEPS,
    OPTION_LETTERS,
    SUCCESS_RADIUS,
    TASK_TYPES,
    EpisodeOutcome,
    format_hhmm,
)
from urban_gym.families.citywalk.tasks.evaluate import VIEW_JUDGED_TYPES
from urban_gym.tasks.spec import TaskError, TaskSpec
from urban_gym.world.city import City
from urban_gym.world.names import DEFAULT_NAMES
from urban_gym.world.routing import DistanceField, Router
from urban_gym.world.walkable import WalkGeometry

MAX_VIEW_SIZE = 2048
TEXT_MAX = 4096

#: Rewards.
PROGRESS_REWARD_PER_M = 0.01  # per metre of walking distance gained towards the goal / next stop
STOP_REWARD = 0.5  # reaching a stop of a multi-stop task
SUCCESS_REWARD = 1.0  # at the end: success (navigation) or the right answer (questions)
CLOSURE_PENALTY = 0.5  # per closure crossing
CONTACT_PENALTY = 0.1  # per pedestrian contact

#: The arrival rules of ``arrival=`` (see :class:`CityWalkEnv`).
ARRIVAL_RULES = ("view", "position")
#: Task types whose arrival the ``"view"`` rule judges from the final view: place-type
#: search and implicit intent (UrbanGround's judge sees the final view).
ARRIVAL_VIEW_TYPES = VIEW_JUDGED_TYPES
#: ``(width, height)`` of the id view the ``"view"`` rule counts the sign's pixels in: the
#: language-model view, at the env's field of view.
ARRIVAL_VIEW_SIZE = (960, 540)
#: Default pixels of the place's sign the final view must show (``arrival_min_pixels``):
#: the same count as a task's claim that a sign is in sight from its start.
ARRIVAL_MIN_PIXELS = 16


#: How far outside its city's bounds a task may start (metres).
START_MARGIN_M = 1000.0


class CityWalkEnv(CityWalkControls, UrbanEnv):
    """CityWalk: walk a real city in first person, on a five-level task ladder.

    ## Description
    A walker (a disc of radius 0.3 m) moves continuously in the metric plane of a city
    (default: Helsinki from OpenStreetMap). Buildings are solid (the walker slides along
    walls); the walkable network is where people walk (its mapped width). Tasks come from
    a JSONL suite (default: the committed Helsinki suite) of thirteen types on five levels
    (see :mod:`urban_gym.families.citywalk.tasks`): questions about the surroundings (L1),
    navigation to visible / distant / described / constrained goals (L2), implicit goals
    (L3), schedules and multi-stop plans (L4), closures that appear mid-episode, crowds, and
    the L1/SGN tasks at dusk, at night, in fog and rain (L5). Success: the final position
    within 15 m of the goal and the task's constraints kept (no closure crossed,
    deadlines met), or the right answer. Pedestrian contacts are counted beside success.

    ## Action Space
    ``Discrete(26)`` over :func:`citywalk_action_table` (RL face): 0-4 move forward 1 s /
    forward 2 s / backward 1 s / left 1 s / right 1 s; 5 sprint forward 2 s; 6-9 look
    yaw -30 / +30 / -90 / +90 degrees; 10 look up 30 degrees; 11 look down 30 degrees;
    12 jump; 13 open_map; 14 close_map; 15 map_zoom 0.5 (closer); 16 map_zoom 2 (farther);
    17-20 map_pan 100 m north / east / south / west; 21 terminate; 22-25 answer A-D (the
    answer turn of question tasks). ``step`` also takes a structured action (dict or bare
    name) of :func:`citywalk_action_set` (language-model face), UrbanGround's action space
    with its field names (:mod:`urban_gym.families.citywalk.handlers`):

    * ``move`` / ``sprint`` -- ``dir`` forward/backward/left/right, ``seconds`` 0.05-2
      (a larger value is clamped to 2 s and reported in ``info["clamped"]``; ``direction``
      and ``duration`` are accepted too), optional ``yaw_rate`` and ``pitch_rate`` in
      [-180, 180] deg/s applied during the move (a turning move follows an arc), ``jump``
      (bool) and ``jump_at`` (s into the move, in [0, seconds]). Walk 1.4 m/s, sprint
      3.0 m/s.
    * ``look`` -- turn by ``yaw`` in [-180, 180] deg (+ right) and tilt by ``pitch`` in
      [-90, 90] deg (+ up; the view's pitch stays in [-90, 90]); 0.5 s.
    * ``jump`` -- a jump in place, 0.6 s: the eye rises up to 0.5 m; in the air the walker
      passes over low obstacles (benches), which stop it on the ground.
    * ``open_map`` / ``close_map`` / ``map_pan`` (``east``, ``north`` m in [-2000, 2000]) /
      ``map_zoom`` (``factor`` in [0.25, 4]: above 1 farther, below 1 closer) /
      ``map_orbit`` (``yaw`` turns the map, ``pitch`` tilts its camera, both in
      [-180, 180] / [-90, 90] degrees) / ``map_select`` (``x``, ``y`` in [0, 1] of the map
      image: marks a point, computes nothing). Map actions take no clock time. Map actions
      are valid only in map mode, first-person actions (move, sprint, look, jump,
      open_map) only outside it.
    * ``terminate`` -- ends exploration (questions) or navigation (both modes).
    * ``answer`` -- question tasks, in the answer turn after exploration only: ``answer``
      A-D (or the option's text) and an optional ``reason``.

    An action that cannot be carried out (unknown name or direction, a value out of
    range or not a number, the wrong mode, a missing or unknown answer) is an
    invalid-action step: nothing moves, the clock stands still, the step counts, reward
    -0.01, ``info["invalid_action"]`` holds the message, which the next observation's
    ``notice`` repeats.

    ## Observation Space
    ``Dict``:

    * ``view``: ``Box(0, 255, (H, W, 3), uint8)`` -- the first-person view (``W x H`` =
      ``view_size``, 128x128 by default, at most 2048 a side; horizontal field of view
      ``fov``, the vertical one follows from the aspect) or, in
      map mode, the map (agent arrow, the task's destinations and active closures; POI
      names; never a route). Absent when ``view_size=None`` (the fast no-view mode).
    * ``instruction``: ``Text`` -- the task (with the lettered options of a question).
    * ``status``: ``Text`` -- clock, step, mode, conditions, schedule (the next
      appointment, its deadline and the minutes left, or OVERDUE by how many) / stops
      progress.
    * ``notice``: ``Text`` -- what the last action did (bumped into a wall or a person,
      clamped duration, invalid action) and one-time system notices (a closure appears:
      each closed segment as a chain of waypoints, :mod:`~urban_gym.families.citywalk.closures`).
    * ``action_mask``: ``Box(0, 1, (26,), int8)`` -- 1 where the table entry is valid now
      (also :meth:`action_masks` for sb3-contrib ``MaskablePPO``).
    * ``goal_vector`` / ``goal_landmarks`` / ``goal_image`` / ``goal_text`` (with
      ``goal=``): the goal a policy conditions on (:mod:`urban_gym.envs.goals`).

    ## Starting State
    The task's start pose (``x``, ``y``, ``heading``, ``pitch``) and clock (seconds of
    day). ``reset(seed=s)`` draws the task from the suite with ``self.np_random``;
    ``options={"task_id": id}`` or ``{"task_index": i}`` picks one.

    ## Rewards
    +0.01 per metre of walking distance gained towards the goal (or the next stop), +0.5
    per stop reached, -0.5 per closure crossing, -0.1 per pedestrian contact, -0.01 per
    invalid action, and at the end +1 for success (navigation) or the right answer.

    ## Episode End
    As in UrbanGround. Questions: exploration ends on ``terminate`` or after ``max_steps``
    steps; the next step is the answer turn (``info["answer_turn"]``; only ``answer`` is
    valid), which terminates the episode (``answered``; after 3 invalid answers
    ``terminated_by_agent``). Navigation and multi-stop tasks terminate on ``terminate``
    (``arrived`` when the goal is reached, else ``terminated_by_agent``) and on arrival
    without terminating (``arrived``: within the goal's radius, or every stop visited);
    they are truncated after ``max_steps`` steps (the task's ``limits.max_steps``, 150 by
    default; ``step_limit``). A pedestrian contact never ends or fails an episode; it is
    counted (``collision_rate``, ``pedestrian_collision``).

    ## Information
    The schema of :mod:`urban_gym.envs.info`: ``pose`` (``x``, ``y``, ``heading``),
    ``distance_to_goal_m`` (walking metres to the goal or the next stop; ``inf`` in
    question tasks: no goal; 0 when all stops are reached), ``steps``, ``invalid_actions``,
    ``action_valid``, ``invalid_action``, ``task_id``; and the family's own keys:
    ``pitch`` (of the view, degrees), ``clock`` (s since the start), ``clock_of_day`` (s),
    ``on_network`` (on the *pedestrian* network:
    :mod:`urban_gym.families.citywalk.network`), ``covered``, ``map_mode``, ``answer_turn``, ``hit_wall``, ``closure_crossings``,
    ``pedestrian_contacts``, ``stops_reached``, ``action`` (the canonical action without
    the optional parameters that were left out; ``{}`` after reset and when no action
    could be read), ``clamped`` (when a duration was clamped), ``jump_height`` and ``eye_rise`` (m above
    the standing eye when the view was taken; steps with a jump),
    ``task`` (the TaskSpec). At the end: ``termination``, ``metrics``
    (:func:`~urban_gym.families.citywalk.tasks.evaluate`: success, spl, answer_accuracy,
    network_adherence, closure_compliance, collision_rate, rain_exposure_s,
    fraction_reached, on_time_rate, ended_closer, ndtw, ...) and ``is_success``.

    ## Arguments
    * ``suite``: a committed suite's name (``"helsinki"``, the default, ``"london"``,
      ``"munich"``, ``"sao_paulo"``) or a JSONL path.
    * ``tasks``: TaskSpecs or dicts to use instead of a suite.
    * ``task_types``: keep only these types (e.g. ``["SGN", "LGN"]``).
    * ``difficulties``: keep only these ladder levels (e.g. ``["l1", "l2"]``).
    * ``city``: the city every task must name (default: the tasks' own; a task's world is
      its ``task.city``); without ``suite`` and ``tasks``, the committed suite of that city
      (``city="london"``).
    * ``names``: which name of each place the world's signs and maps show: ``"local"``,
      ``"english"`` or ``"both"`` (the default; :mod:`urban_gym.world.names`).
    * ``view_size``: the view's size in pixels: an int for a square view or ``(width,
      height)`` (each 1-2048), or None for no view. The language-model face
      (:func:`urban_gym.wrappers.make_lmm_env`) uses 960x540.
    * ``fov``: horizontal field of view in degrees (default 90).
    * ``max_steps``: step limit overriding the tasks' (default: the task's, else 150).
    * ``render_mode``: None or ``"rgb_array"`` (view, map and text side by side).
    * ``render_size``: height of each panel of the ``rgb_array`` frame (default 256).
    * ``track_visibility``: False; True adds ``info["goal_visible"]``
      (:mod:`urban_gym.envs.visibility`).
    * ``goal``: ``"none"`` (default) or another goal mode of :mod:`urban_gym.envs.goals`
      (``"vector"``, ``"landmarks"``, ``"text"``; ``"image"`` needs a view).
    * ``arrival``: how a place-type search (PTS) or implicit-intent (III) task's arrival is
      judged. ``"view"`` (default): within the radius of a suitable place *and* that
      place's sign in the final first-person view -- at least ``arrival_min_pixels``
      pixels of it in the renderer's instance ids of a 960x540 view at ``fov``, the
      pedestrians drawn (UrbanGround's judge sees the final view). ``"position"``: within
      the radius only. ``info["arrival_rule"]`` names the rule that judges the task
      (``"position"`` for every other type); at the end ``metrics`` hold
      ``arrival_by_view`` (1 or 0) and ``arrival_sign_pixels`` on PTS/III tasks.
    * ``arrival_min_pixels``: the sign pixels the ``"view"`` rule needs (default 16).

    ## Version History
    * v0: UrbanGround's action names, look/zoom/orbit semantics, jumps, the answer turn
      and arrival without ``terminate``; ``info`` in the shared schema
      (``distance_to_goal_m``; the view's ``pitch`` a key of its own, outside ``pose``).
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 4}
    family = "citywalk"
    cache_attributes = (
        "city",
        "geometry",
        "ground",
        "_router_cache",
        "_fields",
        "_renderers",
        "_last_view",
        "_remaining_memo",
        "_markers_memo",
    )
    _router_closed: tuple[tuple[int, int], ...]  # the closures of _router_cache

    def __init__(
        self,
        suite: str | Path | None = None,
        tasks: list[TaskSpec | dict[str, Any]] | None = None,
        task_types: list[str] | tuple[str, ...] | None = None,
        difficulties: list[str] | tuple[str, ...] | None = None,
        city: str | None = None,
        view_size: int | tuple[int, int] | None = 128,
        fov: float = 90.0,
        max_steps: int | None = None,
        render_mode: str | None = None,
        render_size: int = 256,
        track_visibility: bool = False,
        goal: str = "none",
        arrival: str = "view",
        arrival_min_pixels: int = ARRIVAL_MIN_PIXELS,
        names: str = DEFAULT_NAMES,
    ) -> None:
        self._init_base(render_mode, track_visibility, goal, names)
        if arrival not in ARRIVAL_RULES:
            raise TaskError(f"arrival={arrival!r} is not one of {', '.join(ARRIVAL_RULES)}")
        if (
            not isinstance(arrival_min_pixels, int)
            or isinstance(arrival_min_pixels, bool)
            or arrival_min_pixels < 1
        ):
            raise TaskError(f"arrival_min_pixels={arrival_min_pixels!r} must be an int >= 1")
        self.arrival = arrival
        self.arrival_min_pixels = arrival_min_pixels
        self.view_wh = view_wh(view_size, MAX_VIEW_SIZE)
        if not (isinstance(fov, (int, float)) and 0.0 < float(fov) < 180.0):
            raise TaskError(f"fov={fov!r} must be a number of degrees in (0, 180)")
        if max_steps is not None and (not isinstance(max_steps, int) or max_steps < 1):
            raise TaskError(f"max_steps={max_steps!r} must be a positive int")
        self.view_size = view_size
        self.fov = float(fov)
        self.max_steps_override = max_steps
        self.render_size = int(render_size)
        self.tasks = self._load_tasks(suite, tasks, task_types, difficulties, city)
        self.action_set = citywalk_action_set()
        self.action_table: list[dict[str, Any]] = citywalk_action_table()
        self.action_space = spaces.Discrete(len(self.action_table))
        self.observation_space = self._make_observation_space()
        self._renderers: dict[str, Any] = {}
        self._last_view: dict[str, tuple[Any, np.ndarray]] = {}
        self._mask_cache: dict[tuple, np.ndarray] = {}
        self._markers_memo: tuple | None = None  # (task, closures, key, MapMarkers)
        self.task: TaskSpec = self.tasks[0]
        self._setup_world(self.task)
        self._reset_state()

    # ------------------------------------------------------------------ setup
    def _make_observation_space(self) -> spaces.Dict:
        longest = max([0, *(len(t.instruction) for t in self.tasks)])
        charset = self._charset = task_charset(self.tasks)
        obs: dict[str, spaces.Space] = {}
        if self.view_wh is not None:
            w, h = self.view_wh
            obs["view"] = spaces.Box(0, 255, (h, w, 3), np.uint8)
        obs["instruction"] = SharedMemoryText(max(longest, TEXT_MAX), min_length=0, charset=charset)
        obs["status"] = SharedMemoryText(TEXT_MAX, min_length=0, charset=charset)
        obs["notice"] = SharedMemoryText(TEXT_MAX, min_length=0, charset=charset)
        obs["action_mask"] = spaces.Box(0, 1, (len(self.action_table),), np.int8)
        return spaces.Dict({**obs, **self.goal_spaces()})

    def _setup_world(self, task: TaskSpec) -> None:
        self.city: City = self.load_world(task.city)
        self.geometry = WalkGeometry.for_city(self.city)
        self.ground = low_obstacles(self.city, self.geometry)
        self.pedestrian = PedestrianNetwork.for_city(self.city)
        self._city_spec = task.city

    def _reset_state(self) -> None:
        t = self.task
        st = t.start
        self.walker = WalkerState(
            float(st["x"]),
            float(st["y"]),
            float(st["heading"]) % 360.0,
            float(st.get("pitch", 0.0)),
        )
        self.clock = SimClock(float(st.get("clock", 36000.0)))
        self.kind = TASK_TYPES[t.type].kind
        self.max_steps = self.max_steps_override or int(
            t.limits.get("max_steps", DEFAULT_MAX_STEPS)
        )
        self.map_mode = False
        self.answer_turn = False
        self._answer_fails = 0
        self._eye_rise = 0.0
        self.map = MapState()
        self._s = StepScratch()
        self.notice_once: list[str] = []
        self.record = EpisodeOutcome()
        self.record.positions.append((self.walker.x, self.walker.y))
        self.record.headings.append(self.walker.heading)
        self.record.clocks.append(0.0)
        self.closures = [
            Closure(
                str(c.get("id", f"c{i}")),
                tuple(tuple(p) for p in c["points"]),
                str(c.get("label", "")),
                tuple(c["trigger"]) if c.get("trigger") else None,
            )
            for i, c in enumerate(t.constraints.get("closures", []) or [])
        ]
        self.closure_active = [c.trigger is None for c in self.closures]
        self._closed_edges = {
            i: [tuple(e) for e in (c.get("closed_edges") or [])]
            for i, c in enumerate(t.constraints.get("closures", []) or [])
        }
        peds = t.constraints.get("pedestrians")
        self.crowd = (
            Crowd(
                self.city,
                int(peds.get("count", 0)),
                int(peds.get("seed", 0)),
                peds.get("around"),
                duration=self.max_steps * MAX_DURATION + 60.0,
                avoid=(self.walker.x, self.walker.y),
            )
            if peds
            else None
        )
        cond = t.constraints.get("conditions") or {}
        self.conditions = {
            "time_of_day": cond.get("time_of_day", "day"),
            "weather": cond.get("weather", "clear"),
            "seed": int(cond.get("seed", 0)),
        }
        self.raining = self.conditions["weather"] == "rain"
        # per-episode pieces of each step's status line and view key
        tod, weather = self.conditions["time_of_day"], self.conditions["weather"]
        self._status_tail = "" if (tod, weather) == ("day", "clear") else f" | {tod}, {weather}"
        self._conditions_key = tuple(self.conditions.values())
        self._render_cond: Any = None  # the Conditions of the renderers, made at first use
        self.stops = list(t.goal.get("stops", []) or [])
        self.record.arrivals = [None] * len(self.stops)
        self._router_cache: Router | None = None
        self._fields: dict[int, DistanceField] = {}
        self._remaining_memo: tuple | None = None  # (field, x, y, walking distance)
        self.distance_to_goal = self._remaining()
        self.record.start_distance = self.distance_to_goal
        self._last_notice = ""

    # ------------------------------------------------------------------ episode
    def _start_episode(self, task: TaskSpec) -> None:
        if task.city != self._city_spec:
            self._setup_world(task)
        x, y = float(task.start["x"]), float(task.start["y"])
        if not self.city.contains(x, y, margin=START_MARGIN_M):
            x0, y0, x1, y1 = self.city.bounds
            raise TaskError(
                f"task {task.id!r}: start (x={x!r}, y={y!r}) lies more than "
                f"{START_MARGIN_M:g} m outside its city (x {x0:.0f}..{x1:.0f}, "
                f"y {y0:.0f}..{y1:.0f} m)"
            )
        self._reset_state()

    def render(self) -> np.ndarray | None:
        """The frame a person watches (``rgb_array`` mode), else None."""
        if self.render_mode != "rgb_array":
            return None
        return self._frame()

    def close(self) -> None:
        """Drop the renderers and the last views (they are rebuilt on demand)."""
        self._renderers.clear()
        self._last_view.clear()

    def _restore_caches(self) -> None:
        self._renderers = {}
        self._last_view = {}
        self._router_cache = None
        self._fields = {}
        self._remaining_memo = None
        self._markers_memo = None
        self.city = self.load_world(self._city_spec)
        self.geometry = WalkGeometry.for_city(self.city)
        self.ground = low_obstacles(self.city, self.geometry)
        self.pedestrian = PedestrianNetwork.for_city(self.city)

    # ------------------------------------------------------------------ hooks
    def _begin_step(self) -> None:
        self._s = StepScratch()

    def _apply(self, action: dict[str, Any]) -> None:
        s = self._s
        s.action = action
        self._check_mode(s)
        self._execute(s)
        self._advance_world(s)

    def _advance_world(self, s: StepScratch) -> None:
        self._eye_rise = 0.0 if s.jump_at is None else jump_eye_rise(s.duration - s.jump_at)
        t0 = self.clock.elapsed
        if s.duration > 0.0:
            self.clock.advance(s.duration)
        if self.crowd is not None and s.duration > 0.0:
            if s.move is not None:
                xy = walker_samples(s.move, s.duration)
            else:
                xy = walker_samples(_still(self.walker), s.duration)
            s.new_contacts = self.crowd.advance(t0, s.duration, xy)
            if s.new_contacts:
                s.messages.append(
                    "You bumped into someone."
                    if s.new_contacts == 1
                    else f"You bumped into {s.new_contacts} people."
                )
        if s.move is not None and self.closures:
            for i, c in enumerate(self.closures):
                if self.closure_active[i]:
                    s.new_crossings += count_crossings(s.move.path, c)
            if s.new_crossings:
                s.messages.append("You crossed a closed way.")
        for i, c in enumerate(self.closures):
            if not self.closure_active[i] and c.trigger is not None:
                tx, ty, tr = c.trigger
                if math.hypot(self.walker.x - tx, self.walker.y - ty) <= tr:
                    self.closure_active[i] = True
                    self._fields.clear()
                    s.new_closures.append(i)
        if s.new_closures:
            s.closure_notice = self._clean(self.closure_notice(s.new_closures))
            s.messages.append(s.closure_notice)

    def _record_step(self, s: StepScratch) -> None:
        r = self.record
        w = self.walker
        r.steps = self.steps
        r.invalid_actions = self.invalid_actions
        r.positions.append((w.x, w.y))
        r.headings.append(w.heading)
        r.clocks.append(self.clock.elapsed)
        r.durations.append(s.duration)
        if s.move is None and r.on_network:  # the walker did not move: the same answers
            self._on_network = r.on_network[-1]
            self._covered = r.covered[-1]
        else:
            self._on_network = self.pedestrian.contains(w.x, w.y)
            self._covered = self.geometry.covered(w.x, w.y) if self.raining else False
        r.on_network.append(self._on_network)
        r.covered.append(self._covered)
        if s.move is not None:
            r.path_length += s.move.distance
            r.wall_hits += int(s.move.hit_wall)
        r.closure_crossings += s.new_crossings
        r.contacts += s.new_contacts

    def _update_progress(self, s: StepScratch) -> None:
        if self.stops:
            rad = float(self.task.goal.get("radius", SUCCESS_RADIUS))
            ordered = bool(self.task.goal.get("ordered"))
            w = self.walker
            for i, st in enumerate(self.stops):
                if self.record.arrivals[i] is not None:
                    continue
                if math.hypot(w.x - st["x"], w.y - st["y"]) <= rad:
                    self.record.arrivals[i] = self.clock.elapsed
                    s.new_stops += 1
                    s.messages.append(f"You reached {st['name']} ({format_clock(self.clock.now)}).")
                    self._fields.clear()
                if ordered and self.record.arrivals[i] is None:
                    break
        self._prev_distance = self.distance_to_goal
        self.distance_to_goal = self._remaining()

    def _after_action(self, valid: bool) -> None:
        self._record_step(self._s)
        self._update_progress(self._s)

    def _reward(self) -> float:
        s = self._s
        r = 0.0
        if (
            math.isfinite(self._prev_distance)
            and math.isfinite(self.distance_to_goal)
            and not s.new_stops
        ):
            r += PROGRESS_REWARD_PER_M * (self._prev_distance - self.distance_to_goal)
        r += STOP_REWARD * s.new_stops
        r -= CLOSURE_PENALTY * s.new_crossings + CONTACT_PENALTY * s.new_contacts
        return float(r)

    def _check_end(self, valid: bool) -> tuple[str | None, bool]:
        """The end rules of UrbanGround (Appendix F): a question's exploration ends on
        ``terminate`` or at the step limit, then one answer turn ends the episode (after
        :data:`ANSWER_TRIES` unreadable answers it ends unanswered); navigation ends on
        ``terminate``, on arrival (without terminating) or at the step limit.
        """
        s = self._s
        if self.answer_turn:
            if s.answered:
                self.record.answer_index = s.answer_index
                return "answered", False
            self._answer_fails += 1
            if self._answer_fails >= ANSWER_TRIES:
                return "terminated_by_agent", False
            return None, False
        if self.kind == "question":
            if s.terminate or self.steps >= self.max_steps:
                self.answer_turn = True
                why = "You chose terminate" if s.terminate else "The turn limit is reached"
                s.messages.append(
                    f"{why}: exploration is over. Now give the final answer to the question, "
                    "as a JSON object with the option's letter and a short reason: "
                    '{"answer": "A|B|C|D", "reason": "..."}.'
                )
            return None, False
        if valid and self._reached():
            return "arrived", False
        if s.terminate:
            return "terminated_by_agent", False
        if self.steps >= self.max_steps:
            return "step_limit", True
        return None, False

    def _reached(self) -> bool:
        """Whether the walker has arrived: within the goal's radius (place search and
        implicit intent: of any suitable place, ``goal.alternatives``), or every stop
        visited.
        """
        if self.kind == "navigation":
            g = self.task.goal
            w = self.walker
            r = float(g.get("radius", SUCCESS_RADIUS))
            spots = [(g["x"], g["y"]), *(tuple(p[:2]) for p in g.get("alternatives") or [])]
            near = any(math.hypot(w.x - x, w.y - y) <= r for x, y in spots)
            if near and self.arrival_rule == "view":
                return self.arrival_sign_pixels() >= self.arrival_min_pixels
            return near
        return all(a is not None for a in self.record.arrivals)

    @property
    def arrival_rule(self) -> str:
        """The rule that judges the current task's arrival: ``arrival`` for PTS and III
        tasks, ``"position"`` for every other type.
        """
        return self.arrival if self.task.type in ARRIVAL_VIEW_TYPES else "position"

    def arrival_places(self) -> list[int]:
        """POI indices of the task's suitable places (the goal and ``goal.alternatives``)
        whose radius the walker is within now.
        """
        g = self.task.goal
        w = self.walker
        r = float(g.get("radius", SUCCESS_RADIUS))
        spots = [(g["x"], g["y"], g.get("poi_id")), *(g.get("alternatives") or [])]
        return [
            int(s[2])
            for s in spots
            if len(s) > 2 and isinstance(s[2], int) and math.hypot(w.x - s[0], w.y - s[1]) <= r
        ]

    def arrival_sign_pixels(self) -> int:
        """Pixels of the signs of :meth:`arrival_places` in the first-person id view now
        (:data:`ARRIVAL_VIEW_SIZE` at ``fov``, pedestrians drawn; 0 with the map open or
        no place near).
        """
        from urban_gym.render.ids import sign_id

        places = self.arrival_places()
        if self.map_mode or not places:
            return 0
        w = self.walker
        peds = self.pedestrian_positions()
        key = (self.task.id, w.x, w.y, w.heading, w.pitch, peds.tobytes())
        hit = self.__dict__.get("_arrival_memo")
        if hit is not None and hit[0] == key:
            return int(hit[1])
        ids = (
            self._renderer("arrival")
            .render(w.x, w.y, w.heading, w.pitch, pedestrians=[tuple(p) for p in peds], ids=True)
            .ids
        )
        n = int(np.isin(ids, [sign_id(p) for p in places]).sum())
        self._arrival_memo = (key, n)
        return n

    def _outcome(self) -> EpisodeOutcome:
        self.record.end_distance = self.distance_to_goal
        if self.kind == "navigation" and self.task.type in ARRIVAL_VIEW_TYPES:
            self.record.arrival_rule = self.arrival
            self.record.arrival_sign_pixels = self.arrival_sign_pixels()
            self.record.arrival_min_pixels = self.arrival_min_pixels
        return self.record

    def _end_reward(self, metrics: dict[str, Any], valid: bool) -> float:
        return SUCCESS_REWARD if is_success(metrics) else 0.0

    # ------------------------------------------------------------------ distances
    @property
    def router(self) -> Router:
        """A router over the network with the active closures' edges closed."""
        if self._router_cache is None or self._router_closed != self._active_closed():
            self._router_closed = self._active_closed()
            self._router_cache = Router(self.city, self._router_closed)
        return self._router_cache

    def _active_closed(self) -> tuple[tuple[int, int], ...]:
        out: list[tuple[int, int]] = []
        for i, on in enumerate(self.closure_active):
            if on:
                out.extend(self._closed_edges.get(i, []))
        return tuple(out)

    def _distance_field(self, target: tuple[float, float]) -> DistanceField:
        """Walking distances to ``target`` with the active closures closed (kept across
        episodes: :func:`~urban_gym.families.citywalk.dynamics.distance_field`).
        """
        return distance_field(self._city_spec, self.router, target, self._active_closed())

    def current_target(self) -> tuple[float, float] | None:
        """Where the agent should go now: the goal, the next stop (ordered), the nearest
        unvisited stop (unordered), or None (questions, all stops reached).
        """
        if self.kind == "navigation":
            return (float(self.task.goal["x"]), float(self.task.goal["y"]))
        if self.kind == "multi_stop":
            left = [st for st, a in zip(self.stops, self.record.arrivals) if a is None]
            if not left:
                return None
            if self.task.goal.get("ordered"):
                return (float(left[0]["x"]), float(left[0]["y"]))
            w = self.walker
            best = min(left, key=lambda st: math.hypot(st["x"] - w.x, st["y"] - w.y))
            return (float(best["x"]), float(best["y"]))
        return None

    def _remaining(self) -> float:
        target = self.current_target()
        if target is None:
            return math.nan if self.kind == "question" else 0.0
        key = hash(target)
        fld = self._fields.get(key)
        if fld is None:
            fld = self._distance_field(target)
            self._fields = {key: fld}
        w = self.walker
        memo = self._remaining_memo
        if memo is not None and memo[0] is fld and memo[1] == w.x and memo[2] == w.y:
            return memo[3]  # not moved (a look, a map action, blocked): the same distance
        d = walking_distance(self.city, self.geometry, self.router, fld, w.x, w.y)
        self._remaining_memo = (fld, w.x, w.y, d)
        return d

    # ------------------------------------------------------------------ observation
    def _mask(self) -> np.ndarray:
        key = (self.map_mode, self.answer_turn, self.kind, len(self.task.options))
        m = self._mask_cache.get(key)
        if m is None:
            m = self._mask_cache[key] = self._compute_mask()
        return m.copy()

    def _compute_mask(self) -> np.ndarray:
        m = np.zeros(len(self.action_table), dtype=np.int8)
        for i, a in enumerate(self.action_table):
            name = a["action"]
            if self.answer_turn:
                m[i] = name in ANSWER_ONLY and OPTION_LETTERS.index(a["answer"]) < len(
                    self.task.options
                )
            elif name in FIRST_PERSON:
                m[i] = not self.map_mode
            elif name in MAP_ONLY:
                m[i] = self.map_mode
            elif name == "terminate":
                m[i] = 1
        return m

    def _status(self) -> str:
        mode = "answer turn" if self.answer_turn else "map mode" if self.map_mode else _FP_VIEW
        head = (
            f"Time {self.clock.text()} | step {min(self.steps, self.max_steps)}/"
            f"{self.max_steps} | {mode}{self._status_tail}"
        )
        if not (self.stops or self.map_mode):
            return self._clean(head)
        lines = [head]
        if self.stops:
            lines.extend(self._stops_status())
        if self.map_mode:
            m = self.map
            marked = ", a point is marked." if m.selected else "."
            tilt = f", tilted {m.tilt:g} degrees" if m.tilt else ""
            lines.append(
                f"Map: {m.mpp:g} m per pixel, rotated {m.rotation:g} degrees{tilt}{marked}"
            )
        return self._clean("\n".join(lines))

    def closure_notice(self, indices: list[int]) -> str:
        """The one-time notice when the closures ``indices`` appear: each as a chain of
        waypoints (:func:`~urban_gym.families.citywalk.closures.describe_closures`).
        """
        chains = describe_closures(self.city, [self.closures[i] for i in indices])
        return (
            "NOTICE: a way ahead has just been closed, and stays closed until the end of the "
            "task; it is drawn as a red line on the map. Do not cross it from now on (before "
            f"this notice crossing was allowed); find another way. {chains}"
        )

    @property
    def closures_appeared(self) -> list[int]:
        """The closures (indices into :attr:`closures`) that appeared in the last step."""
        return list(self._s.new_closures)

    @property
    def last_closure_notice(self) -> str:
        """The closure notice of the last step, as the ``notice`` observation holds it
        (``""``: none); a face that words the notice itself takes it out.
        """
        return self._s.closure_notice

    def stops_progress(self) -> StopsProgress | None:
        """The multi-stop task's schedule / progress now (None for other tasks)."""
        if not self.stops:
            return None
        return stops_progress(
            self.stops,
            self.record.arrivals,
            self.clock.now,
            bool(self.task.goal.get("ordered")),
        )

    def _stops_status(self) -> list[str]:
        """Schedule (ordered stops: the next one with its deadline and the minutes left,
        or how late it is) or progress (unordered stops) lines.
        """
        arrivals = self.record.arrivals
        done = [(st, a) for st, a in zip(self.stops, arrivals) if a is not None]
        left = [st for st, a in zip(self.stops, arrivals) if a is None]
        n = len(self.stops)
        if not self.task.goal.get("ordered"):
            visited = ": " + ", ".join(st["name"] for st, _ in done) if done else ""
            rest = (
                ". Left: " + ", ".join(st["name"] for st in left) + "."
                if left
                else ". All visited."
            )
            return [f"Visited {n - len(left)} of {n}{visited}{rest}"]
        out = []
        prog = self.stops_progress()
        if left and prog is not None:
            nxt = left[0]
            due = f" by {format_hhmm(nxt['deadline'])}" if nxt.get("deadline") else ""
            late = ""
            if prog.minutes_left is not None:
                late = f", {prog.minutes_left} minutes left"
            elif prog.minutes_overdue is not None:
                late = f", OVERDUE by {prog.minutes_overdue} minutes"
            out.append(f"Next: {nxt['name']}{due} (stop {n - len(left) + 1} of {n}){late}.")
        else:
            out.append("All appointments visited.")
        if done:
            when = (f"{st['name']} at {format_clock(self.clock.start + a)}" for st, a in done)
            out.append("Done: " + "; ".join(when) + ".")
        return out

    def _observe(self) -> dict[str, Any]:
        notice = list(self._s.messages)
        if self.last_action_error:
            notice.insert(0, f"Invalid action: {self.last_action_error}")
        obs: dict[str, Any] = {}
        if self.view_wh is not None:
            obs["view"] = self._map_image(self.view_wh) if self.map_mode else self._view()
        task = self.task
        if self.__dict__.get("_clean_for") is not task:  # cleaned once per task
            self._clean_instruction = self._clean(task.instruction)
            self._clean_for = task
        obs["instruction"] = self._clean_instruction
        obs["status"] = self._status()
        obs["notice"] = self._clean(" ".join(notice))
        obs["action_mask"] = self._mask()
        return obs

    def _clean(self, text: str) -> str:
        return clean_text(text, self._charset, TEXT_MAX)

    def _pose(self) -> tuple[float, float, float]:
        w = self.walker
        return w.x, w.y, w.heading

    def _distance_to_goal(self) -> float:
        d = self.distance_to_goal
        return math.inf if math.isnan(d) else float(d)  # questions have no goal

    def _extra_info(self) -> dict[str, Any]:
        s = self._s
        w = self.walker
        info: dict[str, Any] = {
            "pitch": w.pitch,
            "answer_turn": self.answer_turn,
            "clock": self.clock.elapsed,
            "clock_of_day": self.clock.now,
            "on_network": self.record.on_network[-1]
            if self.record.on_network
            else self.pedestrian.contains(w.x, w.y),
            "covered": self.record.covered[-1] if self.record.covered else False,
            "map_mode": self.map_mode,
            "hit_wall": bool(s.move is not None and s.move.hit_wall),
            "closure_crossings": self.record.closure_crossings,
            "pedestrian_contacts": self.record.contacts,
            "stops_reached": sum(a is not None for a in self.record.arrivals),
            "arrival_rule": self.arrival_rule,
            # a fresh copy, always a dict (vector envs batch every info key by its type)
            "action": {k: v for k, v in (s.action or {}).items() if v is not None},
            "task": self.task,
        }
        if s.clamped is not None:
            info["clamped"] = {"duration": s.clamped, "to": MAX_DURATION}
        if s.jump_at is not None:
            info["jump_height"] = JUMP_HEIGHT
            info["eye_rise"] = round(self._eye_rise, 6)
        return info

    # ------------------------------------------------------------------ goal modes
    no_view_reason = "view_size=None renders no view"

    def _goal_point(self) -> tuple[float, float] | None:
        """The goal place; for a multi-stop task its first stop not reached yet (the
        last stop once all are reached).
        """
        stops = getattr(self, "stops", None) or (self.task.goal or {}).get("stops")
        if not stops:
            return super()._goal_point()
        arrivals = list(getattr(getattr(self, "record", None), "arrivals", []) or [])
        for i, st in enumerate(stops):
            if i >= len(arrivals) or arrivals[i] is None:
                return float(st["x"]), float(st["y"])
        return float(stops[-1]["x"]), float(stops[-1]["y"])

    def _view_shape(self) -> tuple[int, int] | None:
        return (self.view_wh[1], self.view_wh[0]) if self.view_wh is not None else None

    def _goal_view(self, task: TaskSpec, goal: tuple[float, float]) -> np.ndarray:
        """The first-person view at ``goal``, facing the task's start heading, level."""
        heading = float(task.start.get("heading", 0.0))
        return np.asarray(self._renderer("view").render(goal[0], goal[1], heading, 0.0).rgb)

    def _goal_visible(self) -> bool:
        """The goal place's sign in the first-person view (pedestrians occlude; False while
        the map is open): :mod:`urban_gym.envs.visibility`.
        """
        from urban_gym.envs.visibility import id_view_size, in_view, tracker_of

        if self.map_mode:
            return False
        tr = tracker_of(self, self.city)
        targets = tr.targets(self.task)
        if targets.size == 0:
            return False
        w = self.walker
        res = tr.first_person(id_view_size(self.view_wh or (128, 128)), self.fov).render(
            w.x, w.y, w.heading, w.pitch, pedestrians=self.pedestrian_positions(), ids=True
        )
        return in_view(res.ids, targets)

    # ------------------------------------------------------------------ pixels
    def _renderer(self, name: str) -> Any:
        r = self._renderers.get(name)
        if r is None:
            import urban_gym.render as R

            if name == "map":
                r = R.MapRenderer(self.city)
            else:
                size = {"view": self.view_wh, "arrival": ARRIVAL_VIEW_SIZE}.get(
                    name, (self.render_size,) * 2
                )
                assert size is not None  # only an env with a view renders one
                vw, vh = size
                r = R.FirstPersonRenderer(self.city, width=vw, height=vh, fov=self.fov)
            self._renderers[name] = r
        return r

    def _render_conditions(self) -> Any:
        if self._render_cond is None:  # the episode's conditions, made once
            from urban_gym.render import Conditions

            self._render_cond = Conditions(**self.conditions)
        return self._render_cond

    def pedestrian_positions(self) -> np.ndarray:
        """``(N, 2)`` positions (m) of the pedestrians now (privileged)."""
        if self.crowd is None:
            return np.zeros((0, 2))
        return self.crowd.positions(self.clock.elapsed)

    def _view(self, which: str = "view") -> np.ndarray:
        """The first-person image now; the last one is reused while nothing in it changed
        (a map action, a jump or an invalid action without pedestrians).
        """
        w = self.walker
        peds = () if self.crowd is None else tuple(tuple(p) for p in self.pedestrian_positions())
        rise = self._eye_rise
        key = (which, w.x, w.y, w.heading, w.pitch, rise, peds, self._conditions_key)
        hit = self._last_view.get(which)
        if hit is not None and hit[0] == key:
            return hit[1].copy()
        r = self._renderer(which)
        first = None  # an episode's first view: tasks repeat, and so do their first views
        if self.steps == 0:
            config = (r.width, r.height, r.fov, r.eye_height, r.max_distance, r.inside)
            first = (_start_views(self.city), (config, *key[1:]))
            img = first[0].get(first[1])
            if img is not None:
                self._last_view[which] = (key, img)
                return img.copy()
        standing = r.eye_height
        r.eye_height = standing + rise  # in the air: the view from the raised eye
        try:
            res = r.render(
                w.x,
                w.y,
                w.heading,
                w.pitch,
                conditions=self._render_conditions(),
                pedestrians=list(peds),
            )
        finally:
            r.eye_height = standing
        self._last_view[which] = (key, res.rgb)
        if first is not None:
            kept = res.rgb.copy()
            kept.setflags(write=False)
            first[0].put(first[1], kept)
        return res.rgb.copy()

    def map_markers(self) -> Any:
        """The map markers the agent may see: itself, the task's destinations (when the task
        shows them) and the active closures. Never a route.
        """
        from urban_gym.render import MapMarkers

        w = self.walker
        selected = self.map.selected if self.map_mode else None
        # what they depend on (the closures list is the episode's own): the same markers
        # while nothing moves -- a map session's pans and zooms
        key = (w.x, w.y, w.heading, selected, *self.closure_active)
        memo = self._markers_memo
        if (
            memo is not None
            and memo[0] is self.task
            and memo[1] is self.closures
            and memo[2] == key
        ):
            return memo[3]
        g = self.task.goal
        dest: list[tuple[float, float]] = []
        if self.stops:
            if g.get("show_on_map"):
                dest = [(float(st["x"]), float(st["y"])) for st in self.stops]
        elif g.get("show_on_map") and "x" in g:
            dest = [(float(g["x"]), float(g["y"]))]
        closures = [c.points for c, on in zip(self.closures, self.closure_active) if on]
        markers = MapMarkers(
            agent=(w.x, w.y, w.heading), destinations=dest, closures=closures, selected=selected
        )
        self._markers_memo = (self.task, self.closures, key, markers)
        return markers

    def _map_image(self, size: int | tuple[int, int]) -> np.ndarray:
        """The map now; the last one is reused while nothing on it changed (an invalid
        action or a first-person action that moves nothing, in map mode).
        """
        m = self.map if self.map_mode else MapState(center=(self.walker.x, self.walker.y))
        w = self.walker
        # everything the map shows: the view, the walker, the task's markers and closures
        view = (m.center, m.mpp, m.rotation, m.tilt, m.selected)  # MapState is mutable
        key = (self.map_mode, view, w.x, w.y, w.heading, id(self.task), *self.closure_active)
        which = f"map {size}"  # the observation's and the video frame's maps apart
        hit = self._last_view.get(which)
        if hit is not None and hit[0] == key:
            return hit[1].copy()
        kw = {"tilt": m.tilt} if m.tilt else {}
        img = self._renderer("map").render(
            center=m.center,
            metres_per_pixel=m.mpp,
            size=size,
            rotation=m.rotation,
            labels=True,
            markers=self.map_markers(),
            **kw,
        )
        self._last_view[which] = (key, img)
        return img.copy()

    def _frame(self) -> np.ndarray:
        """The ``rgb_array`` frame, three ``render_size`` squares side by side: the
        first-person view, the map around the walker, and the task, its instruction and
        the status line as text.
        """
        from urban_gym.render import frame as F

        n = self.render_size
        text = F.text_panel(
            [f"{self.task.type} | {self.task.id}", self.task.instruction, "", self._status()],
            n,
            n,
            font_size=max(8, n // 22),
        )
        return F.hstack([self._view("frame"), self._map_image(n), text])


_FP_VIEW = "first-person view"

#: bytes of episodes' first views kept per city, shared by the envs of a process
START_VIEW_CACHE_BYTES = 32 * 2**20
#: city -> (renderer settings, pose, eye rise, pedestrians, conditions) -> the view
_START_VIEWS: weakref.WeakKeyDictionary[City, LRUCache] = weakref.WeakKeyDictionary()
_START_VIEWS_LOCK = threading.Lock()


def _start_views(city: City) -> LRUCache:
    """The first views of episodes in ``city`` (an episode's first view is its task's:
    the same task, the same image), kept for every env of the process.
    """
    got = _START_VIEWS.get(city)
    if got is None:
        with _START_VIEWS_LOCK:
            got = _START_VIEWS.get(city)
            if got is None:
                got = _START_VIEWS[city] = LRUCache(max_bytes=START_VIEW_CACHE_BYTES, lock=True)
    return got


def _still(w: WalkerState) -> MoveResult:
    return MoveResult(w, [(w.x, w.y)], [0.0], False, 0.0)
