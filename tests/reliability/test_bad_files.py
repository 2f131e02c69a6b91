"""Bad files get named errors, not raw exceptions.

Each test writes a small real file with one defect and checks that the package's own
error names the file, the line (and row/column or field) and the bad value -- not a raw
``InvalidLocationError``, ``ValueError``, ``OverflowError``, ``RecursionError`` or
``TypeError``, and not silence.
"""

from __future__ import annotations

import csv
import json
import re
import warnings

import numpy as np
import pytest

from tests.families.streetgraph.streetgraph_fixture import link_lines, node_lines, write_fixture
from tests.world.osm_fixture import town
from urban_gym.errors import CityLoadError, CityLoadWarning, UrbanGymError
from urban_gym.families.posegraph360.world import (
    PoseGraph,
    PoseGraphError,
    VideoFrames,
    read_pose_csv,
)
from urban_gym.families.streetgraph.world import StreetGraphError, read_routes, read_touchdown
from urban_gym.tasks.spec import TaskError, TaskSpec
from urban_gym.tasks.suite import load_suite
from urban_gym.world.osm import import_osm


# ============================================================== item 9: OSM coordinates
def _with_coordinate(tmp_path, node_id: int, attr: str, value: str, writer=None):
    """The fixture town (or ``writer``) as .osm XML with ``attr`` of node ``node_id`` set
    to ``value``; returns the path and the line number of that node."""
    text = (writer or town()).xml()
    pat = re.compile(rf'(<node id="{node_id}" version="1" [^>]*?){attr}="[^"]*"')
    text, n = pat.subn(rf'\g<1>{attr}="{value}"', text)
    assert n == 1
    line = next(i for i, s in enumerate(text.splitlines(), 1) if f'<node id="{node_id}" ' in s)
    path = tmp_path / "bad.osm"
    path.write_text(text, encoding="utf-8")
    return path, line


@pytest.mark.parametrize(
    "attr,value", [("lon", "abc"), ("lat", ""), ("lat", "nan"), ("lat", "60.0.1"), ("lon", "1e5")]
)
def test_unparseable_coordinate_names_file_line_and_node(tmp_path, attr, value):
    # node 19 is where the footway meets road R (x=15, y=-20)
    path, line = _with_coordinate(tmp_path, 19, attr, value)
    with pytest.raises(CityLoadError) as e:
        import_osm(path)
    msg = str(e.value)
    assert f"bad.osm, line {line} (node 19: {attr}={value!r})" in msg, msg


def test_out_of_range_coordinate_on_a_way_is_skipped_with_a_warning(tmp_path):
    good = import_osm(town().write(tmp_path / "good.osm"))
    path, _ = _with_coordinate(tmp_path, 19, "lat", "95")
    with pytest.warns(CityLoadWarning) as rec:
        city = import_osm(path)
    msg = str(rec[0].message)
    assert "bad.osm" in msg and "node 19 lat=95" in msg and "way 1003" in msg, msg
    assert city.meta["stats"]["nodes_bad_location"] == 1
    # the footway (cut at node 19 into two one-node runs west and east) and road R lose
    # their segments through node 19; the steps T and nothing else remain of the network
    assert good.network.number_of_edges() == 4
    kinds = sorted(d["kind"] for _, _, d in city.network.edges(data=True))
    assert kinds == ["steps"]
    assert len(city.buildings) == len(good.buildings) == 3


def test_out_of_range_coordinate_on_a_building_or_poi(tmp_path):
    path, _ = _with_coordinate(tmp_path, 1, "lat", "95")  # corner of building A
    with pytest.warns(CityLoadWarning, match=r"node 1 lat=95 .*1 building or area outline"):
        city = import_osm(path)
    assert sorted(b.kind for b in city.buildings) == ["church", "yes"]  # A is left out
    path, _ = _with_coordinate(tmp_path, 12, "lon", "200")  # the pharmacy POI
    with pytest.warns(CityLoadWarning, match=r"node 12 lat=60 lon=200 .*Apteekki"):
        city = import_osm(path)
    assert "Apteekki Öö" not in {p.name for p in city.pois}
    # the warning can be made an error
    with warnings.catch_warnings():
        warnings.simplefilter("error", CityLoadWarning)
        with pytest.raises(CityLoadWarning):
            import_osm(path)


def test_out_of_range_coordinate_on_an_unused_node_is_harmless(tmp_path):
    w = town()
    lonely = w.node(500, 500)  # untagged, in no way
    path, _ = _with_coordinate(tmp_path, lonely, "lat", "95", writer=w)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CityLoadWarning)
        city = import_osm(path)
    assert len(city.buildings) == 3 and city.network.number_of_edges() == 4


# ================================================================ item 10: pose CSVs
def _write_csv(path, header, rows, bom: bool = False):
    with open(path, "w", newline="", encoding="utf-8-sig" if bom else "utf-8") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    return path


def _tiny_video(path, frames: int = 4):
    import cv2

    out = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), 2.0, (64, 32))
    for k in range(frames):
        out.write(np.full((32, 64, 3), 40 * k, np.uint8))
    out.release()
    return path


def _image_folder(folder, n: int = 3):
    import cv2

    folder.mkdir(parents=True, exist_ok=True)
    for k in range(n):
        cv2.imwrite(str(folder / f"f{k}.png"), np.full((32, 64, 3), 50 * k, np.uint8))
    return folder


BAD_LATITUDES = [
    ("abc", "lat='abc' is not a number"),
    ("", "lat is empty"),
    ("nan", "lat='nan' is not finite"),
    ("95", "lat='95' is out of range (-90..90 degrees)"),
]


@pytest.mark.parametrize("value,what", BAD_LATITUDES)
def test_bad_latitude_in_row_1_of_a_folder_capture(tmp_path, value, what):
    folder = _image_folder(tmp_path / "cap")
    rows = [["f0.png", value, "25.0"], ["f1.png", "60.0001", "25.0"], ["f2.png", "60.0002", "25.0"]]
    _write_csv(folder / "poses.csv", ["file", "lat", "lon"], rows)
    with pytest.raises(PoseGraphError) as e:
        PoseGraph.from_capture(folder)
    msg = str(e.value)
    assert "poses.csv, line 2: " + what in msg and "(row 1, column 'lat')" in msg, msg


@pytest.mark.parametrize("value,what", BAD_LATITUDES)
def test_bad_latitude_in_row_1_of_a_video_capture(tmp_path, value, what):
    video = _tiny_video(tmp_path / "walk.mp4")
    rows = [["0", value, "25.0"], ["1", "60.0001", "25.0"], ["2", "60.0002", "25.0"]]
    _write_csv(tmp_path / "walk.csv", ["frame", "lat", "lon"], rows)
    with pytest.raises(PoseGraphError) as e:
        VideoFrames(video)
    msg = str(e.value)
    assert "walk.csv, line 2: " + what in msg and "(row 1, column 'lat')" in msg, msg


def test_bad_longitude_in_a_later_row(tmp_path):
    rows = [["a.png", "60.0", "25.0"], ["b.png", "60.0", "-181"]]
    p = _write_csv(tmp_path / "p.csv", ["file", "lat", "lon"], rows)
    with pytest.raises(PoseGraphError, match=r"p.csv, line 3: lon='-181' is out of range.*row 2"):
        read_pose_csv(p, "folder")


def test_pose_csv_with_a_byte_order_mark(tmp_path):
    folder = _image_folder(tmp_path / "cap")
    rows = [
        ["f0.png", "60.0", "25.0"],
        ["f1.png", "60.0001", "25.0"],
        ["f2.png", "60.0002", "25.0"],
    ]
    _write_csv(folder / "poses.csv", ["file", "lat", "lon"], rows, bom=True)
    assert (folder / "poses.csv").read_bytes().startswith(b"\xef\xbb\xbffile,")
    g = PoseGraph.from_capture(folder)
    t = g.trajectories[0]
    assert t.xy.shape[0] == 3 and t.xy[-1][1] == pytest.approx(22.26, abs=0.05)  # 0.0002 deg N
    video = _tiny_video(tmp_path / "walk.mp4")
    vrows = [["0", "0", "0"], ["1", "0", "3"], ["2", "0", "6"]]
    _write_csv(tmp_path / "walk.csv", ["frame", "x", "y"], vrows, bom=True)
    src = VideoFrames(video)
    assert [r.frame for r in src.rows["0"]] == [0, 1, 2]


# =============================================================== item 10: Touchdown BOM
def test_touchdown_files_with_a_byte_order_mark(tmp_path):
    d = write_fixture(tmp_path / "td")
    for name in ("nodes.txt", "links.txt"):
        f = d / name
        f.write_bytes(b"\xef\xbb\xbf" + f.read_bytes())
    g = read_touchdown(d)
    assert g.num_nodes == 25 and g.num_links == 48 and "X" in g.index


def test_touchdown_error_in_nodes_line_1_is_blamed_on_nodes_txt(tmp_path):
    nodes = node_lines()
    nodes[0] = "X,0,north,24.94"
    d = write_fixture(tmp_path / "td", nodes=nodes)
    f = d / "nodes.txt"
    f.write_bytes(b"\xef\xbb\xbf" + f.read_bytes())
    with pytest.raises(StreetGraphError) as e:
        read_touchdown(d)
    msg = str(e.value)
    assert "nodes.txt, line 1: lat='north' is not a number" in msg, msg
    # one link line that is bad, after a BOM, is reported on links.txt line 1
    links = ["X,90,nowhere", *link_lines()]
    d = write_fixture(tmp_path / "td2", links=links)
    f = d / "links.txt"
    f.write_bytes(b"\xef\xbb\xbf" + f.read_bytes())
    with pytest.raises(StreetGraphError, match=r"links.txt, line 1: unknown end_panoid 'nowhere'"):
        read_touchdown(d)


# ========================================================= item 11: route files (JSONL)
GOOD_ROUTE = {
    "route_id": "r1",
    "route_panoids": ["X", "a1", "a2"],
    "navigation_text": "Go east.",
    "start_heading": 90,
}

#: name -> (bad line, what the error must say)
BAD_ROUTE_LINES = {
    "400 digits": (
        json.dumps({**GOOD_ROUTE, "route_id": "r2"})[:-1]
        + ', "start_heading": 1'
        + "0" * 400
        + "}",
        "about 401 digits",
    ),
    "5000 digits": ('{"start_heading": 1' + "0" * 5000 + "}", "too long"),
    "deep nesting": ("[" * 100_000, "nested more than 32 levels deep"),
    "text null": (json.dumps({**GOOD_ROUTE, "navigation_text": None}), "navigation_text=None"),
    "id object": (json.dumps({**GOOD_ROUTE, "route_id": {"a": 1}}), "route_id={'a': 1}"),
    "NaN": ('{"start_heading": NaN}', "NaN is not a JSON number"),
    "surrogate": (json.dumps({**GOOD_ROUTE, "navigation_text": "go \ud800"}), "lone surrogate"),
}


@pytest.mark.parametrize("name", BAD_ROUTE_LINES)
def test_bad_route_line_names_file_and_line(tmp_path, name):
    bad, what = BAD_ROUTE_LINES[name]
    p = tmp_path / "routes.jsonl"
    p.write_text(json.dumps(GOOD_ROUTE) + "\n" + bad + "\n", encoding="utf-8")
    with pytest.raises(StreetGraphError) as e:
        read_routes(p)
    msg = str(e.value)
    assert "routes.jsonl, line 2: " in msg and what in msg, msg[:300]
    routes, skipped = read_routes(p, skip_bad_lines=True)
    assert [r.route_id for r in routes] == ["r1"] and skipped == 1


def test_cli_streetgraph_routes_skips_every_bad_line(tmp_path, capsys):
    from urban_gym.cli import main

    d = write_fixture(tmp_path / "td")
    p = tmp_path / "routes.jsonl"
    lines = [json.dumps(GOOD_ROUTE)] + [bad for bad, _ in BAD_ROUTE_LINES.values()]
    lines.append(json.dumps({**GOOD_ROUTE, "route_id": "r9"}))
    p.write_bytes(b"\xef\xbb\xbf" + "\n".join(lines).encode("utf-8") + b"\n")
    out = tmp_path / "suite.jsonl"
    assert main(["streetgraph-routes", str(d), str(p), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "routes.jsonl, line 2: " in err and "about 401 digits" in err, err[:300]
    args = ["streetgraph-routes", str(d), str(p), "--out", str(out), "--skip-bad-lines"]
    assert main(args) == 0
    assert "wrote 2 streetgraph instruction tasks" in capsys.readouterr().out
    assert [t.id for t in load_suite(out)] == ["route-r1", "route-r9"]


# ================================================================ item 11: task suites
def _posegraph_task(type_: str = "localization") -> dict:
    suite = load_suite("urban_gym/families/posegraph360/suites/helsinki.jsonl")
    return next(t for t in suite if t.type == type_).to_dict()


#: name -> (change to a valid PoseGraph360 localization task, what the error must say)
BAD_TASKS = {
    "instruction null": ({"instruction": None}, "instruction=None must be a string"),
    "city 5": ({"city": 5}, "city=5 must be a string"),
    "max_steps many": ({"limits": {"max_steps": "many"}}, "limits.max_steps='many' must be"),
    "step_limit -3": ({"limits": {"step_limit": -3}}, "limits.step_limit=-3 must be a whole"),
    "step_limit 0": ({"limits": {"step_limit": 0}}, "limits.step_limit=0 must be"),
    "step_limit 2.5": ({"limits": {"step_limit": 2.5}}, "limits.step_limit=2.5 must be"),
    "step_limit true": ({"limits": {"step_limit": True}}, "limits.step_limit=True must be"),
    "answer not an option": ({"answer": "Atlantis"}, "answer='Atlantis' is not among its options"),
    "options not strings": ({"options": [1, 2]}, "options=[1, 2] must be a list of non-empty"),
    "start not object": ({"start": [1, 2]}, "start=[1, 2] must be a JSON object"),
    "400-digit int": ({"meta": {"seed": 10**400}}, "meta.seed=<an integer of about 401 digits>"),
    "infinite float": ({"goal": {"x": float("inf")}}, "goal.x=inf is not a finite number"),
    "type empty": ({"type": " "}, "type must not be empty"),
}


@pytest.mark.parametrize("name", BAD_TASKS)
def test_bad_task_field_is_named(name):
    change, what = BAD_TASKS[name]
    d = {**_posegraph_task(), **change}
    with pytest.raises(TaskError) as e:
        TaskSpec.from_dict(d)
    assert what in str(e.value), str(e.value)


@pytest.mark.parametrize("name", BAD_TASKS)
def test_bad_task_line_in_a_suite_names_file_and_line(tmp_path, name):
    change, what = BAD_TASKS[name]
    if name == "infinite float":  # json.dumps writes inf as Infinity, which JSON lacks
        what = "Infinity is not a JSON number"
    good = _posegraph_task()
    bad = {**good, **change, "id": "bad"}
    text = json.dumps(good, ensure_ascii=False) + "\n" + json.dumps(bad, ensure_ascii=False)
    p = tmp_path / "suite.jsonl"
    p.write_text(text + "\n", encoding="utf-8")
    with pytest.raises(TaskError) as e:
        load_suite(p)
    msg = str(e.value)
    assert "suite.jsonl, line 2: " in msg and what in msg, msg


@pytest.mark.parametrize(
    "line,what",
    [
        ('{"id": 1' + "0" * 400 + "}", "id=<an integer of about 401 digits> is out of range"),
        ('{"id": 1' + "0" * 5000 + "}", "too long"),
        ("[" * 100_000, "nested more than 32 levels deep"),
        ('{"id": "a", "meta": {"x": NaN}}', "NaN is not a JSON number"),
    ],
)
def test_unparseable_suite_lines(tmp_path, line, what):
    p = tmp_path / "suite.jsonl"
    p.write_text(json.dumps(_posegraph_task()) + "\n\n" + line + "\n", encoding="utf-8")
    with pytest.raises(TaskError) as e:
        load_suite(p)
    assert "suite.jsonl, line 3: " in str(e.value) and what in str(e.value), str(e.value)[:300]


def test_posegraph_env_refuses_a_bad_task_at_the_door():
    from urban_gym.families.posegraph360.env import PoseGraph360Env

    bad = {**_posegraph_task(), "limits": {"step_limit": -3}}
    with pytest.raises(UrbanGymError, match="limits.step_limit=-3"):
        PoseGraph360Env(city="helsinki", tasks=[bad])


def test_suite_round_trip_keeps_line_separators_and_bom(tmp_path):
    """A task whose text holds U+2028 / U+0085 (which str.splitlines splits at) is written
    on one line by save_suite and read back whole; a suite saved with a BOM still loads."""
    from urban_gym.tasks.suite import save_suite

    t = TaskSpec.from_dict({**_posegraph_task(), "instruction": "Turn left\u2028then\x85stop."})
    p = save_suite(tmp_path / "s.jsonl", [t, t.replace(id="second")])
    assert load_suite(p) == [t, t.replace(id="second")]
    p.write_bytes(b"\xef\xbb\xbf" + p.read_bytes())
    assert [x.id for x in load_suite(p)] == [t.id, "second"]
