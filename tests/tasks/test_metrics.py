"""Metrics against worked examples a person can check by hand."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from urban_gym.tasks import metrics as m


@pytest.mark.parametrize(
    "pred,truth,expected",
    [
        (10, 10, 1.0),  # exact: every threshold passes
        (9, 10, 0.8),  # 10% off: 0.1 < 1 - theta for theta in 0.50..0.85 -> 8 of 10
        (15, 10, 0.0),  # 50% off: passes none (0.5 < 1 - 0.5 is false)
        (12, 10, 0.6),  # 20% off: passes theta in 0.50..0.75 -> 6 of 10
        ("about 11 trees", 10, 0.8),  # 10% off parsed from text: theta 0.50..0.85
        (0, 0, 1.0),
        (1, 0, 0.0),  # y = 0: only an exact answer scores
        ("none", 5, 0.0),
    ],
)
def test_mean_relative_accuracy_worked_examples(pred, truth, expected):
    assert m.mean_relative_accuracy(pred, truth) == pytest.approx(expected)


@pytest.mark.parametrize("k", range(11))
@pytest.mark.parametrize("sign", [1, -1])
def test_mra_counts_the_published_thresholds(k, sign):
    """MRA = 1/10 * sum over theta in {0.50, 0.55, ..., 0.95} of [|y_hat - y| / y < 1 - theta]
    (Yang et al., "Thinking in Space", 2024). A relative error midway between two
    thresholds, 0.05 * k + 0.025, is below 1 - theta for exactly the 10 - k smallest
    thetas, whether the answer is high or low: MRA = (10 - k) / 10 (0 from k = 10 on)."""
    truth = 40.0
    pred = truth * (1.0 + sign * (0.05 * k + 0.025))
    assert m.mean_relative_accuracy(pred, truth) == pytest.approx(max(10 - k, 0) / 10)


@pytest.mark.parametrize(
    "pred,truth,expected",
    [
        (12, 8, 0.0),  # 50% off: 0.5 < 1 - 0.50 is false, so not even the first threshold
        (5, 4, 0.5),  # 25% off: 0.25 < 1 - theta for theta 0.50..0.70 only (not 0.75)
        (3, 4, 0.5),  # the same 25%, low
        (-9, -10, 0.8),  # a negative truth: |y_hat - y| / |y| = 10%
    ],
)
def test_mra_thresholds_are_strict(pred, truth, expected):
    """At a threshold exactly (0.50, 0.75: exact in binary) the inequality is strict."""
    assert m.mean_relative_accuracy(pred, truth) == pytest.approx(expected)


def test_ndtw_published_worked_example():
    # reference along a 3x4 grid row, query deviating by one cell at three points:
    # DTW = 0 + 1 + 1 + 1 = 3.0 and nDTW = exp(-3 / (4 * 3)) = 0.7788
    ref = [(0, 0), (1, 0), (2, 0), (3, 0)]
    q = [(0, 0), (1, 1), (2, 1), (3, 1)]
    assert m.dtw(q, ref) == pytest.approx(3.0)
    assert m.ndtw(q, ref, d_th=3.0) == pytest.approx(0.7788, abs=1e-4)
    assert m.sdtw(1, q, ref, 3.0) == pytest.approx(0.7788, abs=1e-4)
    assert m.sdtw(0, q, ref, 3.0) == 0.0
    assert m.ndtw(ref, ref, 3.0) == 1.0


def test_dtw_by_hand_and_unequal_lengths():
    # query 3 points along x, reference its two ends: the cost matrix is
    # [[0, 2], [1, 1], [2, 0]]; the cheapest warp 0 -> (1, 1)'s 1 via (0, 0) -> 0 is 1
    q, ref = [(0, 0), (1, 0), (2, 0)], [(0, 0), (2, 0)]
    assert m.dtw(q, ref) == 1.0
    # the reverse warp costs the same (DTW is symmetric); one point against many sums
    # its distances; an empty sequence is infinitely far
    assert m.dtw(ref, q) == 1.0
    assert m.dtw([(0, 0)], [(3, 4), (0, 0), (6, 8)]) == 5.0 + 0.0 + 10.0
    assert m.dtw([], ref) == float("inf")


def test_dtw_equals_the_textbook_table():
    # the accumulated-cost table filled cell by cell in numpy (the definition), against
    # m.dtw on random pairs of sequences of 1..30 points: the same doubles
    import numpy as np

    def table(q, r):
        q, r = np.asarray(q, float), np.asarray(r, float)
        acc = np.full((len(q) + 1, len(r) + 1), np.inf)
        acc[0, 0] = 0.0
        for i in range(1, len(q) + 1):
            for j in range(1, len(r) + 1):
                c = np.hypot(q[i - 1, 0] - r[j - 1, 0], q[i - 1, 1] - r[j - 1, 1])
                acc[i, j] = c + min(acc[i - 1, j], acc[i, j - 1], acc[i - 1, j - 1])
        return float(acc[-1, -1])

    rng = np.random.default_rng(7)
    for _ in range(60):
        q = rng.normal(size=(rng.integers(1, 31), 2)) * 40
        r = rng.normal(size=(rng.integers(1, 31), 2)) * 40
        assert m.dtw(q, r) == table(q, r)


def test_spl_worked_examples():
    assert m.spl(1, shortest=100.0, taken=200.0) == pytest.approx(0.5)
    assert m.spl(1, shortest=100.0, taken=80.0) == pytest.approx(1.0)  # can't beat 1
    assert m.spl(0, shortest=100.0, taken=100.0) == 0.0
    assert m.spl(True, shortest=0.0, taken=5.0) == 1.0


@given(
    st.booleans(),
    st.floats(0.0, 1e5, allow_nan=False),
    st.floats(0.0, 1e5, allow_nan=False),
)
def test_spl_never_exceeds_success(s, shortest, taken):
    v = m.spl(s, shortest, taken)
    assert 0.0 <= v <= float(s)


def test_decision_accuracy():
    # remaining distances before/after each of four decisions: 3 of 4 got closer
    assert m.decision_accuracy([500, 400, 350, 300], [400, 350, 380, 250]) == 0.75
    assert math.isnan(m.decision_accuracy([], []))
    with pytest.raises(ValueError, match="equal lengths"):
        m.decision_accuracy([1], [])


def test_answer_matching():
    # exact_match is 360CityArena's: the text itself (surrounding blanks aside)
    assert m.exact_match("  x:3 y:1 ", "x:3 y:1")
    assert not m.exact_match("X:3 Y:1", "x:3 y:1") and not m.exact_match("x: 3 y: 1", "x:3 y:1")
    assert not m.exact_match(None, "x:3 y:1")
    # normalized_match is the lenient companion
    assert m.normalized_match("  Kahvila  Aalto ", "kahvila aalto")
    assert not m.normalized_match("Kahvila", "Kahvila Aalto")
    assert m.normalized_match("12", 12) and not m.normalized_match("13", 12)
    assert m.fuzzy_match("It is Apteekki Mäkelä.", "Apteekki Mäkelä")
    assert m.fuzzy_match("apteekki makela", "Apteekki Mäkelä")  # accents folded
    assert m.fuzzy_match("Makela Pharmacy", "Apteekki Mäkelä", aliases=["Mäkelä Pharmacy"])
    assert not m.fuzzy_match("Apteekki", "Apteekki Mäkelä")
    assert not m.fuzzy_match(None, "X")
    assert m.fuzzy_match("anything", "X", judge=lambda p, c: True)  # pluggable judge


def test_positions_and_walking_metrics():
    assert m.coordinate_match((0, 0), (6, 8), 10.0)
    assert not m.coordinate_match((0, 0), (6, 8.1), 10.0)
    assert m.path_length([(0, 0), (3, 4), (3, 10)]) == pytest.approx(11.0)
    assert m.network_adherence([1.0, 2.0, 1.0], [True, False, True]) == pytest.approx(0.5)
    assert m.rain_exposure([1.0, 2.0, 0.5], [False, True, False]) == pytest.approx(1.5)
    assert m.rain_exposure([1.0], [False], raining=False) == 0.0
    assert m.on_time_rate([10.0, None, 31.0], [15.0, 20.0, 30.0]) == pytest.approx(1 / 3)
    assert m.fraction_reached(2, 3) == pytest.approx(2 / 3)
    assert m.collision_rate(3, 150) == pytest.approx(0.02)
    assert m.closure_compliance(0) == 1.0 and m.closure_compliance(2) == 0.0
    assert m.ended_closer(100.0, 40.0) and not m.ended_closer(40.0, 40.0)
    assert m.task_completion(5, 5, [4, 6]) and m.task_completion(4, 5, [4, 6])
    assert not m.task_completion(3, 5, [4, 6])
    assert m.success(True) == 1.0 and m.success(True, constraints_kept=False) == 0.0


def test_bbox_iou_and_temporal_f1():
    assert m.bbox_iou((0, 0, 2, 2), (1, 1, 3, 3)) == pytest.approx(1 / 7)
    assert m.bbox_iou((0, 0, 1, 1), (2, 2, 3, 3)) == 0.0
    assert m.temporal_interval_f1([(0, 10)], [(0, 10)]) == pytest.approx(1.0)
    # predicted 0-10, true 5-15: tIoU 5/15 < 0.5, no one-to-one match (F1@0.5 of the
    # strict-JSON grounding protocol)
    assert m.temporal_interval_f1([(0, 10)], [(5, 15)]) == 0.0
    assert m.temporal_interval_f1([(0, 10)], [(2, 12)]) == pytest.approx(1.0)
    assert m.temporal_interval_f1([(0, 1)], [(2, 3)]) == 0.0
