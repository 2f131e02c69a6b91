"""Bootstrap intervals, paired comparisons, McNemar and kappa on hand-checked examples."""

from __future__ import annotations

import math

import numpy as np
import pytest

from urban_gym.eval import stats


def test_bootstrap_ci_of_four_tasks_by_hand():
    # values 0, 0, 0, 1: a resample's mean is Binomial(4, 1/4) / 4, so
    # P(0) = .316, P(.25) = .422, P(.5) = .211, P(.75) = .047, P(1) = .004:
    # the 2.5th percentile is 0 and the 97.5th is .75 (cumulative .949 below it, .996 at it)
    ci = stats.mean_ci([0, 0, 0, 1], seed=0)
    assert (ci["mean"], ci["low"], ci["high"], ci["n"]) == (0.25, 0.0, 0.75, 4)
    means = stats.bootstrap_means(np.array([0.0, 0.0, 0.0, 1.0]), seed=1)[:, 0]
    assert np.mean(means == 0.0) == pytest.approx(0.75**4, abs=0.015)
    assert np.mean(means == 0.5) == pytest.approx(6 * 0.25**2 * 0.75**2, abs=0.015)


def test_bootstrap_is_seeded_and_resamples_tasks_not_episodes():
    a = stats.bootstrap_means(np.arange(10.0), seed=[0, 7])
    b = stats.bootstrap_means(np.arange(10.0), seed=[0, 7])
    assert np.array_equal(a, b) and a.shape == (stats.RESAMPLES, 1)
    # task A solved in all 4 seeds, task B in none: the unit is the task, so the
    # interval is that of 2 values (0 or 1 each) -- [0, 1] -- not of 5 episodes
    ids, means = stats.task_means(["A", "A", "A", "A", "B"], np.array([1, 1, 1, 1, 0.0]))
    assert ids == ["A", "B"] and means[:, 0].tolist() == [1.0, 0.0]
    lo, hi = stats.percentile_ci(stats.bootstrap_means(means))
    assert (lo[0], hi[0]) == (0.0, 1.0)
    episodes = stats.mean_ci([1, 1, 1, 1, 0])
    assert episodes["high"] == 1.0 and episodes["low"] > 0.0  # narrower: the wrong unit


def test_nan_entries_are_left_out_of_a_metric():
    v = np.array([[1.0, np.nan], [0.0, 2.0]])
    m = stats.bootstrap_means(v, resamples=200)
    assert set(np.unique(m[:, 0])) <= {0.0, 0.5, 1.0}
    assert set(np.unique(m[~np.isnan(m[:, 1]), 1])) == {2.0}


def test_paired_bootstrap_by_hand():
    a = {"t1": 0.0, "t2": 0.0, "t3": 1.0, "t4": 1.0, "only_a": 1.0}
    b = {"t1": 1.0, "t2": 1.0, "t3": 1.0, "t4": 1.0}
    d = stats.paired_bootstrap(a, b)
    # differences 1, 1, 0, 0: mean .5; P(resampled mean = 0) = P(= 1) = 1/16 > 2.5%
    assert (d["mean"], d["low"], d["high"], d["n"]) == (0.5, 0.0, 1.0, 4)


@pytest.mark.parametrize(
    "b, c, p",
    [
        (1, 6, 0.125),  # 2 * (C(7,0) + C(7,1)) / 2^7 = 2 * 8 / 128
        (0, 5, 0.0625),  # 2 / 32
        (3, 3, 1.0),
        (0, 0, 1.0),
        (2, 10, 2 * (1 + 12 + 66) / 4096),
    ],
)
def test_mcnemar_exact_by_hand(b, c, p):
    assert stats.mcnemar_exact(b, c) == pytest.approx(p, rel=1e-12)
    assert stats.mcnemar_exact(c, b) == pytest.approx(p, rel=1e-12)


def test_mcnemar_counts_pairs():
    pairs = [(True, False)] + [(False, True)] * 6 + [(True, True)] * 3 + [(False, False)] * 2
    r = stats.mcnemar(pairs)
    assert (r["a_only"], r["b_only"], r["both"], r["neither"]) == (1, 6, 3, 2)
    assert r["p"] == pytest.approx(0.125)


def test_cohen_kappa_by_hand():
    # p_o = 3/4; p_e = .5 * .25 + .5 * .75 = .5 -> kappa = (.75 - .5) / .5 = .5
    assert stats.cohen_kappa([1, 1, 0, 0], [1, 0, 0, 0]) == pytest.approx(0.5)
    assert stats.cohen_kappa(["x"] * 3, ["x"] * 3) == 1.0
    assert math.isnan(stats.cohen_kappa([], []))


def test_equal_count_bins():
    assert stats.equal_count_bins([5, 1, 4, 2, 3, 6, 8, 7], 4) == [2, 0, 1, 0, 1, 2, 3, 3]
    sizes = np.bincount(stats.equal_count_bins(np.random.default_rng(0).random(10), 4))
    assert sizes.tolist() == [3, 2, 3, 2]
