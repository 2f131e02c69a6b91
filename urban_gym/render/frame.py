"""Frames a person watches: panels side by side or in a grid, text panels, captions.

Every ``env.render()`` of urban_gym builds its ``rgb_array`` frame from these pieces, and
so do wrappers that add a panel (the map of
:class:`~urban_gym.wrappers.map_observation.MapObservation`) and the demo's GIFs: the env
says *which* panels make its frame, this module says *how* they are drawn and joined.

Conventions: images are ``uint8`` RGB arrays ``(rows, cols, 3)``; sizes, margins and font
sizes are in pixels; a colour is an ``(r, g, b)`` tuple. Panels of different heights are
padded at the bottom (widths: at the right) with the background colour, never stretched.
Text is drawn with Pillow in DejaVu Sans (:func:`load_font`, the one font loader of the
package, so ä/ö/å render); pixel code that draws *into observations* lives in
:mod:`urban_gym.render.overlays`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import cv2
import numpy as np
from PIL import Image, ImageDraw, ImageFont

from urban_gym.caching import lru_cached
from urban_gym.errors import RenderError
from urban_gym.render.fonts import font_for, load_font

Colour = tuple[int, int, int]

WHITE: Colour = (255, 255, 255)
INK: Colour = (20, 20, 20)
ELLIPSIS = "…"

__all__ = [
    "ELLIPSIS",
    "INK",
    "WHITE",
    "Colour",
    "bearing_dial",
    "caption",
    "centre",
    "cover",
    "fit_height",
    "grid",
    "hstack",
    "label",
    "load_font",
    "pad",
    "pad_frames",
    "resize",
    "rgb",
    "status_line",
    "text_panel",
    "tile",
    "vstack",
    "wrap_text",
]


def rgb(img: np.ndarray) -> np.ndarray:
    """``img`` as a C-contiguous ``uint8`` ``(rows, cols, 3)`` array (a grey ``(rows,
    cols)`` image becomes three equal channels); anything else raises :class:`RenderError`
    naming the shape and dtype.
    """
    a = np.asarray(img)
    grey = a.ndim == 2
    if (a.ndim != 3 or a.shape[2] != 3) and not grey or a.dtype != np.uint8 or 0 in a.shape:
        raise RenderError(
            f"a frame panel must be a non-empty uint8 (rows, cols, 3) image, "
            f"got shape {a.shape} dtype {a.dtype}"
        )
    if grey:
        a = np.repeat(a[:, :, None], 3, axis=2)
    return np.ascontiguousarray(a)


def resize(img: np.ndarray, width: int, height: int) -> np.ndarray:
    """``img`` scaled to exactly ``width`` x ``height`` pixels (area averaging when it
    shrinks by 1.5x or more, which keeps small labels readable, else bilinear); returned
    unchanged when it has that size.
    """
    a = rgb(img)
    width, height = int(width), int(height)
    if width < 1 or height < 1:
        raise RenderError(f"cannot resize a panel to {width}x{height} pixels")
    if a.shape[:2] == (height, width):
        return a
    # area averaging where it matters (shrinking by 1.5x or more); it is slow for small
    # changes of size, where bilinear looks the same
    shrink = min(a.shape[0] / height, a.shape[1] / width)
    interp = cv2.INTER_AREA if shrink >= 1.5 else cv2.INTER_LINEAR
    return cv2.resize(a, (width, height), interpolation=interp)


def fit_height(img: np.ndarray, height: int) -> np.ndarray:
    """``img`` scaled to ``height`` pixels, its width scaled by the same factor."""
    a = rgb(img)
    width = max(1, round(a.shape[1] * int(height) / a.shape[0]))
    return resize(a, width, height)


def pad(
    img: np.ndarray,
    height: int | None = None,
    width: int | None = None,
    background: Colour = WHITE,
) -> np.ndarray:
    """``img`` padded at the bottom to ``height`` and at the right to ``width`` pixels
    with ``background`` (None: keep that side). Asking for less than the image has is an
    error: frames are padded, never cropped.
    """
    a = rgb(img)
    h, w = a.shape[:2]
    height = h if height is None else int(height)
    width = w if width is None else int(width)
    if height < h or width < w:
        raise RenderError(f"cannot pad a {w}x{h} panel to {width}x{height} pixels")
    if (height, width) == (h, w):
        return a
    out = _blank(height, width, background)
    out[:h, :w] = a
    return out


def hstack(panels: Sequence[np.ndarray], gap: int = 0, background: Colour = WHITE) -> np.ndarray:
    """Panels side by side, left to right, ``gap`` pixels apart; shorter panels are padded
    at the bottom to the tallest. Width: the panels' widths plus the gaps.
    """
    ps = [rgb(p) for p in panels]
    if not ps:
        raise RenderError("hstack needs at least one panel")
    h = max(p.shape[0] for p in ps)
    parts: list[np.ndarray] = []
    for i, p in enumerate(ps):
        if i and gap:
            parts.append(_blank(h, gap, background))
        parts.append(pad(p, height=h, background=background))
    return np.concatenate(parts, axis=1)


def vstack(panels: Sequence[np.ndarray], gap: int = 0, background: Colour = WHITE) -> np.ndarray:
    """Panels one above the other, ``gap`` pixels apart; narrower panels are padded at the
    right to the widest. Height: the panels' heights plus the gaps.
    """
    ps = [rgb(p) for p in panels]
    if not ps:
        raise RenderError("vstack needs at least one panel")
    w = max(p.shape[1] for p in ps)
    parts: list[np.ndarray] = []
    for i, p in enumerate(ps):
        if i and gap:
            parts.append(_blank(gap, w, background))
        parts.append(pad(p, width=w, background=background))
    return np.concatenate(parts, axis=0)


def grid(
    panels: Sequence[np.ndarray],
    columns: int,
    gap: int = 0,
    background: Colour = WHITE,
) -> np.ndarray:
    """Panels in rows of ``columns``, filled left to right, top to bottom; each row is as
    tall as its tallest panel, each column as wide as its widest (panels are padded, a
    missing panel in the last row is background).
    """
    ps = [rgb(p) for p in panels]
    if not ps:
        raise RenderError("grid needs at least one panel")
    if int(columns) < 1:
        raise RenderError(f"grid columns={columns!r} must be >= 1")
    columns = int(columns)
    widths = [max(p.shape[1] for p in ps[c::columns]) for c in range(min(columns, len(ps)))]
    rows = []
    for r in range(0, len(ps), columns):
        row = ps[r : r + columns]
        h = max(p.shape[0] for p in row)
        cells = [pad(p, h, widths[c], background) for c, p in enumerate(row)]
        cells += [_blank(h, widths[c], background) for c in range(len(row), len(widths))]
        rows.append(hstack(cells, gap, background))
    return vstack(rows, gap, background)


def cover(img: np.ndarray, width: int, height: int) -> np.ndarray:
    """``img`` scaled, keeping its aspect ratio, to the smallest size that covers ``width``
    x ``height`` pixels, and the middle ``width`` x ``height`` of that cut out (a square
    image in a wide box keeps its middle rows, in a tall box its middle columns).
    """
    a = rgb(img)
    width, height = int(width), int(height)
    if width < 1 or height < 1:
        raise RenderError(f"cannot cover a {width}x{height} pixel box")
    scale = max(width / a.shape[1], height / a.shape[0])
    w = max(width, round(a.shape[1] * scale))
    h = max(height, round(a.shape[0] * scale))
    big = resize(a, w, h)
    top, left = (h - height) // 2, (w - width) // 2
    return np.ascontiguousarray(big[top : top + height, left : left + width])


def centre(
    img: np.ndarray, width: int, height: int | None = None, background: Colour = WHITE
) -> np.ndarray:
    """``img`` in the middle of a ``width`` x ``height`` panel of ``background`` (None:
    the image's height); like :func:`pad`, it never crops (a half pixel of margin goes to
    the right and bottom).
    """
    a = rgb(img)
    h, w = a.shape[:2]
    height = h if height is None else int(height)
    width = int(width)
    if height < h or width < w:
        raise RenderError(f"cannot centre a {w}x{h} panel in {width}x{height} pixels")
    out = _blank(height, width, background)
    top, left = (height - h) // 2, (width - w) // 2
    out[top : top + h, left : left + w] = a
    return out


def tile(
    img: np.ndarray,
    side: int,
    border: int = 2,
    background: Colour = WHITE,
    width: int | None = None,
) -> np.ndarray:
    """A ``side`` x ``side`` square: ``img`` scaled into it with a ``border``-pixel frame of
    ``background`` on each side. With ``width``, a ``width`` x ``side`` rectangle that
    ``img`` covers (:func:`cover`: kept in proportion, its middle shown) inside the
    border.
    """
    inner = int(side) - 2 * int(border)
    inner_w = inner if width is None else int(width) - 2 * int(border)
    if inner < 1 or inner_w < 1:
        raise RenderError(
            f"tile side={side!r} width={width!r} leaves no room inside a {border}-pixel border"
        )
    out = _blank(int(side), inner_w + 2 * int(border), background)
    body = resize(img, inner, inner) if width is None else cover(img, inner_w, inner)
    out[border : border + inner, border : border + inner_w] = body
    return out


def _blank(height: int, width: int, colour: Colour) -> np.ndarray:
    out = np.empty((int(height), int(width), 3), np.uint8)
    out[:] = np.asarray(colour, np.uint8)
    return out


# ---------------------------------------------------------------------------- text
def wrap_text(text: str, font: ImageFont.FreeTypeFont, width: float) -> list[str]:
    """``text`` broken into lines no wider than ``width`` pixels in ``font``, at spaces;
    a line break in ``text`` starts a new line (an empty line stays empty), and a word
    wider than ``width`` gets a line of its own.
    """
    lines: list[str] = []
    for para in str(text).split("\n"):
        cur = ""
        for word in para.split():
            trial = f"{cur} {word}" if cur else word
            if cur and font.getlength(trial) > width:
                lines.append(cur)
                cur = word
            else:
                cur = trial
        lines.append(cur)
    return lines


@lru_cached(max_items=1024, name="render.frame.wrapped_text")
def _wrapped(
    text: str, font_size: int, bold: bool, width: float, whole: str = ""
) -> tuple[str, ...]:
    """:func:`wrap_text` in the font :func:`font_for` picks for ``whole`` (the panel's
    whole text; ``text`` when empty), cached (instructions are wrapped once per task).
    """
    return tuple(wrap_text(text, font_for(whole or text, font_size, bold), width))


def _ellipsize(line: str, font: ImageFont.FreeTypeFont, width: float) -> str:
    """``line`` shortened so that it ends in an ellipsis within ``width`` pixels."""
    while line and font.getlength(line + ELLIPSIS) > width:
        line = line[:-1]
    return line.rstrip() + ELLIPSIS


def text_panel(
    text: str | Sequence[str],
    width: int,
    height: int | None = None,
    *,
    font_size: int = 14,
    colour: Colour = INK,
    background: Colour = WHITE,
    margin: tuple[int, int] = (4, 2),
    line_gap: int = 2,
    bold: bool = False,
) -> np.ndarray:
    """A ``width`` x ``height`` panel of text wrapped to its width.

    ``text`` is a string or a sequence of paragraphs (each wrapped on its own; ``""`` is an
    empty line). Lines are ``font_size + line_gap`` pixels apart, the first ``margin[1]``
    pixels below the top, all ``margin[0]`` pixels from the left and wrapped ``margin[0]``
    pixels before the right edge. ``height`` None fits the panel to its lines; with a
    fixed height, as many lines as fit in ``height - 2 * margin[1]`` are drawn and the
    last one shown ends in an ellipsis when text was left out.
    """
    width = int(width)
    if width < 1 or font_size < 1:
        raise RenderError(f"text panel width={width!r} font_size={font_size!r} must be >= 1")
    paras = [text] if isinstance(text, str) else list(text)
    whole = "".join(str(p) for p in paras)
    font = font_for(whole, int(font_size), bold)
    mx, my = (int(m) for m in margin)
    step = int(font_size) + int(line_gap)
    lines = [
        ln for p in paras for ln in _wrapped(str(p), int(font_size), bold, width - 2 * mx, whole)
    ]
    if height is None:
        asc, desc = font.getmetrics()
        height = 2 * my + (len(lines) - 1) * step + asc + desc
    else:
        height = int(height)
        fit = max(1, (height - 2 * my) // step)
        if len(lines) > fit:
            lines = lines[:fit]
            lines[-1] = _ellipsize(lines[-1], font, width - 2 * mx)
    im = Image.new("RGB", (width, max(1, height)), background)
    draw = ImageDraw.Draw(im)
    for k, line in enumerate(lines):
        if line:
            draw.text((mx, my + k * step), line, fill=colour, font=font)
    return np.asarray(im)


def status_line(
    text: str,
    width: int,
    *,
    font_size: int = 13,
    colour: Colour = INK,
    background: Colour = WHITE,
    margin: tuple[int, int] = (6, 3),
) -> np.ndarray:
    """One line of text on a strip ``width`` pixels wide (cut with an ellipsis when it
    does not fit), as tall as the font's ascent + descent plus ``2 * margin[1]``.
    """
    line = " ".join(str(text).split())
    font = font_for(line, int(font_size))
    mx, my = (int(m) for m in margin)
    if font.getlength(line) > int(width) - 2 * mx:
        line = _ellipsize(line, font, int(width) - 2 * mx)
    asc, desc = font.getmetrics()
    im = Image.new("RGB", (int(width), 2 * my + asc + desc), background)
    ImageDraw.Draw(im).text((mx, my), line, fill=colour, font=font)
    return np.asarray(im)


def caption(
    img: np.ndarray,
    text: str,
    *,
    font_size: int = 13,
    colour: Colour = INK,
    background: Colour = WHITE,
) -> np.ndarray:
    """``img`` with a :func:`status_line` of ``text`` under it."""
    a = rgb(img)
    strip = status_line(text, a.shape[1], font_size=font_size, colour=colour, background=background)
    return np.concatenate([a, strip], axis=0)


def label(
    img: np.ndarray,
    text: str,
    xy: tuple[int, int],
    *,
    font_size: int = 14,
    colour: Colour = WHITE,
    bold: bool = False,
) -> np.ndarray:
    """A copy of ``img`` with ``text`` written at pixel ``xy`` (the top left of the text,
    ``(col, row)``).
    """
    im = Image.fromarray(rgb(img))
    ImageDraw.Draw(im).text(xy, text, fill=colour, font=font_for(text, int(font_size), bold))
    return np.asarray(im)


def bearing_dial(
    side: int,
    bearing: float,
    *,
    background: Colour = WHITE,
    ring: Colour = (120, 120, 130),
    needle: Colour = (250, 200, 60),
    inset: int = 14,
) -> np.ndarray:
    """A ``side`` x ``side`` compass dial: a ring ``inset`` pixels inside the square and a
    needle from the centre along ``bearing`` (degrees clockwise from north = up).
    """
    side = int(side)
    im = Image.new("RGB", (side, side), background)
    draw = ImageDraw.Draw(im)
    c, r = side // 2, side // 2 - int(inset)
    draw.ellipse((c - r, c - r, c + r, c + r), outline=ring)
    a = math.radians(bearing)
    draw.line((c, c, c + r * math.sin(a), c - r * math.cos(a)), fill=needle, width=4)
    return np.asarray(im)


def pad_frames(frames: Sequence[np.ndarray], background: Colour = WHITE) -> list[np.ndarray]:
    """Frames of different sizes padded (bottom, right) to the largest height and width,
    as a GIF or a video file needs one size for all its frames.
    """
    fs = [rgb(f) for f in frames]
    if not fs:
        return []
    h = max(f.shape[0] for f in fs)
    w = max(f.shape[1] for f in fs)
    return [pad(f, h, w, background) for f in fs]
