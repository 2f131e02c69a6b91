"""Conformance with the strict-JSON grounding protocol's run-level scoring: the
matched-context dual metrics ("Matched-context Dual Metrics"), the five-stage parser and
run-level coordinate normalisation with original and compatible scores ("Compatibility
Audit", "5-Stage Fallback Parsing Algorithm", "Accepted Forms", "Still Invalid"), and the
inference-mode preset ("Inference Mode Protocol"). Every expected value is worked by hand
in the comments.
"""

from __future__ import annotations

import json

import pytest

from urban_gym.eval.dual import dual_metrics, pair_outcomes
from urban_gym.eval.grounded import (
    ATOMIC,
    COMPOSITE,
    OPTION_BOX,
    VISIBILITY,
    read_compatible,
    read_original,
    score_run,
)
from urban_gym.tasks.metrics import label_set_f1

BOX = [0.1, 0.2, 0.3, 0.4]  # the protocol's example box
CANON = '{"answer_option_id":"A","bbox_xyxy_norm":[0.1,0.2,0.3,0.4]}'


# ------------------------------------------------------------------ dual metrics
def rec(task, group, key, state, sem, evi, repeat=0):
    pair = None if group is None else {"group": group, "key": key, "state": state}
    return {
        "task_id": task,
        "repeat": repeat,
        "task_info": {"pair": pair} if pair else {},
        "metrics": {"semantic_ok": float(sem), "evidence_ok": float(evi)},
    }


RECORDS = [
    # position k1: both semantic right, the world-state box wrong -> semantic 1, evidence 0
    rec("rp-1", "position", "k1", "agent", 1, 1),
    rec("sp-1", "position", "k1", "world", 1, 0),
    # position k2: the agent-state option wrong -> semantic 0, evidence 1
    rec("rp-2", "position", "k2", "agent", 0, 1),
    rec("sp-2", "position", "k2", "world", 1, 1),
    # action-observation a1: all right -> 1, 1
    rec("fo-1", "action_observation", "a1", "agent", 1, 1),
    rec("ad-1", "action_observation", "a1", "world", 1, 1),
    # video w1: composite and atomic (agent) and visibility (world); the atomic intervals
    # miss -> semantic 1, evidence 0 (every applicable level must reach F1@0.5 >= 0.5)
    rec("cb-1", "video", "w1", "agent", 1, 1),
    rec("ab-1", "video", "w1", "agent", 1, 0),
    rec("lv-1", "video", "w1", "world", 1, 1),
    # unpaired: an agent-state task whose world-state partner is missing, and no pair
    rec("rp-3", "position", "k3", "agent", 1, 1),
    rec("bbox-1", None, None, None, 1, 1),
]


def test_dual_metrics_worked_by_hand():
    d = dual_metrics(RECORDS, resamples=200)
    assert d["pairs"] == 4 and d["unpaired"] == {"-": 1, "position": 1}
    g = d["groups"]
    assert list(g) == ["position", "action_observation", "video"]
    assert g["position"]["dual_semantic"]["mean"] == 0.5  # (1 + 0) / 2
    assert g["position"]["dual_evidence"]["mean"] == 0.5  # (0 + 1) / 2
    assert g["action_observation"]["dual_semantic"]["mean"] == 1.0
    assert (g["video"]["dual_semantic"]["mean"], g["video"]["dual_evidence"]["mean"]) == (1, 0)
    # overall over the four pairs: semantic (1+0+1+1)/4, evidence (0+1+1+0)/4
    assert d["overall"]["dual_semantic"]["mean"] == 0.75
    assert d["overall"]["dual_evidence"]["mean"] == 0.5
    o = d["overall"]["dual_semantic"]
    assert 0.0 <= o["low"] <= 0.75 <= o["high"] <= 1.0 and o["pairs"] == 4


def test_pairs_match_repeats_and_missing_metrics_count_as_wrong():
    recs = [
        rec("rp-1", "position", "k1", "agent", 1, 1, repeat=0),
        rec("sp-1", "position", "k1", "world", 1, 1, repeat=0),
        rec("rp-1", "position", "k1", "agent", 1, 1, repeat=1),  # its partner errored out
    ]
    recs[1]["metrics"] = {}  # no semantic_ok: not right
    pairs, unpaired = pair_outcomes(recs)
    assert [(p.repeat, p.semantic, p.evidence) for p in pairs] == [(0, 0.0, 0.0)]
    assert pairs[0].tasks == ("rp-1", "sp-1") and unpaired == {"position": 1}
    # a malformed state is no pair at all
    bad = rec("x", "position", "k", "agent", 1, 1)
    bad["task_info"]["pair"]["state"] = "both"
    assert pair_outcomes([bad])[1] == {"-": 1}


def test_no_pairs_gives_empty_cells():
    d = dual_metrics([rec("rp-3", "position", "k3", "agent", 1, 1)], resamples=50)
    assert d["pairs"] == 0 and d["groups"] == {}
    assert d["overall"]["dual_semantic"] == {"mean": None, "low": None, "high": None, "pairs": 0}


# ------------------------------------------------------------------ parser stages 1-4
@pytest.mark.parametrize(
    ("text", "stage"),
    [
        (CANON, "json"),
        (f"```json\n{CANON}\n```", "fence"),  # stage 2: markdown fence
        (f"The landmark is on the left. {CANON} That is my answer.", "braces"),  # stage 3
        ('<think>{"answer_option_id":"B","bbox_xyxy_norm":[0,0,1,1]}</think>' + CANON, "json"),
    ],
)
def test_the_canonical_answer_is_found_by_the_stages(text, stage):
    got = read_compatible(text, OPTION_BOX)
    assert got.stage == stage and got.answer == {"option": "A", "box": BOX}
    # only the bare canonical object is original (strict json.loads of the stripped text)
    assert (read_original(text, OPTION_BOX) is not None) == (text == CANON)


@pytest.mark.parametrize(
    "value",
    [
        {"choice": "a", "bbox": BOX},
        {"Answer": "A", "bounding_box": BOX},
        {"answer": "A", "box": BOX},
        {"answer_option_id": "A", "bbox_norm": BOX},
        {"answers": [{"answer_option_id": "A", "bbox_xyxy_norm": BOX}]},  # singleton array
        [{"answer_option_id": "A", "bbox_xyxy_norm": BOX}],
    ],
)
def test_stage_4_maps_the_documented_synonyms(value):
    text = json.dumps(value)
    assert read_compatible(text, OPTION_BOX).answer == {"option": "A", "box": BOX}
    # not the canonical contract: strictly, no box (the canonical option id alone reads)
    strict = read_original(text, OPTION_BOX)
    assert strict is None or strict == {"option": "A", "box": None}


def test_still_invalid_without_a_recoverable_json_object():
    for text in ("I think it is A, top left.", "", None, '{"answer_option_id": "A",'):
        assert read_compatible(text, OPTION_BOX).answer is None
    # two answers in one array are not a singleton: not read
    two = json.dumps({"answers": [{"choice": "A"}, {"choice": "B"}]})
    assert read_compatible(two, OPTION_BOX).answer is None


def test_video_answers_read_canonically():
    comp = '{"answers":[{"option_id":"A","intervals_sec":[[0.0,1.2]]},{"option_id":"C","intervals_sec":[[3.4,5.0]]}]}'
    assert read_original(comp, COMPOSITE) == {"labels": {"A": [[0.0, 1.2]], "C": [[3.4, 5.0]]}}
    vis = '{"visible_count":2,"visible_intervals_sec":[[0.0,9.1],[17.7,26.8]]}'
    want = {"count": 2, "intervals": [[0.0, 9.1], [17.7, 26.8]]}
    assert read_original(vis, VISIBILITY) == want
    assert read_compatible(f"Answer:\n```\n{vis}\n```", VISIBILITY).answer == want
    # a non-finite time is no interval (json.loads reads NaN): the list is unreadable
    assert read_original('{"visible_count":1,"visible_intervals_sec":[[0,NaN]]}', VISIBILITY) == {
        "count": 1,
        "intervals": None,
    }


# ------------------------------------------------------------------ stage 5 and scores
KINDS = {"relative_position": OPTION_BOX, "future_observation": OPTION_BOX}


def image(answer, truth_box=BOX, option="A", ttype="relative_position", cands=None):
    info = {"truth": json.dumps({"answer_option_id": option, "bbox_xyxy_norm": truth_box})}
    if cands is not None:
        info["candidate_bboxes"] = cands
    text = answer if isinstance(answer, str) or answer is None else json.dumps(answer)
    return {"task_type": ttype, "answer": text, "task_info": info}


def hits(scores, which="bbox_hit"):
    return [None if s is None else s[which] for s in scores]


def test_a_per_mille_run_is_compatible_but_not_original():
    # 900 > 640: not pixels of the 640x480 frame, so [0, 1000]
    recs = [
        image({"answer_option_id": "A", "bbox_xyxy_norm": [100, 200, 300, 400]}),
        image(
            {"answer_option_id": "B", "bbox_xyxy_norm": [700, 100, 900, 300]}, [0.7, 0.1, 0.9, 0.3]
        ),
    ]
    s = score_run(recs, KINDS)
    assert s.scale == "per_mille"
    assert hits(s.original) == [0.0, 0.0] and hits(s.compatible) == [1.0, 1.0]
    # the option is scored the same both ways: A right, B wrong
    assert hits(s.compatible, "option_correct") == [1.0, 0.0] == hits(s.original, "option_correct")


def test_pixel_boxes_of_the_640x480_view_and_reversed_corners():
    # [64, 96, 192, 192] / (640, 480, 640, 480) = the example box
    s = score_run([image({"answer_option_id": "A", "bbox_xyxy_norm": [64, 96, 192, 192]})], KINDS)
    assert s.scale == "pixels" and s.compatible[0]["bbox_iou"] == pytest.approx(1.0)
    assert s.original[0]["bbox_iou"] == 0.0
    # reversed corners: reordered by the compatible reading, invalid as given
    r = score_run([image({"answer_option_id": "A", "bbox_xyxy_norm": [0.3, 0.4, 0.1, 0.2]})], KINDS)
    assert r.scale == "unit" and r.compatible[0]["bbox_iou"] == pytest.approx(1.0)
    assert r.original[0]["bbox_hit"] == 0.0


def test_degenerate_out_of_range_and_mixed_runs_stay_invalid():
    degenerate = image({"answer_option_id": "A", "bbox_xyxy_norm": [0.1, 0.2, 0.1, 0.4]})
    s = score_run([degenerate], KINDS)
    assert s.original[0]["bbox_iou"] == s.compatible[0]["bbox_iou"] == 0.0
    assert s.compatible[0]["option_correct"] == 1.0  # the option still scores
    # beyond [0, 1000]: ambiguous, nothing converted
    far = score_run([image({"answer_option_id": "A", "bbox_xyxy_norm": [0, 0, 2000, 10]})], KINDS)
    assert far.scale == "ambiguous" and far.compatible[0]["bbox_iou"] == 0.0
    # a normalised box and a pixel box in one run: ambiguous; the pixel box is not
    # converted, the normalised one counts as given (no box repaired on its own)
    mixed = [
        image({"answer_option_id": "A", "bbox_xyxy_norm": BOX}),
        image({"answer_option_id": "A", "bbox_xyxy_norm": [64, 96, 192, 192]}),
    ]
    m = score_run(mixed, KINDS)
    assert m.scale == "ambiguous" and hits(m.compatible) == [1.0, 0.0] == hits(m.original)


def test_future_observation_box_is_scored_in_the_chosen_candidate():
    cands = {"A": BOX, "B": [0.5, 0.5, 0.7, 0.7]}
    # the model picks B (wrong) and boxes the landmark as it appears in B: localisation
    # credit in B, option wrong; an unknown candidate gets no localisation credit
    recs = [
        image(
            {"answer_option_id": "B", "bbox_xyxy_norm": [0.5, 0.5, 0.7, 0.7]},
            cands=cands,
            ttype="future_observation",
        ),
        image(
            {"answer_option_id": "Z", "bbox_xyxy_norm": BOX},
            cands=cands,
            ttype="future_observation",
        ),
    ]
    s = score_run(recs, KINDS)
    assert hits(s.compatible) == [1.0, 0.0]
    assert hits(s.compatible, "option_correct") == [0.0, 0.0]


def video(kind, truth, answer):
    return {
        "task_type": kind,
        "answer": json.dumps(answer),
        "task_info": {"truth": json.dumps(truth)},
    }


def test_video_scores_worked_by_hand():
    truth = {
        "answers": [
            {"option_id": "A", "intervals_sec": [[0.0, 1.2]]},
            {"option_id": "C", "intervals_sec": [[3.4, 5.0]]},
        ]
    }
    extra = {"answers": truth["answers"] + [{"option_id": "D", "intervals_sec": [[6.0, 7.0]]}]}
    only_a = {"answers": truth["answers"][:1]}
    kinds = {
        "composite_behaviour": COMPOSITE,
        "atomic_behaviour": ATOMIC,
        "landmark_visibility": VISIBILITY,
    }
    vis_truth = {"visible_count": 2, "visible_intervals_sec": [[0.0, 9.1], [17.7, 26.8]]}
    recs = [
        video("composite_behaviour", truth, truth),
        # an extra class D: set wrong; TP 2 of 3 predicted and 2 true -> F1 4/5; the
        # matched tIoUs 1 + 1 over max(3, 2) = 2/3
        video("composite_behaviour", truth, extra),
        # only A: label-set F1 2*1/(1+2) = 2/3 (not the whole set: semantic wrong);
        # temporal F1 2/3 >= 0.5: evidence right
        video("atomic_behaviour", truth, only_a),
        # count right, one interval of two: segment F1 2/3, mean tIoU 1/2
        video(
            "landmark_visibility",
            vis_truth,
            {"visible_count": 2, "visible_intervals_sec": [[0.0, 9.1]]},
        ),
    ]
    s = score_run(recs, kinds)
    a, b, c, d = s.compatible
    assert (a["composite_correct"], a["temporal_f1"], a["mean_tiou"]) == (1.0, 1.0, 1.0)
    assert b["composite_correct"] == 0.0 and b["temporal_f1"] == pytest.approx(0.8)
    assert b["mean_tiou"] == pytest.approx(2 / 3) and b["evidence_ok"] == 1.0
    assert c["atomic_f1"] == pytest.approx(2 / 3) and c["temporal_f1"] == pytest.approx(2 / 3)
    assert (c["semantic_ok"], c["evidence_ok"]) == (0.0, 1.0)
    assert (d["count_correct"], d["segment_f1"]) == (1.0, pytest.approx(2 / 3))
    assert d["mean_tiou"] == pytest.approx(0.5)
    assert s.original == s.compatible  # every answer is canonical
    assert label_set_f1([], []) == 1.0


def test_records_without_truth_or_kind_are_not_scored():
    recs = [
        {"task_type": "relative_position", "answer": CANON, "task_info": {}},
        {"task_type": "vln"},
    ]
    s = score_run(recs, KINDS)
    assert s.original == [None, None] and s.scale == "none"
    with pytest.raises(ValueError, match="'nope'"):
        score_run([], {"x": "nope"})


# ------------------------------------------------------------------ inference modes
def test_preset_grounded_runs_instant_by_default_and_marks_low_effort():
    from urban_gym.baselines.lmm.agent import LMMAgent
    from urban_gym.cli import build_parser
    from urban_gym.errors import InputError
    from urban_gym.eval.presets import agent_options

    def options(*extra):
        args = build_parser().parse_args(
            ["eval", "UrbanGym/PoseGraph360-v0", "--out", "x", "--agent", "lmm", *extra]
        )
        return agent_options(args)

    # Instant for any model: 2,048 output tokens, no reasoning field in the request
    opts = options("--preset", "grounded", "--model", "qwen3-vl-8b-instruct")
    assert opts["max_tokens"] == 2048 and "extra_body" not in opts
    cfg = LMMAgent(**{"base_url": "http://127.0.0.1:9", **opts}).config()
    assert cfg["max_tokens"] == 2048 and cfg["model"] == "qwen3-vl-8b-instruct"
    assert (cfg["preset"]["name"], cfg["preset"]["row"]) == ("grounded", "instant")
    # a reasoning-only endpoint: the lowest effort, marked in the manifest's row
    low = options("--preset", "grounded:low", "--model", "o3")
    assert low["max_tokens"] == 2048 and low["extra_body"] == {"reasoning_effort": "low"}
    assert low["preset"]["row"] == "low" and "marked T" in low["preset"]["label"]
    # the user's --extra-body wins for a model whose lowest setting has another name
    minimal = options(
        "--preset",
        "grounded:low",
        "--model",
        "gpt-x",
        "--extra-body",
        '{"reasoning_effort": "minimal"}',
    )
    assert minimal["extra_body"] == {"reasoning_effort": "minimal"}
    with pytest.raises(InputError, match="'high'"):
        options("--preset", "grounded:high", "--model", "o3")


# ------------------------------------------------------------------ a suite per city
def test_generate_suite_track_grounded_and_a_bad_track(tmp_path, capsys):
    from urban_gym.cli import main
    from urban_gym.tasks.suite import load_suite

    assert main(["generate-suite", "--family", "posegraph360", "--track", "video"]) != 0
    err = capsys.readouterr().err
    assert "--track 'video' is not a track of posegraph360" in err and "grounded" in err
    out = tmp_path / "g.jsonl"
    city = "procedural:seed=3,blocks=2x2"
    argv = ["generate-suite", "--family", "posegraph360", "--track", "grounded", "--city", city]
    assert main([*argv, "--per-type", "1", "--out", str(out)]) == 0
    cap = capsys.readouterr()
    from urban_gym.families.posegraph360.tasks.types import GROUNDED_TASK_TYPES

    tasks = load_suite(out)
    assert {t.type for t in tasks} <= set(GROUNDED_TASK_TYPES) and tasks
    for tt in GROUNDED_TASK_TYPES:  # one progress line per type, on standard error
        assert f"grounded: {tt} " in cap.err
    assert f"posegraph360 grounded tasks to {out}" in cap.out


# ------------------------------------------------------------------ the language-model face
@pytest.mark.parametrize(
    ("reply", "kind", "want"),
    [
        # the canonical object beside the action: the answer text is that object
        (
            '{"action": "ANSWER", "answer_option_id": "A", "bbox_xyxy_norm": [0.1, 0.2, 0.3, 0.4]}',
            OPTION_BOX,
            {"option": "A", "box": BOX},
        ),
        # synonyms beside the action: kept whole, read by the compatible stage 4
        (
            '{"action": "ANSWER", "answer": "A", "bbox": [0.1, 0.2, 0.3, 0.4]}',
            OPTION_BOX,
            {"option": "A", "box": BOX},
        ),
        (
            '```json\n{"action": "ANSWER", "visible_count": 1, "visible_intervals_sec": [[0, 2.5]]}\n```',
            VISIBILITY,
            {"count": 1, "intervals": [[0.0, 2.5]]},
        ),
    ],
)
def test_an_answer_object_beside_the_action_reaches_the_answer_text(reply, kind, want):
    from urban_gym.families.posegraph360.actions import make_action_set
    from urban_gym.wrappers.parsing import parse_reply

    r = parse_reply(reply, make_action_set(), fill_from_fields={"*": "answer"})
    assert r.ok and r.action["action"] == "ANSWER"
    assert read_compatible(r.action["text"], kind).answer == want
    # a plain answer is untouched
    plain = parse_reply('{"action": "ANSWER", "answer": "Kamppi"}', make_action_set())
    assert plain.action["text"] == "Kamppi"
