"""``UrbanGym/CityWalk-v0``: a continuous, real-scale city walked in first person.

The dynamics (walker, collisions, closures, pedestrians, clock) live in
:mod:`urban_gym.families.citywalk.dynamics`; the task ladder and its scoring in
:mod:`urban_gym.families.citywalk.tasks`. The env's own parts: its settings, step hooks,
rewards, end rules and first-person view here; beside it the action handlers
(:mod:`~urban_gym.families.citywalk.handlers`), the episode set-up
(:mod:`~urban_gym.families.citywalk.episode`), the target and arrival
(:mod:`~urban_gym.families.citywalk.progress`), the observation's texts, mask and info
(:mod:`~urban_gym.families.citywalk.observation`) and the map, frame and goal views
(:mod:`~urban_gym.families.citywalk.rendering`).
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
from urban_gym.envs.text import task_charset
from urban_gym.families.citywalk.actions import (
    citywalk_action_set,
    citywalk_action_table,
)
from urban_gym.families.citywalk.dynamics import (
    MoveResult,
    WalkerState,
    count_crossings,
    format_clock,
    walker_samples,
    walking_distance,
)
from urban_gym.families.citywalk.episode import START_MARGIN_M, CityWalkEpisode
from urban_gym.families.citywalk.handlers import (
    ANSWER_TRIES,
    CityWalkControls,
    StepScratch,
    jump_eye_rise,
)
from urban_gym.families.citywalk.observation import TEXT_MAX, CityWalkObservation
from urban_gym.families.citywalk.progress import (
    ARRIVAL_VIEW_SIZE,
    ARRIVAL_VIEW_TYPES,
    CityWalkProgress,
)
from urban_gym.families.citywalk.rendering import CityWalkRendering
from urban_gym.families.citywalk.tasks import (
    SUCCESS_RADIUS,
    EpisodeOutcome,
)
from urban_gym.tasks.spec import TaskError, TaskSpec
from urban_gym.world.city import City
from urban_gym.world.names import DEFAULT_NAMES

MAX_VIEW_SIZE = 2048

#: Rewards.
PROGRESS_REWARD_PER_M = 0.01  # per metre of walking distance gained towards the goal / next stop
STOP_REWARD = 0.5  # reaching a stop of a multi-stop task
SUCCESS_REWARD = 1.0  # at the end: success (navigation) or the right answer (questions)
CLOSURE_PENALTY = 0.5  # per closure crossing
CONTACT_PENALTY = 0.1  # per pedestrian contact

#: The arrival rules of ``arrival=`` (see :class:`CityWalkEnv`).
ARRIVAL_RULES = ("view", "position")
#: Default pixels of the place's sign the final view must show (``arrival_min_pixels``):
#: the same count as a task's claim that a sign is in sight from its start.
ARRIVAL_MIN_PIXELS = 16


# importable from here as before the env's parts were split out
__all__ = [
    "ARRIVAL_MIN_PIXELS",
    "ARRIVAL_RULES",
    "ARRIVAL_VIEW_SIZE",
    "ARRIVAL_VIEW_TYPES",
    "MAX_VIEW_SIZE",
    "START_MARGIN_M",
    "START_VIEW_CACHE_BYTES",
    "TEXT_MAX",
    "CityWalkEnv",
    "citywalk_action_table",
]


class CityWalkEnv(
    CityWalkEpisode,
    CityWalkProgress,
    CityWalkObservation,
    CityWalkRendering,
    CityWalkControls,
    UrbanEnv,
):
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

    # ------------------------------------------------------------------ watching
    def render(self) -> np.ndarray | None:
        """The frame a person watches (``rgb_array`` mode), else None."""
        if self.render_mode != "rgb_array":
            return None
        return self._frame()

    def close(self) -> None:
        """Drop the renderers and the last views (they are rebuilt on demand)."""
        self._renderers.clear()
        self._last_view.clear()

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
    # (the target, the router and arrival: CityWalkProgress)
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

    # ------------------------------------------------------------------ pixels
    # (the renderers, the map, the frame and the goal views: CityWalkRendering)
    def _view(self, which: str = "view") -> np.ndarray:
        """The first-person image now; the last one is reused while nothing in it changed
        (a map action, a jump or an invalid action without pedestrians).
        """
        w = self.walker
        peds = _NO_PEDS if self.crowd is None else self.pedestrian_positions()
        rise = self._eye_rise
        # the pedestrians by their bytes: the same positions, the same key (a tuple of
        # tuples of them cost more than the rest of the key)
        key = (which, w.x, w.y, w.heading, w.pitch, rise, peds.tobytes(), self._conditions_key)
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
                pedestrians=peds,
            )
        finally:
            r.eye_height = standing
        self._last_view[which] = (key, res.rgb)
        if first is not None:
            kept = res.rgb.copy()
            kept.setflags(write=False)
            first[0].put(first[1], kept)
        return res.rgb.copy()


_NO_PEDS = np.zeros((0, 2))
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
