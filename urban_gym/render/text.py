"""Text for the top-down map: POI names and marker letters as alpha masks in DejaVu Sans
with an outline (drawn once per text and size, kept), their widths without drawing them,
and their blend into an image (compiled where the kernels run). Used by
:mod:`urban_gym.render.map`.
"""

from __future__ import annotations

import math

import numpy as np
from PIL import Image, ImageDraw

from urban_gym.caching import lru_cached
from urban_gym.render import kernels
from urban_gym.render.fonts import font_for

#: an RGB colour
Colour = tuple[int, int, int]


@lru_cached(max_items=4096, name="render.text.sprites")
def text_sprite(
    text: str, size: int, bold: bool = False, halo: int = 2, lang: str | None = None
) -> np.ndarray:
    """Alpha masks of ``text`` (in the font :func:`~urban_gym.render.fonts.font_for` picks
    with the language hint ``lang``) at ``size`` px: ``(h, w, 2)`` uint8 with the
    glyphs in channel 0 and a ``halo``-pixel outline around them in channel 1. Row
    ``h // 2`` is the middle of the text line.
    """
    font = font_for(text, size, bold, lang)
    asc, desc = font.getmetrics()
    tw = text_width(text, size, bold, halo, lang)
    th = asc + desc + 2 * halo
    out = np.zeros((th, tw, 2), np.uint8)
    for ch, stroke in ((1, halo), (0, 0)):
        if ch == 1 and not halo:
            continue
        im = Image.new("L", (tw, th))
        ImageDraw.Draw(im).text(
            (halo + 1, halo), text, font=font, fill=255, stroke_width=stroke, stroke_fill=255
        )
        out[..., ch] = np.asarray(im)
    out.setflags(write=False)
    return out


@lru_cached(max_items=16384, name="render.map.text_widths")
def text_width(
    text: str, size: int, bold: bool = False, halo: int = 2, lang: str | None = None
) -> int:
    """The width (px) of :func:`text_sprite` of the same arguments, without drawing it."""
    return int(math.ceil(font_for(text, size, bold, lang).getlength(text))) + 2 * halo + 2


def blit_text(
    img: np.ndarray,
    sprite: np.ndarray,
    x: float,
    y: float,
    colour: Colour,
    anchor: str = "la",
    halo_colour: Colour = (255, 255, 255),
) -> None:
    """Draw a :func:`text_sprite` into ``img`` in place. ``anchor``: first letter
    ``l``/``m``/``r`` (left, middle, right at ``x``), second ``a``/``m`` (top or middle at
    ``y``). Compiled where the kernels run (the same arithmetic: this numpy blend is the
    reference).
    """
    th, tw = sprite.shape[:2]
    c0 = int(round(x - {"l": 0, "m": tw / 2, "r": tw}[anchor[0]]))
    r0 = int(round(y - {"a": 0, "m": th / 2}[anchor[1]]))
    H, W = img.shape[:2]
    a0, b0 = max(0, -r0), max(0, -c0)
    a1, b1 = min(th, H - r0), min(tw, W - c0)
    if a1 <= a0 or b1 <= b0:
        return
    if img.shape[2:] == (3,) and img.dtype == np.uint8:
        cols = (np.asarray(colour, np.float32), np.asarray(halo_colour, np.float32))
        if kernels.call("blit_text", img, sprite, r0, c0, *cols) is not None:
            return
    region = img[r0 + a0 : r0 + a1, c0 + b0 : c0 + b1].astype(np.float32)
    s = sprite[a0:a1, b0:b1].astype(np.float32) / 255.0
    for ch, col in ((1, halo_colour), (0, colour)):
        alpha = s[..., ch : ch + 1]
        region += (np.asarray(col, np.float32) - region) * alpha
    img[r0 + a0 : r0 + a1, c0 + b0 : c0 + b1] = region.astype(np.uint8)
