"""StreetGraph tasks: the CityNav crawler, destinations, suite generation, route tasks."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
from shapely.geometry import Point

from tests.families.streetgraph.streetgraph_fixture import write_fixture
from urban_gym.families.streetgraph.tasks import (
    SUITE_CONFIGS,
    CrawlerParams,
    SuiteConfig,
    city_destinations,
    crawl,
    difficulty_of,
    generate_od_tasks,
    instruction_tasks,
    load_default_suite,
    route_decision_points,
    suite_statistics,
)
from urban_gym.families.streetgraph.world import StreetGraph, StreetGraphError, preprocess
from urban_gym.tasks.spec import TaskSpec
from urban_gym.world.geo import GeoFrame


def _graph(points: dict[str, tuple[float, float]], edges: list[tuple[str, str]]) -> StreetGraph:
    ids = list(points)
    pos = {p: i for i, p in enumerate(ids)}
    xy = np.array([points[p] for p in ids], dtype=float)
    src = [pos[a] for a, b in edges] + [pos[b] for a, b in edges]
    dst = [pos[b] for a, b in edges] + [pos[a] for a, b in edges]
    d = xy[dst] - xy[src]
    hd = np.degrees(np.arctan2(d[:, 0], d[:, 1])) % 360
    return StreetGraph(ids, xy, np.zeros(len(ids)), src, dst, hd, GeoFrame(60.0, 25.0))


@pytest.fixture(scope="module")
def small_graph(small_city):
    g, _ = preprocess(StreetGraph.from_city(small_city, spacing=10.0))
    return g


def test_crawler_is_deterministic_and_reaches_radius(small_graph):
    g = small_graph
    seed_node = int(g.decision_points[len(g.decision_points) // 2])
    results = []
    for s in range(6):
        a = crawl(g, seed_node, 150.0, np.random.default_rng(s))
        b = crawl(g, seed_node, 150.0, np.random.default_rng(s))
        assert a == b
        assert a.radial_distance >= 150.0
        assert math.dist(g.xy[a.start], g.xy[seed_node]) == pytest.approx(a.radial_distance)
        assert g.degree[a.start] >= 3
        assert a.path[0] == seed_node and a.path[-1] == a.start
        # consecutive path nodes are linked
        assert all(g.has_link(u, v) for u, v in zip(a.path[:-1], a.path[1:]))
        results.append(a.start)
    assert len(set(results)) > 1  # different seeds, different starts


def test_cold_crawler_walks_straight_away(small_graph):
    """With a very low temperature the softmax always takes the street most aligned with
    the bearing away from the seed: on a grid the walk stays on the first street."""
    g = small_graph
    centre = g.xy.mean(axis=0)
    seed_node = min(g.decision_points.tolist(), key=lambda n: math.dist(g.xy[n], centre))
    cold = CrawlerParams(t_start=0.01, t_end=0.01)
    for s in range(4):
        res = crawl(g, seed_node, 150.0, np.random.default_rng(s), cold)
        dx, dy = np.abs(g.xy[res.start] - g.xy[seed_node])
        assert min(dx, dy) < 1e-6, (dx, dy)
        assert res.backtracks == 0 and res.junction_choices >= 1


def test_crawler_backtracks_out_of_a_dead_end():
    # S - - - J - E1 - E2 (dead end east); J - N1..N9 - K north, K has two stubs
    pts = {
        "S": (0, 0),
        "s1": (10, 0),
        "s2": (20, 0),
        "s3": (30, 0),
        "s4": (40, 0),
        "J": (50, 0),
        "E1": (60, 0),
        "E2": (70, 0),
        "K": (50, 100),
        "KW": (40, 100),
        "KE": (60, 100),
    }
    chain = ["S", "s1", "s2", "s3", "s4", "J", "E1", "E2"]
    edges = list(zip(chain[:-1], chain[1:]))
    north = ["J"] + [f"N{k}" for k in range(1, 10)] + ["K"]
    for k in range(1, 10):
        pts[f"N{k}"] = (50, 10 * k)
    edges += list(zip(north[:-1], north[1:])) + [("K", "KW"), ("K", "KE")]
    g = _graph(pts, edges)
    cold = CrawlerParams(t_start=0.01, t_end=0.01)
    res = crawl(g, g.node("S"), 80.0, np.random.default_rng(0), cold)
    # east is straight away from S, so it goes east first, meets the dead end at 70 m,
    # backtracks to J and goes north to K (111.8 m away, degree 3)
    assert g.ids[res.start] == "K"
    assert res.backtracks == 1
    assert res.radial_distance == pytest.approx(math.hypot(50, 100))
    walked = [g.ids[n] for n in res.path]
    assert "E2" not in walked and walked[:6] == chain[:6] and walked[-1] == "K"


def test_crawler_errors():
    g = _graph({"a": (0, 0), "b": (10, 0), "c": (20, 0)}, [("a", "b"), ("b", "c")])
    with pytest.raises(StreetGraphError, match="exhausted the graph"):
        crawl(g, 0, 500.0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="radius"):
        crawl(g, 0, -1.0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="gamma"):
        CrawlerParams(gamma=0.0)


def test_destinations_are_polygons_mapped_to_nodes(tiny_city):
    g, _ = preprocess(StreetGraph.from_city(tiny_city, spacing=10.0))
    dests = city_destinations(g, tiny_city, reach=25.0)
    assert dests and len({d.name.casefold() for d in dests}) == len(dests)
    by_name = {d.name: d for d in dests}
    poi = next(p for p in tiny_city.pois if p.building_id is not None and p.name in by_name)
    poly = tiny_city.buildings[poi.building_id].polygon
    want = [i for i in range(g.num_nodes) if poly.distance(Point(g.xy[i])) <= 25.0]
    assert list(by_name[poi.name].nodes) == want
    parks = [d for d in dests if d.kind == "area"]
    for d in parks:
        area = next(a for a in tiny_city.areas if a.name == d.name)
        assert all(area.polygon.distance(Point(g.xy[i])) <= 25.0 for i in d.nodes)


def test_difficulty_and_decision_points():
    assert [difficulty_of(n) for n in (3, 10, 11, 25, 26)] == [
        "easy",
        "easy",
        "medium",
        "medium",
        "hard",
    ]
    g = _graph(
        {"a": (0, 0), "b": (10, 0), "c": (20, 0), "d": (20, 10), "e": (30, 0)},
        [("a", "b"), ("b", "c"), ("c", "d"), ("c", "e")],
    )
    # a (degree 1) and c (degree 3) are decision points before the last node e
    assert route_decision_points(g, [0, 1, 2, 4]) == 2


def test_generate_od_tasks_deterministic_and_consistent(small_city):
    cfg = SuiteConfig("small", "procedural:seed=7,blocks=4x4", n=6, seed=3, radius=(150.0, 250.0))
    a = generate_od_tasks(cfg)
    b = generate_od_tasks(cfg)
    assert [t.to_json() for t in a] == [t.to_json() for t in b]
    from urban_gym.families.streetgraph.world import load_streetgraph

    g = load_streetgraph(cfg.graph_spec())
    for t in a:
        assert TaskSpec.from_json(t.to_json()) == t
        start = g.node(t.start["node"])
        goal = [g.node(n) for n in t.goal["nodes"]]
        assert start not in goal
        d = g.distances_to(goal)
        assert t.meta["route_length_m"] == pytest.approx(d[start], abs=0.05)
        route = g.shortest_path(start, goal, d)
        assert t.meta["decision_points"] == route_decision_points(g, route)
        assert t.difficulty == difficulty_of(t.meta["decision_points"])
        assert t.meta["radial_distance_m"] >= min(t.meta["target_radius_m"], 150.0) - 0.1
        assert g.degree[start] >= 3
    other = generate_od_tasks(dataclasses.replace(cfg, seed=4))
    assert [t.start for t in other] != [t.start for t in a]


def test_default_suites_are_committed_and_reproducible():
    hel = load_default_suite("helsinki")
    # the notable places are fewer than the tasks: CityNav's destinations repeat too
    assert len(hel) == 100 and len({t.goal["name"] for t in hel}) >= 40
    assert all(t.goal["notable"] and t.goal["address"]["text"] for t in hel)
    again = generate_od_tasks(dataclasses.replace(SUITE_CONFIGS["helsinki"], n=3))
    assert [t.to_json() for t in again] == [t.to_json() for t in hel[:3]]
    proc = load_default_suite("procedural")
    assert len(proc) == 100
    assert min(t.meta["route_length_m"] for t in proc) >= 2000.0
    assert min(t.meta["decision_points"] for t in proc) >= 50
    stats = suite_statistics(proc)
    assert stats["tasks"] == 100 and stats["decision_points"]["min"] >= 50


def test_suite_statistics_worked_example():
    def task(i, length, dps):
        return TaskSpec(
            id=f"t{i}",
            family="streetgraph",
            type="origin_destination",
            difficulty=difficulty_of(dps),
            city="x",
            instruction="Go.",
            start={"node": "a"},
            goal={"name": f"d{i}"},
            meta={"route_length_m": length, "decision_points": dps},
        )

    s = suite_statistics([task(0, 100.0, 5), task(1, 300.0, 15), task(2, 200.0, 30)])
    assert s["route_length_m"]["median"] == 200.0 and s["route_length_m"]["mean"] == 200.0
    assert s["decision_points"]["min"] == 5 and s["decision_points"]["max"] == 30
    assert s["difficulty"] == {"easy": 1, "hard": 1, "medium": 1}


def test_instruction_tasks_from_route_file(tmp_path):
    d = write_fixture(tmp_path / "td")
    routes = tmp_path / "routes.jsonl"
    good = {
        "route_id": "r1",
        "route_panoids": ["X", "a1", "a2", "a3", "Y"],
        "navigation_text": "Walk east to the corner.",
        "start_heading": 90.0,
    }
    bad = {
        "route_id": "r2",
        "route_panoids": ["X", "Y"],
        "navigation_text": "Teleport.",
        "start_heading": 0.0,
    }
    routes.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n", encoding="utf-8")
    with pytest.raises(StreetGraphError, match=r"route 'r2'.*no link from 'X' to 'Y'"):
        instruction_tasks(d, routes)
    tasks = instruction_tasks(d, routes, skip_bad_lines=True)
    assert len(tasks) == 1
    t = tasks[0]
    assert t.type == "instruction" and t.instruction == "Walk east to the corner."
    assert t.start["node"] == "X" and t.start["heading"] == 90.0
    assert t.goal == {"node": "Y", "route": ["X", "a1", "a2", "a3", "Y"]}
    assert t.meta["route_length_m"] == pytest.approx(40.0, abs=0.05)
    assert t.meta["skipped_routes"] == 1
    # routes keep their dead-end panoramas: the graph of instruction tasks is not pruned
    assert t.start["graph"]["prune"] is False
