"""What a CityWalk agent reads: the observation's texts and action mask, and the info.

:class:`CityWalkObservation` is that part of
:class:`~urban_gym.families.citywalk.env.CityWalkEnv` (a mixin): the ``status`` line (clock,
step, mode, light and weather; the stops' schedule or progress; the map's view), the
one-time ``notice`` of closures that appear, the mask of the actions the mode allows, and
the family's ``info`` keys. Every text is cleaned to the observation's charset, at most
:data:`TEXT_MAX` characters.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from urban_gym.envs.text import clean_text
from urban_gym.families.citywalk.actions import (
    ANSWER_ONLY,
    FIRST_PERSON,
    JUMP_HEIGHT,
    MAP_ONLY,
    MAX_DURATION,
)
from urban_gym.families.citywalk.closures import describe_closures
from urban_gym.families.citywalk.dynamics import Closure, SimClock, WalkerState, format_clock
from urban_gym.families.citywalk.handlers import MapState, StepScratch
from urban_gym.families.citywalk.network import PedestrianNetwork
from urban_gym.families.citywalk.stops import StopsProgress, stops_progress
from urban_gym.families.citywalk.tasks import OPTION_LETTERS, EpisodeOutcome, format_hhmm
from urban_gym.world.city import City

if TYPE_CHECKING:
    from urban_gym.tasks.spec import TaskSpec

#: The longest text of the observation (characters).
TEXT_MAX = 4096
_FP_VIEW = "first-person view"


class CityWalkObservation:
    """The texts, mask and info of :class:`~urban_gym.families.citywalk.env.CityWalkEnv`
    (a mixin).
    """

    if TYPE_CHECKING:  # the env's state that the observation reads
        task: TaskSpec
        kind: str
        walker: WalkerState
        city: City
        clock: SimClock
        steps: int
        max_steps: int
        map_mode: bool
        answer_turn: bool
        map: MapState
        stops: list[dict[str, Any]]
        record: EpisodeOutcome
        closures: list[Closure]
        pedestrian: PedestrianNetwork
        distance_to_goal: float
        view_wh: tuple[int, int] | None
        action_table: list[dict[str, Any]]
        last_action_error: str
        _s: StepScratch
        _charset: frozenset[str]
        _mask_cache: dict[tuple, np.ndarray]
        _status_tail: str
        _eye_rise: float

        @property
        def arrival_rule(self) -> str: ...  # noqa: D102 (CityWalkProgress's)
        def _view(self, which: str = "view") -> np.ndarray: ...
        def _map_image(self, size: int | tuple[int, int]) -> np.ndarray: ...

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
