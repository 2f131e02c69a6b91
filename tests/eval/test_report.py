"""``urban-gym report``: tables with CIs, the paired comparison, bins, failures, plots,
GIFs from exact replays."""

from __future__ import annotations

import json

import pytest

from tests.eval.conftest import SG, SYMBOLIC
from urban_gym.eval.records import RunDir
from urban_gym.eval.report import build_report
from urban_gym.eval.runner import run
from urban_gym.eval.trace import replay

IDS = [f"streetgraph-procedural-00{i}" for i in range(8)]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("runs")
    for agent in ("oracle", "random"):
        run(
            SG,
            base / agent,
            agent=agent,
            env_kwargs=SYMBOLIC,
            task_ids=IDS,
            seeds=2,
            progress=False,
        )
    return base


def test_report_tables_and_the_paired_comparison(runs):
    rep = build_report([runs / "oracle", runs / "random"], resamples=2000)
    o, r = rep["results"]["oracle"], rep["results"]["random"]
    assert o["overall"]["tasks"] == 8 and o["overall"]["episodes"] == 16
    assert o["overall"]["metrics"]["success"] == {"mean": 1.0, "low": 1.0, "high": 1.0}
    assert r["overall"]["metrics"]["success"]["mean"] == 0.0
    assert set(o["by_type"]) == {"origin_destination"} and set(o["by_difficulty"]) == {"hard"}
    assert o["macro"]["metrics"]["success"]["mean"] == 1.0
    assert [b["tasks"] for b in o["decision_bins"]] == [2, 2, 2, 2]
    lows = [b["range"][0] for b in o["decision_bins"]]
    assert lows == sorted(lows)
    (c,) = rep["comparisons"]
    assert (c["a"], c["b"], c["tasks"]) == ("oracle", "random", 8)
    assert c["metrics"]["success"]["diff"] == {"mean": -1.0, "low": -1.0, "high": -1.0, "n": 8}
    mc = c["mcnemar"]
    assert (mc["pairs"], mc["a_only"], mc["b_only"]) == (16, 16, 0)
    assert mc["p"] == pytest.approx(2 / 2**16)
    f = r["failures"]
    assert f["failed"] == 16 and sum(f["dominant"].values()) == 16
    assert rep["leaderboard"][0]["run"] == "oracle"


def test_write_report_and_the_command(runs, tmp_path, capsys):
    from urban_gym.cli import main

    out = tmp_path / "rep"
    assert (
        main(
            [
                "report",
                str(runs / "oracle"),
                str(runs / "random"),
                "--out",
                str(out),
                "--resamples",
                "500",
                "--names",
                "A,B",
            ]
        )
        == 0
    )
    assert "wrote" in capsys.readouterr().out
    md = (out / "report.md").read_text()
    for part in (
        "## Leaderboard",
        "## Paired comparisons",
        "McNemar",
        "## Failure-cause rules",
        "`loops`",
        "By task type",
        "decision points",
        "gifs/",
    ):
        assert part in md, part
    data = json.loads((out / "report.json").read_text())
    assert [x["name"] for x in data["runs"]] == ["A", "B"]
    assert all((out / p).stat().st_size > 1000 for p in data["plots"])
    gifs = data["gifs"]
    assert {g["which"] for g in gifs} == {"best", "worst"} and all(g["exact"] for g in gifs)
    assert all((out / g["path"]).exists() for g in gifs)


def test_citywalk_distance_bins(tmp_path):
    run(
        "UrbanGym/CityWalk-NoView-v0",
        tmp_path,
        agent="oracle",
        env_kwargs={"task_types": ["SGN"]},
        progress=False,
    )
    rep = build_report([tmp_path], resamples=500, failures=False)
    bins = rep["results"]["oracle"]["distance_bins"]
    assert set(bins) == {"SGN", "all navigation"}
    sgn = bins["SGN"]
    # 315 SGN tasks (63, and each under 4 conditions), binned by the straight-line
    # start-to-goal distance as UrbanGround bins ShortNav
    assert [b["tasks"] for b in sgn] == [79, 79, 79, 78]
    assert all(a["range"][1] <= b["range"][0] for a, b in zip(sgn, sgn[1:]))
    assert all(b["ended_closer"] == 1.0 for b in sgn)
    assert rep["results"]["oracle"]["by_category"].keys() == {"L2", "L5"}


@pytest.mark.parametrize(
    "env_id, kwargs",
    [
        ("UrbanGym/PoseGraph360-Procedural-v0", {"view_size": 32, "pano_width": 128}),
        ("UrbanGym/CityWalk-NoView-v0", {"task_types": ["SGN", "CN", "OU"]}),
        (SG, SYMBOLIC),
    ],
)
def test_replays_are_exact(env_id, kwargs, tmp_path):
    from urban_gym.eval.worker import RunSpec, make_env

    res = run(
        env_id, tmp_path, agent="random", env_kwargs=kwargs, seeds=1, progress=False, max_episodes=6
    )
    env = make_env(RunSpec(env_id, kwargs, "oracle"))
    d = RunDir(tmp_path)
    for rec in res.records:
        exact, info, problems = replay(env, rec, d.read_trace(rec))
        assert exact, (rec["key"], problems)
    # a wrong recorded action is caught
    rec = res.records[0]
    steps = d.read_trace(rec)
    steps[1]["pose"] = {"x": 1e6, "y": 0.0, "heading": 0.0}
    assert not replay(env, rec, steps)[0]


def test_category_by_difficulty_table_and_heatmap(tmp_path):
    """Success per category x difficulty from hand-made records: rows in the family's
    category order, columns easy to hard, a pair no task has left out; each cell's success
    by hand; the markdown table and the heatmap."""
    from tests.eval.handmade import nav_record, record, write_run
    from urban_gym.eval.report import format_markdown, write_report

    recs = [
        nav_record("l1", "landmark_name", 3.0, difficulty="easy"),  # success
        nav_record("l2", "landmark_name", 30.0, difficulty="easy"),  # too far
        nav_record("l3", "landmark_name", 3.0, difficulty="hard"),
        nav_record("m1", "map_navigation", 15.0, difficulty="medium"),  # within 20 m
        # a task with two episodes: averaged first (success 0.5)
        nav_record("m2", "map_navigation", 5.0, difficulty="medium"),
        nav_record("m2", "map_navigation", 50.0, difficulty="medium", repeat=1),
        record("c1", "object_count", False, difficulty="hard"),
    ]
    write_run(tmp_path / "run", "handmade", recs)
    rep = build_report([tmp_path / "run"], resamples=200, failures=False)
    res = rep["results"]["handmade"]
    cd = res["by_category_difficulty"]
    assert cd["categories"] == ["Environment Understanding", "Path Reasoning", "Spatial Reasoning"]
    assert cd["difficulties"] == ["easy", "medium", "hard"]
    cells = cd["cells"]

    def success(c, d):
        return cells[c][d]["metrics"]["success"]["mean"]

    assert success("Environment Understanding", "easy") == 0.5  # l1 of l1, l2
    assert success("Environment Understanding", "hard") == 1.0
    assert "medium" not in cells["Environment Understanding"]  # no such task
    assert success("Path Reasoning", "medium") == 0.75  # m1 1.0, m2 0.5
    assert cells["Path Reasoning"]["medium"]["tasks"] == 2
    assert cells["Path Reasoning"]["medium"]["episodes"] == 3
    assert success("Spatial Reasoning", "hard") == 0.0
    md = format_markdown(rep)
    assert "#### Success by category and difficulty" in md
    assert "| category | easy | medium | hard | all |" in md
    assert "| Path Reasoning | - | 75.0% [" in md and "(n=2) |" in md
    assert "| Environment Understanding | 50.0% [" in md
    paths = write_report(rep, tmp_path / "rep")
    heat = tmp_path / "rep" / "posegraph360_v0_handmade_category_difficulty.png"
    assert heat.exists() and "posegraph360_v0_handmade_category_difficulty.png" in rep["plots"]
    assert paths["md"].read_text().count("](posegraph360_v0_handmade_category_difficulty.png)") == 1
