"""The fonts text is drawn in: DejaVu Sans, shipped with urban_gym (see
``data/fonts/LICENSE-DejaVu.txt``), and Noto Sans CJK from the ``noto-cjk-sans-otc``
package (SIL Open Font License 1.1) for what DejaVu lacks.

DejaVu Sans covers Latin-1 and Latin Extended-A (Portuguese ``ã ç``, German ``ä ß``, ...),
which Pillow's built-in bitmap font does not, but no Chinese or Japanese. :func:`font_for`
picks per string: DejaVu when it has a glyph for every character, else Noto Sans CJK (which
has Latin too, so a mixed name stays in one face). Without the CJK package text is drawn in
DejaVu as before (missing characters as boxes) and a warning says so, once.
"""

from __future__ import annotations

import warnings
from pathlib import Path

from PIL import ImageFont

from urban_gym.caching import lru_cached

FONT_DIR = Path(__file__).resolve().parent.parent / "data" / "fonts"

#: the package that ships Noto Sans CJK (a dependency of urban_gym)
CJK_PACKAGE = "noto_cjk_sans_otc"
#: faces of ``NotoSansCJK-Regular.ttc`` by the language whose glyph shapes they draw
CJK_FACES = {"ja": 0, "ko": 1, "zh": 2, "zh-Hant": 3}
#: a code point no font maps (a noncharacter): drawn, it shows the font's .notdef glyph
NOT_A_CHARACTER = "\uffff"
#: pixel size at which coverage is probed
_PROBE_PX = 24

_warned: list[bool] = []


def font_path(bold: bool = False) -> Path:
    """Path of the regular or bold DejaVu Sans TrueType file."""
    return FONT_DIR / ("DejaVuSans-Bold.ttf" if bold else "DejaVuSans.ttf")


@lru_cached(max_items=64, name="render.fonts")
def load_font(size: int, bold: bool = False) -> ImageFont.FreeTypeFont:
    """DejaVu Sans at ``size`` pixels (em height), cached."""
    return ImageFont.truetype(str(font_path(bold)), int(size))


def cjk_font_path() -> Path | None:
    """Path of the Noto Sans CJK collection, or None (with a warning, once) when the
    ``noto-cjk-sans-otc`` package is not installed.
    """
    try:
        module = __import__(CJK_PACKAGE)
        path = Path(str(module.FONT_PATH))
        if path.is_file():
            return path
    except (ImportError, AttributeError):
        pass
    if not _warned:
        _warned.append(True)
        warnings.warn(
            "urban_gym: the noto-cjk-sans-otc package is not installed, so Chinese, Japanese "
            "and Korean text is drawn in DejaVu Sans as boxes (pip install noto-cjk-sans-otc)",
            RuntimeWarning,
            stacklevel=2,
        )
    return None


@lru_cached(max_items=64, name="render.fonts.cjk")
def load_cjk_font(size: int, lang: str = "zh") -> ImageFont.FreeTypeFont | None:
    """Noto Sans CJK Regular at ``size`` pixels in the face of ``lang`` (a key of
    :data:`CJK_FACES`), cached; None without the CJK package.
    """
    if lang not in CJK_FACES:
        raise ValueError(f"CJK face lang={lang!r} is not one of {sorted(CJK_FACES)}")
    path = cjk_font_path()
    if path is None:
        return None
    return ImageFont.truetype(str(path), int(size), index=CJK_FACES[lang])


def _mask(font: ImageFont.FreeTypeFont, ch: str) -> tuple[tuple[int, int], bytes]:
    m = font.getmask(ch)
    return m.size, bytes(m)


@lru_cached(max_items=65536, name="render.fonts.covers")
def dejavu_covers(ch: str, bold: bool = False) -> bool:
    """Whether DejaVu Sans draws ``ch`` (one character) as its own glyph: what it draws
    differs from its .notdef box (what an unmapped code point shows).
    """
    font = load_font(_PROBE_PX, bold)
    return ch.isspace() or _mask(font, ch) != _mask(font, NOT_A_CHARACTER)


def face_of_language(lang: str | None) -> str | None:
    """The CJK face (a key of :data:`CJK_FACES`) of a BCP 47 language code (``"ja"``,
    ``"ko"``, ``"zh"``, ``"zh-Hans"``, ``"zh-Hant"``, ``"zh-TW"``, ``"zh-HK"``, ``"yue"``,
    any case, ``_`` or ``-``), or None for another language or none.
    """
    if not lang:
        return None
    parts = lang.replace("_", "-").casefold().split("-")
    if parts[0] in ("ja", "ko"):
        return parts[0]
    if parts[0] == "yue" or (
        parts[0] == "zh" and any(p in ("hant", "tw", "hk", "mo") for p in parts[1:])
    ):
        return "zh-Hant"
    return "zh" if parts[0] == "zh" else None


def cjk_lang(text: str, lang: str | None = None) -> str:
    """The CJK face for ``text``: Japanese when it has kana, Korean when it has Hangul,
    else (Han characters alone, which the languages share but draw differently: 直, 骨)
    the face of the language hint ``lang`` (:func:`face_of_language`: a Japanese place's
    kanji-only name in the Japanese face), else simplified Chinese.
    """
    for c in text:
        o = ord(c)
        if 0x3040 <= o <= 0x30FF or 0x31F0 <= o <= 0x31FF or 0xFF66 <= o <= 0xFF9F:
            return "ja"
    for c in text:
        o = ord(c)
        if 0xAC00 <= o <= 0xD7AF or 0x1100 <= o <= 0x11FF or 0x3130 <= o <= 0x318F:
            return "ko"
    return face_of_language(lang) or "zh"


@lru_cached(max_items=4096, name="render.fonts.font_for")
def font_for(
    text: str, size: int, bold: bool = False, lang: str | None = None
) -> ImageFont.FreeTypeFont:
    """The font to draw ``text`` in at ``size`` px: DejaVu Sans (``bold`` or not) when it
    covers every character, else Noto Sans CJK Regular in the face :func:`cjk_lang` picks
    for ``text`` and the language hint ``lang`` (the language of the place the text names,
    e.g. ``"ja"``; DejaVu when the CJK package is missing).
    """
    if all(dejavu_covers(c, bold) for c in text):
        return load_font(size, bold)
    cjk = load_cjk_font(size, cjk_lang(text, lang))
    return load_font(size, bold) if cjk is None else cjk


def fonts_key() -> str:
    """What the fonts in use are, for the keys of cached drawings (sign atlases): the
    CJK collection's file name and size, or ``"nocjk"`` without it.
    """
    try:
        module = __import__(CJK_PACKAGE)
        path = Path(str(module.FONT_PATH))
        return f"{path.name}:{path.stat().st_size}"
    except (ImportError, AttributeError, OSError):
        return "nocjk"
