"""render/frame.py: panel composition with sizes worked out by hand, text panels, the one
font loader."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

import urban_gym
from urban_gym.errors import RenderError
from urban_gym.render import fonts
from urban_gym.render import frame as F

RED, GREEN, BLUE = (255, 0, 0), (0, 255, 0), (0, 0, 255)
BG = (7, 8, 9)


def solid(h: int, w: int, colour) -> np.ndarray:
    out = np.zeros((h, w, 3), np.uint8)
    out[:] = colour
    return out


def is_colour(a: np.ndarray, colour) -> bool:
    return bool((a.reshape(-1, 3) == np.asarray(colour, np.uint8)).all())


def test_hstack_pads_to_the_tallest_and_puts_gaps_between():
    a, b = solid(10, 20, RED), solid(30, 5, GREEN)
    out = F.hstack([a, b], gap=3, background=BG)
    assert out.shape == (30, 20 + 3 + 5, 3)  # widths + one gap; the taller height
    assert is_colour(out[:10, :20], RED) and is_colour(out[10:, :20], BG)  # padded below
    assert is_colour(out[:, 20:23], BG) and is_colour(out[:, 23:], GREEN)


def test_vstack_pads_to_the_widest():
    out = F.vstack([solid(4, 6, RED), solid(5, 2, BLUE)], gap=1, background=BG)
    assert out.shape == (4 + 1 + 5, 6, 3)
    assert is_colour(out[:4], RED) and is_colour(out[4], BG)
    assert is_colour(out[5:, :2], BLUE) and is_colour(out[5:, 2:], BG)


def test_grid_rows_and_columns_take_their_largest_panel():
    # 5 panels in 2 columns: rows of heights 10, 30, 4; columns of widths 20 and 7
    panels = [
        solid(10, 20, RED),
        solid(8, 7, GREEN),
        solid(30, 5, BLUE),
        solid(2, 2, RED),
        solid(4, 4, GREEN),
    ]
    out = F.grid(panels, columns=2, gap=1, background=BG)
    assert out.shape == (10 + 1 + 30 + 1 + 4, 20 + 1 + 7, 3)
    assert is_colour(out[11:41, :5], BLUE) and is_colour(out[11:41, 5:20], BG)
    assert is_colour(out[42:46, :4], GREEN)
    assert is_colour(out[42:46, 21:], BG)  # no fifth panel's neighbour: background


def test_pad_tile_resize_and_bad_panels():
    assert F.pad(solid(2, 3, RED), 4, 5, BG).shape == (4, 5, 3)
    with pytest.raises(RenderError, match="cannot pad a 3x2 panel to 2x2"):
        F.pad(solid(2, 3, RED), 2, 2)
    t = F.tile(solid(8, 16, RED), 20, border=2, background=BG)
    assert t.shape == (20, 20, 3) and is_colour(t[2:18, 2:18], RED)
    assert is_colour(t[:2], BG) and is_colour(t[:, 18:], BG)
    assert F.fit_height(solid(10, 30, RED), 5).shape == (5, 15, 3)
    assert F.resize(solid(10, 30, RED), 7, 3).shape == (3, 7, 3)
    with pytest.raises(RenderError, match=r"shape \(4, 4\) dtype float64"):
        F.hstack([np.zeros((4, 4))])
    with pytest.raises(RenderError, match="at least one panel"):
        F.vstack([])
    frames = F.pad_frames([solid(3, 9, RED), solid(5, 2, RED)], BG)
    assert [f.shape for f in frames] == [(5, 9, 3), (5, 9, 3)]


def test_cover_keeps_the_middle_and_centre_pads_around():
    # a 10 x 10 image of a red left half and blue right half, covering a 10 x 2 box:
    # scale 1 (the width already fits), rows 4-5 kept, both halves still side by side
    img = solid(10, 10, RED)
    img[:, 5:] = BLUE
    img[:4] = GREEN  # the top rows are cut away
    out = F.cover(img, 10, 2)
    assert out.shape == (2, 10, 3) and is_colour(out[:, :5], RED) and is_colour(out[:, 5:], BLUE)
    # covering a 4 x 8 (tall) box: scaled to 8 x 8, the middle 4 columns (red|blue) kept
    tall = F.cover(solid(10, 10, RED), 4, 8)
    assert tall.shape == (8, 4, 3) and is_colour(tall, RED)
    # a 20 x 4 box from a 2 x 2 image: scaled 10x to 20 x 20, 4 middle rows
    assert F.cover(solid(2, 2, RED), 20, 4).shape == (4, 20, 3)
    c = F.centre(solid(2, 4, RED), 9, 6, BG)
    # 5 px of margin across: 2 left, 3 right; 4 px down: 2 above, 2 below
    assert c.shape == (6, 9, 3) and is_colour(c[2:4, 2:6], RED)
    assert is_colour(c[:, :2], BG) and is_colour(c[:, 6:], BG) and is_colour(c[:2], BG)
    with pytest.raises(RenderError, match="cannot centre a 4x2 panel in 3x6"):
        F.centre(solid(2, 4, RED), 3, 6)
    # a tile with a width: the image covers the inside of the border (10 x 4: rows 3-6)
    img[:4] = RED
    img[:4, 5:] = BLUE
    t = F.tile(img, 6, border=1, background=BG, width=12)
    assert t.shape == (6, 12, 3) and is_colour(t[:1], BG) and is_colour(t[:, 11:], BG)
    assert is_colour(t[1:5, 1:6], RED) and is_colour(t[1:5, 6:11], BLUE)


def _ink_rows(panel: np.ndarray, background=(255, 255, 255)) -> np.ndarray:
    """Row indices holding any pixel that is not the background."""
    return np.flatnonzero((panel != np.asarray(background, np.uint8)).any(axis=(1, 2)))


def test_text_wraps_at_the_panel_width():
    font = F.load_font(14)
    # DejaVu Sans 14 px: "aaa bbb" is 57 px wide, "aaa bbb ccc" 84 px
    assert F.wrap_text("aaa bbb ccc", font, 70) == ["aaa bbb", "ccc"]
    assert F.wrap_text("aaa bbb ccc", font, 90) == ["aaa bbb ccc"]
    assert F.wrap_text("aaa\n\nbbb", font, 90) == ["aaa", "", "bbb"]
    # the panel: 4 px margins, so "aaa bbb ccc" in 78 px (70 inside) takes two lines
    two = F.text_panel("aaa bbb ccc", 78, 60, font_size=14)
    one = F.text_panel("aaa bbb ccc", 98, 60, font_size=14)
    assert two.shape == (60, 78, 3) and one.shape == (60, 98, 3)
    # line k starts at row 2 + 16 k; the second line's glyphs end before row 2 + 32 + 14
    assert _ink_rows(one).max() < 2 + 16 and 2 + 16 <= _ink_rows(two).max() < 2 + 32
    # height None fits the lines: 2 * 2 margin + 1 * 16 line step + ascent 13 + descent 4
    assert F.text_panel(["aaa bbb ccc"], 78, font_size=14).shape[0] == 4 + 16 + 17


def test_text_left_out_ends_in_an_ellipsis():
    font = F.load_font(14)
    # 40 px tall: (40 - 4) // 16 = 2 lines fit of the three
    panel = F.text_panel("aaa bbb ccc", 36, 40, font_size=14)
    assert _ink_rows(panel).max() < 2 + 32
    lines = F.wrap_text("aaa bbb ccc", font, 28)
    assert lines == ["aaa", "bbb", "ccc"]
    cut = F._ellipsize("bbb", font, 28)
    assert cut.endswith(F.ELLIPSIS) and font.getlength(cut) <= 28
    one = F.status_line("a rather long status line that cannot fit", 60)
    assert one.shape[1] == 60 and one.shape[0] == 2 * 3 + sum(F.load_font(13).getmetrics())


def test_label_and_dial_draw_where_they_say():
    img = F.label(solid(20, 60, BG), "Ä", (2, 2), font_size=14, colour=(255, 255, 255))
    ink = np.argwhere((img != np.asarray(BG, np.uint8)).any(axis=2))
    assert len(ink) > 10 and ink[:, 1].max() < 2 + 14 and ink[:, 0].min() >= 0
    # a needle to the east (bearing 90) from the centre of a 60 px dial
    d = F.bearing_dial(60, 90.0, background=BG, needle=(250, 200, 60))
    needle = (d == np.asarray((250, 200, 60), np.uint8)).all(axis=2)
    rows, cols = np.nonzero(needle)
    assert cols.min() >= 29 and cols.max() > 40 and abs(rows.mean() - 30) < 3


def test_one_font_loader():
    # frames, maps and signs share one cached DejaVu Sans loader
    assert F.load_font is fonts.load_font
    assert F.load_font(17) is F.load_font(17) is fonts.load_font(17)
    assert F.load_font(17, bold=True) is not F.load_font(17)
    assert Path(F.load_font(17).path).name == "DejaVuSans.ttf"
    # no other module opens a font file itself
    root = Path(urban_gym.__file__).parent
    openers = []
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in ("truetype", "load_default"):
                openers.append(path.relative_to(root).as_posix())
    assert set(openers) == {"render/fonts.py"}  # DejaVu and Noto Sans CJK, both there
