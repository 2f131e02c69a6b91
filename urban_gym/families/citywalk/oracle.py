"""The CityWalk oracle: shortest path on the walkable network plus a local controller.

Questions end exploration at once (``terminate``) and give the ground truth in the answer
turn. For navigation the oracle plans the
shortest walking route (closures that are active closed) to the current target -- the
goal, or the next stop of a schedule, or the next stop of the best order of a multi-stop
task -- and follows it with timed moves:

* it looks ahead along the route (at most one sprint of 2 s) and takes the longest
  straight or arc move that ends on the route point, checked with the environment's own
  dynamics: no wall touched, no active closure crossed and, among pedestrians, no
  predicted contact (their routes are deterministic);
* a move that turns by more than 60 degrees is preceded by a ``look``; a move a bench
  would stop jumps at its start (in the air the walker passes over low obstacles);
* among pedestrians it tries shorter and slower moves, then waiting (``jump``), then a
  side step; when the steps left would no longer cover the walk (sprinting, with a 30 %
  margin), it stops giving way (a contact is counted, never a failure);
* it re-plans when a closure appears, when the target changes or when it is off its plan.

It reads privileged state from ``env.unwrapped`` and returns canonical action dicts.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from urban_gym.families.citywalk.dynamics import (
    CONTACT_DISTANCE,
    SPRINT_SPEED,
    WALK_SPEED,
    MoveResult,
    WalkerState,
    count_crossings,
    sample_times,
    simulate_move,
    walker_samples,
)
from urban_gym.families.citywalk.tasks import OPTION_LETTERS
from urban_gym.families.citywalk.tasks.context import EYE_HEIGHT_M
from urban_gym.world.geo import angle_diff, bearing
from urban_gym.world.routing import Located

ARRIVE_M = 2.5  # the oracle terminates this close to a navigation goal
MAX_TURN_IN_MOVE = 60.0  # degrees; larger turns are made with ``look`` first
ALIGN_DEG = 20.0  # an arc may end at most this far off the route's direction
CONTACT_MARGIN = 0.15  # m added to the contact distance when predicting contacts


def _still(w: WalkerState) -> MoveResult:
    return MoveResult(w, [(w.x, w.y)], [0.0], False, 0.0)


class CityWalkOracle:
    """Privileged CityWalk agent (see the module docstring)."""

    def __init__(self) -> None:
        self.path: list[tuple[float, float]] = []
        self.cum: np.ndarray = np.zeros(1)
        self.s = 0.0
        self.expected: tuple[float, float] | None = None
        self.plan_key: Any = None
        self.order: list[int] = []
        self._tfield: Any = None
        self._tfield_key: Any = None
        self._hurry = False

    def reset(self, env: Any) -> None:
        """Forget the previous plan; order the stops of a multi-stop task."""
        e = env.unwrapped
        self.path, self.s, self.expected, self.plan_key = [], 0.0, None, None
        self._tfield, self._tfield_key = None, None
        self._hurry = False
        self.order = self._stop_order(e) if e.kind == "multi_stop" else []

    # ------------------------------------------------------------------ policy
    def act(self, env: Any) -> dict[str, Any]:
        """The next structured action: close the map, answer a question, else walk the planned
        path (planning afresh when off it) and stop at the goal.
        """
        e = env.unwrapped
        if e.map_mode:
            return {"action": "close_map"}
        if e.kind == "question":
            if not e.answer_turn:
                return {"action": "terminate"}  # the answer is known: end exploration
            idx = list(e.task.options).index(e.task.answer)
            return {"action": "answer", "answer": OPTION_LETTERS[idx], "reason": "ground truth"}
        target = self._target(e)
        w = e.walker
        if target is None:
            return {"action": "terminate"}
        if e.kind == "navigation" and math.hypot(target[0] - w.x, target[1] - w.y) <= ARRIVE_M:
            return self._face_sign(e) or {"action": "terminate"}
        self._hurry = self._late(e)
        self._ensure_plan(e, target)
        act = self._follow(e)
        if act is None:  # off the plan or blocked: plan afresh and try once more
            self.plan_key = None
            self._ensure_plan(e, target)
            act = self._follow(e)
        if act is None:
            crowded = self._crowded(e) and not self._hurry
            act = self._evade(e) if crowded else self._unstick(e)
        return act

    @staticmethod
    def _late(e: Any) -> bool:
        """Whether, among pedestrians, the steps left (2 s sprints) no longer cover the
        walking distance left with a 30 % margin: then it stops giving way.
        """
        if e.crowd is None or not len(e.crowd):
            return False
        d = float(e.distance_to_goal)
        left = (e.max_steps - e.steps) * 2.0 * SPRINT_SPEED
        return math.isfinite(d) and left < 1.3 * d + 12.0

    @staticmethod
    def _face_sign(e: Any) -> dict[str, Any] | None:
        """Where the env judges arrival from the final view (``arrival_rule == "view"``): a
        ``look`` that turns the view onto the goal place's sign (its bearing, and the pitch
        to the board's middle), or None when already facing it (within 3 degrees).
        """
        if getattr(e, "arrival_rule", "position") != "view":
            return None
        from urban_gym.render.scene import scene_for

        pid = e.task.goal.get("poi_id")
        if not isinstance(pid, int):
            return None
        p = e.city.pois[pid]
        w = e.walker
        place = scene_for(e.city).poi_sign_placement(pid)
        z = 0.5 * (place[0] + place[1]) if place is not None else 3.0
        d = max(math.hypot(p.anchor[0] - w.x, p.anchor[1] - w.y), 0.5)
        yaw = angle_diff(bearing(p.anchor[0] - w.x, p.anchor[1] - w.y), w.heading)
        pitch = math.degrees(math.atan2(z - EYE_HEIGHT_M, d)) - w.pitch
        if abs(yaw) <= 3.0 and abs(pitch) <= 3.0:
            return None
        return {"action": "look", "yaw": round(yaw, 2), "pitch": round(pitch, 2)}

    @staticmethod
    def _crowded(e: Any, radius: float = 4.0) -> bool:
        """Whether anybody is within ``radius`` metres."""
        if e.crowd is None or not len(e.crowd):
            return False
        p = e.pedestrian_positions()
        w = e.walker
        return bool(np.any(np.hypot(p[:, 0] - w.x, p[:, 1] - w.y) < radius))

    # ------------------------------------------------------------------ planning
    def _stop_order(self, e: Any) -> list[int]:
        stops = e.stops
        if e.task.goal.get("ordered") or len(stops) > 6:
            return list(range(len(stops)))
        router = e.router
        locs = [router.locate(float(s["x"]), float(s["y"])) for s in stops]
        start = router.locate(e.walker.x, e.walker.y)
        fields = [router.field(loc) for loc in locs]
        d0 = [router.distance(f, start) for f in fields]
        d = [
            [router.distance(fields[i], locs[j]) for j in range(len(stops))]
            for i in range(len(stops))
        ]
        best = min(
            itertools.permutations(range(len(stops))),
            key=lambda p: d0[p[0]] + sum(d[a][b] for a, b in zip(p[:-1], p[1:])),
        )
        return list(best)

    def _target(self, e: Any) -> tuple[float, float] | None:
        if e.kind == "navigation":
            return (float(e.task.goal["x"]), float(e.task.goal["y"]))
        for i in self.order:
            if e.record.arrivals[i] is None:
                st = e.stops[i]
                return (float(st["x"]), float(st["y"]))
        return None

    def _ensure_plan(self, e: Any, target: tuple[float, float]) -> None:
        key = (target, e._active_closed())
        w = e.walker
        on_plan = (
            self.expected is not None
            and math.hypot(w.x - self.expected[0], w.y - self.expected[1]) < 0.3
        )
        if key == self.plan_key and on_plan and self.path:
            return
        router = e.router
        b = router.locate(*target)
        if self._tfield_key != key:
            self._tfield = router.field(b)
            self._tfield_key = key
        a = self._entry(e, router, self._tfield)
        route = router.route(a, b)
        pts = [(w.x, w.y), *route, target]
        clean = [pts[0]]
        for p in pts[1:]:
            if math.dist(p, clean[-1]) > 1e-3:
                clean.append(p)
        self.path = clean
        self.cum = np.concatenate(
            [[0.0], np.cumsum([math.dist(p, q) for p, q in zip(clean[:-1], clean[1:])])]
        )
        self.s = 0.0
        self.expected = (w.x, w.y)
        self.plan_key = key

    def _entry(self, e: Any, router: Any, tfield: Any) -> Located:
        """Where to join the network: of the network points within 8 m that a straight
        walk reaches unhindered (no wall, no active closure), the one with the shortest
        walk plus route to the target; else the nearest network point.
        """
        w = e.walker
        g = e.geometry
        net = g.net
        best: tuple[float, Located] | None = None
        seen: set[int] = set()
        for i in net.in_box(w.x - 8.0, w.y - 8.0, w.x + 8.0, w.y + 8.0):
            if i in seen:
                continue
            seen.add(i)
            ax, ay, bx, by = net.ax[i], net.ay[i], net.bx[i], net.by[i]
            ex, ey = bx - ax, by - ay
            L2 = ex * ex + ey * ey
            f = 0.0 if L2 <= 0 else max(0.0, min(1.0, ((w.x - ax) * ex + (w.y - ay) * ey) / L2))
            qx, qy = ax + f * ex, ay + f * ey
            walk = math.hypot(qx - w.x, qy - w.y)
            if walk > 8.0:
                continue
            u, v = g.net_edge[i]
            if tuple(sorted((u, v))) in router.closed:
                continue
            length = float(e.city.network.edges[u, v]["length"])
            loc = Located(u, v, min(length, g.net_offset[i] + f * math.sqrt(L2)), length, (qx, qy))
            cost = walk + router.distance(tfield, loc)
            if best is not None and cost >= best[0]:
                continue
            if walk > 0.05:
                x, y, _ = g.sweep(w.x, w.y, qx - w.x, qy - w.y, None)
                if math.hypot(x - qx, y - qy) > 0.2:
                    continue
                line = [(w.x, w.y), (qx, qy)]
                if any(
                    on and count_crossings(line, c) for c, on in zip(e.closures, e.closure_active)
                ):
                    continue
            best = (cost, loc)
        return best[1] if best is not None else router.locate(w.x, w.y)

    def _point_at(self, s: float) -> tuple[float, float]:
        s = min(max(s, 0.0), float(self.cum[-1]))
        i = int(np.searchsorted(self.cum, s, side="right")) - 1
        i = min(max(i, 0), len(self.path) - 2) if len(self.path) > 1 else 0
        if len(self.path) == 1:
            return self.path[0]
        seg = self.cum[i + 1] - self.cum[i]
        f = 0.0 if seg <= 0 else (s - self.cum[i]) / seg
        (x0, y0), (x1, y1) = self.path[i], self.path[i + 1]
        return (x0 + f * (x1 - x0), y0 + f * (y1 - y0))

    # ------------------------------------------------------------------ control
    def _tangent(self, s: float) -> float:
        """Bearing (deg) of the route just after arc length ``s``."""
        p = self._point_at(s)
        q = self._point_at(s + 0.5)
        if math.dist(p, q) < 1e-6:
            p = self._point_at(s - 0.5)
            q = self._point_at(s)
        return bearing(q[0] - p[0], q[1] - p[1])

    def _follow(self, e: Any) -> dict[str, Any] | None:
        """The longest move along the plan that the dynamics confirm; else a look towards
        the farthest plan point a straight move could reach; else (crowds) an evasion.
        """
        w = e.walker
        total = float(self.cum[-1])
        remaining = total - self.s
        if remaining < 0.05:
            return None
        crowd = e.crowd is not None and len(e.crowd) > 0
        speeds = [SPRINT_SPEED, WALK_SPEED] if crowd else [SPRINT_SPEED]
        offsets = (0.0, 0.5, -0.5, 0.9, -0.9, 1.5, -1.5) if crowd else (0.0,)
        fracs = (1.0, 0.97, 0.9, 0.75, 0.5, 0.3, 0.15, 0.07)
        for speed in speeds:
            for frac in fracs:
                ahead = min(remaining, speed * 2.0 * frac)
                at_end = ahead >= remaining - 1e-9
                if ahead < 0.16 and not at_end:
                    continue
                bx, by = self._point_at(self.s + ahead)
                tan = self._tangent(self.s + ahead)
                nx_, ny_ = math.cos(math.radians(tan)), -math.sin(math.radians(tan))
                for off in offsets if not at_end else (0.0,):
                    tx, ty = bx + off * nx_, by + off * ny_
                    if off and e.geometry.clearance(tx, ty, 1.0) < 0.45:
                        continue  # keep side steps away from walls
                    act = self._move_to(e, w, tx, ty, speed)
                    if act is None:
                        continue
                    turned = act["yaw_rate"] * act["seconds"]
                    end_heading = w.heading + turned
                    if (
                        not at_end
                        and abs(turned) > 4.0
                        and abs(angle_diff(tan, end_heading)) > ALIGN_DEG
                    ):
                        continue
                    self.expected = (tx, ty)
                    self.s += ahead
                    return act
        # no move from the current heading: face the farthest reachable plan point
        if not (crowd and self._contact_if_still(e, 0.5)):
            for frac in fracs:
                ahead = min(remaining, 2.0 * SPRINT_SPEED * frac)
                tx, ty = self._point_at(self.s + ahead)
                if math.hypot(tx - w.x, ty - w.y) < 0.1:
                    continue
                alpha = angle_diff(bearing(tx - w.x, ty - w.y), w.heading)
                if abs(alpha) < 0.5:
                    continue
                facing = WalkerState(w.x, w.y, (w.heading + alpha) % 360.0, w.pitch)
                if self._move_to(e, facing, tx, ty, SPRINT_SPEED, contacts=False) is not None:
                    return {"action": "look", "yaw": round(alpha, 4), "pitch": 0.0}
        return None

    def _move_to(
        self, e: Any, w: WalkerState, tx: float, ty: float, speed: float, contacts: bool = True
    ) -> dict[str, Any] | None:
        """The forward (arc) move that ends at ``(tx, ty)``, if the dynamics confirm it ends
        there without touching a wall, crossing a closure or (predicted) a person.
        """
        dx, dy = tx - w.x, ty - w.y
        c = math.hypot(dx, dy)
        if c < 0.07:
            return None
        alpha = angle_diff(bearing(dx, dy), w.heading)
        if abs(alpha) > MAX_TURN_IN_MOVE:
            return None
        ar = math.radians(alpha)
        arc = c if abs(ar) < 1e-6 else c * ar / math.sin(ar)
        duration = arc / speed
        if duration > 2.0 or duration < 0.05:
            return None
        yaw_rate = 0.0 if abs(ar) < 1e-6 else 2.0 * alpha / duration
        if abs(yaw_rate) > 180.0:
            return None
        name = "sprint" if speed == SPRINT_SPEED else "move"
        act: dict[str, Any] = {
            "action": name,
            "dir": "forward",
            "seconds": duration,
            "yaw_rate": yaw_rate,
            "pitch_rate": 0.0,
        }
        for jump_at in (None, 0.0):  # on the ground, else over a bench with a jump
            res = simulate_move(
                e.ground, w, "forward", speed, duration, yaw_rate, 0.0, jump_at, e.geometry
            )
            if math.hypot(res.state.x - tx, res.state.y - ty) <= 0.25:
                break
        else:
            return None  # a wall deflects it
        if jump_at is not None:
            act.update(jump=True, jump_at=jump_at)
        if res.hit_wall and e.geometry.clearance(w.x, w.y, 0.5) > 0.35:
            return None  # it grazes a wall: only acceptable to get away from one we touch
        for c_, on in zip(e.closures, e.closure_active):
            if on and count_crossings(res.path, c_):
                return None
        if contacts and e.crowd is not None and not self._hurry:
            if self._contact_predicted(e, res, duration):
                return None
            # keep a way out: standing still for a moment after the move must be safe too
            if self._contact_predicted(e, _still(res.state), 0.6, e.clock.elapsed + duration):
                return None
        return act

    def _clearance_to_people(
        self, e: Any, res: Any, duration: float, t0: float | None = None
    ) -> float:
        """Smallest predicted centre distance (m) to anyone not already in contact while
        the walker follows ``res`` over ``duration`` seconds from ``t0`` (default now).
        """
        crowd = e.crowd
        t0 = e.clock.elapsed if t0 is None else t0
        ts = sample_times(t0, duration)
        xy = walker_samples(res, duration)
        free = ~crowd.in_contact
        if not len(crowd) or not free.any():
            return math.inf
        px, py = crowd.positions_at(ts)
        d2 = (px[free] - xy[None, :, 0]) ** 2 + (py[free] - xy[None, :, 1]) ** 2
        return math.sqrt(float(d2.min()))

    def _contact_predicted(
        self, e: Any, res: Any, duration: float, t0: float | None = None
    ) -> bool:
        return self._clearance_to_people(e, res, duration, t0) < CONTACT_DISTANCE + CONTACT_MARGIN

    def _contact_if_still(self, e: Any, duration: float) -> bool:
        return self._contact_predicted(e, _still(e.walker), duration)

    def _evade(self, e: Any) -> dict[str, Any]:
        """Wait if nobody will walk into us; else the safe step that keeps closest to the
        route; with no safe step, the one that keeps farthest from everybody.
        """
        w = e.walker
        if not self._contact_if_still(e, 0.6):
            return {"action": "jump"}
        goal = self._point_at(self.s + 3.0) if len(self.path) > 1 else (w.x, w.y)
        safe: tuple[float, dict[str, Any]] | None = None
        fallback: tuple[float, dict[str, Any]] = (
            self._clearance_to_people(e, _still(w), 0.6),
            {"action": "jump"},
        )
        for direction in ("forward", "left", "right", "backward"):
            for name, speed in (("move", WALK_SPEED), ("sprint", SPRINT_SPEED)):
                for dur in (1.0, 0.5, 0.25):
                    res = simulate_move(e.ground, w, direction, speed, dur, 0.0, 0.0)
                    if res.hit_wall or any(
                        on and count_crossings(res.path, c)
                        for c, on in zip(e.closures, e.closure_active)
                    ):
                        continue
                    act = {
                        "action": name,
                        "dir": direction,
                        "seconds": dur,
                        "yaw_rate": 0.0,
                        "pitch_rate": 0.0,
                    }
                    gap = self._clearance_to_people(e, res, dur)
                    if gap >= CONTACT_DISTANCE + CONTACT_MARGIN:
                        # close to the route, and decisively away from people
                        d = math.dist((res.state.x, res.state.y), goal) - 1.5 * min(gap, 2.0)
                        if safe is None or d < safe[0]:
                            safe = (d, act)
                    elif gap > fallback[0]:
                        fallback = (gap, act)
        self.plan_key = None
        return safe[1] if safe is not None else fallback[1]

    def _unstick(self, e: Any) -> dict[str, Any]:
        """Last resort: face the next route point, or wait."""
        if len(self.path) > 1:
            w = e.walker
            tx, ty = self._point_at(min(float(self.cum[-1]), 1.0))
            alpha = angle_diff(bearing(tx - w.x, ty - w.y), w.heading)
            if abs(alpha) > 1.0:
                return {"action": "look", "yaw": round(alpha, 3), "pitch": 0.0}
        return {"action": "jump"}
