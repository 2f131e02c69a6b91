"""StreetGraph: Touchdown loading, bad lines, preprocessing steps, streets, distances."""

from __future__ import annotations

import json
import math
import pickle

import numpy as np
import pytest

from tests.families.streetgraph.streetgraph_fixture import XY, link_lines, node_lines, write_fixture
from urban_gym.families.streetgraph.world import (
    StreetGraph,
    StreetGraphError,
    add_reverse_links,
    check_route,
    keep_largest_component,
    load_streetgraph,
    preprocess,
    prune_dead_ends,
    read_routes,
    read_touchdown,
    write_touchdown,
)


@pytest.fixture()
def raw(tmp_path):
    return read_touchdown(write_fixture(tmp_path / "td"))


def test_read_touchdown_counts_and_positions(raw):
    assert raw.num_nodes == 25 and raw.num_links == 48
    assert raw.meta["load"]["nodes_skipped"] == 0
    # metric positions are the hand-written ones up to the frame's offset
    off = raw.xy[raw.node("X")]
    for pid in ("Y", "c4", "g2"):
        got = raw.xy[raw.node(pid)] - off
        assert got == pytest.approx(XY[pid], abs=0.01)
    assert raw.link_heading(raw.node("X"), raw.node("a1")) == pytest.approx(90.0)
    assert raw.has_link(raw.node("X"), raw.node("a1"))
    assert not raw.has_link(raw.node("a1"), raw.node("X"))
    i = np.searchsorted(raw._link_key, raw.node("c2") * raw.num_nodes + raw.node("c3"))
    assert raw.length[i] == pytest.approx(10.0, abs=0.01)


def test_add_reverse_links(raw):
    g, rep = add_reverse_links(raw)
    assert rep["reverse_links_added"] == 4 and rep["links_after"] == 52 == g.num_links
    a1, x = g.node("a1"), g.node("X")
    assert g.has_link(a1, x)
    assert g.link_heading(a1, x) == pytest.approx(270.0)
    again, rep2 = add_reverse_links(g)
    assert rep2["reverse_links_added"] == 0 and again is g


def test_prune_dead_ends_iteratively(raw):
    g, _ = add_reverse_links(raw)
    pruned, rep = prune_dead_ends(g)
    # round 1: p3, q3, q4; round 2: p2, q2; round 3: p1, q1
    assert rep["nodes_removed"] == 7
    assert rep["rounds"] == 3
    assert rep["removed_per_round"] == [3, 2, 2]
    assert rep["links_removed"] == 14
    gone = {"p1", "p2", "p3", "q1", "q2", "q3", "q4"}
    assert gone.isdisjoint(pruned.ids)
    assert pruned.degree[pruned.node("a2")] == 2 and pruned.degree[pruned.node("Y")] == 3
    # the triangle has no dead end and stays
    assert {"t1", "t2", "t3"} <= set(pruned.ids)


def test_prune_keeps_protected_nodes(raw):
    g, _ = add_reverse_links(raw)
    pruned, rep = prune_dead_ends(g, keep=[g.node("p2")])
    assert rep["nodes_removed"] == 5  # p3 goes, p2 (kept) and p1 stay
    assert {"p1", "p2"} <= set(pruned.ids) and "p3" not in pruned.ids


def test_keep_largest_component(raw):
    g, _ = prune_dead_ends(add_reverse_links(raw)[0])
    big, rep = keep_largest_component(g)
    assert rep == {
        "step": "keep_largest_component",
        "components": 2,
        "nodes_removed": 3,
        "links_removed": 6,
    }
    assert big.num_nodes == 15 and big.num_links == 32


def test_preprocess_report_and_contraction(raw):
    g, rep = preprocess(raw)
    assert rep.before == {"nodes": 25, "links": 48}
    assert rep.after == {"nodes": 15, "links": 32}
    assert [s["step"] for s in rep.steps] == [
        "add_reverse_links",
        "prune_dead_ends",
        "keep_largest_component",
        "merge_parallel_streets",
        "contract",
    ]
    assert rep.step("merge_parallel_streets")["links_removed"] == 0  # s1, s2, s3 differ
    c = rep.step("contract")
    assert c["decision_points"] == 2
    assert c["streets"] == 6
    assert c["chain_nodes_absorbed"] == 13
    assert c["mean_street_length_m"] == pytest.approx(60.0, abs=0.05)
    assert c["max_street_length_m"] == pytest.approx(80.0, abs=0.05)
    assert c["max_out_streets"] == 3
    assert sorted(g.ids[i] for i in g.decision_points) == ["X", "Y"]
    assert "prune_dead_ends: nodes_removed 7" in str(rep)


def test_streets_keep_node_list_length_and_3hop_heading(raw):
    g, _ = preprocess(raw)
    by_first = {g.ids[s.nodes[1]]: s for s in g.streets_from(g.node("X"))}
    assert set(by_first) == {"a1", "c1", "g1"}
    bend = by_first["c1"]
    assert [g.ids[n] for n in bend.nodes] == ["X", "c1", "c2", "c3", "c4", "c5", "c6", "c7", "Y"]
    assert bend.length == pytest.approx(80.0, abs=0.05)
    # first hop points north, but 3 hops along is c3 at (10, 20): atan2(10, 20)
    assert bend.heading == pytest.approx(math.degrees(math.atan2(10, 20)), abs=0.01)
    assert by_first["a1"].heading == pytest.approx(90.0, abs=0.01)
    assert by_first["a1"].length == pytest.approx(40.0, abs=0.05)
    dip = by_first["g1"]
    assert dip.length == pytest.approx(60.0, abs=0.05)
    assert dip.heading == pytest.approx(math.degrees(math.atan2(40, -10)), abs=0.01)
    # from Y, the bend heads for c5 at (30, 20): atan2(-10, 20) = 333.43
    back = {g.ids[s.nodes[1]]: s for s in g.streets_from(g.node("Y"))}["c7"]
    assert back.heading == pytest.approx(math.degrees(math.atan2(-10, 20)) % 360, abs=0.01)
    # a street shorter than 3 hops uses its last node; mid-street nodes have two streets
    mid = g.streets_from(g.node("c4"))
    assert sorted(g.ids[s.end] for s in mid) == ["X", "Y"]
    assert sorted(s.hops for s in mid) == [4, 4]


def test_pure_cycle_gets_a_decision_point(raw):
    g, _ = add_reverse_links(raw)
    tri = g.subgraph(np.isin(np.array(g.ids), ["t1", "t2", "t3"]))
    assert tri.decision_points.tolist() == [0]
    rep = tri.contract()
    assert rep["decision_points"] == 1 and rep["streets"] == 2
    loop = tri.streets_from(0)[0]
    assert loop.start == loop.end == 0 and loop.hops == 3


def test_distances_hops_and_shortest_path(raw):
    g, _ = preprocess(raw)
    y = g.node("Y")
    d = g.distances_to([y])
    assert d[g.node("X")] == pytest.approx(40.0, abs=0.05)
    assert d[g.node("c3")] == pytest.approx(50.0, abs=0.05)  # c3-c4-c5-c6-c7-Y
    h = g.hops_to([y])
    assert h[g.node("X")] == 4 and h[g.node("c1")] == 5
    path = g.shortest_path(g.node("X"), [y], d)
    assert [g.ids[i] for i in path] == ["X", "a1", "a2", "a3", "Y"]


def test_bad_node_lines_name_file_line_and_value(tmp_path):
    nodes = node_lines()
    cases = {
        "missing": (nodes[:2] + ["Z,0,60.1"] + nodes[2:], "line 3", "expected 4 fields"),
        "lat": (
            nodes[:1] + ["Z,0,north,24.9"] + nodes[1:],
            "line 2",
            "lat='north' is not a number",
        ),
        "dup": (
            nodes + [nodes[0]],
            f"line {len(nodes) + 1}",
            "duplicate panoid 'X' (first on line 1)",
        ),
    }
    for name, (lines, where, what) in cases.items():
        d = write_fixture(tmp_path / name, nodes=lines)
        with pytest.raises(StreetGraphError) as exc:
            read_touchdown(d)
        msg = str(exc.value)
        assert "nodes.txt" in msg and where in msg and what in msg, msg
        g = read_touchdown(d, skip_bad_lines=True)
        assert g.meta["load"]["nodes_skipped"] == 1 and g.num_nodes == 25


def test_bad_link_lines(tmp_path):
    links = link_lines()
    bad = links[:5] + ["X,90,nowhere", "X,east,a1", "X,90"] + links[5:]
    d = write_fixture(tmp_path / "links", links=bad)
    with pytest.raises(StreetGraphError, match=r"links.txt, line 6: unknown end_panoid 'nowhere'"):
        read_touchdown(d)
    g = read_touchdown(d, skip_bad_lines=True)
    rep = g.meta["load"]
    assert rep["links_skipped"] == 3 and g.num_links == 48
    assert any("heading='east' is not a number" in e for e in rep["errors"])
    assert any("line 8: expected 3 fields" in e for e in rep["errors"])


def test_duplicate_links_are_merged_and_counted(tmp_path):
    links = link_lines()
    d = write_fixture(tmp_path / "dup", links=links + links[:3])
    g = read_touchdown(d)
    assert g.num_links == 48 and g.meta["load"]["duplicate_links"] == 3


def test_missing_files(tmp_path):
    with pytest.raises(StreetGraphError, match="no such file"):
        read_touchdown(tmp_path)


def test_routes_and_broken_hop(tmp_path, raw):
    g, _ = add_reverse_links(raw)
    p = tmp_path / "routes.jsonl"
    good = {
        "route_id": "r1",
        "route_panoids": ["X", "a1", "a2"],
        "navigation_text": "Go east.",
        "start_heading": 90,
    }
    broken = {
        "route_id": "r2",
        "route_panoids": ["X", "a2"],
        "navigation_text": "Jump.",
        "start_heading": 0,
    }
    p.write_text(json.dumps(good) + "\n" + json.dumps(broken) + "\n", encoding="utf-8")
    routes, skipped = read_routes(p)
    assert skipped == 0 and [r.route_id for r in routes] == ["r1", "r2"]
    assert check_route(g, routes[0]) == [g.node("X"), g.node("a1"), g.node("a2")]
    with pytest.raises(
        StreetGraphError, match=r"route 'r2'.*no link from 'X' to 'a2' \(hop 0 -> 1\)"
    ):
        check_route(g, routes[1])
    p.write_text(
        json.dumps(good) + "\n{not json\n" + '{"route_panoids": ["X"]}\n', encoding="utf-8"
    )
    with pytest.raises(StreetGraphError, match=r"routes.jsonl, line 2"):
        read_routes(p)
    routes, skipped = read_routes(p, skip_bad_lines=True)
    assert len(routes) == 1 and skipped == 2


def test_touchdown_round_trip_and_pickle(tmp_path, raw):
    d = write_touchdown(raw, tmp_path / "copy")
    again = read_touchdown(d)
    assert again.ids == raw.ids and np.array_equal(again.src, raw.src)
    assert np.allclose(again.xy, raw.xy, atol=1e-3)
    g, _ = preprocess(raw)
    g2 = pickle.loads(pickle.dumps(g))
    assert g2.ids == g.ids and [s.nodes for s in g2.streets_from(0)] == [
        s.nodes for s in g.streets_from(0)
    ]


def test_load_streetgraph_spec_is_memoised_and_validated(tmp_path):
    d = write_fixture(tmp_path / "spec")
    spec = {"source": "touchdown", "path": str(d)}
    g = load_streetgraph(spec)
    assert g is load_streetgraph(dict(spec)) and g.num_nodes == 15
    with pytest.raises(StreetGraphError, match="unknown keys"):
        load_streetgraph({"source": "touchdown", "path": str(d), "colour": 1})
    with pytest.raises(StreetGraphError, match="source="):
        load_streetgraph({"source": "video"})


def test_from_city_spacing_and_links(tiny_city):
    g = StreetGraph.from_city(tiny_city, spacing=10.0)
    assert g.meta["kinds"] == ["pedestrian", "road"]
    # every link joins panoramas at most ~spacing apart, both ways, heading = bearing
    assert g.length.max() <= 10.0 * 1.5 and g.length.min() > 0.5
    rev = add_reverse_links(g)[1]
    assert rev["reverse_links_added"] == 0
    d = g.xy[g.dst] - g.xy[g.src]
    assert np.allclose(g.heading, np.degrees(np.arctan2(d[:, 0], d[:, 1])) % 360)
    # total street length is the road network's length
    road_m = sum(
        dd["length"] for _, _, dd in tiny_city.network.edges(data=True) if dd["kind"] == "road"
    )
    assert g.length.sum() / 2 == pytest.approx(road_m, rel=1e-6)
    pre, rep = preprocess(g)
    assert rep.step("prune_dead_ends")["nodes_removed"] == 0
    # a 2x2 grid: 9 intersections, of which the 4 corners have degree 2
    assert rep.step("contract")["decision_points"] == 5


def test_synthetic_30k_graph_loads_quickly(tmp_path):
    """Smoke check of the loader at scale (the timing goal is in the benchmark)."""
    from benchmarks.bench_streetgraph import write_synthetic_touchdown

    d = write_synthetic_touchdown(tmp_path / "big", 30_000)
    g = read_touchdown(d)
    assert g.num_nodes >= 30_000 and g.num_links >= 60_000
    pre, rep = preprocess(g)
    assert rep.step("contract")["decision_points"] > 0
