"""``urban-gym report --layout grounded``: the strict-JSON grounding protocol's image and
video columns and dual metrics with CIs, original and compatible side by side, on a
hand-made run folder whose every cell is worked out in the comments.
"""

from __future__ import annotations

import json
from pathlib import Path

from urban_gym.cli import main
from urban_gym.eval.records import RunDir
from urban_gym.eval.report import build_report, format_markdown

BOX, BOX2 = [0.1, 0.2, 0.3, 0.4], [0.5, 0.5, 0.7, 0.9]
BEHAVIOURS = {
    "answers": [
        {"option_id": "A", "intervals_sec": [[0.0, 1.2]]},
        {"option_id": "C", "intervals_sec": [[3.4, 5.0]]},
    ]
}
VISIBLE = {"visible_count": 2, "visible_intervals_sec": [[0.0, 9.1], [17.7, 26.8]]}


def rec(task_id, ttype, truth, answer, group, key, state):
    return {
        "task_id": task_id,
        "seed": 0,
        "repeat": 0,
        "key": f"{task_id}__s0__r0",
        "family": "posegraph360",
        "task_type": ttype,
        "difficulty": "easy",
        "category": ttype,
        "kind": "question",
        "termination": "answered",
        "is_success": False,
        "metrics": {"success": 0.0},
        "steps": 1,
        "tokens": {},
        "answer": answer if isinstance(answer, str) else json.dumps(answer),
        "task_info": {
            "truth": json.dumps(truth),
            "pair": {"group": group, "key": key, "state": state},
        },
    }


RECORDS = [
    # the agent-state image task: option right; its box in [0, 1000] -- invalid as given,
    # a hit once the run is read as [0, 1000] (y 900 > 480 rules out 640x480 pixels)
    rec(
        "rp-1",
        "relative_position",
        {"answer_option_id": "A", "bbox_xyxy_norm": BOX},
        {"answer_option_id": "A", "bbox_xyxy_norm": [100, 200, 300, 400]},
        "position",
        "k1",
        "agent",
    ),
    # its world-state partner, fenced with synonym keys: unreadable strictly (0, 0), right
    # on both counts after the audit
    rec(
        "sp-1",
        "self_position",
        {"answer_option_id": "B", "bbox_xyxy_norm": BOX2},
        '```json\n{"choice": "B", "bbox": [500, 500, 700, 900]}\n```',
        "position",
        "k1",
        "world",
    ),
    # the video pair: composite exact (Composite Acc 1, F1 1, tIoU 1); visibility count
    # right with one of two intervals (Segment F1 2/3 >= 0.5, mean tIoU 1/2)
    rec("cb-1", "composite_behaviour", BEHAVIOURS, BEHAVIOURS, "video", "w1", "agent"),
    rec(
        "lv-1",
        "landmark_visibility",
        VISIBLE,
        {"visible_count": 2, "visible_intervals_sec": [[0.0, 9.1]]},
        "video",
        "w1",
        "world",
    ),
]


def write_run(path: Path) -> Path:
    d = RunDir(path)
    d.write_manifest(
        {
            "env_id": "UrbanGym/PoseGraph360-v0",
            "family": "posegraph360",
            "agent": {
                "spec": "lmm",
                "kind": "lmm",
                "config": {"model": "m", "preset": {"name": "grounded", "row": "low"}},
            },
            "env_kwargs": {"view_size": [640, 480]},
            "episodes": len(RECORDS),
        }
    )
    for r in RECORDS:
        d.append(r)
    d.close()
    return path


def test_the_grounded_layout_worked_by_hand(tmp_path):
    run = write_run(tmp_path / "run")
    rep = build_report([run], resamples=200, failures=False, layout="grounded")
    (res,) = [r["layout"] for r in rep["results"].values()]
    assert res["scale"] == "per_mille" and res["low_reasoning"] is True
    rp = res["tasks"]["relative_position"]
    assert rp["original"]["option_correct"]["mean"] == 1.0
    assert rp["original"]["bbox_hit"]["mean"] == 0.0 and rp["compatible"]["bbox_hit"]["mean"] == 1.0
    sp = res["tasks"]["self_position"]
    assert sp["original"]["option_correct"]["mean"] == 0.0
    assert sp["compatible"]["option_correct"]["mean"] == 1.0
    assert sp["compatible"]["bbox_iou"]["mean"] == 1.0
    lv = res["tasks"]["landmark_visibility"]["original"]
    assert lv["count_correct"]["mean"] == 1.0 and abs(lv["segment_f1"]["mean"] - 2 / 3) < 1e-6
    assert lv["mean_tiou"]["mean"] == 0.5
    # dual, original: position pair semantic 1 x 0 -> 0, evidence 0 x 0 -> 0; video pair
    # 1, 1 -> overall 1/2 and 1/2. Compatible: both pairs right on both -> 1, 1
    o, c = res["dual"]["original"], res["dual"]["compatible"]
    assert o["groups"]["position"]["dual_semantic"]["mean"] == 0.0
    assert o["groups"]["video"]["dual_evidence"]["mean"] == 1.0
    assert (o["overall"]["dual_semantic"]["mean"], o["overall"]["dual_evidence"]["mean"]) == (
        0.5,
        0.5,
    )
    assert (c["overall"]["dual_semantic"]["mean"], c["overall"]["dual_evidence"]["mean"]) == (
        1.0,
        1.0,
    )
    md = format_markdown(rep)
    for heading in (
        "Option Acc",
        "BBox Acc@0.5",
        "BBox mIoU",
        "Composite Acc",
        "Temporal F1@0.5",
        "Count Acc",
        "Segment F1@0.5",
        "mean tIoU",
        "Dual Semantic",
        "Dual Evidence",
    ):
        assert heading in md, heading
    row = next(line for line in md.splitlines() if "| relative_position |" in line)
    # the option is the same both ways; the box 0% as given -> 100% at the run's scale
    assert "(T)" in row and "| 100.0% [100.0, 100.0] |" in row
    assert "0.0% [0.0, 0.0] -> 100.0% [100.0, 100.0]" in row


def test_report_command_prints_the_layout(tmp_path, capsys):
    run = write_run(tmp_path / "run")
    argv = ["report", str(run), "--layout", "grounded", "--resamples", "100", "--no-failures"]
    assert main([*argv, "--no-plots", "--no-gifs", "--out", str(tmp_path / "rep")]) == 0
    out = capsys.readouterr().out
    assert "### Image tasks" in out and "### Video: landmark_visibility" in out
    assert "Dual Semantic" in out
