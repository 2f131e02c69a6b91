"""The template every urban_gym environment subclasses: :class:`UrbanEnv`.

Every urban_gym environment

* accepts in ``step`` either an ``int`` or numpy integer (an index into its documented
  discrete action table -- the RL face), a structured action (a dict or a bare action name,
  validated by its :class:`~urban_gym.envs.actions.ActionSet` -- the language-model face)
  or an :class:`~urban_gym.envs.actions.UnreadableReply` (a model's reply from which no
  action could be read);
* turns an action it cannot carry out into an *invalid-action step*: the state does not
  change (the step counter and the family's clock do advance), the reward is
  :data:`INVALID_ACTION_REWARD`, ``info["action_valid"]`` is False and
  ``info["invalid_action"]`` holds the message; the count is in
  ``info["invalid_actions"]``;
* returns the ``info`` schema of :mod:`urban_gym.envs.info` after ``reset`` and every
  ``step`` (plus its family's own keys), each value keeping its type on every step;
* ends an episode with ``info["termination"]`` set to one of :data:`TERMINATION_REASONS`,
  ``info["metrics"]`` holding the task's scores (its family's ``evaluate(task, outcome)``)
  and ``info["is_success"]`` (read by stable-baselines3's success logging);
* keeps privileged state (true pose, distance to the goal, graph node) in ``info`` and
  never in the observation;
* raises ``gymnasium.error.ResetNeeded`` from ``step`` before the first ``reset`` and after
  the episode ended.

:class:`UrbanEnv` implements all of that once. A family's environment fills the hooks
(its dynamics, observation and action table) and keeps its documented behaviour:

==========================  ===============================================================
hook                        what the family does there
==========================  ===============================================================
``_start_episode(task)``    set up the episode's state for ``task`` (after ``reset`` picked it)
``_table_action(i)``        the structured action of table index ``i`` (default
                            ``self.action_table[i]``; raise ``InvalidAction`` for a masked one)
``_apply(action)``          carry out a valid structured action, or raise ``InvalidAction``
                            before changing anything
``_after_action(valid)``    what every step does after the action, valid or not
``_reward()``               the reward of a valid step (an invalid one earns
                            :data:`INVALID_ACTION_REWARD`)
``_check_end(valid)``       ``(termination reason or None, truncated)``
``_observe()``              the observation
``_pose()``                 ``(x, y, heading)`` for ``info["pose"]``
``_distance_to_goal()``     ``info["distance_to_goal_m"]``
``_extra_info()``           the family's own ``info`` keys
``_goal_visible()``         whether the goal object is in view now (only called with
                            ``track_visibility``; :mod:`urban_gym.envs.visibility`)
``_outcome()``              what the family's evaluator scores at the end
``_end_reward(m, valid)``   the reward added when the episode ends with metrics ``m``
``_goal_point()``           the goal place now, for the goal modes (default: the task's
                            ``goal`` ``x``/``y`` or first stop)
``_goal_landmarks(task)``   the landmarks of the task's world (default: its city's)
``_view_shape()``           ``(height, width)`` of the views, or None (no ``goal="image"``)
``_goal_view(task, goal)``  the view at the goal place (``goal="image"``)
==========================  ===============================================================

A family declares its observation space itself, with the goal mode's entries
(:meth:`UrbanEnv.goal_spaces`) among them.

Tasks come from the family's task package (:mod:`urban_gym.tasks.families`): the same
arguments on every family select them (``suite``, ``tasks``, ``task_types``,
``difficulties``, ``city``; see :meth:`UrbanEnv._load_tasks`) and the same reset options
pick one (``{"task_id": ...}``, ``{"task_index": i}`` or ``{"task": TaskSpec | dict}``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any, ClassVar

import gymnasium as gym
import numpy as np

from urban_gym.envs.actions import (
    ActionSet,
    InvalidAction,
    NormalisedAction,
    UnreadableReply,
    describe_value,
    table_index,
)
from urban_gym.envs.goals import (
    GoalObservation,
    check_goal_mode,
    city_landmarks,
    task_goal_point,
)
from urban_gym.envs.info import make_pose
from urban_gym.errors import InputError
from urban_gym.world.names import DEFAULT_NAMES, check_names_mode

if TYPE_CHECKING:  # the task modules load with the first env (import urban_gym stays light)
    from urban_gym.tasks.spec import TaskSpec

TERMINATION_REASONS: tuple[str, ...] = (
    "answered",  # the agent gave its answer (question tasks)
    "arrived",  # the agent stopped at / reached the goal
    "terminated_by_agent",  # the agent ended the episode without an answer
    "step_limit",
    "decision_limit",
    "transition_limit",
    "stagnation",  # the same action repeated without progress
    "away_from_goal",  # too many consecutive moves away from the goal
    "constraint_violated",
    "time_limit",  # simulation clock ran out
    "model_error",  # the language-model client gave up (set by the baselines)
    "episode_deadline",  # the harness's per-episode wall-clock deadline passed
    "abandoned",  # a person left the episode unfinished: page closed, idle, server stopped
    # (set by urban_gym.play, the browser face)
)

INVALID_ACTION_REWARD = -0.01

#: The reset options every environment understands.
RESET_OPTIONS: tuple[str, ...] = ("task_id", "task_index", "task")


def check_reason(reason: str) -> str:
    """Return ``reason`` if it is one of :data:`TERMINATION_REASONS`, else raise."""
    if reason not in TERMINATION_REASONS:
        raise ValueError(f"termination reason {reason!r} is not one of {TERMINATION_REASONS}")
    return reason


def invalid_step_info(message: str, count: int) -> dict[str, Any]:
    """The ``info`` entries of an invalid-action step."""
    return {"action_valid": False, "invalid_action": message, "invalid_actions": count}


def is_success(metrics: dict[str, Any]) -> bool:
    """``info["is_success"]`` of an episode with ``metrics``: its ``success`` is 1."""
    return bool(metrics.get("success", 0.0) >= 1.0)


class UrbanEnv(gym.Env):
    """The template of every urban_gym environment (see the module docstring).

    Class attributes a family sets:

    * ``family`` -- its name in :mod:`urban_gym.tasks.families`;
    * ``cache_attributes`` -- attributes dropped when the env is pickled (worlds, renderers,
      caches) and rebuilt by :meth:`_restore_caches` when it is unpickled.
    """

    family: ClassVar[str] = ""
    #: why ``goal="image"`` cannot apply where :meth:`_view_shape` is None
    no_view_reason: ClassVar[str] = "this env renders no views"
    track_visibility: bool = False
    cache_attributes: ClassVar[tuple[str, ...]] = ()
    metadata: dict[str, Any] = {"render_modes": ["rgb_array"], "render_fps": 4}

    tasks: list[TaskSpec]
    task: TaskSpec
    action_set: ActionSet
    action_space: gym.spaces.Discrete  # the documented action table

    if TYPE_CHECKING:  # a family's env sets it as an attribute or defines a property

        @property
        def action_table(self) -> Sequence[dict[str, Any]]:
            """Index -> structured action: the ``Discrete`` action table."""

    # ------------------------------------------------------------------ construction
    def _init_base(
        self,
        render_mode: str | None,
        track_visibility: bool = False,
        goal: str = "none",
        names: str = DEFAULT_NAMES,
    ) -> None:
        """Check ``render_mode`` and mark the env as waiting for its first ``reset``.

        ``names`` is which name of each place the env's world uses (``"local"``,
        ``"english"`` or ``"both"``: :mod:`urban_gym.world.names`); :meth:`load_world`
        loads a city with it.

        ``goal`` is the goal mode (:mod:`urban_gym.envs.goals`): the family declares its
        ``goal_*`` entries in its observation space (:meth:`goal_spaces`) and the template
        adds them to every observation.

        ``track_visibility`` adds the privileged ``info["goal_visible"]`` (a bool on every
        ``info``: :mod:`urban_gym.envs.visibility`); it renders instance ids every step, so
        it is off by default (training does not pay for it) and the evaluation harness
        turns it on.
        """
        modes = self.metadata.get("render_modes", [])
        if render_mode is not None and render_mode not in modes:
            raise InputError(f"render_mode={render_mode!r} must be None or one of {modes}")
        if not isinstance(track_visibility, (bool, np.bool_)):
            raise InputError(f"track_visibility={track_visibility!r} must be True or False")
        self.render_mode = render_mode
        self.track_visibility = bool(track_visibility)
        self.names = check_names_mode(names)
        self.goal_mode = check_goal_mode(self, goal)
        self._goal = GoalObservation(self.goal_mode)
        self.steps = 0
        self.invalid_actions = 0
        #: Why the last action was not carried out ("" when it was): BrowserGym's
        #: ``last_action_error``, shown to the agent by families that have a notice text.
        self.last_action_error = ""
        self._done = True  # no episode until reset()

    def load_world(self, spec: str) -> Any:
        """The city of the ``load_city`` spec ``spec`` with the env's :attr:`names`."""
        from urban_gym.world.loader import load_city

        return load_city(spec, names=getattr(self, "names", DEFAULT_NAMES))

    @property
    def task_family(self) -> ModuleType:
        """The family's task package (``TASK_TYPES``, ``check_task``, ``evaluate``, ...)."""
        from urban_gym.tasks.families import get_family

        return get_family(self.family).tasks()

    def _load_tasks(
        self,
        suite: str | os.PathLike | None = None,
        tasks: Sequence[TaskSpec | dict] | None = None,
        task_types: Sequence[str] | None = None,
        difficulties: Sequence[str] | None = None,
        city: str | None = None,
    ) -> list[TaskSpec]:
        """The env's tasks, the same way on every family.

        ``tasks`` (TaskSpecs or dicts) wins over ``suite``; ``suite`` is the name of one of
        the family's committed suites (``DEFAULT_SUITES``), a JSONL path, or None /
        ``"default"`` for :meth:`_default_tasks`. ``task_types`` and ``difficulties`` keep
        the tasks of those types and difficulties (unknown names are an error); the
        family's ``check_task`` runs on the tasks left (a filtered-out task never fails).
        ``city``, when given, is the city every task must name (``task.city``).
        """
        from urban_gym.tasks.spec import DIFFICULTIES, TaskError, TaskSpec
        from urban_gym.tasks.suite import load_suite

        fam = self.task_family
        if tasks is not None:
            out = [t if isinstance(t, TaskSpec) else TaskSpec.from_dict(t) for t in tasks]
        elif suite is None or suite == "default":
            out = self._default_tasks(city)
        elif isinstance(suite, str) and suite in fam.DEFAULT_SUITES:
            out = load_suite(fam.DEFAULT_SUITES[suite])
        elif isinstance(suite, str) and suite.startswith("procedural:"):
            out = self._procedural_tasks(suite)
        else:
            out = load_suite(suite)
        if task_types is not None:
            bad = sorted(set(task_types) - set(fam.TASK_TYPES))
            if bad:
                raise TaskError(
                    f"task_types {bad} are not {self.family} task types; valid: "
                    + ", ".join(fam.TASK_TYPES)
                )
            out = [t for t in out if t.type in set(task_types)]
        if difficulties is not None:
            bad = sorted(set(difficulties) - set(DIFFICULTIES))
            if bad:
                raise TaskError(f"difficulties {bad} unknown; valid: {', '.join(DIFFICULTIES)}")
            out = [t for t in out if t.difficulty in set(difficulties)]
        if not out:
            raise TaskError(
                f"no {self.family} tasks left (suite={suite!r}, task_types={task_types}, "
                f"difficulties={difficulties})"
            )
        out = [fam.check_task(t) for t in out]
        if city is not None:
            other = sorted({t.city for t in out} - {city})
            if other:
                raise TaskError(
                    f"city={city!r}, but the tasks name the city {', '.join(map(repr, other))} "
                    "(a task's world is its task.city; leave city= out or pick its tasks)"
                )
        return out

    def _procedural_tasks(self, suite: str) -> list[TaskSpec]:
        """The tasks of an on-the-fly ``suite="procedural:..."``: the family's source
        (``procedural_source(spec)``) draws a new task at every reset; a fixed sample of it
        is :attr:`tasks` (spaces, ``task_index``).
        """
        from urban_gym.tasks.spec import TaskError

        make = getattr(self.task_family, "procedural_source", None)
        if make is None:
            raise TaskError(
                f"suite={suite!r}: the {self.family} family makes no tasks on the fly "
                "(its task package has no procedural_source); pass a suite file"
            )
        self.task_source = make(suite)
        return self.task_source.sample()

    def set_curriculum(self, max_blocks: int) -> None:
        """Let an on-the-fly procedural suite draw cities of up to ``max_blocks`` x
        ``max_blocks`` blocks (the curriculum of ``urban-gym train``); no effect otherwise.
        """
        src = getattr(self, "task_source", None)
        if src is not None:
            src.set_max_blocks(max_blocks)

    def _one_city(self, city: str | None = None) -> str:
        """The one city of the env's tasks (``city`` when given: :meth:`_load_tasks`
        checked that they name it), for a family whose env holds one world.
        """
        from urban_gym.tasks.spec import TaskError

        if city is not None:
            return str(city)
        cities = sorted({t.city for t in self.tasks})
        if len(cities) > 1:
            raise TaskError(
                f"{type(self).__name__} runs the tasks of one city; these name {cities} "
                "(pass city= and its tasks)"
            )
        return cities[0]

    def _default_tasks(self, city: str | None) -> list[TaskSpec]:
        """The tasks of ``suite=None``: the family's committed suite of ``city`` (default:
        its first committed suite).
        """
        from urban_gym.tasks.spec import TaskError
        from urban_gym.tasks.suite import load_suite

        suites = self.task_family.DEFAULT_SUITES
        name = next(iter(suites)) if city is None else city
        if name not in suites:
            raise TaskError(
                f"no committed {self.family} suite for city {name!r} (committed: "
                f"{', '.join(suites)}); generate one with `urban-gym generate-suite "
                f"--family {self.family} --city ... --out ...` and pass suite="
            )
        return load_suite(suites[name])

    # ------------------------------------------------------------------ reset
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Start an episode: the task of ``options`` (``task_id``, ``task_index`` or
        ``task``) or one drawn from ``self.np_random``.
        """
        self._reset_core(seed, options)
        return self._observation(), self._info("")

    def _reset_core(self, seed: int | None, options: dict[str, Any] | None) -> None:
        """The state half of :meth:`reset` (everything before the observation): a batched
        vector env (:mod:`urban_gym.envs.vector`) runs it, then draws the observations of
        the batch together, then takes the infos.
        """
        super().reset(seed=seed)
        task = self._pick_task(options or {})
        self.task = task
        self.steps = 0
        self.invalid_actions = 0
        self.last_action_error = ""
        self._start_episode(task)
        self._done = False

    def _pick_task(self, options: dict[str, Any]) -> TaskSpec:
        from urban_gym.tasks.spec import TaskError, TaskSpec

        if not isinstance(options, dict):
            raise TaskError(f"reset options={describe_value(options)} must be a dict")
        unknown = sorted(set(options) - set(RESET_OPTIONS), key=str)
        if unknown:
            raise TaskError(
                f"reset options {unknown} unknown; valid: {', '.join(RESET_OPTIONS)} (one of them)"
            )
        given = [k for k in RESET_OPTIONS if k in options]
        if len(given) > 1:
            raise TaskError(f"reset options {given}: give one of {', '.join(RESET_OPTIONS)}")
        if "task_id" in options:
            tid = options["task_id"]
            for t in self.tasks:
                if t.id == tid:
                    return t
            raise TaskError(
                f"task_id={describe_value(tid)} is not among this env's {len(self.tasks)} tasks"
            )
        if "task_index" in options:
            i = options["task_index"]
            if table_index(i) is None or not 0 <= int(i) < len(self.tasks):
                raise TaskError(
                    f"task_index={describe_value(i)} must be an integer in "
                    f"[0, {len(self.tasks) - 1}]"
                )
            return self.tasks[int(i)]
        if "task" in options:
            t = options["task"]
            t = t if isinstance(t, TaskSpec) else TaskSpec.from_dict(t)
            return self._accept_task(self.task_family.check_task(t))
        src = getattr(self, "task_source", None)
        if src is not None:
            return self._accept_task(self.task_family.check_task(src.draw(self.np_random)))
        return self.tasks[int(self.np_random.integers(len(self.tasks)))]

    def _accept_task(self, task: TaskSpec) -> TaskSpec:
        """A task given in the reset options, after its family's ``check_task``; a family
        rejects here what its spaces cannot hold (``TaskError``).
        """
        return task

    # ------------------------------------------------------------------ step
    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """One step: decode the action, carry it out (or count it invalid), reward it,
        check the end, report (see the module docstring).
        """
        reward, terminated, truncated, info = self._step_core(action)
        return self._observation(), reward, terminated, truncated, info

    def _step_core(self, action: Any) -> tuple[float, bool, bool, dict[str, Any]]:
        """:meth:`step` without its observation: ``(reward, terminated, truncated, info)``.
        :meth:`_observation` afterwards completes the step (a batched vector env draws the
        observations of all its envs together, :mod:`urban_gym.envs.vector`).
        """
        if self._done:
            raise gym.error.ResetNeeded(
                f"{type(self).__name__}.step() called before reset() or after the episode "
                "ended; call reset()"
            )
        self.steps += 1
        self._begin_step()
        message = ""
        try:
            self._apply(self._decode(action))
        except InvalidAction as exc:
            message = str(exc) or "invalid action"
            self.invalid_actions += 1
        self.last_action_error = message
        valid = not message
        self._after_action(valid)
        reward = self._reward() if valid else INVALID_ACTION_REWARD
        reason, truncated = self._check_end(valid)
        info = self._info(message)
        if reason is not None:
            reward += self._end_episode(info, reason, valid)
        return float(reward), reason is not None and not truncated, truncated, info

    def _observation(self) -> Any:
        """The family's observation (:meth:`_observe`) with the goal mode's entries."""
        obs = self._observe()
        goal = self._goal
        if goal.mode != "none":
            obs.update(goal.observe(self))
        return obs

    def _decode(self, action: Any) -> dict[str, Any]:
        """The structured action of ``action`` (normalised once), or ``InvalidAction``."""
        t = type(action)
        # a Python or numpy int (what an RL loop passes) goes straight to the table
        i = action if t is int else int(action) if t is np.int64 else None
        if i is None:
            if isinstance(action, UnreadableReply):
                raise InvalidAction(action.message)
            i = table_index(action)
        if i is not None:
            n = int(self.action_space.n)
            if not 0 <= i < n:
                raise InvalidAction(
                    f"action index {describe_value(i)} is outside the action table [0, {n - 1}]"
                )
            return self._table_action(i)
        if isinstance(action, NormalisedAction) and action.action_set is self.action_set:
            return action
        return self.action_set.normalise(action)

    def end_episode(self, reason: str) -> dict[str, Any]:
        """End the running episode from outside -- e.g. ``model_error`` when the
        language-model client gave up -- and return its last ``info`` (with
        ``termination``, ``metrics`` from the family's evaluator and ``is_success``), as if
        the env had ended it after the last step. Raises ``ResetNeeded`` when no episode
        is running.
        """
        if self._done:
            raise gym.error.ResetNeeded(
                f"{type(self).__name__}.end_episode() called with no episode running"
            )
        info = self._info(self.last_action_error)
        self._end_episode(info, reason, not self.last_action_error)
        return info

    def _end_episode(self, info: dict[str, Any], reason: str, valid: bool) -> float:
        """End the episode: ``termination``, ``metrics`` and ``is_success`` into ``info``;
        returns the family's end reward.
        """
        self._done = True
        metrics = self.task_family.evaluate(self.task, self._outcome())
        info["termination"] = check_reason(reason)
        info["metrics"] = metrics
        info["is_success"] = is_success(metrics)
        return float(self._end_reward(metrics, valid))

    def _info(self, message: str) -> dict[str, Any]:
        """The schema keys (:mod:`urban_gym.envs.info`), then the family's own."""
        x, y, heading = self._pose()
        info: dict[str, Any] = {
            "pose": make_pose(x, y, heading),
            "distance_to_goal_m": float(self._distance_to_goal()),
            "steps": self.steps,
            "invalid_actions": self.invalid_actions,
            "action_valid": not message,
            "invalid_action": message,
            "task_id": self.task.id,
        }
        info.update(self._extra_info())
        if self.track_visibility:
            info["goal_visible"] = bool(self._goal_visible())
        return info

    # ------------------------------------------------------------------ hooks
    def _start_episode(self, task: TaskSpec) -> None:
        raise NotImplementedError

    def _begin_step(self) -> None:
        """Called at the start of every step, before the action is decoded."""

    def _table_action(self, index: int) -> dict[str, Any]:
        return self.action_table[index]

    def _apply(self, action: dict[str, Any]) -> None:
        raise NotImplementedError

    def _after_action(self, valid: bool) -> None:
        """Called on every step after the action (valid or not)."""

    def _reward(self) -> float:
        return 0.0

    def _check_end(self, valid: bool) -> tuple[str | None, bool]:
        raise NotImplementedError

    def _observe(self) -> Any:
        raise NotImplementedError

    def _pose(self) -> tuple[float, float, float]:
        raise NotImplementedError

    def _distance_to_goal(self) -> float:
        return math.inf

    def _extra_info(self) -> dict[str, Any]:
        return {}

    def _outcome(self) -> Any:
        raise NotImplementedError

    def _goal_visible(self) -> bool:
        """Whether the goal object is in view now (default: no goal object)."""
        return False

    def _end_reward(self, metrics: dict[str, Any], valid: bool) -> float:
        return 0.0

    # ------------------------------------------------------------------ goal modes
    def goal_spaces(self) -> dict[str, gym.Space]:
        """The observation entries of the env's goal mode (:mod:`urban_gym.envs.goals`):
        a family declares them in its observation ``Dict`` (call after its views are set:
        ``goal="image"`` takes their size); :class:`~urban_gym.envs.goals.GoalModeError`
        when the mode cannot apply to the env.
        """
        self._goal.check(self)
        return self._goal.spaces(self)

    def _goal_point(self) -> tuple[float, float] | None:
        """The goal place of the running task (metres): the one its ``goal`` states
        (:func:`~urban_gym.envs.goals.task_goal_point`).
        """
        return task_goal_point(self.task)

    def _goal_landmarks(self, task: TaskSpec) -> np.ndarray:
        """The landmarks of ``task``'s world (``goal="landmarks"``): its city's."""
        return city_landmarks(task.city)

    def _view_shape(self) -> tuple[int, int] | None:
        """``(height, width)`` of the env's views, or None when it renders none."""
        return None

    def _goal_view(self, task: TaskSpec, goal: tuple[float, float]) -> np.ndarray:
        """A view taken at ``goal`` with the env's camera (``goal="image"``)."""
        h, w = self._view_shape() or (1, 1)
        return np.zeros((h, w, 3), np.uint8)

    # ------------------------------------------------------------------ masks
    def action_masks(self) -> np.ndarray:
        """The valid entries of the action table now, as booleans (sb3-contrib's
        ``MaskablePPO`` reads this method).
        """
        return self._mask().astype(bool)

    def _mask(self) -> np.ndarray:
        return np.ones(len(self.action_table), dtype=np.int8)

    # ------------------------------------------------------------------ pickling
    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        for k in (*self.cache_attributes, "_visibility"):
            state.pop(k, None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._restore_caches()

    def _restore_caches(self) -> None:
        """Rebuild the :attr:`cache_attributes` after unpickling."""


__all__ = [
    "INVALID_ACTION_REWARD",
    "RESET_OPTIONS",
    "TERMINATION_REASONS",
    "UrbanEnv",
    "check_reason",
    "invalid_step_info",
    "is_success",
]
