"""The report's stage 5 of the strict-JSON protocol: the boxes of a run's landmark_bbox
episodes read in one coordinate scale for the whole run, original and compatible results
side by side (hand-made records, then a real run of an agent answering in [0, 1000])."""

from __future__ import annotations

import json

import pytest

from urban_gym.eval.report import build_report, format_markdown
from urban_gym.eval.runner import run
from urban_gym.families.posegraph360.report import run_box_scores, view_frame

T1, T2, T3 = [0.1, 0.2, 0.3, 0.4], [0.5, 0.5, 0.7, 0.9], [0.6, 0.1, 0.8, 0.3]


def rec(truth, box):
    answer = None if box is None else json.dumps({"bbox_xyxy_norm": box})
    return {"task_type": "landmark_bbox", "task_info": {"bbox": truth}, "answer": answer}


def test_a_per_mille_run_is_read_as_per_mille():
    # 900 > 768: not pixels of the 768x768 view, so the run is [0, 1000]
    recs = [rec(T1, [100, 200, 300, 400]), rec(T2, [500, 500, 700, 900]), rec(T3, None)]
    g = run_box_scores(recs, (768, 768))
    assert (g["episodes"], g["answered"], g["scale"]) == (3, 2, "per_mille")
    assert g["original"] == {"acc50": 0.0, "mean_iou": 0.0}  # none is normalised as given
    assert g["compatible"]["acc50"] == pytest.approx(2 / 3)  # the third has no box
    assert g["compatible"]["mean_iou"] == pytest.approx(2 / 3)


def test_pixel_boxes_are_read_against_the_view():
    px = [[v * 768 for v in T1], [v * 768 for v in T2]]  # T2's y1 = 691.2 px
    recs = [rec(T1, px[0]), rec(T2, px[1])]
    g = run_box_scores(recs, (768, 768))
    assert g["scale"] == "pixels" and g["compatible"]["acc50"] == 1.0
    assert g["compatible"]["mean_iou"] == pytest.approx(1.0)
    # against the protocol's 640x480 frame 691.2 does not fit: read as [0, 1000], wrong
    assert run_box_scores(recs, (640, 480))["scale"] == "per_mille"


def test_no_box_task_no_section_and_the_view_frame():
    assert run_box_scores([{"task_type": "vln", "task_info": {}}], (512, 512)) is None
    assert view_frame({"view_size": 96}) == (96, 96)
    assert view_frame({"view_size": [120, 80]}) == (120, 80)
    assert view_frame({}) == (512, 512)  # PoseGraph360Env's default


class PerMilleBoxes:
    """Answers the true box of a landmark_bbox task, written in [0, 1000]."""

    def reset(self, env, task):
        self.task = task

    def act(self, obs, info):
        box = [round(1000 * v, 1) for v in self.task.goal["bbox"]]
        return {"action": "ANSWER", "text": json.dumps({"bbox_xyxy_norm": box})}


def test_a_run_answering_in_per_mille_is_compatible_but_not_original(tmp_path):
    ids = [f"landmark_bbox-easy-00{i}" for i in range(3)]
    res = run(
        "UrbanGym/PoseGraph360-v0",
        tmp_path,
        agent="tests.families.posegraph360.test_report:PerMilleBoxes",
        env_kwargs={"suite": "helsinki-grounded", "view_size": 32, "pano_width": 128},
        task_ids=ids,
        track_visibility=False,
        progress=False,
    )
    assert res.successes == 0  # the env scores each box as given
    rep = build_report([tmp_path], resamples=200, failures=False)
    (g,) = [r["grounded_boxes"] for r in rep["results"].values()]
    assert (g["episodes"], g["answered"], g["scale"], g["frame"]) == (3, 3, "per_mille", [32, 32])
    assert g["original"]["acc50"] == 0.0 and g["compatible"]["acc50"] == 1.0
    assert g["compatible"]["mean_iou"] == pytest.approx(1.0, abs=1e-3)
    md = format_markdown(rep)
    assert "Grounded boxes" in md and "| compatible (run-level scale) | 100.0% |" in md


def test_the_report_sets_the_runs_tasks_beside_the_papers_statistics(tmp_path):
    """The report prints the calibration of the run's tasks against 360CityArena's
    section 3.3 -- the shipped suite's hard map navigation keeps its decision-point gap
    visible there, not only on the fidelity page -- and drops the table when the suite
    changed after the run.
    """
    from urban_gym.families.posegraph360.report import task_calibration
    from urban_gym.families.posegraph360.tasks.suites import suite_path
    from urban_gym.tasks.suite import load_suite

    tasks = [t for t in load_suite(suite_path("helsinki")) if t.type == "map_navigation"]
    hard = [t for t in tasks if t.difficulty == "hard"]
    import hashlib

    sha = hashlib.sha256(suite_path("helsinki").read_bytes()).hexdigest()
    manifest = {"suite": {"path": str(suite_path("helsinki")), "sha256": sha}}
    rows = task_calibration(manifest, {t.id for t in hard})
    by = {r["statistic"]: r for r in rows}
    assert set(by) == {"route_length_m", "decision_points"}
    mean_dp = sum(t.meta["decision_points"] for t in hard) / len(hard)
    assert by["decision_points"]["ours"] == pytest.approx(mean_dp)
    assert by["decision_points"]["paper"] == 9.0 and by["route_length_m"]["paper"] == 347.0
    assert by["decision_points"]["ok"] is (abs(mean_dp / 9.0 - 1) <= 0.15)
    from urban_gym.tasks.families import get_family

    lines = "\n".join(get_family("posegraph360").report_markdown({"task_calibration": rows}))
    assert "| map_navigation | hard | decision_points |" in lines
    changed = tmp_path / "suite.jsonl"
    changed.write_text(suite_path("helsinki").read_text()[:-1])
    assert task_calibration({"suite": {"path": str(changed), "sha256": "0" * 64}}, {"x"}) is None
    assert task_calibration({"suite": {"path": str(tmp_path / "gone.jsonl")}}, {"x"}) is None
    # a manifest that gives no hash of its suite is not trusted to name a file to read
    assert task_calibration({"suite": {"path": str(suite_path("helsinki"))}}, {"x"}) is None
