"""Stage 5 of the strict-JSON grounding protocol: run-level coordinate normalisation of
grounded answers, with both the original and the compatible result kept.

A model's boxes are read once per *run*, not per reply: the coordinate scale is decided
from every box of the run together, then applied to each box in the same way. No single
box is repaired on its own.

The scale of a run (:func:`resolve_scale`), from the finite four-number boxes it holds:

* ``"unit"`` -- every coordinate lies in [0, 1]: the canonical normalised boxes;
* a ``documented`` scale (``"per_mille"`` for models whose documentation uses [0, 1000],
  or ``"pixels"``) is taken when the run's range is consistent with it;
* ``"pixels"`` -- otherwise, when every box lies inside the ``image_size`` frame
  (640 x 480 in the protocol);
* ``"per_mille"`` -- otherwise, when every coordinate lies in [0, 1000];
* ``"ambiguous"`` -- anything else, and a run that *mixes* scales: plainly normalised
  boxes (every coordinate at most 1, one of them fractional) beside boxes reaching beyond
  1. No box of an ambiguous run is converted: only those valid as given count.

A box is then converted to [0, 1], its corners put in order (``x0 <= x1``, ``y0 <= y1``),
and it stays invalid (None) when it is not four finite numbers, lies outside [0, 1] after
conversion, or has no area (:func:`compatible_box`). The *original* result scores only boxes that are valid as
given (normalised, ordered, with area); the *compatible* result scores the converted ones.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from urban_gym.tasks.metrics import bbox_accuracy, bbox_mean_iou

#: The input frame the protocol's pixel boxes refer to (width, height).
PROTOCOL_IMAGE_SIZE = (640, 480)
SCALES = ("unit", "per_mille", "pixels", "ambiguous", "none")


@dataclass
class RunBoxes:
    """The boxes of one run, as given and after run-level normalisation.

    Attributes:
        scale: the run's scale (one of :data:`SCALES`; ``"none"`` when the run has no box).
        original: per reply, the box if valid as given (normalised, ordered), else None.
        compatible: per reply, the box after the run's conversion, else None.
    """

    scale: str
    original: list[tuple[float, float, float, float] | None] = field(default_factory=list)
    compatible: list[tuple[float, float, float, float] | None] = field(default_factory=list)


def read_box(value: Any) -> tuple[float, float, float, float] | None:
    """Four finite numbers from ``value`` (a list or tuple), else None."""
    if not isinstance(value, (list, tuple)) or len(value) != 4:
        return None
    out = []
    for v in value:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return None
        if not math.isfinite(float(v)):
            return None
        out.append(float(v))
    return (out[0], out[1], out[2], out[3])


def resolve_scale(
    boxes: Sequence[Any],
    image_size: tuple[int, int] = PROTOCOL_IMAGE_SIZE,
    documented: str | None = None,
) -> str:
    """The coordinate scale of a whole run (see the module docstring)."""
    if documented not in (None, "unit", "per_mille", "pixels"):
        raise ValueError(f"documented={documented!r} must be 'unit', 'per_mille' or 'pixels'")
    read = [b for b in (read_box(v) for v in boxes) if b is not None]
    if not read:
        return "none"
    lo = min(min(b) for b in read)
    hi = max(max(b) for b in read)
    if lo < 0.0:
        return "ambiguous"
    if hi > 1.0 and any(max(b) <= 1.0 and any(v != int(v) for v in b) for b in read):
        return "ambiguous"  # normalised boxes beside larger ones: a mixed run
    w, h = image_size
    fits = {
        "unit": hi <= 1.0,
        "pixels": all(max(b[0], b[2]) <= w and max(b[1], b[3]) <= h for b in read),
        "per_mille": hi <= 1000.0,
    }
    if fits["unit"]:
        return "unit"
    if documented is not None:
        return documented if fits[documented] else "ambiguous"
    for scale in ("pixels", "per_mille"):
        if fits[scale]:
            return scale
    return "ambiguous"


def convert_box(
    box: Any, scale: str, image_size: tuple[int, int] = PROTOCOL_IMAGE_SIZE
) -> tuple[float, float, float, float] | None:
    """``box`` in [0, 1] under the run's ``scale``, corners ordered; None when invalid."""
    b: tuple[float, ...] | None = read_box(box)
    if b is None or scale in ("ambiguous", "none"):
        return None
    if scale == "per_mille":
        b = tuple(v / 1000.0 for v in b)
    elif scale == "pixels":
        w, h = image_size
        b = (b[0] / w, b[1] / h, b[2] / w, b[3] / h)
    x0, x1 = sorted((b[0], b[2]))
    y0, y1 = sorted((b[1], b[3]))
    if min(x0, y0) < 0.0 or max(x1, y1) > 1.0 or x1 <= x0 or y1 <= y0:
        return None
    return (x0, y0, x1, y1)


def strict_box(box: Any) -> tuple[float, float, float, float] | None:
    """``box`` if valid exactly as given: normalised, ordered, with area; else None."""
    b = read_box(box)
    if b is None or min(b) < 0.0 or max(b) > 1.0 or b[2] <= b[0] or b[3] <= b[1]:
        return None
    return b


def compatible_box(
    box: Any, scale: str, image_size: tuple[int, int] = PROTOCOL_IMAGE_SIZE
) -> tuple[float, float, float, float] | None:
    """``box`` as the compatible result reads it in a run of ``scale``: converted and
    ordered (:func:`convert_box`); in an ambiguous run only a box valid as given
    (:func:`strict_box`), no box being converted.
    """
    if scale == "ambiguous":
        return strict_box(box)
    return convert_box(box, scale, image_size)


def normalise_run(
    boxes: Sequence[Any],
    image_size: tuple[int, int] = PROTOCOL_IMAGE_SIZE,
    documented: str | None = None,
) -> RunBoxes:
    """The run's boxes as given and after the run-level conversion (one entry per reply;
    a reply without a box passes None).
    """
    scale = resolve_scale(boxes, image_size, documented)
    return RunBoxes(
        scale=scale,
        original=[strict_box(b) for b in boxes],
        compatible=[compatible_box(b, scale, image_size) for b in boxes],
    )


def score_run_boxes(
    boxes: Sequence[Any],
    truth: Sequence[Sequence[float]],
    image_size: tuple[int, int] = PROTOCOL_IMAGE_SIZE,
    documented: str | None = None,
) -> dict[str, Any]:
    """BBox Acc@0.5IoU and mean IoU of a run, original and compatible:
    ``{"scale", "original": {"acc50", "mean_iou"}, "compatible": {...}}``.
    """
    run = normalise_run(boxes, image_size, documented)
    return {
        "scale": run.scale,
        "original": {
            "acc50": bbox_accuracy(run.original, truth),
            "mean_iou": bbox_mean_iou(run.original, truth),
        },
        "compatible": {
            "acc50": bbox_accuracy(run.compatible, truth),
            "mean_iou": bbox_mean_iou(run.compatible, truth),
        },
    }
