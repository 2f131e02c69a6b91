"""Drawing into observations: marks an agent sees as part of its view.

Unlike :mod:`urban_gym.render.frame` (frames a person watches), these pixels are in the
observation, so they are part of an env's behaviour: change them and the golden rollouts
(``tests/golden``) change. Images are ``uint8`` RGB ``(rows, cols, 3)``; angles are degrees
clockwise (0 = straight ahead / up).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from typing import Any

import cv2
import numpy as np

from urban_gym.render import kernels
from urban_gym.render.text import blit_text, text_sprite

__all__ = ["draw_branch_arrows"]


#: the colours (RGB) of a labelled branch's arrow and label, and of an unlabelled one's arrow
LABELLED, UNLABELLED, HALO = (230, 20, 20), (120, 30, 30), (255, 255, 255)
_LABEL_COLOURS = (np.asarray(LABELLED, np.float32), np.asarray(HALO, np.float32))


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
    What depends on the view's size alone (the dial, the labels' sprites) is worked out
    once per size (:func:`_dial_of`).
    """
    out = np.array(img, order="C")  # a copy
    h, w = out.shape[:2]
    d = _dial_of(w, h)
    rgb8 = out.dtype == np.uint8 and out.shape[2:] == (3,)  # what the text kernel takes
    d.blend(out[d.y0 : d.y1, d.x0 : d.x1])  # the translucent dial
    label_of = {v: k for k, v in choices.items()}
    cx, cy, r = d.cx, d.cy, d.r
    for br in branches:
        a = math.radians(br.relative)
        sin_a, cos_a = math.sin(a), math.cos(a)
        tip = (int(round(cx + r * sin_a)), int(round(cy - r * cos_a)))
        name = label_of.get(br.trajectory)
        # arrowedLine(img, pt1, pt2, colour, thickness, line_type, shift, tip_length):
        # positional, as a keyword argument costs OpenCV's binding a microsecond or two
        if name is None:
            cv2.arrowedLine(out, d.centre, tip, UNLABELLED, d.thick, d.line, 0, 0.35)
            continue
        cv2.arrowedLine(out, d.centre, tip, LABELLED, d.thick + 1, d.line, 0, 0.35)
        if d.labels:
            label = d.label(name)
            th, tw = label.shape[:2]
            # the label's centre sits beyond the arrow tip, far enough not to cover it
            reach = r + 2 + abs(sin_a) * tw / 2 + abs(cos_a) * th / 2
            lx = min(max(cx + reach * sin_a - tw / 2, 0), w - tw)
            ly = min(max(cy - reach * cos_a - th / 2, 0), h - th)
            # blit_text's placement and blend, its compiled kernel called at once
            done = None
            if rgb8:
                done = kernels.call(
                    "blit_text", out, label, int(round(ly)), int(round(lx)), *_LABEL_COLOURS
                )
            if done is None:
                blit_text(out, label, lx, ly, LABELLED)
    return out


class _Dial:
    """What the branch arrows of a ``w`` x ``h`` view draw at the same place whatever the
    branches: the dial's centre ``(cx, cy)`` and radius ``r`` (pixels), the square
    ``x0:x1``, ``y0:y1`` it is blended in, the arrows' thickness and line type, and
    whether the labels are drawn (views of at least 64 pixels) and their sprites.
    """

    def __init__(self, w: int, h: int) -> None:
        side = min(w, h)
        self.r = r = max(4, int(0.16 * side))
        self.cx, self.cy = cx, cy = w // 2, h - r - max(2, h // 40)
        self.centre = (cx, cy)
        self.x0, self.y0 = max(0, cx - r - 1), max(0, cy - r - 1)
        self.x1, self.y1 = min(w, cx + r + 2), min(h, cy + r + 2)
        self.disc_centre = (cx - self.x0, cy - self.y0)
        self.thick = max(1, int(round(side / 90)))
        self.line = cv2.LINE_AA if side >= 128 else cv2.LINE_8  # small views: crisp and fast
        self.labels = side >= 64
        self.label_px = _label_px(side)
        self._sprites: dict[str, np.ndarray] = {}

    def blend(self, roi: np.ndarray) -> None:
        """Blend the dial into ``roi`` (the square ``x0:x1``, ``y0:y1`` of a view) in
        place: a white anti-aliased disc drawn on a copy, blended 35 % over.
        """
        disc = roi.copy()
        cv2.circle(disc, self.disc_centre, self.r, HALO, -1, cv2.LINE_AA)
        roi[...] = cv2.addWeighted(disc, 0.35, roi, 0.65, 0)

    def label(self, name: str) -> np.ndarray:
        """The sprite of the label ``name`` (:func:`~urban_gym.render.text.text_sprite`)."""
        got = self._sprites.get(name)
        if got is None:
            got = self._sprites[name] = text_sprite(name, self.label_px, bold=True, halo=1)
        return got


@functools.lru_cache(maxsize=64)
def _dial_of(w: int, h: int) -> _Dial:
    """The :class:`_Dial` of a ``w`` x ``h`` view (kept per size)."""
    return _Dial(w, h)


def _label_px(side: int) -> int:
    """The font size (px) of the branch labels in a view whose shorter side is ``side``
    pixels: about a fifteenth of it, at least 9 px (DejaVu Sans Bold stays legible there).
    """
    return max(9, int(round(side / 15)))
