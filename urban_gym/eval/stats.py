"""The statistics of a report: bootstrap confidence intervals, paired comparisons, the
exact McNemar test and Cohen's kappa. Plain numpy; no scipy needed.

**Bootstrap** (:func:`bootstrap_means`): the percentile bootstrap (Efron) with
:data:`RESAMPLES` = 10,000 resamples and a fixed seed, so a report is reproducible to the
digit. The unit resampled is the *task*: when a task ran over several seeds, its episodes
are averaged first (:func:`task_means`) and tasks are drawn with replacement -- episodes of
one task are not independent, and resampling them would make the interval too narrow.
The 95% interval is the 2.5th and 97.5th percentiles of the resampled means.

**Paired comparison** (:func:`paired_bootstrap`): two runs on the same tasks; the per-task
difference (B - A) is resampled the same way. **McNemar** (:func:`mcnemar_exact`): for
success, with ``b`` = pairs A solved and B did not, ``c`` = the other way round, the exact
two-sided p-value under H0 (discordant pairs split 50/50):
``p = min(1, 2 * sum_{i <= min(b, c)} C(b + c, i) / 2^(b + c))``.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Hashable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np

RESAMPLES = 10_000
LEVEL = 0.95
#: Resamples generated per block (bounds memory: block x tasks counts at a time).
_BLOCK_ELEMENTS = 4_000_000
#: a unit of a paired comparison (a task id, ...)
_Unit = TypeVar("_Unit", bound=Hashable)


def stream_seed(seed: int, name: str) -> list[int]:
    """A seed sequence for the stream of group ``name``: the same group gets the same
    resamples whatever else the report holds.
    """
    h = int.from_bytes(hashlib.sha256(name.encode("utf-8")).digest()[:8], "little")
    return [int(seed), h]


def task_means(
    task_ids: Sequence[Hashable], values: np.ndarray
) -> tuple[list[Hashable], np.ndarray]:
    """Average the rows of ``values`` (episodes x metrics) per task; returns the task ids
    (first-seen order) and their means (tasks x metrics). NaN entries are left out of a
    task's mean (NaN when a task has none).
    """
    v = np.asarray(values, dtype=np.float64)
    if v.ndim == 1:
        v = v[:, None]
    order: dict[Hashable, int] = {}
    idx = np.array([order.setdefault(t, len(order)) for t in task_ids], dtype=np.int64)
    k = len(order)
    ok = ~np.isnan(v)
    sums = np.zeros((k, v.shape[1]))
    cnts = np.zeros((k, v.shape[1]))
    np.add.at(sums, idx, np.where(ok, v, 0.0))
    np.add.at(cnts, idx, ok.astype(np.float64))
    with np.errstate(invalid="ignore", divide="ignore"):
        means = sums / cnts
    return list(order), means


def resample_counts(n: int, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """How often each of ``n`` units is drawn in each resample: ``(resamples, n)`` counts
    of ``n`` draws with replacement (generated in blocks).
    """
    out = np.empty((resamples, n), dtype=np.float32)
    block = max(1, _BLOCK_ELEMENTS // max(1, n))
    for s in range(0, resamples, block):
        b = min(block, resamples - s)
        idx = rng.integers(0, n, size=(b, n))
        idx += np.arange(b, dtype=np.int64)[:, None] * n
        out[s : s + b] = np.bincount(idx.ravel(), minlength=b * n).reshape(b, n)
    return out


def bootstrap_means(
    values: np.ndarray,
    resamples: int = RESAMPLES,
    seed: int | Sequence[int] = 0,
) -> np.ndarray:
    """The means of ``resamples`` bootstrap resamples of the rows of ``values`` (units x
    metrics): ``(resamples, metrics)``. A NaN entry (a unit without that metric) is left
    out of that metric's mean.
    """
    v = np.asarray(values, dtype=np.float64)
    if v.ndim == 1:
        v = v[:, None]
    n = v.shape[0]
    if n == 0:
        return np.full((resamples, v.shape[1]), np.nan)
    rng = np.random.default_rng(seed)
    counts = resample_counts(n, resamples, rng).astype(np.float64)
    ok = ~np.isnan(v)
    sums = counts @ np.where(ok, v, 0.0)
    cnts = counts @ ok.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return sums / cnts


def percentile_ci(samples: np.ndarray, level: float = LEVEL) -> tuple[np.ndarray, np.ndarray]:
    """``(low, high)`` percentile bounds of resampled statistics (per column; NaN-aware)."""
    a = (1.0 - level) / 2.0
    s = np.asarray(samples, dtype=np.float64)
    if s.ndim == 1:
        s = s[:, None]
    lo = np.full(s.shape[1], np.nan)
    hi = np.full(s.shape[1], np.nan)
    for j in range(s.shape[1]):
        col = s[:, j]
        col = col[~np.isnan(col)]
        if col.size:
            lo[j], hi[j] = np.percentile(col, [100 * a, 100 * (1 - a)])
    return lo, hi


def mean_ci(
    values: Sequence[float] | np.ndarray,
    resamples: int = RESAMPLES,
    seed: int | Sequence[int] = 0,
    level: float = LEVEL,
) -> dict[str, float]:
    """Mean and percentile-bootstrap CI of one list of per-unit values:
    ``{"mean", "low", "high", "n"}``.
    """
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    v = v[~np.isnan(v)]
    if v.size == 0:
        return {"mean": math.nan, "low": math.nan, "high": math.nan, "n": 0}
    samples = bootstrap_means(v, resamples, seed)
    lo, hi = percentile_ci(samples, level)
    return {"mean": float(v.mean()), "low": float(lo[0]), "high": float(hi[0]), "n": int(v.size)}


def paired_bootstrap(
    a: Mapping[_Unit, float],
    b: Mapping[_Unit, float],
    resamples: int = RESAMPLES,
    seed: int | Sequence[int] = 0,
    level: float = LEVEL,
) -> dict[str, float]:
    """Mean per-unit difference ``b - a`` over the units both hold, with its
    paired-bootstrap CI (units resampled with replacement): ``{"mean", "low", "high",
    "n"}``.
    """
    common = [k for k in a if k in b and not (math.isnan(a[k]) or math.isnan(b[k]))]
    d = np.array([b[k] - a[k] for k in common], dtype=np.float64)
    return mean_ci(d, resamples, seed, level)


def mcnemar_exact(b: int, c: int) -> float:
    """Exact two-sided McNemar p-value for ``b`` and ``c`` discordant pairs (module
    docstring); 1.0 when there are none. E.g. ``b=1, c=6`` -> ``2 * (1 + 7) / 128 =
    0.125``.
    """
    b, c = int(b), int(c)
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be >= 0, got b={b}, c={c}")
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(b, c) + 1))
    return min(1.0, 2 * tail / 2**n)


def mcnemar(pairs: Sequence[tuple[bool, bool]]) -> dict[str, Any]:
    """McNemar's exact test on paired successes ``(a, b)``: counts ``both``, ``neither``,
    ``a_only`` (= b of the formula), ``b_only`` (= c) and ``p``.
    """
    a_only = sum(1 for x, y in pairs if x and not y)
    b_only = sum(1 for x, y in pairs if y and not x)
    both = sum(1 for x, y in pairs if x and y)
    return {
        "pairs": len(pairs),
        "both": both,
        "neither": len(pairs) - both - a_only - b_only,
        "a_only": a_only,
        "b_only": b_only,
        "p": mcnemar_exact(a_only, b_only),
    }


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float:
    """Cohen's kappa of two labelings of the same items: ``(p_o - p_e) / (1 - p_e)``
    (1.0 when both agree on one single label everywhere; NaN for no items).
    """
    if len(a) != len(b):
        raise ValueError(f"labelings of different lengths: {len(a)} and {len(b)}")
    n = len(a)
    if n == 0:
        return math.nan
    po = sum(1 for x, y in zip(a, b) if x == y) / n
    labels = set(a) | set(b)
    pe = sum((list(a).count(k) / n) * (list(b).count(k) / n) for k in labels)
    if pe >= 1.0:
        return 1.0 if po >= 1.0 else 0.0
    return (po - pe) / (1.0 - pe)


def equal_count_bins(values: Sequence[float], bins: int = 4) -> list[int]:
    """Bin index (0..bins-1) of each value in ``bins`` equal-count bins by rank (ties
    broken by position, so the bins' sizes differ by at most one).
    """
    v = np.asarray(values, dtype=np.float64)
    order = np.argsort(v, kind="stable")
    out = np.empty(len(v), dtype=np.int64)
    out[order] = (np.arange(len(v)) * bins) // max(1, len(v))
    return out.tolist()


__all__ = [
    "LEVEL",
    "RESAMPLES",
    "bootstrap_means",
    "cohen_kappa",
    "equal_count_bins",
    "mcnemar",
    "mcnemar_exact",
    "mean_ci",
    "paired_bootstrap",
    "percentile_ci",
    "resample_counts",
    "stream_seed",
    "task_means",
]
