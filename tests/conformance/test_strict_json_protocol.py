"""Conformance with the strict-JSON grounding protocol: reasoning tags,
grounded metrics and stage 5 (run-level coordinate normalisation).

The protocol accepts "JSON objects embedded in prose or Markdown fences after removing
reasoning tags": what a model writes inside a reasoning block is not its reply.
"""

from __future__ import annotations

import pytest

from urban_gym.families.posegraph360.actions import make_action_set
from urban_gym.tasks import metrics as m
from urban_gym.tasks.grounding import normalise_run, resolve_scale, score_run_boxes
from urban_gym.wrappers.parsing import parse_reply, strip_reasoning

ACTIONS = make_action_set()


def test_the_action_after_a_think_block_executes_not_the_one_inside_it():
    r = parse_reply('<think>{"action":"D"}</think>{"action":"A"}', ACTIONS)
    assert r.ok and r.action["action"] == "A"
    assert r.reasoning_chars == len('<think>{"action":"D"}</think>')


@pytest.mark.parametrize(
    "reply",
    [
        '<reasoning>I will press {"action": "D"}</reasoning>\n{"action": "A"}',
        '<THINKING>\n{"action": "D"}\n</THINKING>```json\n{"action": "A"}\n```',
        '<think type="long">{"action":"D"}</think> Final: {"action": "A"}',
        '<analysis>{"action":"D"}</analysis><reflection>{"action":"W"}</reflection>{"action":"A"}',
        # a chat template opened the block: only its closing tag is in the reply
        'first {"action": "D"} then no </think>{"action": "A"}',
    ],
)
def test_reasoning_blocks_of_any_name_are_removed(reply):
    r = parse_reply(reply, ACTIONS)
    assert r.ok and r.action["action"] == "A", reply


def test_a_reply_that_is_only_reasoning_is_invalid_with_a_clear_message():
    r = parse_reply('<think>{"action": "D"}', ACTIONS)  # cut off inside the block
    assert not r.ok and "only reasoning" in r.error
    r = parse_reply('<think>{"action": "D"}</think>', ACTIONS)
    assert not r.ok and "only reasoning" in r.error


def test_text_without_tags_is_unchanged():
    text = '{"thought": "a < b and b > c", "action": "W"}'
    assert strip_reasoning(text) is text
    assert parse_reply(text, ACTIONS).action["action"] == "W"


# ------------------------------------------------------------------ metrics
# The protocol's output examples: {"answer_option_id":"A","bbox_xyxy_norm":[0.1,0.2,0.3,0.4]},
# {"answers":[{"option_id":"A","intervals_sec":[[0.0,1.2]]},{"option_id":"C",
# "intervals_sec":[[3.4,5.0]]}]} and {"visible_count":2,"visible_intervals_sec":[[0.0,9.1],
# [17.7,26.8]]}. Expected values are worked by hand in the comments.


VISIBLE = [[0.0, 9.1], [17.7, 26.8]]
BEHAVIOURS = {"A": [[0.0, 1.2]], "C": [[3.4, 5.0]]}
BOX = [0.1, 0.2, 0.3, 0.4]


def test_temporal_f1_is_one_to_one_matching_not_time_coverage():
    # one long prediction over two true intervals covers 8 of its 10 s
    # (coverage F1 = 2*0.8*1/1.8 = 0.889), but its tIoU with each is 4/10 < 0.5: F1 = 0
    assert m.temporal_f1([[0, 10]], [[0, 4], [5, 9]]) == 0.0
    assert m.temporal_interval_f1([(0, 10)], [(0, 4), (5, 9)]) == 0.0
    # one prediction can match one truth only: two copies of a true interval -> TP 1
    assert m.temporal_f1([[0.0, 9.1], [0.0, 9.1]], [[0.0, 9.1]]) == pytest.approx(2 / 3)


def test_landmark_visibility_example():
    assert m.count_accuracy(2, 2) == 1.0 and m.count_accuracy("2", 2) == 1.0
    assert m.temporal_f1(VISIBLE, VISIBLE) == 1.0 and m.mean_tiou(VISIBLE, VISIBLE) == 1.0
    # only the first interval: count wrong; TP 1 of 1 predicted and 2 true -> F1 2/3;
    # mean tIoU = (1.0 + 0) / 2
    assert m.count_accuracy(1, 2) == 0.0
    assert m.temporal_f1([[0.0, 9.1]], VISIBLE) == pytest.approx(2 / 3)
    assert m.mean_tiou([[0.0, 9.1]], VISIBLE) == pytest.approx(0.5)
    # one interval over both: tIoU 9.1/26.8 = 0.34 with each -> no match at 0.5
    assert m.temporal_f1([[0.0, 26.8]], VISIBLE) == 0.0
    assert m.mean_tiou([[0.0, 26.8]], VISIBLE) == pytest.approx(9.1 / 26.8 / 2)
    # tIoU 0.5 exactly counts: [0, 9.1] against [0, 18.2]
    assert m.temporal_iou([0.0, 9.1], [0.0, 18.2]) == pytest.approx(0.5)
    assert m.temporal_f1([[0.0, 18.2]], [[0.0, 9.1]]) == 1.0


def test_behaviour_intervals_are_matched_within_their_class():
    assert m.temporal_f1(BEHAVIOURS, BEHAVIOURS) == 1.0
    swapped = {"A": [[3.4, 5.0]], "C": [[0.0, 1.2]]}
    assert m.temporal_f1(swapped, BEHAVIOURS) == 0.0  # right times, wrong classes
    assert m.mean_tiou(swapped, BEHAVIOURS) == 0.0
    # an extra predicted class counts as a false positive: TP 2, 3 predicted, 2 true
    extra = {**BEHAVIOURS, "B": [[6.0, 7.0]]}
    assert m.temporal_f1(extra, BEHAVIOURS) == pytest.approx(4 / 5)
    assert m.mean_tiou(extra, BEHAVIOURS) == pytest.approx(2 / 3)


def test_bbox_acc_at_half_iou_and_mean_iou():
    shifted = [0.2, 0.2, 0.4, 0.4]  # intersection 0.1 x 0.2, union 0.06 -> IoU 1/3
    assert m.bbox_iou(shifted, BOX) == pytest.approx(1 / 3)
    preds, truth = [BOX, shifted, None], [BOX, BOX, BOX]
    assert m.bbox_accuracy(preds, truth) == pytest.approx(1 / 3)
    assert m.bbox_mean_iou(preds, truth) == pytest.approx((1 + 1 / 3 + 0) / 3)


def test_stage_5_decides_the_scale_once_per_run_and_keeps_both_results():
    # a [0,1000] run (a box reaches x = 900 > 640): converted; the original is invalid
    run = [[100, 200, 300, 400], [700, 100, 900, 300]]
    truth = [BOX, [0.7, 0.1, 0.9, 0.3]]
    assert resolve_scale(run) == "per_mille"
    s = score_run_boxes(run, truth)
    assert s["original"]["acc50"] == 0.0 and s["compatible"]["acc50"] == 1.0
    # a 640x480 pixel run: [64, 96, 192, 192] / (640, 480, 640, 480) = the example box
    px = normalise_run([[64, 96, 192, 192]])
    assert px.scale == "pixels" and px.compatible[0] == pytest.approx(BOX)
    # the same numbers from a model documented to use [0, 1000]
    pm = normalise_run([[64, 96, 192, 192]], documented="per_mille")
    assert pm.compatible[0] == pytest.approx([0.064, 0.096, 0.192, 0.192])
    # reversed corners are reordered; the original keeps them invalid
    rev = normalise_run([[0.3, 0.4, 0.1, 0.2]])
    assert rev.scale == "unit" and rev.compatible[0] == pytest.approx(BOX)
    assert rev.original == [None]


def test_stage_5_repairs_no_single_box_and_keeps_invalid_boxes_invalid():
    # a normalised box beside a pixel box: the run mixes scales, so it is ambiguous; no
    # box is converted (the pixel box stays invalid) and the normalised one counts as given
    mixed = normalise_run([BOX, [64, 96, 192, 192]])
    assert mixed.scale == "ambiguous"
    assert mixed.compatible == [tuple(BOX), None]
    assert mixed.original == [tuple(BOX), None]
    # beyond [0, 1000]: ambiguous, every box invalid; non-finite and degenerate: invalid
    assert normalise_run([[0, 0, 2000, 10]]).compatible == [None]
    bad = normalise_run([[0.1, 0.2, float("nan"), 0.4], [0.1, 0.2, 0.1, 0.4], [0.5, 0.5]])
    assert bad.compatible == [None, None, None]
