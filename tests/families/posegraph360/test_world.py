"""PoseGraph: construction from a city, frames, branches, routes, statistics, captures
(folder and video), junction detection and validation against the walkable network.

The tiny procedural city (``procedural:seed=3,blocks=2x2``) has streets on a 3x3 grid of
intersections 106 m apart (x, y in {-106, 0, 106}); its corners are bends, not
junctions, so its pose graph has 5 junctions: the centre (0, 0) with 4 streets and the
four side midpoints with 3 each, joined by 4 spokes of 106 m and 4 corner arcs of 212 m.
"""

from __future__ import annotations

import csv
import math

import numpy as np
import pytest

from tests.families.posegraph360.posegraph_frames import bearing_panorama, folder_graph
from urban_gym.families.posegraph360.world import (
    CapturedTrajectory,
    ImageFolderFrames,
    PoseGraph,
    PoseGraphError,
    RenderedFrames,
    State,
    VideoFrames,
    detect_junctions,
    edit_similarity,
    export_capture,
    format_statistics,
    format_validation,
    load_posegraph,
    read_pose_csv,
    turn_sequence,
    validate_posegraph,
)

TINY = "procedural:seed=3,blocks=2x2"


@pytest.fixture(scope="module")
def tiny_graph(tiny_city):
    return PoseGraph.from_city(tiny_city)


def traj_between(g: PoseGraph, a: tuple[float, float], b: tuple[float, float]):
    for t in g.trajectories:
        if np.allclose(t.xy[0], a) and np.allclose(t.xy[-1], b):
            return t
    raise AssertionError(f"no trajectory from {a} to {b}")


def junction_at_xy(g: PoseGraph, x: float, y: float) -> int:
    return next(j.id for j in g.junctions if math.isclose(j.x, x) and math.isclose(j.y, y))


def test_tiny_city_graph_by_hand(tiny_graph):
    s = tiny_graph.statistics()
    assert (s["junctions"], s["segments"], s["trajectories"]) == (5, 8, 16)
    assert s["mean_branching"] == 3.2  # 2 * 8 / 5
    assert s["degree_histogram"] == {3: 4, 4: 1}
    assert s["dead_ends"] == 0
    assert s["length_km"] == pytest.approx(4 * 0.106 + 4 * 0.212)
    assert s["extent_m"] == (212.0, 212.0)
    # the south spoke, walked north: 106 m in 35 intervals of 3.029 m -> 36 frames
    t = traj_between(tiny_graph, (0, -106), (0, 0))
    assert t.n_frames == 36 and t.length == pytest.approx(106.0)
    assert np.diff(t.offsets) == pytest.approx(np.full(35, 106.0 / 35))
    assert np.allclose(t.heading, 0.0) and t.departure == pytest.approx(0.0)
    rev = tiny_graph.trajectories[t.reverse]
    assert np.allclose(rev.xy, t.xy[::-1]) and np.allclose(rev.heading, 180.0)
    assert rev.segment == t.segment and rev.reverse == t.id
    # a corner arc from the south to the west junction: 212 m, 71 intervals, bends 90°
    arc = traj_between(tiny_graph, (0, -106), (-106, 0))
    assert arc.n_frames == 72 and arc.length == pytest.approx(212.0)
    assert arc.departure == pytest.approx(270.0) and arc.arrival == pytest.approx(0.0)
    assert arc.street is not None


def test_branch_choices_follow_the_camera(tiny_graph):
    g = tiny_graph
    centre = junction_at_xy(g, 0, 0)
    north = traj_between(g, (0, 0), (0, 106)).id
    west = traj_between(g, (0, 0), (-106, 0)).id
    east = traj_between(g, (0, 0), (106, 0)).id
    south = traj_between(g, (0, 0), (0, -106)).id
    # arriving from the south, looking north: the south street is behind the camera
    assert g.branch_choices(centre, 0.0) == {"LEFT": west, "RIGHT": east, "UP": north}
    # looking back (180°): UP is the way back, LEFT is east
    assert g.branch_choices(centre, 180.0) == {"LEFT": east, "RIGHT": west, "UP": south}
    # looking 45° (north-east): north and east are both 45° off; UP takes the lower id
    up = g.branch_choices(centre, 45.0)["UP"]
    assert up == min(north, east)
    assert g.junction_at(State(north, 0)) == centre
    assert g.junction_at(State(north, 5)) is None


def test_distances_and_routes(tiny_graph):
    g = tiny_graph
    north_j = junction_at_xy(g, 0, 106)
    goals = g.goal_states(0, 106)
    # the north junction is frame 0 / the last frame of 6 trajectories
    assert len(goals) == 6 and all(g.junction_at(s) == north_j for s in goals)
    f = g.distance_field(goals)
    up = traj_between(g, (0, -106), (0, 0))
    assert f.distance(State(up.id, 0)) == pytest.approx(212.0)
    assert f.distance(State(up.id, 10)) == pytest.approx(212.0 - 10 * 106 / 35)
    # at the centre on the spoke heading south: switch to the north spoke, 106 m; one frame
    # further south the agent must walk to the south end and come back: (106 - d) + 212
    down = g.trajectories[up.reverse]
    d = 106.0 / 35
    assert f.distance(State(down.id, 0)) == pytest.approx(106.0)
    assert f.distance(State(down.id, 1)) == pytest.approx(106.0 - d + 212.0)
    route = g.shortest_route(State(up.id, 0), goals)
    assert route[0] == State(up.id, 0) and g.position(route[-1]) == pytest.approx((0, 106))
    switches = [b for a, b in zip(route[:-1], route[1:]) if a.trajectory != b.trajectory]
    assert len(switches) == 1  # straight on at the centre
    assert g.trajectories[switches[0].trajectory].departure == pytest.approx(0.0)
    # a goal in the middle of a street is reached along it
    mid = traj_between(g, (0, 0), (0, 106))
    f2 = g.distance_field([State(mid.id, 10)])
    assert f2.distance(State(mid.id, 4)) == pytest.approx(6 * d)
    # one frame past it: on to the north end, back to the centre, out again 10 frames
    assert f2.distance(State(mid.id, 11)) == pytest.approx((106 - 11 * d) + 106 + 10 * d)


def test_nearest_state_prefers_the_heading(tiny_graph):
    g = tiny_graph
    t = traj_between(g, (0, -106), (0, 0))
    s = g.nearest_state(0.3, -50.0, heading=180.0)
    assert g.trajectories[s.trajectory].reverse == t.id
    s = g.nearest_state(0.3, -50.0, heading=0.0)
    assert s.trajectory == t.id and abs(g.position(s)[1] + 50.0) <= 1.6


def test_statistics_text_and_helsinki(helsinki):
    g = PoseGraph.from_city(helsinki)
    s = g.statistics()
    # the paper's Akihabara graph: 193 nodes, 305 edges, mean branching 3.16
    assert 100 <= s["junctions"] <= 250 and 150 <= s["segments"] <= 400
    assert 2.5 <= s["mean_branching"] <= 3.5
    assert s["trajectories"] == 2 * s["segments"]
    assert s["mean_branching"] == round(2 * s["segments"] / s["junctions"], 2)
    text = format_statistics(s)
    assert "mean branching" in text and f"{s['junctions']}" in text


def test_validation_against_the_network(tiny_graph, tiny_city):
    v = validate_posegraph(tiny_graph, tiny_city, pairs=20, min_distance=100.0)
    assert v["node_to_street_median_m"] == pytest.approx(0.0, abs=1e-6)
    assert v["frame_to_street_p95_m"] == pytest.approx(0.0, abs=1e-6)
    assert v["pairs"] == 20 and v["unreachable_pairs"] == 0
    assert v["length_ratio_median"] == pytest.approx(1.0)
    assert "| node-to-street distance, median / p95 | 0.00 m / 0.00 m |" in format_validation(v)


def test_turn_sequences_and_edit_similarity():
    # east 50 m then south 50 m: a right turn; then east again: a left turn
    assert turn_sequence([(0, 0), (50, 0), (50, -50)]) == "R"
    assert turn_sequence([(0, 0), (50, 0), (50, 50)]) == "L"
    assert turn_sequence([(0, 0), (50, 0), (50, -50), (100, -50)]) == "RL"
    assert turn_sequence([(0, 0), (100, 0)]) == ""
    assert edit_similarity("LR", "LR") == 1.0
    assert edit_similarity("L", "LR") == 0.5
    assert edit_similarity("LR", "RL") == 0.0
    assert edit_similarity("", "") == 1.0


def test_spacing_and_selection_errors(tiny_city):
    with pytest.raises(PoseGraphError, match="spacing=0.1"):
        PoseGraph.from_city(tiny_city, spacing=0.1)
    with pytest.raises(PoseGraphError, match="no street edges"):
        PoseGraph.from_city(tiny_city, kinds=("steps",))


def test_load_posegraph_is_memoised(tiny_city):
    assert load_posegraph(TINY) is load_posegraph(TINY)
    assert load_posegraph(TINY).statistics() == PoseGraph.from_city(tiny_city).statistics()


def test_a_loaded_citys_pose_graph_comes_from_the_disk_cache(monkeypatch, tiny_city):
    from urban_gym.families.posegraph360.world import graph as graph_module

    graph_module._GRAPHS.clear()
    first = load_posegraph(TINY)
    graph_module._GRAPHS.clear()  # a new process

    def no_build(*a, **k):
        raise AssertionError("built again instead of read from the disk cache")

    monkeypatch.setattr(PoseGraph, "from_city", no_build)
    again = load_posegraph(TINY)
    assert again is not first
    assert again.statistics() == first.statistics()
    assert np.array_equal(again.frame_xy, first.frame_xy)
    assert again.meta["city_spec"] == TINY
    # another spacing is another graph, built (not the cached one read back)
    with pytest.raises(AssertionError, match="built again"):
        load_posegraph(TINY, spacing=7.0)
    monkeypatch.undo()
    assert len(load_posegraph(TINY, spacing=7.0).frame_xy) < len(first.frame_xy)
    graph_module._GRAPHS.clear()


def test_rendered_frames_lru_is_bounded():
    calls = []

    def render(x, y):
        calls.append((x, y))
        return bearing_panorama(x, y)

    one = bearing_panorama(0, 0).nbytes
    src = RenderedFrames(render, cache_mb=2.5 * one / 2**20)
    for x in (1.0, 2.0, 1.0, 3.0, 1.0, 2.0):
        img, ph = src.panorama(("t", 0), x, 0.0)
        assert ph == 0.0 and img.shape == (32, 64, 3)
    # capacity 2 frames: 1, 2, (1 hit), 3 evicts 2, (1 hit), 2 again
    assert calls == [(1.0, 0.0), (2.0, 0.0), (3.0, 0.0), (2.0, 0.0)]
    assert len(src.cache) == 2 and src.cache.nbytes <= 2.5 * one


def test_folder_capture_round_trip(tiny_graph, tmp_path):
    g = folder_graph(tiny_graph, tmp_path)
    t = traj_between(g, (0, -106), (0, 0))
    img, ph = g.panorama(State(t.id, 3))
    assert img.shape == (32, 64, 3) and ph == 0.0
    assert np.array_equal(img, bearing_panorama(*t.xy[3]))
    rows = read_pose_csv(tmp_path / "frames" / "poses.csv", "folder")
    assert len(rows) == 16 and sum(len(r) for r in rows.values()) == g.n_frames
    # the exported captures, re-imported with junction detection, give the same graph
    imported = PoseGraph.from_capture(tmp_path / "frames")
    s, s0 = imported.statistics(), tiny_graph.statistics()
    assert (s["junctions"], s["segments"], s["trajectories"]) == (5, 8, 16)
    assert s["mean_branching"] == s0["mean_branching"]
    assert imported.panorama(State(0, 0))[0].shape == (32, 64, 3)


def test_junction_detection_on_two_crossing_streets():
    def line(label, a, b, n=41):
        xy = np.linspace(a, b, n)
        h = np.full(n, math.degrees(math.atan2(b[0] - a[0], b[1] - a[1])) % 360)
        return CapturedTrajectory(label, xy, h)

    caps = [line("ew", (-60.0, 0.0), (60.0, 0.0)), line("sn", (0.0, -60.0), (0.0, 60.0))]
    g = detect_junctions(caps)
    # 4 street ends + 1 crossing; each capture split in two at the crossing
    assert len(g.junctions) == 5 and len(g.trajectories) == 4
    centre = min(g.junctions, key=lambda j: math.hypot(j.x, j.y))
    assert math.hypot(centre.x, centre.y) < 1.0
    assert sorted(round(g.trajectories[k].departure) for k in g.out_of[centre.id]) == [0, 90]
    # the other direction of the east-west street is parallel: no junction is added
    caps.append(line("we", (60.0, 0.5), (-60.0, 0.5)))
    g2 = detect_junctions(caps)
    assert len(g2.junctions) == 5 and len(g2.trajectories) == 6
    assert sum(t.reverse is not None for t in g2.trajectories) == 4


def write_csv(path, header, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)


def test_pose_csv_errors(tmp_path):
    write_csv(tmp_path / "a.csv", ["file", "heading"], [["x.png", "0"]])
    with pytest.raises(PoseGraphError, match=r"missing column\(s\) x,y or lat,lon"):
        read_pose_csv(tmp_path / "a.csv", "folder")
    write_csv(tmp_path / "b.csv", ["x", "y"], [["1", "2"]])
    with pytest.raises(PoseGraphError, match="file"):
        read_pose_csv(tmp_path / "b.csv", "folder")
    with pytest.raises(PoseGraphError, match="frame or time"):
        read_pose_csv(tmp_path / "b.csv", "video")
    write_csv(tmp_path / "c.csv", ["file", "x", "y"], [["a.png", "1", "north"]])
    with pytest.raises(PoseGraphError, match="line 2: y='north' is not a number"):
        read_pose_csv(tmp_path / "c.csv", "folder")
    with pytest.raises(PoseGraphError, match="no such pose CSV"):
        read_pose_csv(tmp_path / "nope.csv", "folder")
    # lat/lon columns are converted, headings come from the positions
    write_csv(
        tmp_path / "d.csv",
        ["file", "lat", "lon"],
        [["a.png", "60.0", "25.0"], ["b.png", "60.0001", "25.0"]],
    )
    rows = read_pose_csv(tmp_path / "d.csv", "folder")["0"]
    assert rows[1].y == pytest.approx(11.13, abs=0.05) and rows[0].heading == pytest.approx(0.0)
    # a folder whose CSV names a file that is not there
    (tmp_path / "cap").mkdir()
    write_csv(tmp_path / "cap" / "poses.csv", ["file", "x", "y"], [["missing.png", "0", "0"]])
    with pytest.raises(PoseGraphError, match=r"1 frame file\(s\) do not exist.*missing.png"):
        ImageFolderFrames(tmp_path / "cap")


def test_video_source_errors_and_frames(tmp_path, tiny_graph):
    bad = tmp_path / "bad.mp4"
    bad.write_bytes(b"not a video at all")
    write_csv(tmp_path / "bad.csv", ["frame", "x", "y"], [["0", "0", "0"]])
    with pytest.raises(PoseGraphError, match="cannot open the video"):
        VideoFrames(bad)
    with pytest.raises(PoseGraphError, match="no such video file"):
        VideoFrames(tmp_path / "none.mp4")
    # a real mp4 of 36 frames (one trajectory of the tiny city)
    t = traj_between(tiny_graph, (0, -106), (0, 0))
    video, csv_path = export_capture(
        tiny_graph.with_source(RenderedFrames(bearing_panorama)), tmp_path / "v", [t.id]
    )
    src = VideoFrames(video)
    assert src.n_video_frames == 36 and len(src.rows[str(t.id)]) == 36
    img, ph = src.panorama((str(t.id), 5), 0.0, 0.0)
    # lossy mp4: the red bearing ramp survives within a few levels
    ref = bearing_panorama(*t.xy[5])
    assert img.shape == ref.shape and np.abs(img[16].astype(int) - ref[16]).mean() < 12
    rows = list(csv.DictReader(open(csv_path)))
    rows[-1]["frame"] = "99"
    write_csv(tmp_path / "v" / "capture.csv", list(rows[0]), [list(r.values()) for r in rows])
    with pytest.raises(PoseGraphError, match=r"frame\(s\) \[99\] do not exist.*36 frames"):
        VideoFrames(video)


def test_cli_info_posegraph_and_validate(capsys, tiny_city):
    from urban_gym.cli import main

    assert main(["posegraph360-info", TINY]) == 0
    out = capsys.readouterr().out
    assert "nodes (junctions)  5" in out and "mean branching     3.20" in out
    assert main(["validate-posegraph", TINY, "--pairs", "5"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("| measure | value |") and "turn sequences identical" in out
    assert main(["validate-posegraph", TINY, "--capture", "/no/such/capture"]) == 2
    assert "no such capture" in capsys.readouterr().err
