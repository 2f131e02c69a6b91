"""The shared state of one CityWalk generation run over a city (:class:`_Ctx`) and the
spec pieces every generator writes.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import shapely
from shapely.geometry import LineString, Point

from urban_gym.families.citywalk.tasks.types import (
    CLOCK_RANGES,
    EXCLUDED_KINDS,
    OPTION_LETTERS,
    SUCCESS_RADIUS,
)
from urban_gym.families.citywalk.views import LMM_VIEW_SIZE
from urban_gym.tasks.report import Misses
from urban_gym.tasks.spec import TaskError
from urban_gym.world.city import POI, City
from urban_gym.world.geo import angle_diff, bearing
from urban_gym.world.routing import Located, Router

#: Pixels of a place's signboard that the start view must show for a task to say that
#: the sign is in sight (at the language-model view, :data:`START_VIEW_SIZE`).
MIN_SIGN_PIXELS = 16
#: Eye height (m) of the walker and of the start-view check.
EYE_HEIGHT_M = 1.6
#: Horizontal field of view (degrees) of the start-view check (the env's default).
START_VIEW_FOV = 90.0
#: An optional check an SGN target must pass to be kept (e.g. its name legible from the
#: start view or after turning toward it): ``predicate(city, start, poi) -> bool`` with
#: ``start`` the task's start pose (``x``, ``y``, ``heading``, ``pitch``, ``clock``).
TargetPredicate = Callable[[City, dict[str, Any], POI], bool]


def start_view_size() -> tuple[int, int]:
    """``(width, height)`` of the view a task's claims of sight are checked in: the
    language-model view (:data:`LMM_VIEW_SIZE`).
    """
    return LMM_VIEW_SIZE


def sign_pixels_in_view(renderer: Any, start: dict[str, Any], poi_index: int) -> int:
    """How many pixels of the signboard of ``city.pois[poi_index]`` the first-person
    ``renderer`` shows from the task start ``start`` (``x``, ``y``, ``heading``,
    ``pitch``), by the renderer's instance ids; pedestrians are not drawn.
    """
    from urban_gym.render.ids import sign_id

    r = renderer.render(
        float(start["x"]),
        float(start["y"]),
        float(start["heading"]),
        float(start.get("pitch", 0.0)),
        ids=True,
    )
    return int(np.count_nonzero(r.ids == sign_id(poi_index)))


class _Ctx:
    """Shared state of one generation run over a city."""

    def __init__(self, city: City, city_spec: str, seed: int) -> None:
        self.city = city
        self.spec = city_spec
        self.rng = np.random.default_rng(seed)
        self.router = Router(city)
        names = Counter(n.casefold() for p in city.pois for n in {p.name, *p.aliases})
        self.pois: list[POI] = [
            p
            for p in city.pois
            if p.kind not in EXCLUDED_KINDS
            and names[p.name.casefold()] == 1
            and 2 <= len(p.name) <= 40
            and math.dist(p.front, p.anchor) <= 25.0
        ]
        self.by_kind: dict[str, list[POI]] = {}
        for p in self.pois:
            self.by_kind.setdefault(p.kind, []).append(p)
        self.poi_xy = np.array([p.anchor for p in self.pois], dtype=float).reshape(-1, 2)
        self.front_loc: dict[int, Located] = {}
        self.btree = shapely.STRtree([b.polygon for b in city.buildings])
        edges = list(city.network.edges(data=True))
        self.edges = [(u, v) for u, v, _ in edges]
        w = np.array([d["length"] for *_, d in edges], dtype=float)
        self.edge_p = w / w.sum()
        self.etree = shapely.STRtree([d["geometry"] for *_, d in edges])
        self.used_starts: list[tuple[float, float]] = []
        #: Why the attempts at the current task type failed (see :meth:`miss`).
        self.misses = Misses()
        self._start_view: Any = None
        #: SGN targets must pass this check when set (see :data:`TargetPredicate`).
        self.sgn_predicate: TargetPredicate | None = None

    def miss(self, reason: str, stage: int = 0) -> None:
        """Record why an attempt failed (what the city lacks) and at which ``stage`` of
        its generator's checks (see :class:`~urban_gym.tasks.report.Misses`); returns
        None, so that a generator can ``return c.miss("...")``.
        """
        self.misses(reason, stage)

    # -------------------------------------------------------------- helpers
    def loc(self, p: POI) -> Located:
        if p.id not in self.front_loc:
            self.front_loc[p.id] = self.router.locate(*p.front)
        return self.front_loc[p.id]

    def clear(self, x: float, y: float, r: float = 1.0) -> bool:
        """No building within ``r`` metres and inside the city's bounds (the walker and
        the renderer stay within them).
        """
        if not self.city.contains(x, y):
            return False
        return len(self.btree.query(Point(x, y), predicate="dwithin", distance=r)) == 0

    def random_start(self) -> tuple[float, float]:
        for _ in range(200):
            u, v = self.edges[int(self.rng.choice(len(self.edges), p=self.edge_p))]
            g = self.city.edge_geometry(u, v)
            q = g.interpolate(float(self.rng.uniform(0.0, g.length)))
            if self.clear(q.x, q.y, 1.0):
                return (float(q.x), float(q.y))
        raise TaskError(f"city {self.city.name!r}: no clear start point on the network")

    def random_start_near(
        self, xy: tuple[float, float], r0: float, r1: float
    ) -> tuple[float, float] | None:
        """A clear network point between ``r0`` and ``r1`` metres from ``xy``."""
        idx = self.etree.query(Point(xy), predicate="dwithin", distance=r1)
        if len(idx) == 0:
            return None
        for _ in range(30):
            u, v = self.edges[int(idx[int(self.rng.integers(len(idx)))])]
            g = self.city.edge_geometry(u, v)
            q = g.interpolate(float(self.rng.uniform(0.0, g.length)))
            if r0 <= math.dist((q.x, q.y), xy) <= r1 and self.clear(q.x, q.y, 1.0):
                return (float(q.x), float(q.y))
        return None

    def sign_point(self, p: POI) -> tuple[float, float]:
        """A point 0.3 m in front of the sign."""
        dx, dy = math.sin(math.radians(p.facing)), math.cos(math.radians(p.facing))
        return (p.anchor[0] + 0.3 * dx, p.anchor[1] + 0.3 * dy)

    def visible(self, xy: tuple[float, float], p: POI, max_angle: float = 75.0) -> bool:
        """Line of sight from ``xy`` to ``p``'s sign, seen from the front side."""
        sx, sy = self.sign_point(p)
        if math.dist(xy, (sx, sy)) < 1.0:
            return True
        if p.facade is not None:
            view = bearing(xy[0] - p.anchor[0], xy[1] - p.anchor[1])
            if abs(angle_diff(view, p.facing)) > max_angle:
                return False
        line = LineString([xy, (sx, sy)])
        return len(self.btree.query(line, predicate="intersects")) == 0

    def sign_in_start_view(self, start: dict[str, Any], p: POI) -> bool:
        """Whether at least :data:`MIN_SIGN_PIXELS` pixels of ``p``'s signboard show in
        the language-model start view from ``start`` (checked on the rendered ids).
        """
        if self._start_view is None:
            from urban_gym.render import FirstPersonRenderer

            w, h = start_view_size()
            self._start_view = FirstPersonRenderer(
                self.city, w, h, fov=START_VIEW_FOV, eye_height=EYE_HEIGHT_M
            )
        return sign_pixels_in_view(self._start_view, start, p.id) >= MIN_SIGN_PIXELS

    def sign_pitch(self, xy: tuple[float, float], p: POI) -> float:
        """The pitch (degrees, one decimal) that looks from ``xy`` at the middle of
        ``p``'s signboard (boards stacked high on a facade need one).
        """
        from urban_gym.render.scene import scene_for

        place = scene_for(self.city).poi_sign_placement(p.id)
        z = 0.5 * (place[0] + place[1]) if place is not None else 3.0
        d = max(math.dist(xy, self.sign_point(p)), 0.5)
        return round(math.degrees(math.atan2(z - EYE_HEIGHT_M, d)), 1)

    def pois_near(self, xy: tuple[float, float], r0: float, r1: float) -> list[POI]:
        d = np.hypot(self.poi_xy[:, 0] - xy[0], self.poi_xy[:, 1] - xy[1])
        idx = np.flatnonzero((d >= r0) & (d <= r1))
        return [self.pois[i] for i in idx]

    def distractors(
        self,
        truth: POI,
        pool: Sequence[POI],
        far_from: tuple[float, float],
        k: int = 3,
        min_dist: float = 150.0,
    ) -> list[POI] | None:
        """``k`` places of ``pool`` for the wrong options: ``min_dist`` metres or more from
        ``far_from``, and no option's name inside another's ("Zio", "Zio (Shoe store)":
        both would fit); None when the pool has fewer.
        """
        cand = [p for p in pool if p.id != truth.id and math.dist(p.anchor, far_from) >= min_dist]
        if len(cand) < k:
            return None
        chosen: list[POI] = []
        names = [truth.name.casefold()]
        for i in self.rng.permutation(len(cand)):
            p = cand[int(i)]
            n = p.name.casefold()
            if any(n in m or m in n for m in names):
                continue
            chosen.append(p)
            names.append(n)
            if len(chosen) == k:
                return chosen
        return None

    def start_clock(self, time_of_day: str = "day") -> int:
        lo, hi = CLOCK_RANGES[time_of_day]
        return int(self.rng.integers(lo // 60, hi // 60)) * 60

    def options(self, correct: str, others: Sequence[str]) -> tuple[list[str], str]:
        opts = [correct, *others]
        order = self.rng.permutation(len(opts))
        return [opts[int(i)] for i in order], correct


def _start(xy: tuple[float, float], heading: float, clock: int) -> dict[str, Any]:
    return {
        "x": round(xy[0], 3),
        "y": round(xy[1], 3),
        "heading": round(heading % 360.0, 2),
        "pitch": 0.0,
        "clock": clock,
    }


def _goal(p: POI, show: bool) -> dict[str, Any]:
    return {
        "x": round(p.front[0], 3),
        "y": round(p.front[1], 3),
        "radius": SUCCESS_RADIUS,
        "name": p.name,
        "poi_id": p.id,
        "kind": p.kind,
        "show_on_map": show,
    }


def _qa_text(question: str, options: Sequence[str]) -> str:
    """A question task's text in UrbanGround's layout ``<QUESTION> A. .. B. .. C. .. D. ..``
    and, on a line of its own, how it is answered here: explore as needed, ``terminate``, then the answer turn
    (``{"answer": <letter>, "reason": ...}``). The question and the options stay in the
    task's own fields (``meta["question"]``, ``options``) for a prompt template.
    """
    opts = " ".join(f"{L}. {o}" for L, o in zip(OPTION_LETTERS, options))
    return (
        f"{question} {opts}\nLook around as much as you need, then terminate; the turn "
        "after that asks for your answer, one of the letters A-D."
    )


Gen = Callable[[_Ctx, dict[str, Any]], dict[str, Any] | None]
