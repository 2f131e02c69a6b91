"""CityWalk dynamics with values checkable by hand: a square building, a straight street."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest
from shapely.geometry import LineString, box

from urban_gym.families.citywalk.dynamics import (
    CONTACT_DISTANCE,
    Closure,
    Crowd,
    MoveResult,
    Pedestrian,
    SimClock,
    WalkerState,
    count_crossings,
    format_clock,
    segment_crosses,
    simulate_move,
    walker_samples,
)
from urban_gym.world.city import Building, City
from urban_gym.world.geo import GeoFrame
from urban_gym.world.walkable import WALKER_RADIUS, WalkGeometry


def _edge(g: nx.Graph, u: int, v: int, width: float = 3.0, covered: bool = False) -> None:
    a = (g.nodes[u]["x"], g.nodes[u]["y"])
    b = (g.nodes[v]["x"], g.nodes[v]["y"])
    line = LineString([a, b])
    g.add_edge(
        u,
        v,
        geometry=line,
        start=u,
        length=line.length,
        kind="footway",
        highway="footway",
        covered=covered,
        width=width,
        name=None,
        osm_id="w1",
    )


@pytest.fixture(scope="module")
def square_city() -> City:
    """A 10 m x 10 m building spanning x in [-5, 5], y in [0, 10]; a second building
    x in [30, 40], y in [0, 10] crossed by a covered passage along y = 5; a footway
    (3 m wide) from (0, -20) to (60, -20) and the passage from (20, 5) to (50, 5)."""
    g = nx.Graph()
    for n, (x, y) in {
        1: (0.0, -20.0),
        2: (60.0, -20.0),
        3: (20.0, 5.0),
        4: (50.0, 5.0),
        5: (20.0, -20.0),
    }.items():
        g.add_node(n, x=x, y=y)
    _edge(g, 1, 5)
    _edge(g, 5, 2)
    _edge(g, 5, 3)
    _edge(g, 3, 4, covered=True)
    buildings = [
        Building(0, "p0", box(-5, 0, 5, 10), 12.0),
        Building(1, "p1", box(30, 0, 40, 10), 12.0),
    ]
    return City("square", GeoFrame(60.0, 25.0), buildings, [], [], [], g)


@pytest.fixture(scope="module")
def geom(square_city: City) -> WalkGeometry:
    return WalkGeometry.build(square_city)


def test_two_second_walk_north_in_the_open_moves_2_8_m(geom):
    r = simulate_move(geom, WalkerState(0.0, -30.0, 0.0), "forward", 1.4, 2.0)
    assert r.state.x == pytest.approx(0.0, abs=1e-12)
    assert r.state.y == pytest.approx(-27.2, abs=1e-12)
    assert r.distance == pytest.approx(2.8)
    assert not r.hit_wall


def test_directions_are_relative_to_the_heading(geom):
    s = WalkerState(0.0, -30.0, 90.0)  # facing east
    assert simulate_move(geom, s, "forward", 1.0, 1.0).state.x == pytest.approx(1.0)
    left = simulate_move(geom, s, "left", 1.0, 1.0).state
    assert (left.x, left.y) == pytest.approx((0.0, -29.0))  # left of east is north
    back = simulate_move(geom, s, "backward", 1.0, 1.0).state
    assert (back.x, back.y) == pytest.approx((-1.0, -30.0))


def test_walking_into_a_wall_stops_at_the_wall(geom):
    # 6 m north from y = -2 would end at y = 4, inside the building; the disc stops with
    # its edge on the wall y = 0: centre at y = -0.3.
    r = simulate_move(geom, WalkerState(0.0, -2.0, 0.0), "forward", 3.0, 2.0)
    assert r.hit_wall
    assert r.state.y == pytest.approx(-WALKER_RADIUS, abs=1e-5)
    assert r.state.x == pytest.approx(0.0, abs=1e-9)


def test_a_slanted_move_slides_along_the_wall(geom):
    # bearing 45 deg, 2.8 m: dx = dy = 1.98 m. The wall stops the northward part at
    # y = -0.3; the eastward part is kept in full by sliding.
    r = simulate_move(geom, WalkerState(0.0, -1.0, 45.0), "forward", 1.4, 2.0)
    assert r.hit_wall
    assert r.state.y == pytest.approx(-0.3, abs=1e-5)
    assert r.state.x == pytest.approx(2.8 * math.sin(math.radians(45)), abs=1e-5)


def test_sliding_past_the_corner_continues_freely(geom):
    # bearing 60 deg, 6 m: dx = 5.196, dy = 3. The wall (y = 0, x up to 5) stops the
    # northward part at once; the walker slides east past the corner at x = 5 and keeps
    # the whole eastward part.
    r = simulate_move(geom, WalkerState(3.0, -0.5, 60.0), "forward", 3.0, 2.0)
    assert r.state.x == pytest.approx(3.0 + 6.0 * math.sin(math.radians(60)), abs=1e-5)
    assert r.state.y == pytest.approx(-0.3, abs=1e-5)


def test_random_moves_never_enter_a_building(geom):
    rng = np.random.default_rng(0)
    s = WalkerState(0.0, -1.0, 0.0)
    for _ in range(400):
        r = simulate_move(
            geom,
            s,
            str(rng.choice(["forward", "left", "right", "backward"])),
            3.0,
            float(rng.uniform(0.05, 2.0)),
            float(rng.choice([0.0, 90.0, -45.0])),
        )
        s = r.state
        assert geom.clearance(s.x, s.y, 1.0) >= WALKER_RADIUS - 1e-6
        assert not geom.inside_obstacle(s.x, s.y)


def test_a_turning_move_follows_an_arc(geom):
    # 90 deg/s for 1 s at 1 m/s from heading 0: a quarter circle of radius 2/pi
    r = simulate_move(geom, WalkerState(0.0, -40.0, 0.0), "forward", 1.0, 1.0, yaw_rate=90.0)
    R = 2.0 / math.pi
    assert (r.state.x, r.state.y) == pytest.approx((R, -40.0 + R), abs=1e-9)
    assert r.state.heading == pytest.approx(90.0)
    # nine chords of 10 degrees, each exactly on the arc: 9 * 2 R sin(5 deg)
    assert r.distance == pytest.approx(9 * 2 * R * math.sin(math.radians(5)))


def test_a_passage_through_a_building_is_walkable_and_covered(geom):
    # the covered footway along y = 5 runs through building 1 (x 30..40)
    r = simulate_move(geom, WalkerState(25.0, 5.0, 90.0), "forward", 3.0, 2.0)
    r = simulate_move(geom, r.state, "forward", 3.0, 2.0)
    assert not r.hit_wall
    assert r.state.x == pytest.approx(37.0)
    assert geom.covered(35.0, 5.0) and geom.on_network(35.0, 5.0)
    # a metre beside the passage's centre line is still inside the carved corridor...
    assert not geom.inside_obstacle(35.0, 6.0)
    # ...but 3 m beside it is solid building
    assert geom.inside_obstacle(35.0, 8.0)
    assert not geom.covered(0.0, -20.0)


def test_on_network_is_within_the_walkable_width(geom):
    # footway y = -20, width 3 m: half-width 1.5 m
    assert geom.on_network(10.0, -21.4)
    assert not geom.on_network(10.0, -21.6)


def test_closure_crossing_is_detected_from_the_move_segment(geom):
    closure = Closure("c", ((-10.0, -10.0), (10.0, -10.0)))
    s = WalkerState(0.0, -13.0, 0.0)
    short = simulate_move(geom, s, "forward", 1.4, 2.0)  # ends at y = -10.2: stops short
    assert count_crossings(short.path, closure) == 0
    across = simulate_move(geom, short.state, "forward", 1.4, 1.0)  # ends at y = -8.8
    assert count_crossings(across.path, closure) == 1


def test_a_closure_reached_exactly_then_left_counts_once():
    a, b = (0.0, 0.0), (10.0, 0.0)
    line = Closure("c", (a, b))
    # stopping exactly on the line and going on is one crossing, from either side
    assert count_crossings([(5.0, 1.0), (5.0, 0.0), (5.0, -1.0)], line) == 1
    assert count_crossings([(5.0, -1.0), (5.0, 0.0), (5.0, 1.0)], line) == 1
    # reaching the line from the negative side and turning back crosses nothing
    assert count_crossings([(5.0, -1.0), (5.0, 0.0), (5.0, -1.0)], line) == 0
    assert not segment_crosses((5.0, -1.0), (5.0, -0.5), a, b)  # stops short
    assert not segment_crosses((11.0, -1.0), (11.0, 1.0), a, b)  # past the end


def test_closure_geometry_is_checked():
    with pytest.raises(ValueError, match="closure 'x'"):
        Closure("x", ((0.0, 0.0),))
    with pytest.raises(ValueError, match="finite"):
        Closure("x", ((0.0, 0.0), (float("nan"), 1.0)))


def _crowd_of(*people: Pedestrian) -> Crowd:
    crowd = Crowd.__new__(Crowd)
    crowd.people = list(people)
    crowd.in_contact = np.zeros(len(people), dtype=bool)
    crowd.contacts = 0
    return crowd


def _walker_at(x: float, y: float) -> MoveResult:
    return MoveResult(WalkerState(x, y, 0.0), [(x, y)], [0.0], False, 0.0)


def test_a_pedestrian_on_a_collision_course_is_counted_once():
    # walks along y = 0 from x = -10 at 1.3 m/s straight through a walker standing at 0, 0
    p = Pedestrian(np.array([-10.0, 10.0]), np.array([0.0, 0.0]), np.array([0.0, 20.0]), 0.0, 1.3)
    crowd = _crowd_of(p)
    still = _walker_at(0.0, 0.0)
    t, total = 0.0, 0
    while t < 15.0:  # 0.6 s waits; the contact (|x| < 0.6) lasts 0.92 s, over 2-3 waits
        total += crowd.advance(t, 0.6, walker_samples(still, 0.6))
        t += 0.6
    assert total == 1 and crowd.contacts == 1


def test_each_new_contact_counts_and_a_miss_does_not():
    # two people pass through the walker one after the other; a third passes 0.7 m away
    a = Pedestrian(np.array([-10.0, 10.0]), np.array([0.0, 0.0]), np.array([0.0, 20.0]), 0.0, 1.3)
    b = Pedestrian(np.array([0.0, 0.0]), np.array([-30.0, 30.0]), np.array([0.0, 60.0]), 0.0, 1.5)
    c = Pedestrian(np.array([-10.0, 10.0]), np.array([0.7, 0.7]), np.array([0.0, 20.0]), 0.0, 1.3)
    assert CONTACT_DISTANCE == 0.6
    crowd = _crowd_of(a, b, c)
    still = _walker_at(0.0, 0.0)
    for k in range(40):
        crowd.advance(0.5 * k, 0.5, walker_samples(still, 0.5))
    assert crowd.contacts == 2


def test_a_fast_crossing_between_steps_is_still_seen():
    # the walker sprints 6 m east in one 2 s move across a person standing in its way
    p = Pedestrian(np.array([3.0, 3.0001]), np.array([0.0, 0.0]), np.array([0.0, 1.0]), 0.0, 0.0)
    crowd = _crowd_of(p)
    move = MoveResult(WalkerState(6.0, 0.0, 90.0), [(0.0, 0.0), (6.0, 0.0)], [0.0, 2.0], False, 6.0)
    assert crowd.advance(0.0, 2.0, walker_samples(move, 2.0)) == 1


def test_crowd_walks_the_network_at_pedestrian_speed(square_city):
    crowd = Crowd(square_city, 6, seed=3, duration=60.0)
    p0 = crowd.positions(0.0)
    p1 = crowd.positions(1.0)
    step = np.hypot(*(p1 - p0).T)
    assert np.all(step <= 1.5 + 1e-6) and np.all(step >= 0.5)  # corners shorten a chord
    again = Crowd(square_city, 6, seed=3, duration=60.0)
    assert np.allclose(again.positions(7.3), crowd.positions(7.3))


def test_clock_advances_only_by_durations():
    c = SimClock(start=10 * 3600.0)
    for d in (1.5, 0.5, 0.0, 0.6):
        c.advance(d)
    assert c.elapsed == pytest.approx(2.6)
    assert c.text() == "10:00:02"
    assert format_clock(86399.9) == "23:59:59"
    with pytest.raises(ValueError):
        c.advance(-1.0)


def test_the_city_bounds_are_a_wall(square_city, geom):
    x0, y0, x1, y1 = square_city.bounds
    r = simulate_move(geom, WalkerState(x1 - 1.0, -20.0, 90.0), "forward", 3.0, 2.0)
    # the centre stops on the bounds: the wall stands one walker radius outside them
    assert r.hit_wall and r.state.x == pytest.approx(x1, abs=1e-5) and r.state.x <= x1


def test_crowds_of_one_task_share_their_routes_but_not_their_contacts(square_city):
    from urban_gym.families.citywalk import dynamics as cd

    first = Crowd(square_city, 4, seed=11, duration=60.0, avoid=(0.0, 0.0))
    second = Crowd(square_city, 4, seed=11, duration=60.0, avoid=(0.0, 0.0))
    # built once: the same read-only route arrays
    assert all(a is b for a, b in zip(first.people, second.people))
    assert not first.people[0].xs.flags.writeable
    # exactly what a fresh build gives (the cache changes nothing)
    fresh = cd._walk_people(
        square_city, 4, 11, None, 60.0, cd.PEDESTRIAN_SPEED_RANGE, (0.0, 0.0), 3.0
    )
    for a, b in zip(first.people, fresh):
        assert np.array_equal(a.xs, b.xs) and a.s0 == b.s0 and a.speed == b.speed
    first.contacts = 3
    first.in_contact[:] = True
    assert second.contacts == 0 and not second.in_contact.any()
    other = Crowd(square_city, 4, seed=12, duration=60.0, avoid=(0.0, 0.0))
    assert not np.array_equal(other.positions(0.0), first.positions(0.0))


def test_a_loaded_citys_crowds_come_back_from_the_world_cache(helsinki):
    # a crowd of a loaded city is walked out once per machine: a process that has lost
    # its in-memory routes (here: the route table dropped) reads the same people back
    # from the world cache, read-only, instead of walking them out again
    from urban_gym.families.citywalk import dynamics as cd

    built = []
    real = cd._walk_people

    def counting(*a):
        built.append(a)
        return real(*a)

    cd._walk_people = counting
    try:
        first = Crowd(helsinki, 6, seed=4242, duration=90.0)
        cd._ROUTE_TABLES.pop(helsinki, None)
        again = Crowd(helsinki, 6, seed=4242, duration=90.0)
    finally:
        cd._walk_people = real
    assert len(built) == 1  # the second came from disk
    assert again.people[0] is not first.people[0]
    for a, b in zip(first.people, again.people):
        assert np.array_equal(a.xs, b.xs) and np.array_equal(a.cum, b.cum)
        assert (a.s0, a.speed) == (b.s0, b.speed) and not b.xs.flags.writeable
    np.testing.assert_array_equal(first.positions(12.5), again.positions(12.5))
