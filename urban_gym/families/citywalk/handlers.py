"""What each CityWalk action does (the ``_do_*`` handlers of :class:`CityWalkControls`),
which actions the current mode allows, and the answer turn of question tasks.

The rules follow UrbanGround's action space (Section 3.4 and Appendix F), in our
own words:

* ``move``/``sprint`` -- ``dir`` and ``seconds`` (0.05-2 s; a longer request is clamped to
  2 s and the clamp is reported), optional ``yaw_rate``/``pitch_rate`` (deg/s) and a jump
  (``jump``, ``jump_at`` seconds into the move, in ``[0, seconds]``).
* ``look`` -- ``yaw`` and ``pitch`` are *changes* of the view (the paper's look "changes
  yaw and pitch"; yaw turns right when positive, pitch looks up when positive), like the
  rates of a move; the pitch of the view stays within [-90, 90].
* ``jump`` -- a standalone jump in place.
* ``map_zoom`` -- ``factor`` multiplies the metres per pixel: above 1 the map moves farther
  (zooms out), below 1 closer.
* ``map_orbit`` -- ``yaw`` turns the map view, ``pitch`` tilts its camera from straight
  down towards the horizon (an oblique view; :mod:`urban_gym.render.map`).
* ``terminate`` -- ends exploration (question tasks: the next turn asks for the answer)
  or navigation (scored where the walker stands).
* ``answer`` -- the reply of the answer turn: ``answer`` A-D and an optional ``reason``.

**A jump in this 2.5D world.** The walker's eye rises on a parabola to
:data:`~urban_gym.families.citywalk.actions.JUMP_HEIGHT` (0.5 m) above its 1.6 m and lands
:data:`~urban_gym.families.citywalk.actions.JUMP_DURATION` (0.6 s) after take-off. While it is
in the air it passes over *low obstacles* -- the city's mapped benches and picnic tables
(:func:`~urban_gym.families.citywalk.dynamics.low_obstacles`), which otherwise stop a walker
like a wall; buildings still stop it. A view taken while the walker is in the air (a move
that ends less than 0.6 s after its jump) is rendered from the raised eye.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from urban_gym.envs.actions import InvalidAction, describe_value
from urban_gym.families.citywalk.actions import (
    ANSWER_ONLY,
    FIRST_PERSON,
    JUMP_DURATION,
    LOOK_DURATION,
    MAP_MAX_TILT,
    MAP_ONLY,
    MAX_DURATION,
)
from urban_gym.families.citywalk.dynamics import (
    SPRINT_SPEED,
    WALK_SPEED,
    WalkerState,
    simulate_move,
)
from urban_gym.families.citywalk.tasks import OPTION_LETTERS
from urban_gym.tasks.metrics import normalize_text

if TYPE_CHECKING:
    from urban_gym.tasks.spec import TaskSpec
    from urban_gym.world.walkable import WalkGeometry

MAP_MPP_DEFAULT = 2.0  # metres per pixel when the map opens
MAP_MPP_RANGE = (0.25, 32.0)
#: Invalid replies the answer turn takes before the episode ends unanswered.
ANSWER_TRIES = 3


@dataclass
class MapState:
    """The map view: its centre (m), metres per pixel, rotation (deg, clockwise), camera
    tilt from straight down (deg, 0 = top-down) and the marked point.
    """

    center: tuple[float, float] = (0.0, 0.0)
    mpp: float = MAP_MPP_DEFAULT
    rotation: float = 0.0
    tilt: float = 0.0
    selected: tuple[float, float] | None = None


@dataclass
class StepScratch:
    """Scratch of the step being taken (filled by the hooks)."""

    action: dict[str, Any] | None = None
    duration: float = 0.0
    move: Any = None
    messages: list[str] = field(default_factory=list)
    clamped: float | None = None
    answer_index: int | None = None
    answered: bool = False
    terminate: bool = False
    jump_at: float | None = None
    new_contacts: int = 0
    new_crossings: int = 0
    new_stops: int = 0
    new_closures: list[int] = field(default_factory=list)  # closures that appeared
    closure_notice: str = ""  # the notice of those closures, as the observation holds it


def jump_eye_rise(t: float) -> float:
    """Metres the eye is above its standing height ``t`` seconds after take-off (a parabola
    of apex :data:`~urban_gym.families.citywalk.actions.JUMP_HEIGHT`; 0 on the ground).
    """
    from urban_gym.families.citywalk.actions import JUMP_HEIGHT

    if not 0.0 < t < JUMP_DURATION:
        return 0.0
    u = t / JUMP_DURATION
    return 4.0 * JUMP_HEIGHT * u * (1.0 - u)


class CityWalkControls:
    """The action handlers of :class:`~urban_gym.families.citywalk.env.CityWalkEnv` (a mixin)."""

    if TYPE_CHECKING:  # the env's state that the handlers read and change
        task: TaskSpec
        kind: str
        answer_turn: bool
        map_mode: bool
        map: MapState
        walker: WalkerState
        ground: WalkGeometry
        geometry: WalkGeometry
        view_wh: tuple[int, int] | None

    # ------------------------------------------------------------------ modes
    def _check_mode(self, s: StepScratch) -> None:
        """``InvalidAction`` when ``s.action`` is not possible now (the wrong mode, the
        answer turn, an answer that is not an option); notes a question's answer in ``s``.
        """
        action = s.action
        assert action is not None  # _apply sets it before the handlers run
        name = action["action"]
        if self.answer_turn:
            if name not in ANSWER_ONLY:
                raise InvalidAction(
                    f"{name} is not possible now: exploration is over; reply with the final "
                    'answer, e.g. {"answer": "A", "reason": "..."}'
                )
            idx = self._answer_index(action.get("answer"))
            if idx is None:
                opts = ", ".join(f"{L}) {o}" for L, o in zip(OPTION_LETTERS, self.task.options))
                raise InvalidAction(
                    f"answer: answer={describe_value(action.get('answer'))} is not one of "
                    f"the options: {opts}"
                )
            s.answer_index = idx
            s.answered = True
            return
        if name in ANSWER_ONLY:
            if self.kind == "question":
                raise InvalidAction(
                    "answer is not possible during exploration; choose terminate when you have "
                    "seen enough, and you will then be asked for the final answer"
                )
            raise InvalidAction("answer: this task asks no question; terminate when you arrive")
        if self.map_mode and name in FIRST_PERSON:
            raise InvalidAction(
                f"{name} is not possible in map mode; use close_map first (or a map action)"
            )
        if not self.map_mode and name in MAP_ONLY:
            raise InvalidAction(f"{name} works only in map mode; use open_map first")

    def _answer_index(self, ans: Any) -> int | None:
        """The option index of an answer: its letter (``"B"``, ``"b)"``, ``"option B"``),
        its number (1-4) or its text; None when it is none of them.
        """
        if ans is None:
            return None
        a = str(ans).strip()
        letters = [L.casefold() for L in OPTION_LETTERS[: len(self.task.options)]]
        key = a.casefold().rstrip(").:").strip()
        if key.startswith("option "):
            key = key[7:].strip()
        if key in letters:
            return letters.index(key)
        if key.isdecimal() and len(key) <= 3 and 1 <= int(key) <= len(self.task.options):
            return int(key) - 1
        norm = normalize_text(a)
        for i, o in enumerate(self.task.options):
            if norm == normalize_text(o):
                return i
        return None

    def _execute(self, s: StepScratch) -> None:
        a = s.action
        assert a is not None  # _apply sets it before the handlers run
        getattr(self, "_do_" + a["action"])(a, s)

    # ------------------------------------------------------------------ first person
    def _jump_time(self, a: dict[str, Any], seconds: float, executed: float) -> float | None:
        """When the move's jump takes off (s into the move), or None for no jump:
        ``jump`` true, or ``jump_at`` given without ``jump`` false. ``jump_at`` must lie in
        ``[0, seconds]`` of the request; past the executed (clamped) time it jumps at the end.
        """
        at = a.get("jump_at")
        want = a.get("jump")
        if not (want or (want is None and at is not None)):
            return None
        at = 0.0 if at is None else float(at)
        if at > seconds:
            raise InvalidAction(
                f"{a['action']}: jump_at={describe_value(at)} is outside [0, seconds] = "
                f"[0, {seconds:g}]"
            )
        return min(at, executed)

    def _do_move(self, a: dict[str, Any], s: StepScratch, speed: float = WALK_SPEED) -> None:
        asked = float(a["seconds"])
        dur = asked
        if dur > MAX_DURATION:
            s.clamped = dur
            s.messages.append(f"Duration {dur:g} s was clamped to {MAX_DURATION:g} s.")
            dur = MAX_DURATION
        s.jump_at = self._jump_time(a, asked, dur)
        s.duration = dur
        s.move = simulate_move(
            self.ground,
            self.walker,
            a["dir"],
            speed,
            dur,
            float(a["yaw_rate"]),
            float(a["pitch_rate"]),
            jump_at=s.jump_at,
            air=self.geometry,
        )
        self.walker = s.move.state
        if s.move.hit_wall:
            s.messages.append("You bumped into a wall.")

    def _do_sprint(self, a: dict[str, Any], s: StepScratch) -> None:
        self._do_move(a, s, SPRINT_SPEED)

    def _do_look(self, a: dict[str, Any], s: StepScratch) -> None:
        w = self.walker
        pitch = max(-90.0, min(90.0, w.pitch + float(a.get("pitch") or 0.0)))
        self.walker = WalkerState(w.x, w.y, (w.heading + float(a["yaw"])) % 360.0, pitch)
        s.duration = LOOK_DURATION

    def _do_jump(self, a: dict[str, Any], s: StepScratch) -> None:
        s.duration = JUMP_DURATION
        s.jump_at = 0.0

    def _do_open_map(self, a: dict[str, Any], s: StepScratch) -> None:
        self.map_mode = True
        self.map = MapState(center=(self.walker.x, self.walker.y))

    # ------------------------------------------------------------------ map
    def _do_close_map(self, a: dict[str, Any], s: StepScratch) -> None:
        self.map_mode = False

    def _do_map_pan(self, a: dict[str, Any], s: StepScratch) -> None:
        cx, cy = self.map.center
        self.map.center = (cx + float(a["east"]), cy + float(a["north"]))

    def _do_map_zoom(self, a: dict[str, Any], s: StepScratch) -> None:
        lo, hi = MAP_MPP_RANGE
        want = self.map.mpp * float(a["factor"])
        self.map.mpp = min(hi, max(lo, want))
        if self.map.mpp != want:
            s.messages.append(f"The map cannot zoom further ({self.map.mpp:g} m per pixel).")

    def _do_map_orbit(self, a: dict[str, Any], s: StepScratch) -> None:
        m = self.map
        m.rotation = (m.rotation + float(a["yaw"])) % 360.0
        want = m.tilt + float(a["pitch"])
        m.tilt = min(MAP_MAX_TILT, max(0.0, want))
        if m.tilt != want:
            s.messages.append(f"The map camera cannot tilt further ({m.tilt:g} degrees).")

    def _do_map_select(self, a: dict[str, Any], s: StepScratch) -> None:
        w, h = self.view_wh or (256, 256)
        m = self.map
        from urban_gym.render.map import MapRenderer

        at = MapRenderer.oblique_pixel_to_world(
            float(a["x"]) * w, float(a["y"]) * h, m.center, m.mpp, (w, h), m.rotation, m.tilt
        )
        if at is None:
            s.messages.append("That point is above the horizon of the tilted map: nothing marked.")
            return
        self.map.selected = at
        s.messages.append("Point marked on the map.")

    # ------------------------------------------------------------------ ending
    def _do_terminate(self, a: dict[str, Any], s: StepScratch) -> None:
        s.terminate = True

    def _do_answer(self, a: dict[str, Any], s: StepScratch) -> None:
        pass  # checked and noted by _check_mode
