"""One generator per CityWalk task type (see the package docstring): each draws a
candidate from the city data and returns the task's body, or records why it failed.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from typing import Any

from shapely.geometry import LineString, Point

from urban_gym.families.citywalk.tasks.context import Gen, _Ctx, _goal, _qa_text, _start
from urban_gym.families.citywalk.tasks.types import (
    COMPASS_OPTIONS,
    INTENT_CATEGORIES,
    OU_FORMS,
    OU_MARGIN_DEG,
    OU_OPTIONS,
    REACH_M,
    SUCCESS_RADIUS,
    cardinal_index,
    compass_name,
    format_hhmm,
)
from urban_gym.tasks.spec import TaskSpec
from urban_gym.tasks.wording import end_sentence, place_kind, place_name, typed_name
from urban_gym.world.city import POI, City
from urban_gym.world.geo import angle_diff, bearing
from urban_gym.world.routing import polyline_length


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
    start = _start(xy, p.facing + 180.0, c.start_clock(cond["time_of_day"]))
    if not c.sign_in_start_view(start, p):  # a board stacked high: look up at it
        start["pitch"] = c.sign_pitch(xy, p)
        if not c.sign_in_start_view(start, p):
            return c.miss("the sign is not in the start view (checked in its pixels)", 3)
    return {
        "start": start,
        "instruction": _qa_text(q, opts),
        "options": opts,
        "answer": ans,
        "meta": {
            "poi_id": p.id,
            "distance_m": round(math.dist(xy, p.anchor), 1),
            "question": q,
        },
    }


def _gen_ou(c: _Ctx, cond: dict[str, Any]) -> dict[str, Any] | None:
    """An OU question in one of :data:`OU_FORMS`: where a visible place is relative to the
    start heading, its compass direction from the start, or the compass direction its sign
    faces. Every answer lies within :data:`OU_MARGIN_DEG` of the direction it names.
    """
    form = OU_FORMS[int(c.rng.integers(len(OU_FORMS)))]
    xy = c.random_start()
    cands = [p for p in c.pois_near(xy, 12.0, 45.0) if c.visible(xy, p)]
    if form == "compass":
        cands = [p for p in cands if _near_cardinal(_bearing_to(xy, p))]
    elif form == "facing":
        cands = [p for p in cands if p.facade is not None and _near_cardinal(p.facing)]
    if not cands:
        return c.miss(
            "no POI sign in view 12-45 m from a point of the walkable network "
            f"(an OU question of the {form} form)"
        )
    p = cands[int(c.rng.integers(len(cands)))]
    b = _bearing_to(xy, p)
    meta: dict[str, Any] = {"poi_id": p.id, "ou_form": form, "bearing": round(b, 1)}
    if form == "relative":
        quadrant = int(c.rng.integers(4))  # 0 ahead, 1 right, 2 behind, 3 left
        heading = b - 90.0 * quadrant + float(c.rng.uniform(-OU_MARGIN_DEG, OU_MARGIN_DEG))
        q = f"Is {typed_name(p)} ahead of you, to your right, behind you or to your left?"
        opts, ans = list(OU_OPTIONS), OU_OPTIONS[quadrant]
        meta["relative_bearing"] = round(angle_diff(b, heading), 1)
    else:
        heading = float(c.rng.uniform(0.0, 360.0))
        opts = list(COMPASS_OPTIONS)
        if form == "compass":
            q = f"In which compass direction from you is {typed_name(p)}?"
            ans = COMPASS_OPTIONS[cardinal_index(b)]
        else:
            q = f"Which compass direction does the sign of {typed_name(p)} face?"
            ans = COMPASS_OPTIONS[cardinal_index(p.facing)]
            meta["facing"] = round(p.facing % 360.0, 1)
    meta["question"] = q
    return {
        "start": _start(xy, heading, c.start_clock(cond["time_of_day"])),
        "instruction": _qa_text(q, opts),
        "options": opts,
        "answer": ans,
        "meta": meta,
    }


def _bearing_to(xy: tuple[float, float], p: POI) -> float:
    """Bearing (degrees clockwise from north) from ``xy`` to ``p``'s sign anchor."""
    return bearing(p.anchor[0] - xy[0], p.anchor[1] - xy[1])


def _near_cardinal(b: float) -> bool:
    """Whether the bearing ``b`` lies within :data:`OU_MARGIN_DEG` of north, east, south
    or west (so that its compass answer is clear).
    """
    return abs(angle_diff(b, 90.0 * cardinal_index(b))) <= OU_MARGIN_DEG


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
    q = f"Which {place_kind(b)} is right next to {a.name}? Look around to find out."
    return {
        "start": _start(xy, float(c.rng.uniform(0, 360)), c.start_clock(cond["time_of_day"])),
        "instruction": _qa_text(q, opts),
        "options": opts,
        "answer": ans,
        "meta": {"poi_id": b.id, "landmark_poi_id": a.id, "question": q},
    }


def _nav_common(
    c: _Ctx, lo: float, hi: float, need_visible: bool | None, tries: int = 40
) -> tuple[tuple[float, float], POI, float] | None:
    """A start and a goal POI whose walking distance lies in ``[lo, hi]``; None (and the
    reason recorded with :meth:`_Ctx.miss`) when the start drawn has none.
    """
    xy = c.random_start()
    src = c.router.locate(*xy)
    fld = c.router.field(src)
    cands = c.pois_near(xy, 10.0, hi)
    c.rng.shuffle(cands)
    in_band = 0
    for p in cands[:tries]:
        if math.dist(xy, p.front) <= SUCCESS_RADIUS + 5.0:
            continue  # arrived before walking: the goal must lie outside its radius
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
    b = bearing(p.anchor[0] - xy[0], p.anchor[1] - xy[1])
    text = (
        f"{end_sentence(f'Walk to {typed_name(p)}')} Its sign is in sight from where you "
        "start. Stop in front of it and terminate."
    )
    start = _start(xy, b + float(c.rng.uniform(-45, 45)), c.start_clock(cond["time_of_day"]))
    if not c.sign_in_start_view(start, p):  # turned too far: face the sign
        start["heading"] = _start(xy, b, 0)["heading"]
        if not c.sign_in_start_view(start, p):
            return c.miss("no named POI 30-110 m away with its sign in the start view (pixels)", 2)
    if c.sgn_predicate is not None and not c.sgn_predicate(c.city, start, p):
        return c.miss("no SGN target that passes the generator's target check (legibility)", 3)
    return {
        "start": start,
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
        f"Walk to {typed_name(p)}, about {round(crow, -1):.0f} m away as "
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
    rel = angle_diff(bearing(goal.anchor[0] - end[0], goal.anchor[1] - end[1]), last_b)
    side = (
        "ahead"
        if abs(rel) < 30
        else "behind you"
        if abs(rel) > 150
        else "on your right"
        if rel > 0
        else "on your left"
    )
    parts.append(f"Stop at {typed_name(goal)}, {side}, and terminate.")
    return " ".join(parts)


def route_legs(
    pts: Sequence[tuple[float, float]], turn_deg: float = 35.0, min_leg: float = 12.0
) -> list[dict[str, Any]]:
    """Split a route into straight-ish legs at turns of at least ``turn_deg`` degrees;
    legs shorter than ``min_leg`` metres are merged into their neighbours. Each leg:
    ``bearing`` (start), ``end_bearing``, ``length``, ``turn`` (signed, + right), ``mid``.
    """
    line = LineString(pts).simplify(2.5) if len(pts) > 2 else LineString(pts)
    coords = list(line.coords)
    segs = []
    for (x0, y0), (x1, y1) in zip(coords[:-1], coords[1:]):
        L = math.hypot(x1 - x0, y1 - y0)
        if L > 1e-6:
            segs.append({"b": bearing(x1 - x0, y1 - y0), "L": L, "a": (x0, y0), "z": (x1, y1)})
    legs: list[dict[str, Any]] = []
    for s in segs:
        if legs and abs(angle_diff(s["b"], legs[-1]["end_bearing"])) < turn_deg:
            legs[-1]["length"] += s["L"]
            legs[-1]["end_bearing"] = s["b"]
            legs[-1]["z"] = s["z"]
            continue
        turn = angle_diff(s["b"], legs[-1]["end_bearing"]) if legs else 0.0
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
                    legs[i]["turn"] = angle_diff(legs[i]["bearing"], prev["end_bearing"])
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
    edges it cuts.
    """
    line = LineString(pts)
    p = line.interpolate(s)
    q = line.interpolate(min(line.length, s + 2.0))
    o = line.interpolate(max(0.0, s - 2.0))
    b = bearing(q.x - o.x, q.y - o.y)
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
            f"Walk to {typed_name(p)}; it is marked on the map. Watch for "
            "notices on the way: if a way is closed, do not cross the closure."
        )
    else:
        from urban_gym.families.citywalk.closures import describe_closures

        text = (
            f"Walk to {typed_name(p)}; it is marked on the map. Closed for the whole task, "
            "drawn in red on the map, never to be crossed: "
            f"{describe_closures(c.city, [closure])}"
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
    """A start, the nearest place of ``kinds`` by walking (``lo``-``hi`` m away), its
    distance, and every other place of ``kinds`` within :data:`REACH_M` of the start (any of
    them counts as arrived: UrbanGround's place search takes any suitable place).
    """
    kinds = set(kinds)
    pool = [p for k in kinds for p in c.by_kind.get(k, [])]
    if not pool:
        return c.miss(f"no named POI of kind {', '.join(sorted(kinds))}")
    xy = c.random_start()
    src = c.router.locate(*xy)
    fld = c.router.field(src)
    near = [p for p in pool if math.dist(p.front, xy) <= REACH_M]
    if any(math.dist(p.front, xy) <= 2 * SUCCESS_RADIUS for p in near):
        return c.miss("no start more than 30 m from every place of a kind", 2)
    ds = sorted((c.router.distance(fld, c.loc(p)), p.id, p) for p in near)
    if not ds:
        return c.miss(f"no start whose nearest place of a kind is {lo:.0f}-{hi:.0f} m away", 1)
    d1, _, p1 = ds[0]
    if not (lo <= d1 <= hi):
        return c.miss(f"no start whose nearest place of a kind is {lo:.0f}-{hi:.0f} m away", 1)
    # arrival is judged from the final view: the place's sign must show from its front,
    # face on (at most ARRIVAL_VIEW_MAX_DEG off the board's normal), not edge on
    seen_from = bearing(p1.front[0] - p1.anchor[0], p1.front[1] - p1.anchor[1])
    if abs(angle_diff(seen_from, p1.facing)) > ARRIVAL_VIEW_MAX_DEG or not c.sign_in_start_view(
        arrival_pose(c, p1), p1
    ):
        return c.miss("no nearest place whose sign shows in the view from its front (pixels)", 3)
    alts = [[round(p.front[0], 1), round(p.front[1], 1), p.id] for _, _, p in ds[1:]]
    return xy, p1, d1, alts


#: Most degrees off its board's normal that a PTS / III goal's sign may be seen from the
#: goal point (its front): the final view must show the board, not its edge.
ARRIVAL_VIEW_MAX_DEG = 60.0


def arrival_pose(c: _Ctx, p: POI) -> dict[str, Any]:
    """The pose at ``p``'s goal point (its front) that faces its sign: the bearing to the
    sign and the pitch to the board's middle (degrees).
    """
    xy = (float(p.front[0]), float(p.front[1]))
    b = bearing(p.anchor[0] - xy[0], p.anchor[1] - xy[1])
    return {"x": xy[0], "y": xy[1], "heading": b, "pitch": c.sign_pitch(xy, p)}


def _gen_pts(c: _Ctx, cond: dict[str, Any]) -> dict[str, Any] | None:
    kinds = sorted(k for k, v in c.by_kind.items() if len(v) >= 2 and k != "company")
    k = kinds[int(c.rng.integers(len(kinds)))]
    got = _nearest_of(c, [k])
    if got is None:
        return None
    xy, p, d, alts = got
    text = f"Find the nearest {place_kind(p)} and stop in front of it, facing it, then terminate."
    return {
        "start": _start(xy, float(c.rng.uniform(0, 360)), c.start_clock()),
        "instruction": text,
        "goal": {**_goal(p, False), "alternatives": alts},
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
    xy, p, d, alts = got
    text = (
        f'Someone tells you: "{intent}" Walk to a place nearby that can help and stop in '
        "front of it, facing it, then terminate."
    )
    return {
        "start": _start(xy, float(c.rng.uniform(0, 360)), c.start_clock()),
        "instruction": text,
        "goal": {**_goal(p, False), "alternatives": alts},
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
            # no name inside another ("Casino Helsinki", "Sports Bar Casino Helsinki"):
            # a listing of both would be ambiguous
            apart = all(
                p.name.casefold() not in q.name.casefold()
                and q.name.casefold() not in p.name.casefold()
                for q in chosen
            )
            if (
                leg_lo <= dd <= leg_hi
                and far_enough
                and apart
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
    sched = ", then ".join(
        f"at {place_name(p)} by {format_hhmm(s['deadline'])}" for p, s in zip(stops, out)
    )
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
    names = [typed_name(p) for p in listed]
    listing = f"Visit all of these places, in any order: {', '.join(names[:-1])} and {names[-1]}"
    text = f"{end_sentence(listing)} They are marked on the map. Terminate after the last one."
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


def np_pedestrians(c: _Ctx, base: TaskSpec) -> dict[str, Any]:
    """The pedestrians of an NP task made from the validated LGN task ``base``
    (UrbanGround B.5): walking the network nodes of ``base``'s shortest route and their
    neighbours (``constraints.pedestrians``: ``count``, ``seed``, ``around``).
    """
    src = c.router.locate(float(base.start["x"]), float(base.start["y"]))
    fld = c.router.field(src)
    goal = c.router.locate(float(base.goal["x"]), float(base.goal["y"]))
    nodes = set(c.router.route_nodes(fld, goal.u)) | {src.u, src.v, goal.u, goal.v}
    around = sorted({m for n in nodes for m in c.city.network.neighbors(n)} | nodes)
    return {
        "count": int(min(60, max(20, len(around) * 2))),
        "seed": int(c.rng.integers(2**31)),
        "around": [int(n) for n in around],
    }


_NO_INTENT = (
    "no named POI that serves an everyday need (optician, dentist, ATM, pharmacy, café, "
    "supermarket, ...: see INTENT_CATEGORIES)"
)


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
}
#: Types made from the tasks of another type rather than drawn (:mod:`.generate`): NP is
#: LGN with moving pedestrians (UrbanGround B.5).
DERIVED_FROM: dict[str, str] = {"NP": "LGN"}


#: The stage of a miss that ends a type's attempts (it outranks every other reason).
