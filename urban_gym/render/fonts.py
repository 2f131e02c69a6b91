"""The fonts shipped with urban_gym (DejaVu Sans, see ``data/fonts/LICENSE-DejaVu.txt``).

DejaVu Sans covers Latin-1 and Latin Extended-A (ä, ö, å, ...), which Pillow's built-in
bitmap font does not.
"""

from __future__ import annotations

from pathlib import Path

from PIL import ImageFont

from urban_gym.caching import lru_cached

FONT_DIR = Path(__file__).resolve().parent.parent / "data" / "fonts"


def font_path(bold: bool = False) -> Path:
    """Path of the regular or bold DejaVu Sans TrueType file."""
    return FONT_DIR / ("DejaVuSans-Bold.ttf" if bold else "DejaVuSans.ttf")


@lru_cached(max_items=64, name="render.fonts")
def load_font(size: int, bold: bool = False) -> ImageFont.FreeTypeFont:
    """DejaVu Sans at ``size`` pixels (em height), cached."""
    return ImageFont.truetype(str(font_path(bold)), int(size))
