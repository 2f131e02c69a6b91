"""The compiled candidate pass's per-position walls: found once at a position and kept by
the scene, so a turn in place or a tilt scans no wall and computes no bearing anew; the
images stay bit-equal to those drawn from scratch. And the hit pass's ranking without an
``atan`` for hits provably lower than a nearer one: the same hits as with one per hit.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.render.handmade import city_of
from urban_gym.render import Conditions, FirstPersonRenderer, PanoramaRenderer, kernels
from urban_gym.render import scene as scene_mod

numba = pytest.importorskip("numba")


@pytest.fixture(autouse=True)
def _compiled():
    kernels.set_backend("numba")
    yield
    kernels.set_backend(None)


def _arrays(res):
    return [res.rgb, res.depth, res.ids]


def test_a_turn_in_place_draws_what_a_fresh_scene_draws(helsinki):
    r = FirstPersonRenderer(helsinki, 84, 84)
    rng = np.random.default_rng(4)
    x0, y0, x1, y1 = helsinki.bounds
    for i in range(4):
        x, y = float(rng.uniform(x0, x1)), float(rng.uniform(y0, y1))
        views = [(float(rng.uniform(0, 360)), (0.0, 20.0, -25.0)[k % 3]) for k in range(5)]
        cond = Conditions(time_of_day=("day", "night")[i % 2], weather="fog", seed=i)
        kept = [r.render(x, y, yaw, p, cond, depth=True, ids=True) for yaw, p in views]
        for (yaw, p), got in zip(views, kept, strict=True):
            r.scene.positions.clear()  # drawn from scratch: walls and bearings found anew
            ref = r.render(x, y, yaw, p, cond, depth=True, ids=True)
            for a, b in zip(_arrays(ref), _arrays(got), strict=True):
                np.testing.assert_array_equal(a, b)


def test_bearings_are_computed_when_a_view_first_needs_them(helsinki):
    # a 90-degree view fills in the bearings of the walls in it; the whole panorama from
    # the same place needs every facing wall's, and finds the first view's already there
    fp = FirstPersonRenderer(helsinki, 84, 84)
    pano = PanoramaRenderer(helsinki, 256, 128)
    assert pano.scene is fp.scene  # one scene a city
    x, y = _street_point(helsinki)
    fp.scene.positions.clear()
    fp.render(x, y, 0.0)
    (key,) = fp.scene.positions
    codes, bearings, known = fp.scene.positions[key]
    assert known and key[2] == -1 and len(codes) > 20
    filled = int(np.isfinite(bearings).sum())
    assert 0 < filled < len(bearings) // 2  # about a quarter of the horizon
    before = bearings.copy()
    pano.render(x, y)
    assert fp.scene.positions[key][1] is bearings  # the same table, filled in
    assert np.isfinite(bearings).all()
    seen = np.isfinite(before)
    np.testing.assert_array_equal(before[seen], bearings[seen])


def _street_point(city):
    g = city.network
    n = next(iter(g.nodes))
    return float(g.nodes[n]["x"]), float(g.nodes[n]["y"])


def test_the_walls_of_a_position_by_hand():
    # one building 20 m wide from y = 10 to 20: from (0, 0) only its south side faces the
    # eye; from inside it (room 0) no wall faces the eye and all are kept as inner walls
    city = city_of([(-10.0, 10.0, 10.0, 20.0, 12.0)])
    r = FirstPersonRenderer(city, 32, 32)
    sc = r.scene
    k = kernels.compiled()
    rows = sc.wall_rows
    segs = sc.candidates(0.0, 0.0)
    codes, bearings = k.position_walls(rows, segs, sc.bid, 0.0, 0.0, -1)
    south = [g for g in segs if rows[g, 1] == 10.0 and rows[g, 3] == 10.0]
    assert south and sorted(codes.tolist()) == sorted(south)
    assert len(bearings) == 2 * len(codes) and np.isnan(bearings).all()
    codes, _ = k.position_walls(rows, sc.candidates(0.0, 15.0), sc.bid, 0.0, 15.0, 0)
    assert (codes < 0).all()
    assert sorted((-codes - 1).tolist()) == sorted(np.flatnonzero(sc.bid == 0).tolist())
    # the south side's two ends seen from (0, 0): atan2(east, north), by hand
    r.render(0.0, 0.0, 0.0)
    got = sc.positions[(0.0, 0.0, -1)]
    ends = {(rows[g, 0], rows[g, 1]) for g in south} | {(rows[g, 2], rows[g, 3]) for g in south}
    assert (-10.0, 10.0) in ends and (10.0, 10.0) in ends
    bear = got[1]
    assert math.isclose(np.nanmin(bear), -math.pi / 4) and math.isclose(
        np.nanmax(bear), math.pi / 4
    )


def test_the_scene_keeps_a_bounded_number_of_positions(tiny_city, monkeypatch):
    r = FirstPersonRenderer(tiny_city, 16, 16)
    sc = r.scene
    assert sc.position_cache == scene_mod.POSITION_CACHE
    monkeypatch.setattr(sc, "position_cache", 8)
    sc.positions.clear()
    for i in range(9):  # the ninth: the oldest quarter goes (every 2 new positions)
        r.render(float(i), 0.0, 0.0)
    assert [key[0] for key in sc.positions] == [3.0, 4.0, 5.0, 6.0, 7.0, 8.0]
    r.render(5.0, 0.0, 90.0)  # a turn in place: found, nothing added
    assert [key[0] for key in sc.positions] == [3.0, 4.0, 5.0, 6.0, 7.0, 8.0]
    for i in range(9, 12):
        r.render(float(i), 0.0, 0.0)
    assert [key[0] for key in sc.positions] == [6.0, 7.0, 8.0, 9.0, 10.0, 11.0]


def _keep_reference(per_col, end, bt, bk, bseg, hgt, eye, k_hits):
    """The hit ranking with an atan for every hit (the kernel before it skipped some)."""
    tot = len(bt)
    keep = np.zeros(tot, bool)
    krank = np.zeros(tot, np.int64)
    ktop = np.zeros(tot, np.float64)
    order = np.empty(tot, np.int64)
    for c in range(len(end)):
        lo = per_col[c]
        idx = sorted(range(lo, end[c]), key=lambda p: bk[p])  # stable, as the kernel's
        order[lo : end[c]] = idx
        best, rank = -math.inf, 0
        for q in range(lo, end[c]):
            if rank == k_hits:
                break
            top = math.atan((hgt[bseg[order[q]]] - eye) / bt[order[q]])
            key = c * 4.0 + top + 2.0
            if key > best:
                best, keep[q], krank[q], ktop[q] = key, True, rank, top
                rank += 1
    return order, keep, krank, ktop


def test_ranking_hits_skips_no_hit_it_should_keep():
    # many hits a column, among them heights a few ulps apart (the near ties the skip must
    # leave to atan): the kept hits, ranks and tops equal the one-atan-a-hit ranking's
    from urban_gym.render.kernels import columns

    rng = np.random.default_rng(0)
    n_cols, per = 40, 12
    per_col = np.arange(n_cols + 1, dtype=np.int64) * per
    end = per_col[1:].copy()
    tot = n_cols * per
    bt = rng.uniform(1.0, 80.0, tot)
    hgt = rng.uniform(0.0, 30.0, tot)
    # near ties: every third hit as tall, by elevation, as its neighbour, or an ulp off
    v = (hgt - 1.6) / bt
    for j in range(0, tot - 1, 3):
        bt[j + 1] = bt[j] * rng.choice([1.0, 1.5, 2.0])
        hgt[j + 1] = 1.6 + v[j] * bt[j + 1] * (1.0 + rng.choice([-2, -1, 0, 1, 2]) * 2.0**-52)
    bseg = np.arange(tot, dtype=np.int64)
    bk = np.repeat(np.arange(n_cols) * 1e5, per) + np.minimum(bt, 9.9e4)
    for k_hits in (2, 4, 12):
        ref = _keep_reference(per_col, end, bt, bk, bseg, hgt, 1.6, k_hits)
        got = columns._keep(per_col, end, bt, bk, bseg, hgt, 1.6, k_hits)
        for a, b in zip(ref, got, strict=True):
            np.testing.assert_array_equal(a, b)
        assert ref[1].sum() > n_cols  # more than one hit kept in some columns
