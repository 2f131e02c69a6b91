"""CityWalk tasks: the five-level ladder of thirteen task types, generated from city data.

Every task is a :class:`~urban_gym.tasks.spec.TaskSpec` with ``family="citywalk"`` and
``type`` one of :data:`TASK_TYPES`; ``difficulty`` is the ladder level ``l1`` .. ``l5``.

| level | type | what the agent does | ground truth from |
|---|---|---|---|
| L1 | ``VR`` visual recognition | names the place whose sign it faces (4 options) | the POI anchored on the facade ahead |
| L1 | ``OU`` orientation understanding | says whether a place is ahead / right / behind / left | bearing from the start to the POI's sign |
| L1 | ``AEQ`` active exploration | finds which place of a kind is next to a named one | the only POI of that kind within 80 m |
| L2 | ``SGN`` short-range goal | walks to a place whose sign is in sight | a visible POI 30-110 m away |
| L2 | ``LGN`` long-range goal | walks to a place out of sight, using the map | a POI 200-480 m away by the network |
| L2 | ``IN`` instructions | follows turn-by-turn directions | the shortest route to a POI |
| L2 | ``CN`` constrained | walks to a place without crossing a closure | a closure on the shortest route |
| L3 | ``PTS`` place-type search | finds "the nearest pharmacy" | the nearest POI of the kind by walking distance |
| L3 | ``III`` implicit intent | finds a place for a need ("my eyes need checking") | :data:`INTENT_CATEGORIES` + nearest POI |
| L4 | ``TWS`` time-window schedule | visits places in order before deadlines | routes at walking speed x 1.5 + 60 s |
| L4 | ``MSP`` multi-stop | visits several places in any order | the stops |
| L5 | ``DCR`` dynamic closure | replans when a closure appears mid-episode | a closure on the route, shown at 40 m |
| L5 | ``NP`` among pedestrians | walks to a place through a crowd without contact | pedestrians near the route |

L5 also holds the *condition variants* of ``VR``, ``OU``, ``AEQ`` and ``SGN``: the same type
at dusk, at night, in fog or in rain (``constraints.conditions``; ``meta.variant``).

Spec fields used by the family (all lengths metres, angles degrees, times seconds):

* ``start``: ``x``, ``y``, ``heading``, ``pitch``, ``clock`` (seconds of day).
* ``goal`` (navigation): ``x``, ``y``, ``radius`` (15), ``name``, ``poi_id``,
  ``show_on_map`` (whether the map marks it). Multi-stop: ``stops`` (each ``x``, ``y``,
  ``name``, ``poi_id``, ``deadline`` seconds of day or None), ``ordered``, ``radius``,
  ``show_on_map``.
* ``answer`` / ``options`` (questions): four options; ``answer`` is the correct option's text.
* ``constraints``: ``closures`` (each ``id``, ``points`` [[x, y], ...], ``label``,
  ``closed_edges`` [[u, v], ...], ``trigger`` None or [x, y, radius]), ``pedestrians``
  (``count``, ``seed``, ``around`` node ids), ``max_contacts``, ``conditions``
  (``time_of_day``, ``weather``, ``seed``).
* ``limits``: ``max_steps`` (150).
* ``meta``: ``level``, ``type_name``, ``shortest_m`` (walking distance of the task),
  ``reference_path`` (IN: the route, points every ~5 m), ``variant``, ``generator``.

:func:`generate_with_report` makes the tasks a city supports and says, per type, how many
it made and -- where fewer -- what the city lacks; :func:`score_episode` turns an
:class:`EpisodeRecord` into the task's metrics.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import shapely
from shapely.geometry import LineString, Point

from urban_gym.tasks import metrics as M
from urban_gym.tasks.report import GeneratedSuite, GenerationReport, Misses, TypeReport
from urban_gym.tasks.spec import TaskError, TaskSpec, save_suite
from urban_gym.world.city import POI, City
from urban_gym.world.routing import Located, Router, polyline_length

GENERATOR_VERSION = "citywalk/1"
#: The committed default suite; regenerate with ``urban-gym generate-suite --family citywalk``.
DEFAULT_SUITE_PATH = (
    Path(__file__).resolve().parent.parent / "data" / "suites" / "citywalk_helsinki.jsonl"
)
SUCCESS_RADIUS = 15.0  # m
DEFAULT_MAX_STEPS = 150
OPTION_LETTERS = ("A", "B", "C", "D")


@dataclass(frozen=True)
class TaskType:
    """One rung of the ladder: ``code``, ladder ``level``, full ``name`` and ``kind``
    (``qa`` = multiple-choice question, ``nav`` = one goal, ``multi`` = several stops)."""

    code: str
    level: str
    name: str
    kind: str


TASK_TYPES: dict[str, TaskType] = {
    t.code: t
    for t in (
        TaskType("VR", "l1", "visual recognition", "qa"),
        TaskType("OU", "l1", "orientation understanding", "qa"),
        TaskType("AEQ", "l1", "active exploration question", "qa"),
        TaskType("SGN", "l2", "short-range goal navigation", "nav"),
        TaskType("LGN", "l2", "long-range goal navigation", "nav"),
        TaskType("IN", "l2", "instruction navigation", "nav"),
        TaskType("CN", "l2", "constrained navigation", "nav"),
        TaskType("PTS", "l3", "place-type search", "nav"),
        TaskType("III", "l3", "implicit intent interpretation", "nav"),
        TaskType("TWS", "l4", "time-window schedule", "multi"),
        TaskType("MSP", "l4", "multi-stop planning", "multi"),
        TaskType("DCR", "l5", "dynamic closure replanning", "nav"),
        TaskType("NP", "l5", "navigation among pedestrians", "nav"),
    )
}

#: Types that get time-of-day / weather variants on level L5.
VARIANT_TYPES: tuple[str, ...] = ("VR", "OU", "AEQ", "SGN")

#: ``(time_of_day, weather)`` of the condition variants.
VARIANT_CONDITIONS: tuple[tuple[str, str], ...] = (
    ("dusk", "clear"),
    ("night", "clear"),
    ("day", "fog"),
    ("day", "rain"),
    ("night", "rain"),
    ("dusk", "fog"),
)

#: Implicit intents (III): what a person says -> the POI kinds (OSM values) that serve it.
INTENT_CATEGORIES: dict[str, tuple[str, ...]] = {
    "My eyes need checking and I think I need new glasses.": ("optician",),
    "I have a terrible toothache.": ("dentist",),
    "I need to withdraw some cash.": ("atm", "bank"),
    "I have a headache and need to buy painkillers.": ("pharmacy",),
    "My hair is far too long.": ("hairdresser",),
    "I want a coffee and a cinnamon bun.": ("cafe", "bakery"),
    "I need to buy groceries for dinner.": ("supermarket", "convenience"),
    "I want to buy a novel to read on the train.": ("books",),
    "I need a place to sleep tonight.": ("hotel", "hostel"),
    "I would like a beer with friends.": ("pub", "bar"),
    "I want to send a parcel to my family.": ("post_office",),
    "I want to buy a bouquet for a friend's birthday.": ("florist",),
    "My shoes fell apart; I need a new pair.": ("shoes",),
    "I need to exchange euros for another currency.": ("bureau_de_change",),
    "I want to see a film tonight.": ("cinema",),
    "I want to borrow a book for free.": ("library",),
    "I want to look at some paintings.": ("gallery", "museum", "arts_centre"),
    "I need a screwdriver and some nails.": ("hardware", "doityourself"),
    "My phone screen is cracked; I need a new phone.": ("mobile_phone", "electronics"),
    "I am hungry and want a quick burger.": ("fast_food",),
    "I want to buy a bottle of wine.": ("alcohol", "wine"),
    "I feel unwell and need to see a doctor.": ("doctors", "clinic"),
}

#: POI kinds never used as goals or options (no useful sign, or not a place to go to).
EXCLUDED_KINDS = frozenset(
    {
        "yes",
        "artwork",
        "information",
        "parking",
        "bicycle_parking",
        "bench",
        "vending_machine",
        "toilets",
        "waste_basket",
        "memorial",
        "bicycle_rental",
        "charging_station",
        "parking_entrance",
    }
)

KIND_NAMES: dict[str, str] = {
    "fast_food": "fast-food restaurant",
    "atm": "ATM",
    "bureau_de_change": "currency exchange",
    "books": "bookshop",
    "clothes": "clothes shop",
    "shoes": "shoe shop",
    "jewelry": "jewellery shop",
    "convenience": "convenience store",
    "mobile_phone": "mobile phone shop",
    "alcohol": "liquor store",
    "gift": "gift shop",
    "toys": "toy shop",
    "art": "art shop",
    "furniture": "furniture shop",
    "hardware": "hardware store",
    "company": "company office",
    "supermarket": "supermarket",
    "beauty": "beauty salon",
    "ngo": "NGO office",
    "travel_agency": "travel agency",
    "sports": "sports shop",
    "interior_decoration": "interior decoration shop",
    "doctors": "doctor's surgery",
    "post_office": "post office",
    "place_of_worship": "place of worship",
    "sports_centre": "sports centre",
    "fitness_centre": "gym",
    "cosmetics": "cosmetics shop",
    "outdoor": "outdoor shop",
    "deli": "delicatessen",
    "tea": "tea shop",
    "electronics": "electronics shop",
    "bicycle": "bicycle shop",
    "variety_store": "variety store",
    "confectionery": "sweet shop",
}

#: Start clock (seconds of day) ranges by time of day.
CLOCK_RANGES: dict[str, tuple[int, int]] = {
    "day": (9 * 3600, 15 * 3600),
    "dusk": (18 * 3600 + 1800, 19 * 3600 + 1800),
    "night": (22 * 3600, 23 * 3600 + 1800),
}

OU_OPTIONS = ("ahead of you", "to your right", "behind you", "to your left")


def kind_name(kind: str) -> str:
    """Readable name of a POI kind (``fast_food`` -> ``fast-food restaurant``)."""
    return KIND_NAMES.get(kind, kind.replace("_", " "))


def compass_name(b: float) -> str:
    """Eight-point compass name of a bearing (degrees)."""
    names = (
        "north",
        "north-east",
        "east",
        "south-east",
        "south",
        "south-west",
        "west",
        "north-west",
    )
    return names[int(math.floor((b % 360.0) / 45.0 + 0.5)) % 8]


def _bearing(dx: float, dy: float) -> float:
    return math.degrees(math.atan2(dx, dy)) % 360.0


def _adiff(a: float, b: float) -> float:
    d = (a - b + 180.0) % 360.0 - 180.0
    return 180.0 if d == -180.0 else d


def format_hhmm(seconds_of_day: float) -> str:
    s = int(math.floor(seconds_of_day)) % 86400
    return f"{s // 3600:02d}:{s // 60 % 60:02d}"


# ---------------------------------------------------------------- generation
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

    def miss(self, reason: str, stage: int = 0) -> None:
        """Record why an attempt failed (what the city lacks) and at which ``stage`` of
        its generator's checks (see :class:`~urban_gym.tasks.report.Misses`); returns
        None, so that a generator can ``return c.miss("...")``."""
        self.misses(reason, stage)

    # -------------------------------------------------------------- helpers
    def loc(self, p: POI) -> Located:
        if p.id not in self.front_loc:
            self.front_loc[p.id] = self.router.locate(*p.front)
        return self.front_loc[p.id]

    def clear(self, x: float, y: float, r: float = 1.0) -> bool:
        """No building within ``r`` metres and inside the city's bounds (the walker and
        the renderer stay within them)."""
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
            view = _bearing(xy[0] - p.anchor[0], xy[1] - p.anchor[1])
            if abs(_adiff(view, p.facing)) > max_angle:
                return False
        line = LineString([xy, (sx, sy)])
        return len(self.btree.query(line, predicate="intersects")) == 0

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
        cand = [
            p
            for p in pool
            if p.id != truth.id
            and math.dist(p.anchor, far_from) >= min_dist
            and p.name.casefold() != truth.name.casefold()
        ]
        if len(cand) < k:
            return None
        idx = self.rng.choice(len(cand), size=k, replace=False)
        return [cand[int(i)] for i in idx]

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
    opts = " ".join(f"{L}) {o}" for L, o in zip(OPTION_LETTERS, options))
    return f"{question} Options: {opts}. Answer with terminate and the option's letter."


Gen = Callable[[_Ctx, dict[str, Any]], dict[str, Any] | None]


def _gen_vr(c: _Ctx, cond: dict[str, Any]) -> dict[str, Any] | None:
    p = c.pois[int(c.rng.integers(len(c.pois)))]
    if p.facade is None:
        return c.miss("no named POI on a building facade")
    fx, fy = math.sin(math.radians(p.facing)), math.cos(math.radians(p.facing))
    for d in (9.0, 7.0, 5.0, 3.5):
        xy = (p.anchor[0] + d * fx, p.anchor[1] + d * fy)
        if c.clear(*xy, 0.8) and c.visible(xy, p):
            break
    else:
        return c.miss("no clear spot 3.5-9 m in front of a POI's sign with the sign in view", 1)
    others = c.distractors(p, c.pois, p.anchor, 3, 150.0)
    if others is None:
        return c.miss("fewer than 3 other named POIs 150 m or more from the place (the options)", 2)
    opts, ans = c.options(p.name, [o.name for o in others])
    q = "Which of these places is the one whose sign is straight ahead of you?"
    return {
        "start": _start(xy, p.facing + 180.0, c.start_clock(cond["time_of_day"])),
        "instruction": _qa_text(q, opts),
        "options": opts,
        "answer": ans,
        "meta": {"poi_id": p.id, "distance_m": round(math.dist(xy, p.anchor), 1)},
    }


def _gen_ou(c: _Ctx, cond: dict[str, Any]) -> dict[str, Any] | None:
    xy = c.random_start()
    cands = [p for p in c.pois_near(xy, 12.0, 45.0) if c.visible(xy, p)]
    if not cands:
        return c.miss("no POI sign in view 12-45 m from a point of the walkable network")
    p = cands[int(c.rng.integers(len(cands)))]
    quadrant = int(c.rng.integers(4))  # 0 ahead, 1 right, 2 behind, 3 left
    b = _bearing(p.anchor[0] - xy[0], p.anchor[1] - xy[1])
    heading = b - 90.0 * quadrant + float(c.rng.uniform(-20.0, 20.0))
    q = f"Is {p.name} ({kind_name(p.kind)}) ahead of you, to your right, behind you or to your left?"
    opts = list(OU_OPTIONS)
    return {
        "start": _start(xy, heading, c.start_clock(cond["time_of_day"])),
        "instruction": _qa_text(q, opts),
        "options": opts,
        "answer": opts[quadrant],
        "meta": {"poi_id": p.id, "relative_bearing": round(_adiff(b, heading), 1)},
    }


def _gen_aeq(c: _Ctx, cond: dict[str, Any]) -> dict[str, Any] | None:
    a = c.pois[int(c.rng.integers(len(c.pois)))]
    near = [p for p in c.pois_near(a.anchor, 0.0, 25.0) if p.id != a.id and p.kind != a.kind]
    if not near:
        return c.miss("no two named POIs of different kinds within 25 m of each other")
    b = near[int(c.rng.integers(len(near)))]
    same = [p for p in c.pois_near(a.anchor, 0.0, 80.0) if p.kind == b.kind]
    if len(same) != 1:
        return c.miss("no POI next to another that is the only one of its kind within 80 m", 1)
    others = c.distractors(b, c.by_kind.get(b.kind, []), a.anchor, 3, 150.0)
    if others is None:
        return c.miss(
            "fewer than 3 other POIs of the answer's kind 150 m or more away (the options)", 2
        )
    # a start 15-40 m from A, on the network, facing anywhere
    xy = c.random_start_near(a.anchor, 15.0, 40.0)
    if xy is None:
        return c.miss("no clear point of the walkable network 15-40 m from the named POI", 3)
    opts, ans = c.options(b.name, [o.name for o in others])
    q = f"Which {kind_name(b.kind)} is right next to {a.name}? Look around to find out."
    return {
        "start": _start(xy, float(c.rng.uniform(0, 360)), c.start_clock(cond["time_of_day"])),
        "instruction": _qa_text(q, opts),
        "options": opts,
        "answer": ans,
        "meta": {"poi_id": b.id, "landmark_poi_id": a.id},
    }


def _nav_common(
    c: _Ctx, lo: float, hi: float, need_visible: bool | None, tries: int = 40
) -> tuple[tuple[float, float], POI, float] | None:
    """A start and a goal POI whose walking distance lies in ``[lo, hi]``; None (and the
    reason recorded with :meth:`_Ctx.miss`) when the start drawn has none."""
    xy = c.random_start()
    src = c.router.locate(*xy)
    fld = c.router.field(src)
    cands = c.pois_near(xy, 10.0, hi)
    c.rng.shuffle(cands)
    in_band = 0
    for p in cands[:tries]:
        d = c.router.distance(fld, c.loc(p))
        if not (lo <= d <= hi):
            continue
        in_band += 1
        if need_visible is True and not c.visible(xy, p):
            continue
        if need_visible is False and c.visible(xy, p, 90.0):
            continue
        return xy, p, d
    band = f"{lo:.0f}-{hi:.0f} m from a start along the walkable network"
    if not in_band:
        return c.miss(f"no named POI {band}")
    sight = "in sight" if need_visible else "out of sight"
    return c.miss(f"no named POI {band} with its sign {sight}", 1)


def _gen_sgn(c: _Ctx, cond: dict[str, Any]) -> dict[str, Any] | None:
    got = _nav_common(c, 30.0, 110.0, True)
    if got is None:
        return None
    xy, p, d = got
    b = _bearing(p.anchor[0] - xy[0], p.anchor[1] - xy[1])
    text = (
        f"Walk to {p.name} ({kind_name(p.kind)}). Its sign is in sight from where you "
        "start. Stop in front of it and terminate."
    )
    return {
        "start": _start(xy, b + float(c.rng.uniform(-45, 45)), c.start_clock(cond["time_of_day"])),
        "instruction": text,
        "goal": _goal(p, False),
        "meta": {"shortest_m": round(d, 1)},
    }


def _gen_lgn(c: _Ctx, cond: dict[str, Any]) -> dict[str, Any] | None:
    got = _nav_common(c, 200.0, 480.0, False)
    if got is None:
        return None
    xy, p, d = got
    crow = math.dist(xy, p.front)
    text = (
        f"Walk to {p.name} ({kind_name(p.kind)}), about {round(crow, -1):.0f} m away as "
        "the crow flies. It is out of sight: open the map to find it (it is marked "
        "there), then walk there and terminate."
    )
    return {
        "start": _start(xy, float(c.rng.uniform(0, 360)), c.start_clock()),
        "instruction": text,
        "goal": _goal(p, True),
        "meta": {"shortest_m": round(d, 1)},
    }


def route_instructions(city: City, pts: Sequence[tuple[float, float]], goal: POI) -> str:
    """Turn-by-turn directions along a route polyline, ending at ``goal``."""
    legs = route_legs(pts)
    parts: list[str] = []
    for i, leg in enumerate(legs):
        name = _street_name(city, leg["mid"])
        along = f" along {name}" if name else ""
        dist = max(10, int(round(leg["length"] / 10.0)) * 10)
        if i == 0:
            parts.append(f"Head {compass_name(leg['bearing'])}{along} for about {dist} m.")
        else:
            turn = leg["turn"]
            verb = ("bear" if abs(turn) < 60 else "turn") + (" right" if turn > 0 else " left")
            onto = f" onto {name}" if name else ""
            parts.append(f"{verb.capitalize()}{onto} and walk about {dist} m.")
    end = pts[-1]
    last_b = legs[-1]["end_bearing"] if legs else 0.0
    rel = _adiff(_bearing(goal.anchor[0] - end[0], goal.anchor[1] - end[1]), last_b)
    side = (
        "ahead"
        if abs(rel) < 30
        else "behind you"
        if abs(rel) > 150
        else "on your right"
        if rel > 0
        else "on your left"
    )
    parts.append(f"Stop at {goal.name} ({kind_name(goal.kind)}), {side}, and terminate.")
    return " ".join(parts)


def route_legs(
    pts: Sequence[tuple[float, float]], turn_deg: float = 35.0, min_leg: float = 12.0
) -> list[dict[str, Any]]:
    """Split a route into straight-ish legs at turns of at least ``turn_deg`` degrees;
    legs shorter than ``min_leg`` metres are merged into their neighbours. Each leg:
    ``bearing`` (start), ``end_bearing``, ``length``, ``turn`` (signed, + right), ``mid``."""
    line = LineString(pts).simplify(2.5) if len(pts) > 2 else LineString(pts)
    coords = list(line.coords)
    segs = []
    for (x0, y0), (x1, y1) in zip(coords[:-1], coords[1:]):
        L = math.hypot(x1 - x0, y1 - y0)
        if L > 1e-6:
            segs.append({"b": _bearing(x1 - x0, y1 - y0), "L": L, "a": (x0, y0), "z": (x1, y1)})
    legs: list[dict[str, Any]] = []
    for s in segs:
        if legs and abs(_adiff(s["b"], legs[-1]["end_bearing"])) < turn_deg:
            legs[-1]["length"] += s["L"]
            legs[-1]["end_bearing"] = s["b"]
            legs[-1]["z"] = s["z"]
            continue
        turn = _adiff(s["b"], legs[-1]["end_bearing"]) if legs else 0.0
        legs.append(
            {
                "bearing": s["b"],
                "end_bearing": s["b"],
                "length": s["L"],
                "turn": turn,
                "a": s["a"],
                "z": s["z"],
            }
        )
    # merge short legs
    changed = True
    while changed and len(legs) > 1:
        changed = False
        for i, leg in enumerate(legs):
            if leg["length"] >= min_leg:
                continue
            if i == 0:
                nxt = legs[1]
                nxt["length"] += leg["length"]
                nxt["a"] = leg["a"]
                nxt["turn"] = 0.0
                del legs[0]
            else:
                prev = legs[i - 1]
                prev["length"] += leg["length"]
                prev["z"] = leg["z"]
                del legs[i]
                if i < len(legs):
                    legs[i]["turn"] = _adiff(legs[i]["bearing"], prev["end_bearing"])
                    if abs(legs[i]["turn"]) < turn_deg:
                        prev["length"] += legs[i]["length"]
                        prev["end_bearing"] = legs[i]["end_bearing"]
                        prev["z"] = legs[i]["z"]
                        del legs[i]
            changed = True
            break
    for leg in legs:
        leg["mid"] = ((leg["a"][0] + leg["z"][0]) / 2.0, (leg["a"][1] + leg["z"][1]) / 2.0)
    return legs


def _street_name(city: City, xy: tuple[float, float]) -> str | None:
    wp = city.nearest_walkable_point(*xy)
    name = city.network.edges[wp.edge].get("name")
    if name and wp.distance < 20.0:
        return str(name)
    for _, _, d in city.network.edges(wp.edge[0], data=True):
        if d.get("kind") == "road" and d.get("name"):
            return str(d["name"])
    return None


def resample(pts: Sequence[tuple[float, float]], step: float = 5.0) -> list[list[float]]:
    """Points every ``step`` metres along a polyline (ends included), rounded to 0.01 m."""
    line = LineString(pts)
    n = max(1, int(math.ceil(line.length / step)))
    out = [line.interpolate(line.length * i / n) for i in range(n + 1)]
    return [[round(p.x, 2), round(p.y, 2)] for p in out]


def _gen_in(c: _Ctx, cond: dict[str, Any]) -> dict[str, Any] | None:
    got = _nav_common(c, 100.0, 320.0, None)
    if got is None:
        return None
    xy, p, d = got
    src = c.router.locate(*xy)
    pts = [xy, *c.router.route(src, c.loc(p))]
    legs = route_legs(pts)
    if not legs or len(legs) > 7:
        return c.miss("no route to a named POI with 1-7 legs between turns", 2)
    heading = legs[0]["bearing"] + float(c.rng.uniform(-30, 30))
    return {
        "start": _start(xy, heading, c.start_clock()),
        "instruction": route_instructions(c.city, pts, p),
        "goal": _goal(p, False),
        "meta": {"shortest_m": round(d, 1), "reference_path": resample(pts)},
    }


def closure_across(
    c: _Ctx, pts: Sequence[tuple[float, float]], s: float, half: float = 14.0
) -> tuple[list[list[float]], list[list[int]]] | None:
    """A closure line across the route ``pts`` at arc length ``s``: perpendicular to the
    route, reaching ``half`` metres each side or up to the first building; and the network
    edges it cuts."""
    line = LineString(pts)
    p = line.interpolate(s)
    q = line.interpolate(min(line.length, s + 2.0))
    o = line.interpolate(max(0.0, s - 2.0))
    b = _bearing(q.x - o.x, q.y - o.y)
    nx_, ny_ = math.sin(math.radians(b + 90.0)), math.cos(math.radians(b + 90.0))
    ends = []
    for sign in (1.0, -1.0):
        far = (p.x + sign * half * nx_, p.y + sign * half * ny_)
        ray = LineString([(p.x, p.y), far])
        hits = c.btree.query(ray, predicate="intersects")
        reach = half
        for i in hits:
            inter = ray.intersection(c.city.buildings[int(i)].polygon)
            if not inter.is_empty:
                reach = min(reach, Point(p.x, p.y).distance(inter))
        ends.append((p.x + sign * reach * nx_, p.y + sign * reach * ny_))
    if math.dist(*ends) < 3.0:
        return None
    chain = [
        [round(ends[0][0], 3), round(ends[0][1], 3)],
        [round(p.x, 3), round(p.y, 3)],
        [round(ends[1][0], 3), round(ends[1][1], 3)],
    ]
    cl = LineString(chain)
    cut = [
        [int(u), int(v)]
        for u, v in c.edges
        if c.city.network.edges[u, v]["geometry"].intersects(cl)
    ]
    return chain, cut


def _closure_task(c: _Ctx, lo: float, hi: float, s_min: float, dynamic: bool) -> dict | None:
    got = _nav_common(c, lo, hi, False if dynamic else None)
    if got is None:
        return None
    xy, p, d = got
    src = c.router.locate(*xy)
    goal = c.loc(p)
    pts = [xy, *c.router.route(src, goal)]
    L = polyline_length(pts)
    if L < s_min + 40.0:
        return c.miss(
            f"no route to a named POI long enough for a closure ({s_min + 40.0:.0f} m)", 2
        )
    s = float(c.rng.uniform(s_min, L - 40.0))
    made = closure_across(c, pts, s)
    if made is None:
        return c.miss("no room for a closure line 3 m or longer across a route", 3)
    chain, cut = made
    cut_keys = {tuple(sorted(e)) for e in cut}
    if (
        not cut
        or tuple(sorted((src.u, src.v))) in cut_keys
        or tuple(sorted((goal.u, goal.v))) in cut_keys
    ):
        return c.miss("no closure that cuts a route but not the start's or goal's street", 4)
    closed = c.router.with_closed(cut)
    if dynamic:
        trig_r = 40.0
        # replanning from where the notice appears must still reach the goal
        tp = LineString(pts).interpolate(max(0.0, s - trig_r - 5.0))
        here = closed.locate(tp.x, tp.y)
        if LineString([(tp.x, tp.y), here.point]).intersects(LineString(chain)):
            # the walker is on a long street the closure cuts, and the nearest open way is
            # its far end, beyond the closure: a replan from there is no walk it can make
            return c.miss("no closure noticed where the nearest open way is on this side of it", 5)
        d_re = closed.distance(closed.field(here), goal)
        total = (s - trig_r - 5.0) + d_re
        if not math.isfinite(d_re) or total > 650.0:
            return c.miss("no detour around a closure (650 m at most from the start)", 5)
    else:
        d_re = closed.distance(closed.field(src), goal)
        total = d_re
        if not math.isfinite(d_re) or d_re > 620.0 or d_re < d + 5.0:
            return c.miss("no detour around a closure (5-620 m, longer than the direct way)", 5)
    mid = chain[1]
    label = _street_name(c.city, (mid[0], mid[1])) or "the way"
    closure = {
        "id": "c0",
        "points": chain,
        "label": label,
        "closed_edges": cut,
        "trigger": [mid[0], mid[1], 40.0] if dynamic else None,
    }
    if dynamic:
        text = (
            f"Walk to {p.name} ({kind_name(p.kind)}); it is marked on the map. Watch for "
            "notices on the way: if a way is closed, do not cross the closure."
        )
    else:
        text = (
            f"Walk to {p.name} ({kind_name(p.kind)}); it is marked on the map. {label} is "
            "closed where the red line is on the map: do not cross it."
        )
    return {
        "start": _start(xy, float(c.rng.uniform(0, 360)), c.start_clock()),
        "instruction": text,
        "goal": _goal(p, True),
        "constraints": {"closures": [closure]},
        "meta": {"shortest_m": round(total, 1), "unconstrained_m": round(d, 1)},
    }


def _gen_cn(c: _Ctx, cond: dict[str, Any]) -> dict[str, Any] | None:
    return _closure_task(c, 150.0, 380.0, 40.0, dynamic=False)


def _gen_dcr(c: _Ctx, cond: dict[str, Any]) -> dict[str, Any] | None:
    return _closure_task(c, 200.0, 450.0, 90.0, dynamic=True)


def _nearest_of(c: _Ctx, kinds: Iterable[str], lo: float = 50.0, hi: float = 400.0):
    kinds = set(kinds)
    pool = [p for k in kinds for p in c.by_kind.get(k, [])]
    if not pool:
        return c.miss(f"no named POI of kind {', '.join(sorted(kinds))}")
    xy = c.random_start()
    src = c.router.locate(*xy)
    fld = c.router.field(src)
    ds = sorted((c.router.distance(fld, c.loc(p)), p.id, p) for p in pool)
    d1, _, p1 = ds[0]
    if not (lo <= d1 <= hi):
        return c.miss(f"no start whose nearest place of a kind is {lo:.0f}-{hi:.0f} m away", 1)
    if len(ds) > 1:
        d2 = ds[1][0]
        if d2 < 1.3 * d1 or d2 - d1 < 40.0:
            return c.miss(
                "no start whose nearest place of a kind is clearly nearer than the next "
                "(1.3 times and 40 m)",
                2,
            )
    return xy, p1, d1


def _gen_pts(c: _Ctx, cond: dict[str, Any]) -> dict[str, Any] | None:
    kinds = sorted(k for k, v in c.by_kind.items() if len(v) >= 2 and k != "company")
    k = kinds[int(c.rng.integers(len(kinds)))]
    got = _nearest_of(c, [k])
    if got is None:
        return None
    xy, p, d = got
    text = f"Find the nearest {kind_name(k)} and stop in front of it, then terminate."
    return {
        "start": _start(xy, float(c.rng.uniform(0, 360)), c.start_clock()),
        "instruction": text,
        "goal": _goal(p, False),
        "meta": {"shortest_m": round(d, 1), "kinds": [k]},
    }


def _gen_iii(c: _Ctx, cond: dict[str, Any]) -> dict[str, Any] | None:
    intents = sorted(i for i, ks in INTENT_CATEGORIES.items() if any(c.by_kind.get(k) for k in ks))
    if not intents:
        return c.miss(_NO_INTENT)
    intent = intents[int(c.rng.integers(len(intents)))]
    got = _nearest_of(c, INTENT_CATEGORIES[intent])
    if got is None:
        return None
    xy, p, d = got
    text = (
        f'Someone tells you: "{intent}" Walk to the nearest place that can help and stop '
        "in front of it, then terminate."
    )
    return {
        "start": _start(xy, float(c.rng.uniform(0, 360)), c.start_clock()),
        "instruction": text,
        "goal": _goal(p, False),
        "meta": {
            "shortest_m": round(d, 1),
            "intent": intent,
            "kinds": list(INTENT_CATEGORIES[intent]),
        },
    }


def _stops_chain(c: _Ctx, n: int, leg_lo: float, leg_hi: float):
    xy = c.random_start()
    cur = c.router.locate(*xy)
    chosen: list[POI] = []
    legs: list[float] = []
    here = xy
    for _ in range(n):
        fld = c.router.field(cur)
        cands = [p for p in c.pois_near(here, 20.0, leg_hi) if p.id not in {q.id for q in chosen}]
        c.rng.shuffle(cands)
        ok = None
        for p in cands[:25]:
            dd = c.router.distance(fld, c.loc(p))
            far_enough = all(math.dist(p.front, q.front) > 2 * SUCCESS_RADIUS + 5 for q in chosen)
            if (
                leg_lo <= dd <= leg_hi
                and far_enough
                and math.dist(p.front, xy) > 2 * SUCCESS_RADIUS
            ):
                ok = (p, dd)
                break
        if ok is None:
            return c.miss(
                f"no chain of {n} named POIs {leg_lo:.0f}-{leg_hi:.0f} m apart along the "
                "walkable network"
            )
        chosen.append(ok[0])
        legs.append(ok[1])
        cur = c.loc(ok[0])
        here = ok[0].front
    return xy, chosen, legs


def _gen_tws(c: _Ctx, cond: dict[str, Any]) -> dict[str, Any] | None:
    n = int(c.rng.integers(2, 4))
    got = _stops_chain(c, n, 80.0, 200.0)
    if got is None:
        return None
    xy, stops, legs = got
    clock = c.start_clock()
    t = float(clock)
    out = []
    for p, L in zip(stops, legs):
        t += L / 1.4 * 1.5 + 60.0
        deadline = int(math.ceil(t / 60.0)) * 60
        g = _goal(p, True)
        g["deadline"] = deadline
        out.append(g)
        t = deadline
    sched = ", then ".join(f"at {s['name']} by {format_hhmm(s['deadline'])}" for s in out)
    text = (
        f"It is {format_hhmm(clock)}. You have appointments: be {sched}. Visit them in this "
        "order (they are marked on the map) and terminate after the last one."
    )
    return {
        "start": _start(xy, float(c.rng.uniform(0, 360)), clock),
        "instruction": text,
        "goal": {"stops": out, "ordered": True, "radius": SUCCESS_RADIUS, "show_on_map": True},
        "meta": {"shortest_m": round(sum(legs), 1)},
    }


def _gen_msp(c: _Ctx, cond: dict[str, Any]) -> dict[str, Any] | None:
    got = _stops_chain(c, 3, 60.0, 180.0)
    if got is None:
        return None
    xy, stops, legs = got
    order = [int(i) for i in c.rng.permutation(len(stops))]
    listed = [stops[i] for i in order]
    # the shortest tour over the stops, in any order (for SPL)
    fields = [c.router.field(c.loc(p)) for p in listed]
    start = c.router.locate(*xy)
    d0 = [c.router.distance(f, start) for f in fields]
    dd = [[c.router.distance(fields[i], c.loc(q)) for q in listed] for i in range(len(listed))]
    best = min(
        d0[p[0]] + sum(dd[a][b] for a, b in zip(p[:-1], p[1:]))
        for p in itertools.permutations(range(len(listed)))
    )
    names = [f"{p.name} ({kind_name(p.kind)})" for p in listed]
    text = (
        f"Visit all of these places, in any order: {', '.join(names[:-1])} and {names[-1]}. "
        "They are marked on the map. Terminate after the last one."
    )
    return {
        "start": _start(xy, float(c.rng.uniform(0, 360)), c.start_clock()),
        "instruction": text,
        "goal": {
            "stops": [_goal(p, True) for p in listed],
            "ordered": False,
            "radius": SUCCESS_RADIUS,
            "show_on_map": True,
        },
        "meta": {"shortest_m": round(best, 1)},
    }


def _gen_np(c: _Ctx, cond: dict[str, Any]) -> dict[str, Any] | None:
    got = _nav_common(c, 80.0, 250.0, None)
    if got is None:
        return None
    xy, p, d = got
    src = c.router.locate(*xy)
    fld = c.router.field(src)
    goal = c.loc(p)
    nodes = set(c.router.route_nodes(fld, goal.u)) | {src.u, src.v, goal.u, goal.v}
    around = sorted({m for n in nodes for m in c.city.network.neighbors(n)} | nodes)
    text = (
        f"Walk to {p.name} ({kind_name(p.kind)}); it is marked on the map. The street is "
        "busy: do not bump into anyone. Terminate when you are there."
    )
    peds = {
        "count": int(min(60, max(20, len(around) * 2))),
        "seed": int(c.rng.integers(2**31)),
        "around": [int(n) for n in around],
    }
    return {
        "start": _start(xy, float(c.rng.uniform(0, 360)), c.start_clock()),
        "instruction": text,
        "goal": _goal(p, True),
        "constraints": {"pedestrians": peds, "max_contacts": 0},
        "meta": {"shortest_m": round(d, 1)},
    }


GENERATORS: dict[str, Gen] = {
    "VR": _gen_vr,
    "OU": _gen_ou,
    "AEQ": _gen_aeq,
    "SGN": _gen_sgn,
    "LGN": _gen_lgn,
    "IN": _gen_in,
    "CN": _gen_cn,
    "PTS": _gen_pts,
    "III": _gen_iii,
    "TWS": _gen_tws,
    "MSP": _gen_msp,
    "DCR": _gen_dcr,
    "NP": _gen_np,
}


#: The stage of a miss that ends a type's attempts (it outranks every other reason).
FATAL_STAGE = 100
_NO_INTENT = (
    "no named POI that serves an everyday need (optician, dentist, ATM, pharmacy, café, "
    "supermarket, ...: see INTENT_CATEGORIES)"
)


def type_lacks(c: _Ctx, code: str) -> str | None:
    """What the city lacks for task type ``code`` before any attempt (None: nothing
    obvious; the attempts may still fail, see :meth:`_Ctx.miss`). Draws no random numbers."""
    if not c.pois:
        return (
            f"no usable named POI (of the city's {len(c.city.pois)} named POIs none has a "
            "unique name of 2-40 characters, a kind worth walking to and its sign within "
            "25 m of the walkable network)"
        )
    kinds = Counter(p.kind for p in c.pois)
    usable = f"only {len(c.pois)} usable named POI" + ("s" if len(c.pois) > 1 else "")
    if code == "VR":
        if not any(p.facade is not None for p in c.pois):
            return "no named POI on a building facade"
        if len(c.pois) < 4:
            return f"{usable}; a question needs 4 (the answer and 3 other options)"
    if code == "AEQ" and max(kinds.values()) < 4:
        return "no POI kind with 4 or more places (the answer and 3 options of its kind)"
    if code == "PTS" and not any(v >= 2 for k, v in kinds.items() if k != "company"):
        return "no POI kind with 2 or more places to choose the nearest among"
    if code == "III" and not any(kinds[k] for ks in INTENT_CATEGORIES.values() for k in ks):
        return _NO_INTENT
    need = {"TWS": 2, "MSP": 3}.get(code, 1)
    if len(c.pois) < need:
        return f"{usable}; {code} visits {need} places"
    return None


def generate_with_report(
    city: City,
    city_spec: str,
    per_type: int = 20,
    variants_per_type: int = 8,
    seed: int = 0,
    types: Iterable[str] | None = None,
    max_tries: int = 400,
) -> tuple[list[TaskSpec], GenerationReport]:
    """Generate CityWalk tasks and say, per type, how many were made and why not more.

    ``per_type`` tasks of each type in ``types`` (default all thirteen) plus
    ``variants_per_type`` condition variants of each of :data:`VARIANT_TYPES`.
    Deterministic for a seed. A type the city cannot supply (see :func:`type_lacks`) is
    skipped; a type stops after ``max_tries`` failed attempts in a row or
    ``n * max_tries`` attempts in all, its report row naming why the attempts that got
    furthest failed (:class:`~urban_gym.tasks.report.Misses`).
    Raises :class:`~urban_gym.tasks.report.SuiteGenerationError` when no task at all
    could be made (the message names what the city lacks per type).
    """
    codes = list(types) if types is not None else list(TASK_TYPES)
    unknown = [t for t in codes if t not in TASK_TYPES]
    if unknown:
        raise TaskError(f"unknown CityWalk task types {unknown}; valid: {', '.join(TASK_TYPES)}")
    ctx = _Ctx(city, city_spec, seed)
    report = GenerationReport("citywalk", city.name)
    out: list[TaskSpec] = []
    plan: list[tuple[str, int, tuple[str, str] | None]] = [(t, per_type, None) for t in codes]
    for t in codes:
        if t in VARIANT_TYPES and variants_per_type > 0:
            plan.append((t, variants_per_type, ("variant", "")))
    for code, n, variant in plan:
        row = report.add(TypeReport(code if variant is None else f"{code} (conditions)", n))
        row.reason = type_lacks(ctx, code)
        if row.reason is None:
            out += _generate_type(ctx, code, n, variant is not None, max_tries, row)
    report.check_any()
    return out, report


def _generate_type(
    ctx: _Ctx, code: str, n: int, variant: bool, max_tries: int, row: TypeReport
) -> list[TaskSpec]:
    """Up to ``n`` tasks of type ``code`` (condition variants when ``variant``); fills
    ``row`` (made, attempts, reason)."""
    city = ctx.city
    ctx.misses = Misses()
    out: list[TaskSpec] = []
    made = tries = last = 0
    while made < n:
        tries += 1
        if tries > n * max_tries or tries - last > max_tries:
            tries -= 1
            break
        if not variant:
            tod, weather = "day", "clear"
        else:
            tod, weather = VARIANT_CONDITIONS[made % len(VARIANT_CONDITIONS)]
        cond = {"time_of_day": tod, "weather": weather, "seed": int(ctx.rng.integers(2**31))}
        try:
            body = GENERATORS[code](ctx, cond)
        except TaskError as exc:  # e.g. no clear start point anywhere on the network
            ctx.miss(str(exc), FATAL_STAGE)
            break
        if body is None:
            continue
        tt = TASK_TYPES[code]
        suffix = f"{tod}-{weather}-" if variant else ""
        constraints = dict(body.get("constraints", {}))
        constraints["conditions"] = cond
        meta = {
            "level": ("l5" if variant else tt.level).upper(),
            "type_name": tt.name,
            "generator": GENERATOR_VERSION,
            **body.get("meta", {}),
        }
        if variant:
            meta["variant"] = f"{tod}-{weather}"
        out.append(
            TaskSpec(
                id=f"citywalk-{city.name}-{code.lower()}-{suffix}{made:03d}",
                family="citywalk",
                type=code,
                difficulty="l5" if variant else tt.level,
                city=ctx.spec,
                instruction=body["instruction"],
                start=body["start"],
                goal=body.get("goal", {}),
                answer=body.get("answer"),
                options=tuple(body.get("options", ())),
                constraints=constraints,
                limits={"max_steps": DEFAULT_MAX_STEPS},
                meta=meta,
            )
        )
        made += 1
        last = tries
    row.made, row.attempts = made, tries
    if made < n:
        row.reason = ctx.misses.reason()
    return out


def generate_tasks(
    city: City,
    city_spec: str,
    per_type: int = 20,
    variants_per_type: int = 8,
    seed: int = 0,
    types: Iterable[str] | None = None,
    max_tries: int = 400,
) -> list[TaskSpec]:
    """The tasks of :func:`generate_with_report` (fewer than asked where the city lacks
    what a type needs; :class:`~urban_gym.tasks.report.SuiteGenerationError` when none)."""
    return generate_with_report(
        city, city_spec, per_type, variants_per_type, seed, types, max_tries
    )[0]


def generate_suite(
    city: str = "helsinki",
    out: str | Path | None = None,
    seed: int = 0,
    per_type: int | None = None,
) -> GeneratedSuite:
    """Generate a CityWalk suite for ``city`` and write it as JSONL to ``out`` (default:
    the committed Helsinki suite). ``per_type`` tasks of each type (default 20) plus
    ``max(2, per_type // 2)`` condition variants of each of :data:`VARIANT_TYPES`.
    Returns the path, the tasks and the per-type report."""
    from urban_gym.world import load_city

    n = 20 if per_type is None else int(per_type)
    if n < 1:
        raise TaskError(f"per_type={per_type!r} must be at least 1")
    tasks, report = generate_with_report(
        load_city(city), city, per_type=n, variants_per_type=max(2, n // 2), seed=seed
    )
    path = save_suite(out if out is not None else DEFAULT_SUITE_PATH, tasks)
    return GeneratedSuite(path, tasks, report)


def write_suite(
    city: str = "helsinki",
    out: str | Path | None = None,
    seed: int = 0,
    per_type: int | None = None,
) -> Path:
    """:func:`generate_suite`, returning only the path written."""
    return generate_suite(city, out, seed, per_type).path


def suite_statistics(tasks: Sequence[TaskSpec]) -> dict[str, Any]:
    """Counts by type and level, and walking-distance quantiles (m) per type."""
    by_type: dict[str, list[TaskSpec]] = {}
    for t in tasks:
        by_type.setdefault(t.type, []).append(t)
    out: dict[str, Any] = {
        "tasks": len(tasks),
        "by_level": dict(sorted(Counter(t.difficulty for t in tasks).items())),
    }
    rows = {}
    for code in TASK_TYPES:
        ts = by_type.get(code, [])
        d = [float(t.meta["shortest_m"]) for t in ts if "shortest_m" in t.meta]
        rows[code] = {
            "count": len(ts),
            "variants": sum("variant" in t.meta for t in ts),
            "median_m": round(float(np.median(d)), 1) if d else None,
            "max_m": round(float(np.max(d)), 1) if d else None,
        }
    out["by_type"] = rows
    return out


def validate_task(task: TaskSpec) -> None:
    """Check a CityWalk task's family-specific fields; raise :class:`TaskError` naming the
    bad value (before an episode starts)."""
    where = f"task {task.id!r}"
    if task.family != "citywalk":
        raise TaskError(f"{where}: family={task.family!r} is not 'citywalk'")
    if task.type not in TASK_TYPES:
        raise TaskError(f"{where}: type={task.type!r} is not one of {', '.join(TASK_TYPES)}")
    for k in ("x", "y", "heading"):
        v = task.start.get(k)
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v):
            raise TaskError(f"{where}: start.{k}={v!r} must be a finite number")
    kind = TASK_TYPES[task.type].kind
    if kind == "qa":
        if len(task.options) != 4 or task.answer not in task.options:
            raise TaskError(
                f"{where}: a question needs 4 options and an answer among them "
                f"(options={list(task.options)!r}, answer={task.answer!r})"
            )
    elif kind == "nav":
        for k in ("x", "y"):
            v = task.goal.get(k)
            if not isinstance(v, (int, float)) or not math.isfinite(v):
                raise TaskError(f"{where}: goal.{k}={v!r} must be a finite number")
    else:
        stops = task.goal.get("stops")
        if not isinstance(stops, list) or not stops:
            raise TaskError(f"{where}: goal.stops={stops!r} must be a non-empty list")
        for i, s in enumerate(stops):
            if not all(isinstance(s.get(k), (int, float)) for k in ("x", "y")):
                raise TaskError(f"{where}: goal.stops[{i}]={s!r} needs numeric x and y")
    for i, cl in enumerate(task.constraints.get("closures", []) or []):
        pts = cl.get("points") if isinstance(cl, dict) else None
        ok = (
            isinstance(pts, list)
            and len(pts) >= 2
            and all(
                isinstance(p, (list, tuple))
                and len(p) == 2
                and all(isinstance(c, (int, float)) and math.isfinite(c) for c in p)
                for p in pts
            )
            and len({tuple(p) for p in pts}) >= 2
        )
        if not ok:
            raise TaskError(
                f"{where}: closure {i} points={pts!r} must be >= 2 distinct finite [x, y] pairs"
            )
        trig = cl.get("trigger")
        if trig is not None and not (
            isinstance(trig, (list, tuple)) and len(trig) == 3 and float(trig[2]) > 0
        ):
            raise TaskError(f"{where}: closure {i} trigger={trig!r} must be [x, y, radius > 0]")
    cond = task.constraints.get("conditions") or {}
    if cond.get("time_of_day", "day") not in CLOCK_RANGES:
        raise TaskError(f"{where}: time_of_day={cond.get('time_of_day')!r} is not day/dusk/night")
    if cond.get("weather", "clear") not in ("clear", "fog", "rain"):
        raise TaskError(f"{where}: weather={cond.get('weather')!r} is not clear/fog/rain")


# ---------------------------------------------------------------- scoring
@dataclass
class EpisodeRecord:
    """What happened in one episode, as the environment records it.

    ``positions``/``headings``/``clocks`` have one entry per step plus the start;
    ``durations``/``on_network``/``covered`` one per step (the state after the step).
    ``arrivals``: for each stop, the elapsed seconds when it was reached (or None).
    ``start_distance``/``end_distance``: walking distance (m) to the goal (or next stop).
    """

    positions: list[tuple[float, float]] = field(default_factory=list)
    headings: list[float] = field(default_factory=list)
    clocks: list[float] = field(default_factory=list)
    durations: list[float] = field(default_factory=list)
    on_network: list[bool] = field(default_factory=list)
    covered: list[bool] = field(default_factory=list)
    path_length: float = 0.0
    closure_crossings: int = 0
    contacts: int = 0
    wall_hits: int = 0
    invalid_actions: int = 0
    steps: int = 0
    arrivals: list[float | None] = field(default_factory=list)
    answer_index: int | None = None
    start_distance: float = math.nan
    end_distance: float = math.nan


def score_episode(
    task: TaskSpec, rec: EpisodeRecord, shortest: float | None = None
) -> dict[str, float]:
    """The task's metrics for an episode (see the module docstring and
    :mod:`urban_gym.tasks.metrics`). ``shortest`` overrides the task's shortest distance
    (m) used for SPL."""
    kind = TASK_TYPES[task.type].kind
    cond = task.constraints.get("conditions") or {}
    raining = cond.get("weather") == "rain"
    m: dict[str, float] = {
        "steps": float(rec.steps),
        "elapsed_s": round(float(sum(rec.durations)), 3),
        "path_length_m": round(rec.path_length, 3),
        "invalid_actions": float(rec.invalid_actions),
        "wall_hits": float(rec.wall_hits),
        "rain_exposure_s": round(M.rain_exposure(rec.durations, rec.covered, raining), 3),
    }
    adh = M.network_adherence(rec.durations, rec.on_network)
    if not math.isnan(adh):
        m["network_adherence"] = round(adh, 4)
    closures = task.constraints.get("closures") or []
    max_contacts = task.constraints.get("max_contacts")
    kept = True
    if closures:
        m["closure_crossings"] = float(rec.closure_crossings)
        m["closure_compliance"] = M.closure_compliance(rec.closure_crossings)
        kept = kept and rec.closure_crossings == 0
    if task.constraints.get("pedestrians"):
        m["pedestrian_contacts"] = float(rec.contacts)
        m["collision_rate"] = round(M.collision_rate(rec.contacts, rec.steps), 4)
    if max_contacts is not None:
        kept = kept and rec.contacts <= int(max_contacts)
    if kind == "qa":
        correct = (
            rec.answer_index is not None
            and 0 <= rec.answer_index < len(task.options)
            and task.options[rec.answer_index] == task.answer
        )
        m["answer_accuracy"] = 1.0 if correct else 0.0
        m["success"] = m["answer_accuracy"]
        return m
    final = rec.positions[-1] if rec.positions else (task.start["x"], task.start["y"])
    if kind == "nav":
        goal = (float(task.goal["x"]), float(task.goal["y"]))
        radius = float(task.goal.get("radius", SUCCESS_RADIUS))
        reached = M.coordinate_match(final, goal, radius)
        m["distance_to_goal_m"] = round(math.dist(final, goal), 3)
    else:
        stops = task.goal["stops"]
        n_reached = sum(a is not None for a in rec.arrivals)
        m["fraction_reached"] = M.fraction_reached(n_reached, len(stops))
        reached = n_reached == len(stops)
        deadlines = [s.get("deadline") for s in stops]
        if any(d is not None for d in deadlines):
            start_clock = float(task.start.get("clock", 0.0))
            arr = [None if a is None else start_clock + a for a in rec.arrivals]
            m["on_time_rate"] = M.on_time_rate(arr, [float(d) for d in deadlines])
            kept = kept and m["on_time_rate"] == 1.0
    succ = M.success(reached, kept)
    m["success"] = succ
    sp = shortest if shortest is not None else task.meta.get("shortest_m")
    if sp is not None:
        m["spl"] = round(M.spl(succ, float(sp), rec.path_length), 4)
    if math.isfinite(rec.start_distance) and math.isfinite(rec.end_distance):
        m["ended_closer"] = 1.0 if M.ended_closer(rec.start_distance, rec.end_distance) else 0.0
    ref = task.meta.get("reference_path")
    if ref and rec.positions:
        radius = float(task.goal.get("radius", SUCCESS_RADIUS))
        m["ndtw"] = round(M.ndtw(rec.positions, [tuple(p) for p in ref], radius), 4)
        m["sdtw"] = round(succ * m["ndtw"], 4)
    return m
