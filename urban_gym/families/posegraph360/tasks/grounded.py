"""Grounded PoseGraph360 task types outside 360CityArena's seven.

They follow the strict-JSON grounding protocol's image and video grounding, with ground
truth from the renderer's instance ids:

* ``landmark_bbox`` -- standing where a named sign is in view, answer the sign's box in
  the current view: ``{"bbox_xyxy_norm": [x1, y1, x2, y2]}`` normalised to [0, 1] (x to
  the right, y down). Scored by IoU: ``bbox_iou``, ``bbox_acc50`` (IoU >= 0.5, the
  success); difficulty by the box's share of the view (easy >= 2%, medium 0.5-2%, hard
  below).
* the video types (``landmark_visibility``, ``composite_behaviour``,
  ``atomic_behaviour``) live in :mod:`~urban_gym.families.posegraph360.tasks.video`.

A sign is visible in a view when at least :data:`MIN_SIGN_PIXELS` pixels of the
:data:`ID_VIEW`-pixel id image show it; the box is the extent of those pixels.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np

from urban_gym.tasks import metrics

#: Side (pixels) of the square id image ground truth is read from.
ID_VIEW = 96
#: The id image a ``landmark_bbox`` truth box is read from: the grounded track's 640x480
#: views (4:3) at 128x96.
BBOX_VIEW = (128, 96)
#: Width (pixels) of the id panoramas.
ID_PANO_WIDTH = 512
#: Pixels of a sign (in the id image) that make it visible.
MIN_SIGN_PIXELS = 6
#: Box share of the view that bounds the ``landmark_bbox`` difficulties.
BBOX_AREA_BANDS = {"easy": (0.02, 1.01), "medium": (0.005, 0.02), "hard": (0.0, 0.005)}
#: The keys a box answer may come under (the protocol's aliases).
BOX_KEYS = ("bbox_xyxy_norm", "bbox", "bounding_box", "box", "bbox_norm")


class IdViews:
    """Instance-id perspective views of a city's panoramas (nearest samples)."""

    def __init__(self, city: Any, width: int = ID_PANO_WIDTH) -> None:
        from urban_gym.render import PanoramaRenderer

        self.renderer = PanoramaRenderer(city, width=width, height=width // 2)
        self._panos: dict[tuple[float, float], np.ndarray] = {}

    def view(
        self,
        x: float,
        y: float,
        bearing: float,
        pitch: float,
        fov: float,
        size: tuple[int, int] = (ID_VIEW, ID_VIEW),
    ) -> np.ndarray:
        """The ``size = (w, h)`` id image (default ``ID_VIEW`` square) looking along
        ``bearing`` (degrees) with horizontal ``fov``.
        """
        from urban_gym.render.camera import view_directions

        key = (round(x, 3), round(y, 3))
        pano = self._panos.get(key)
        if pano is None:
            # render at the rounded key, as the envs' visibility does, so a marginal sign
            # pixel cannot differ between the truth and a walk
            ids = self.renderer.render(key[0], key[1], ids=True).ids
            assert ids is not None  # rendered with ids=True
            pano = self._panos[key] = ids
        ph, pw = pano.shape
        b, e = view_directions(size[0], size[1], float(fov), float(pitch), float(bearing))
        col = np.floor((b / 360.0 + 0.5) * pw).astype(np.int64) % pw
        row = np.clip(np.floor((90.0 - e) / 180.0 * ph).astype(np.int64), 0, ph - 1)
        return pano[row, col]


def sign_box(ids: np.ndarray, sign: int) -> tuple[list[float], float] | None:
    """The normalised box of ``sign`` in an id image and its share of the image, or None
    when fewer than :data:`MIN_SIGN_PIXELS` pixels show it.
    """
    hit = ids == sign
    if int(hit.sum()) < MIN_SIGN_PIXELS:
        return None
    rows, cols = np.nonzero(hit)
    h, w = ids.shape
    box = [cols.min() / w, rows.min() / h, (cols.max() + 1) / w, (rows.max() + 1) / h]
    box = [round(float(v), 4) for v in box]
    return box, (box[2] - box[0]) * (box[3] - box[1])


def bbox_task(gen: Any, rng: np.random.Generator, want: str, views: IdViews) -> dict | None:
    """The fields of a ``landmark_bbox`` task (None when the drawn place does not fit)."""
    from urban_gym.render.ids import sign_id

    if not gen.landmark_list:
        return None
    pl = gen.landmark_list[int(rng.integers(len(gen.landmark_list)))]
    g = gen.graph
    s = pl.state
    x, y = g.position(s)
    ax, ay = pl.poi.anchor
    from urban_gym.world.geo import angle_diff, bearing

    look = float(bearing(ax - x, ay - y)) + float(rng.uniform(-25.0, 25.0))
    # the track's 640x480 frame (4:3), sampled at 128x96
    found = sign_box(views.view(x, y, look, 0.0, 90.0, BBOX_VIEW), sign_id(pl.poi.id))
    if found is None:
        return None
    box, area = found
    lo, hi = BBOX_AREA_BANDS[want]
    if not lo <= area < hi:
        return None
    yaw = round(float(angle_diff(look, g.heading(s))), 2)
    return {"place": pl, "state": s, "yaw": yaw, "box": box, "area": area}


# ------------------------------------------------------------------ answers and scores
def _loads(answer: Any) -> Any:
    if isinstance(answer, (list, dict)):
        return answer
    try:
        return json.loads(str(answer))
    except (ValueError, RecursionError):
        return None


def read_box(answer: Any) -> list[float] | None:
    """A box from an answer: ``{"bbox_xyxy_norm": [...]}`` (or an alias), a bare list, or
    a one-element ``answers`` list holding one of them; None when there is none.
    """
    v = _loads(answer)
    if isinstance(v, dict) and isinstance(v.get("answers"), list) and len(v["answers"]) == 1:
        v = v["answers"][0]
    if isinstance(v, dict):
        v = next((v[k] for k in BOX_KEYS if k in v), None)
    if not isinstance(v, list) or len(v) != 4:
        return None
    try:
        box = [float(c) for c in v]
    except (TypeError, ValueError):
        return None
    return box if all(math.isfinite(c) for c in box) else None


def score_bbox(truth: list[float], answer: Any) -> dict[str, float]:
    """``bbox_iou`` and ``bbox_acc50`` of an answer (an unreadable box scores 0)."""
    box = read_box(answer)
    from urban_gym.tasks.grounding import convert_box

    unit = convert_box(box, "unit") if box is not None else None
    iou = metrics.bbox_iou(unit, truth) if unit is not None else 0.0
    return {"bbox_iou": iou, "bbox_acc50": float(iou >= metrics.IOU_THRESHOLD)}
