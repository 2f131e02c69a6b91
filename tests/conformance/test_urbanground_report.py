"""``urban-gym report --layout urbanground``: CityWalk's results laid out as UrbanGround's
Tables 1-4 (its Section 4: 4.2 Table 1, 4.3 Table 2 and Figure 8, 4.4 Tables 3 and 4) and
the LongNav failure taxonomy (Section 4.3; the rules are ours,
:mod:`urban_gym.families.citywalk.longnav`), checked on hand-built run folders whose every
cell a person can work out, and end to end on oracle and random runs of ``urban-gym eval``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from urban_gym.cli import main
from urban_gym.errors import InputError
from urban_gym.eval.layouts import available_layouts, cell, resolve_layout
from urban_gym.eval.records import RunDir
from urban_gym.eval.report import build_report, format_markdown
from urban_gym.families.citywalk.longnav import longnav_failure, progress_class

CW_ID = "UrbanGym/CityWalk-NoView-v0"
RESAMPLES = 500
KIND = {
    **dict.fromkeys(("VR", "OU", "AEQ"), "question"),
    **dict.fromkeys(("TWS", "MSP"), "multi_stop"),
}


def rec(
    task_id: str,
    ty: str,
    success: bool,
    repeat: int = 0,
    variant: str | None = None,
    base: str | None = None,
    termination: str | None = None,
    steps: int = 10,
    start: float | None = None,
    end: float | None = None,
    **metrics: float,
) -> dict[str, Any]:
    """A CityWalk episode record with the fields the report reads."""
    kind = KIND.get(ty, "navigation")
    m = {"success": float(success), **metrics}
    if kind == "question":
        m.setdefault("answer_accuracy", float(success))
    return {
        "task_id": task_id,
        "seed": repeat,
        "repeat": repeat,
        "key": f"{task_id}__s{repeat}__r{repeat}",
        "family": "citywalk",
        "task_type": ty,
        "difficulty": "l1",
        "category": "L5" if variant else "L1",
        "kind": kind,
        "termination": termination or ("answered" if kind == "question" else "arrived"),
        "is_success": bool(success),
        "metrics": m,
        "steps": steps,
        "tokens": {},
        "start": {"distance_to_goal_m": start},
        "end": {"distance_to_goal_m": end},
        "task_info": {"goal_radius_m": 15.0, "variant": variant, "base_task": base},
    }


def write_run(path: Path, agent: str, records: list[dict], traces: dict[str, list[float]]) -> Path:
    """A run folder of ``records``; ``traces``: key -> distances to the goal per step."""
    d = RunDir(path)
    d.write_manifest(
        {
            "env_id": CW_ID,
            "family": "citywalk",
            "agent": {"spec": agent, "kind": agent},
            "env_kwargs": {},
            "episodes": len(records),
        }
    )
    for r in records:
        if r["key"] in traces:
            steps = [
                {"t": t, "action": None if t == 0 else 0, "distance_to_goal_m": dist}
                for t, dist in enumerate(traces[r["key"]])
            ]
            r = {**r, "trace": d.write_trace(r["key"], steps)}
        d.append(r)
    d.close()
    return path


# Every cell below is worked out by hand in the comments of the test that reads it.
RECORDS = [
    # Table 1 (base tasks): VR 2 of 3 right, OU 1 of 1 (two repeats, both right), AEQ 0 of 1
    rec("vr0", "VR", True, network_adherence=0.5),
    rec("vr1", "VR", True, network_adherence=1.0),
    rec("vr2", "VR", False),  # never moved: no PNA
    rec("ou0", "OU", True, network_adherence=0.2),
    rec("ou0", "OU", True, repeat=1, network_adherence=0.2),
    rec("aeq0", "AEQ", False, network_adherence=0.4),
    # condition variants (Table 3), left out of Table 1
    rec("vr0-dusk", "VR", False, variant="dusk-clear", base="vr0"),
    rec("vr1-dusk", "VR", True, variant="dusk-clear", base="vr1"),
    rec("vr0-night", "VR", True, variant="night-clear", base="vr0"),
    # Table 2 (base tasks): SGN 2 of 3, LGN 0 of 2, IN 1 of 1, PTS 1 of 1, III 0 of 1,
    # TWS 0 of 1, MSP 1 of 2; no CN
    rec("sgn0", "SGN", True),
    rec("sgn1", "SGN", True),
    rec("sgn2", "SGN", False, termination="step_limit", steps=150),
    rec("sgn2-rain", "SGN", True, variant="day-rain", base="sgn2"),
    rec("lgn0", "LGN", False, termination="step_limit", steps=150, ended_closer=1.0),
    rec("lgn1", "LGN", False, termination="terminated_by_agent", steps=20, start=400, end=420),
    rec("in0", "IN", True),
    rec("pts0", "PTS", True),
    rec("iii0", "III", False, termination="terminated_by_agent"),
    rec("tws0", "TWS", False, termination="terminated_by_agent"),
    rec("msp0", "MSP", True, fraction_reached=1.0),
    rec("msp1", "MSP", False, termination="step_limit", steps=150, fraction_reached=1 / 3),
    # Table 4: DCR and NP
    rec("dcr0", "DCR", True, network_adherence=0.9, closure_compliance=1.0),
    rec("dcr1", "DCR", False, network_adherence=0.5, closure_compliance=0.0),
    rec(
        "np0",
        "NP",
        False,
        termination="step_limit",
        steps=150,
        network_adherence=0.8,
        pedestrian_collision=1.0,
    ),
    rec(
        "np0",
        "NP",
        False,
        repeat=1,
        termination="step_limit",
        steps=150,
        network_adherence=0.8,
        pedestrian_collision=1.0,
    ),
    rec(
        "np1",
        "NP",
        False,
        termination="step_limit",
        steps=150,
        network_adherence=0.6,
        pedestrian_collision=0.0,
    ),
]
TRACES = {
    "lgn0__s0__r0": [400, 350, 300, 390],  # G = 40; best 100, kept 10 < G: lost
    "lgn1__s0__r0": [400, 410, 420],  # terminate at step 20 of 150: premature
    "np0__s0__r0": [200, 150, 120, 130],  # G = 20; best 80, kept 70 >= 40: retained
    "np0__s1__r1": [200, 195, 190],  # best 10 < 20: absent
    "np1__s0__r0": [200, 100, 160],  # best 100, kept 40 < 50: lost
}


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    path = write_run(tmp_path_factory.mktemp("run") / "hand", "hand", RECORDS, TRACES)
    return build_report([path], resamples=RESAMPLES, layout="urbanground")


@pytest.fixture(scope="module")
def lay(report):
    return report["results"]["hand"]["layout"]


def test_table1_accuracy_and_pna_with_an_instance_weighted_overall(lay):
    t1 = lay["table1"]
    assert t1["VR"]["accuracy"]["mean"] == pytest.approx(2 / 3, abs=1e-6)
    assert t1["VR"]["accuracy"]["tasks"] == 3  # the variants are not counted
    assert t1["OU"]["accuracy"]["mean"] == 1.0 and t1["OU"]["accuracy"]["episodes"] == 2
    assert t1["AEQ"]["accuracy"]["mean"] == 0.0
    # overall: 3 right of 5 tasks = 60% (the mean of the three types' means is 55.6%)
    assert t1["overall"]["accuracy"]["mean"] == pytest.approx(0.6, abs=1e-6)
    # PNA: VR (0.5 + 1.0) / 2 (vr2 never moved); overall (0.5 + 1.0 + 0.2 + 0.4) / 4
    assert t1["VR"]["pna"]["mean"] == pytest.approx(0.75, abs=1e-6)
    assert t1["overall"]["pna"]["mean"] == pytest.approx(0.525, abs=1e-6)
    lo, hi = t1["overall"]["accuracy"]["low"], t1["overall"]["accuracy"]["high"]
    assert 0.0 <= lo < 0.6 < hi <= 1.0


def test_table2_eight_navigation_types_and_their_weighted_overall(lay):
    t2 = lay["table2"]
    assert list(t2) == ["SN", "LN", "IN", "CN", "PS", "II", "TW", "MS", "overall"]
    assert t2["SN"]["mean"] == pytest.approx(2 / 3, abs=1e-6) and t2["SN"]["tasks"] == 3
    assert t2["LN"]["mean"] == 0.0 and t2["MS"]["mean"] == 0.5
    assert t2["CN"]["mean"] is None and t2["CN"]["tasks"] == 0  # no CN task ran
    # overall: successes SGN 2 + IN 1 + PTS 1 + MSP 1 = 5 of 11 base tasks
    assert t2["overall"]["tasks"] == 11
    assert t2["overall"]["mean"] == pytest.approx(5 / 11, abs=1e-6)


def test_table3_conditions_on_matched_instances(lay):
    qa = lay["table3"]["qa_accuracy"]
    assert qa["matched"] is True
    # clear day: the bases the variants vary, vr0 and vr1 (both right); not vr2, ou0, aeq0
    assert qa["cells"]["clear day"]["mean"] == 1.0 and qa["cells"]["clear day"]["tasks"] == 2
    assert qa["cells"]["dusk"]["mean"] == 0.5  # vr0-dusk wrong, vr1-dusk right
    assert qa["cells"]["night"]["mean"] == 1.0
    assert qa["cells"]["fog"]["mean"] is None and qa["cells"]["rain"]["mean"] is None
    sgn = lay["table3"]["sgn_success"]["cells"]
    assert sgn["clear day"]["mean"] == 0.0 and sgn["clear day"]["tasks"] == 1  # sgn2
    assert sgn["rain"]["mean"] == 1.0


def test_table4_sr_pna_ccr_pcr(lay):
    dcr, np_ = lay["table4"]["DCR"], lay["table4"]["NP"]
    assert dcr["SR"]["mean"] == 0.5 and dcr["PNA"]["mean"] == pytest.approx(0.7, abs=1e-6)
    assert dcr["CCR"]["mean"] == 0.5
    # PCR: np0 collided in both repeats (task mean 1), np1 did not: 50% of tasks
    assert np_["PCR"]["mean"] == 0.5 and np_["PCR"]["episodes"] == 3
    assert np_["SR"]["mean"] == 0.0 and np_["PNA"]["mean"] == pytest.approx(0.7, abs=1e-6)


def test_figure8_measures(lay):
    f8 = lay["figure8"]
    # lgn0 ended closer (its metric); lgn1 from 400 m to 420 m did not
    assert f8["lgn_ended_closer"]["mean"] == 0.5
    assert f8["msp_fraction_reached"]["mean"] == pytest.approx((1 + 1 / 3) / 2, abs=1e-6)


def test_longnav_taxonomy_of_the_failed_episodes(lay):
    tx = lay["taxonomy"]
    labels = {e["key"]: e["label"] for e in tx["episodes"]}
    assert labels == {
        "lgn0__s0__r0": "lost_progress",
        "lgn1__s0__r0": "premature_stop",
        "np0__s0__r0": "retained_incomplete",
        "np0__s1__r1": "absent_progress",
        "np1__s0__r0": "lost_progress",
    }
    assert tx["by_type"]["LGN"] == {"lost_progress": 1, "premature_stop": 1}
    assert tx["by_type"]["all"]["lost_progress"] == 2
    # beside the five causes: every labelled episode has its dominant cause
    assert sum(sum(v.values()) for v in tx["by_cause"].values()) == 5


@pytest.mark.parametrize(
    "distances,termination,steps,label",
    [
        ([400, 350, 300, 390], "step_limit", 150, "lost_progress"),
        ([400, 350, 300, 370], "step_limit", 150, "lost_progress"),  # kept 30 < G 40
        ([400, 200, 320], "step_limit", 150, "lost_progress"),  # kept 80 < 100 = half of 200
        ([400, 200, 300], "step_limit", 150, "retained_incomplete"),  # kept 100 = half
        ([400, 361, 380], "step_limit", 150, "absent_progress"),  # best 39 < 40
        ([100, 90, 80], "step_limit", 150, "retained_incomplete"),  # G = max(15, 10) = 15
        ([100, 90, 88], "step_limit", 150, "absent_progress"),  # best 12 < 15
        ([400, 300, 250], "terminated_by_agent", 40, "premature_stop"),
        ([400, 300, 250], "terminated_by_agent", 150, "retained_incomplete"),  # no steps left
        ([float("inf"), 300], "step_limit", 150, "unclassified"),
    ],
)
def test_taxonomy_rules_by_hand(distances, termination, steps, label):
    got = longnav_failure(distances, termination, steps, max_steps=150, radius_m=15.0)
    assert got["label"] == label


def test_a_premature_stop_keeps_its_progress_class():
    got = longnav_failure([400, 300, 250], "terminated_by_agent", 40, 150)
    assert (got["label"], got["progress"]) == ("premature_stop", "retained_incomplete")
    assert got["threshold_m"] == 40.0 and got["best_m"] == 250.0
    assert progress_class([400, 420]) == "absent_progress"


def test_cell_is_the_reports_task_bootstrap():
    recs = [{"task_id": "a", "v": 1.0}, {"task_id": "a", "v": 0.0}, {"task_id": "b", "v": 1.0}]
    c = cell(recs, lambda r: r["v"], "s", resamples=200)
    # task a averages to 0.5 first: (0.5 + 1) / 2
    assert c["mean"] == 0.75 and (c["tasks"], c["episodes"]) == (2, 3)
    assert 0.5 <= c["low"] <= 0.75 <= c["high"] <= 1.0


def test_markdown_holds_the_four_tables(report):
    md = format_markdown(report)
    for h in ("Table 1", "Table 2", "Table 3", "Table 4", "Figure 8", "LongNav failure taxonomy"):
        assert f"### {h}" in md
    assert "| hand | 66.7% [" in md  # Table 1's first cell: VR accuracy
    # the taxonomy crossed with the five causes: a row per label
    assert "| hand | lost_progress |" in md.split("five failure causes")[1]


def test_a_bad_layout_names_itself_and_the_layouts(tmp_path):
    path = write_run(tmp_path / "r", "hand", RECORDS[:2], {})
    with pytest.raises(InputError, match=r"'tables9'.*standard.*urbanground"):
        build_report([path], resamples=10, layout="tables9")
    assert "urbanground" in available_layouts()
    assert resolve_layout("standard", ["citywalk"]) is None


def test_a_layout_of_another_family_is_refused(tmp_path):
    from tests.eval.handmade import record
    from tests.eval.handmade import write_run as write_pg

    path = write_pg(tmp_path / "pg", "oracle", [record("t0", "object_count", True)])
    with pytest.raises(InputError, match=r"'urbanground'.*'posegraph360'"):
        build_report([path], resamples=10, layout="urbanground")


def test_end_to_end_eval_then_report(tmp_path, capsys):
    """Oracle and random runs through ``urban-gym eval`` on a few tasks of each table's
    types, then ``urban-gym report --layout urbanground``."""
    from urban_gym.tasks.families import get_family
    from urban_gym.tasks.suite import load_suite

    tasks = load_suite(get_family("citywalk").default_suites()["helsinki"])
    ids: list[str] = []
    for ty in ("VR", "SGN", "LGN", "MSP", "DCR", "NP"):
        ids += [t.id for t in tasks if t.type == ty and "variant" not in t.meta][:1]
    ids += [t.id for t in tasks if t.type == "VR" and t.meta.get("variant")][:1]
    runs = []
    for agent in ("oracle", "random"):
        out = tmp_path / agent
        argv = ["eval", CW_ID, "--out", str(out), "--agent", agent, "--no-progress"]
        assert main([*argv, "--task-ids", ",".join(ids)]) == 0
        runs.append(str(out))
    rep = tmp_path / "report"
    argv = ["report", *runs, "--out", str(rep), "--layout", "urbanground"]
    assert main([*argv, "--no-gifs", "--no-plots", "--resamples", "200"]) == 0
    printed = capsys.readouterr().out
    md = (rep / "report.md").read_text()
    for h in ("Table 1", "Table 2", "Table 3", "Table 4"):
        assert f"### {h}" in md and f"### {h}" in printed
    data = json.loads((rep / "report.json").read_text())
    assert data["layout"] == "urbanground"
    oracle = data["results"]["oracle"]["layout"]
    assert oracle["table2"]["SN"]["mean"] == 1.0  # the oracle solves its tasks
    assert oracle["taxonomy"]["failed"] == 0
    random = data["results"]["random"]["layout"]
    failed = sum(
        1
        for r in RunDir(runs[1]).read_episodes()
        if r["task_type"] in ("LGN", "NP") and not r["is_success"]
    )
    assert random["taxonomy"]["failed"] == failed
    assert main(["report", runs[0], "--out", str(rep), "--layout", "nope", "--no-gifs"]) == 2
    assert "'nope'" in capsys.readouterr().err
