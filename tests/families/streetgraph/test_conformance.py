"""Conformance with CityNav / AgentNav on StreetGraph.

At each decision point the agent receives one image per movement option and the option's
compass bearing; the street heading comes from CityNav's 3-hop link calculation. Two
links that leave a node along the same street (a direct link beside a chain of panoramas)
give two options with the same bearing and the same image: they are merged when the graph
is built, so that every option is a distinct street. AgentNav's memory needs the option
bearings, the number of decisions and a stable identity of the intersection ("previous
visits").
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from urban_gym.families.streetgraph.env import StreetGraphEnv
from urban_gym.families.streetgraph.tasks.generate import suite_path
from urban_gym.families.streetgraph.world import load_streetgraph
from urban_gym.families.streetgraph.world.graph import StreetGraph
from urban_gym.families.streetgraph.world.preprocess import PARALLEL_DEG, preprocess
from urban_gym.tasks.suite import load_suite
from urban_gym.world.geo import GeoFrame, bearing

XY = {"U": (0, 0), "m1": (10, 0), "m2": (20, 0), "V": (30, 0), "N": (0, 30), "S": (0, -30)}
XY |= {"E": (60, 0), "F": (30, 30)}
EDGES = [("U", "m1"), ("m1", "m2"), ("m2", "V"), ("U", "V")]  # a chain and a direct link
EDGES += [("U", "N"), ("U", "S"), ("V", "E"), ("V", "F")]  # dead ends: U, V decide


def hand_graph() -> StreetGraph:
    ids = list(XY)
    idx = {k: i for i, k in enumerate(ids)}
    src, dst, hd = [], [], []
    for a, b in EDGES:
        for u, v in ((a, b), (b, a)):
            src.append(idx[u])
            dst.append(idx[v])
            (x0, y0), (x1, y1) = XY[u], XY[v]
            hd.append(bearing(x1 - x0, y1 - y0))
    xy = np.array([XY[k] for k in ids], dtype=float)
    return StreetGraph(ids, xy, np.zeros(len(ids)), src, dst, hd, GeoFrame(60.17, 24.94))


def test_a_direct_link_beside_a_chain_is_merged_into_one_street():
    raw = hand_graph()
    # before: U offers two streets east to V with the same bearing (90°)
    east = [s for s in raw.streets_from(raw.index["U"]) if s.end == raw.index["V"]]
    assert len(east) == 2 and {round(s.heading) for s in east} == {90}
    g, report = preprocess(raw, prune=False)
    assert report.step("merge_parallel_streets")["links_removed"] == 2
    streets = g.streets_from(g.index["U"])
    east = [s for s in streets if s.end == g.index["V"] and abs(s.heading - 90.0) < 1]
    # the chain (with its panoramas) stays; the direct link is gone both ways
    assert len(east) == 1 and [g.ids[n] for n in east[0].nodes] == ["U", "m1", "m2", "V"]
    assert not g.has_link(g.index["U"], g.index["V"])
    assert not g.has_link(g.index["V"], g.index["U"])
    assert sorted(round(s.heading) for s in streets) == [0, 90, 180]


def _default_graph_specs() -> list[dict]:
    specs = {}
    for name in ("helsinki", "procedural"):
        for t in load_suite(suite_path(name)):
            spec = t.start["graph"]
            specs[json.dumps(spec, sort_keys=True)] = spec
    return list(specs.values())


@pytest.mark.parametrize("spec", _default_graph_specs(), ids=lambda s: s.get("city", "?"))
def test_every_option_at_every_decision_point_is_a_distinct_street(spec):
    g = load_streetgraph(spec)
    checked = 0
    for u in g.decision_points.tolist():
        streets = g.streets_from(u)
        for i, a in enumerate(streets):
            for b in streets[i + 1 :]:
                diff = abs((a.heading - b.heading + 180.0) % 360.0 - 180.0)
                # never two streets to the same end along (nearly) the same bearing, and
                # never two options with the same bearing (the same image)
                assert not (a.end == b.end and diff <= PARALLEL_DEG), (g.ids[u], a, b)
                assert diff >= 1.0, (g.ids[u], a.heading, b.heading)
        checked += 1
    assert checked == len(g.decision_points) > 50


def test_the_env_gives_what_agentnav_needs():
    env = StreetGraphEnv(suite="helsinki", observation="symbolic")
    obs, info = env.reset(seed=0)
    start = info["node"]
    n = int(obs["action_mask"][:-1].sum())
    assert info["option_bearings"] == pytest.approx(obs["bearings"][:n].tolist())
    assert info["decisions"] == 0
    # go down option 0, then take the option that points back the way we came
    out = info["option_bearings"][0]
    obs, _, _, _, info = env.step(0)
    assert info["decisions"] == 1 and info["node"] != start
    back = (float(obs["heading"][0]) + 180.0) % 360.0
    diffs = [abs((b - back + 180) % 360 - 180) for b in info["option_bearings"]]
    obs, _, _, _, info = env.step(int(np.argmin(diffs)))
    assert info["decisions"] == 2
    assert info["node"] == start  # the same intersection has the same identity
    assert out in info["option_bearings"]


# ------------------------------------------------------------------ CityNav-long routes
def _as_touchdown(spec: dict, directory) -> StreetGraph:
    from urban_gym.families.streetgraph.world.touchdown import write_touchdown

    g = load_streetgraph(spec)
    write_touchdown(g, directory)
    return g


def test_origin_destination_routes_over_2_km_with_50_decisions_on_a_touchdown_graph(tmp_path):
    """CityNav: routes longer than 2 km with 50+ decision points, on any graph in
    Touchdown's format (here the procedural suite's graph written as nodes.txt/links.txt),
    destinations from named nodes."""
    from urban_gym.cli import main
    from urban_gym.families.streetgraph.oracle import StreetGraphOracle

    spec = load_suite(suite_path("procedural"))[0].start["graph"]
    g = _as_touchdown(spec, tmp_path / "td")
    far = [int(i) for i in g.decision_points[:: max(1, len(g.decision_points) // 40)]]
    names = tmp_path / "named.csv"
    names.write_text(
        "# panoid,name\n"
        + "".join(f"{g.ids[i]},Corner {k}, east side\n" for k, i in enumerate(far))
    )
    out = tmp_path / "od.jsonl"
    argv = ["streetgraph-routes", str(tmp_path / "td"), "--od", "3", "--out", str(out)]
    assert main([*argv, "--named-nodes", str(names)]) == 0
    tasks = load_suite(out)
    assert len(tasks) == 3
    for t in tasks:
        assert t.type == "origin_destination" and t.start["graph"]["source"] == "touchdown"
        assert t.meta["route_length_m"] > 2000.0 and t.meta["decision_points"] >= 50
        assert t.goal["name"].startswith("Corner ") and t.goal["name"].endswith("east side")
    env = StreetGraphEnv(tasks=tasks, observation="symbolic")
    oracle = StreetGraphOracle()
    for i in range(len(tasks)):
        env.reset(options={"task_index": i})
        oracle.reset(env)
        done = False
        while not done:
            _, _, term, trunc, info = env.step(oracle.act(env))
            done = term or trunc
        assert info["is_success"] and info["decisions"] >= 50


def test_origin_destination_destinations_from_osm_pois(tmp_path):
    """Destinations from an OSM extract's POIs, mapped to the Touchdown graph's nodes
    through their latitude/longitude (here Helsinki's graph and Helsinki's OSM data)."""
    from urban_gym.families.streetgraph.tasks import touchdown_od_suite
    from urban_gym.world import load_city

    spec = load_suite(suite_path("helsinki"))[0].start["graph"]
    _as_touchdown(spec, tmp_path / "td")
    made = touchdown_od_suite(
        tmp_path / "td",
        tmp_path / "od.jsonl",
        osm="helsinki",
        n=3,
        min_route_m=800,
        min_decisions=8,
    )
    city = load_city("helsinki")
    assert len(made.tasks) == 3
    places = {p.osm_id: p.name for p in [*city.pois, *city.buildings] if p.name}
    for t in made.tasks:
        # a POI or a named building of the OSM data, one OpenStreetMap marks as notable
        assert places[t.goal["osm_id"]] == t.goal["name"] and t.goal["notable"]
        assert t.meta["route_length_m"] >= 800 and t.meta["decision_points"] >= 8
