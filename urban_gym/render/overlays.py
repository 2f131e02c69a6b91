"""Drawing into observations: marks an agent sees as part of its view.

Unlike :mod:`urban_gym.render.frame` (frames a person watches), these pixels are in the
observation, so they are part of an env's behaviour: change them and the golden rollouts
(``tests/golden``) change. Images are ``uint8`` RGB ``(rows, cols, 3)``; angles are degrees
clockwise (0 = straight ahead / up).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import cv2
import numpy as np

from urban_gym.render.text import blit_text, text_sprite

__all__ = ["draw_branch_arrows"]


def draw_branch_arrows(
    img: np.ndarray, branches: Sequence[Any], choices: Mapping[str, int]
) -> np.ndarray:
    """A copy of the view ``img`` with a junction's branches drawn in: a dial at the bottom
    centre with one red arrow per outgoing branch, pointing where the branch goes relative
    to the camera (up = ahead, right = to the right).

    ``branches`` are objects with ``relative`` (the branch's bearing relative to the
    camera, degrees clockwise) and ``trajectory`` (its id); ``choices`` maps a branch
    action's name (``LEFT``/``UP``/``RIGHT``) to the trajectory it selects now. Those
    branches are thick and labelled with the action's name, the others (behind the
    camera) thin and dark. The labels are DejaVu Sans Bold with a white outline, drawn with
    the map's text (:mod:`urban_gym.render.text`), not OpenCV's Hershey font, whose
    rasterisation changed between OpenCV releases (5.0 to 5.1) and with it the observations.
    """
    out = np.ascontiguousarray(img).copy()
    h, w = out.shape[:2]
    r = max(4, int(0.16 * min(w, h)))
    cx, cy = w // 2, h - r - max(2, h // 40)
    # the translucent dial: blend only the square around it
    x0, y0, x1, y1 = max(0, cx - r - 1), max(0, cy - r - 1), min(w, cx + r + 2), min(h, cy + r + 2)
    roi = out[y0:y1, x0:x1]
    disc = roi.copy()
    cv2.circle(disc, (cx - x0, cy - y0), r, (255, 255, 255), -1, cv2.LINE_AA)
    out[y0:y1, x0:x1] = cv2.addWeighted(disc, 0.35, roi, 0.65, 0)
    label_of = {v: k for k, v in choices.items()}
    thick = max(1, int(round(min(w, h) / 90)))
    line = cv2.LINE_AA if min(w, h) >= 128 else cv2.LINE_8  # small views: crisp and fast
    for br in branches:
        a = math.radians(br.relative)
        tip = (int(round(cx + r * math.sin(a))), int(round(cy - r * math.cos(a))))
        name = label_of.get(br.trajectory)
        colour = (230, 20, 20) if name else (120, 30, 30)
        cv2.arrowedLine(
            out, (cx, cy), tip, colour, thick + (1 if name else 0), line, tipLength=0.35
        )
        if name and min(w, h) >= 64:
            label = text_sprite(name, _label_px(min(w, h)), bold=True, halo=1)
            th, tw = label.shape[:2]
            # the label's centre sits beyond the arrow tip, far enough not to cover it
            reach = r + 2 + abs(math.sin(a)) * tw / 2 + abs(math.cos(a)) * th / 2
            lx = min(max(cx + reach * math.sin(a) - tw / 2, 0), w - tw)
            ly = min(max(cy - reach * math.cos(a) - th / 2, 0), h - th)
            blit_text(out, label, lx, ly, (230, 20, 20))
    return out


def _label_px(side: int) -> int:
    """The font size (px) of the branch labels in a view whose shorter side is ``side``
    pixels: about a fifteenth of it, at least 9 px (DejaVu Sans Bold stays legible there).
    """
    return max(9, int(round(side / 15)))
