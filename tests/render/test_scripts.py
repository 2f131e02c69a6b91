"""Every script renders (issue 37): signs in Japanese, Chinese, Portuguese and German are
drawn as glyphs, not as the boxes ("tofu") a font draws for a character it lacks.

The check: each distinct character, drawn alone on a board by the renderer's own
:func:`~urban_gym.render.textures.render_sign`, leaves an ink shape of its own: no two
distinct characters give the same shape, and none gives the shape of a code point no font
maps (the .notdef box). A font without the script draws every character as that one box, so
the check fails: :func:`test_tofu_check_fails_with_dejavu_alone` shows it does.
"""

from __future__ import annotations

import difflib
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw

from urban_gym.render.fonts import (
    NOT_A_CHARACTER,
    cjk_font_path,
    font_for,
    fonts_key,
    load_font,
)
from urban_gym.render.text import text_sprite
from urban_gym.render.textures import render_sign

BOARD, INK = (20, 60, 120), (255, 255, 255)
REPO = Path(__file__).resolve().parents[2]

SIGNS = {
    "ja": "東京駅前 さくら通り",
    "zh": "北京大学 东门",
    "pt": "Pão de Açúcar",
    "de": "Große Straße Über",
}

needs_cjk = pytest.mark.skipif(
    cjk_font_path() is None, reason="the noto-cjk-sans-otc font package is not installed"
)


def ink(image: np.ndarray) -> np.ndarray:
    """The text's pixels of a board (frame cut off), cropped to their bounding box."""
    img = image[4:-4, 4:-4].astype(np.int32)
    d_board = np.abs(img - np.array(BOARD)).sum(axis=2)
    d_ink = np.abs(img - np.array(INK)).sum(axis=2)
    mask = d_ink < d_board
    if not mask.any():
        return np.zeros((0, 0), bool)
    rows, cols = np.flatnonzero(mask.any(axis=1)), np.flatnonzero(mask.any(axis=0))
    return mask[rows[0] : rows[-1] + 1, cols[0] : cols[-1] + 1]


def tofu(shapes: dict[str, np.ndarray], notdef: np.ndarray) -> list[str]:
    """What is wrong with the ink ``shapes`` of distinct characters: those equal to the
    .notdef shape and pairs with the same shape (empty when every one is a glyph of its own).
    """
    bad = [f"{c!r} is the .notdef box" for c, s in shapes.items() if np.array_equal(s, notdef)]
    chars = list(shapes)
    for i, a in enumerate(chars):
        for b in chars[i + 1 :]:
            if np.array_equal(shapes[a], shapes[b]):
                bad.append(f"{a!r} and {b!r} draw the same shape")
    return bad


def sign_shapes(text: str) -> dict[str, np.ndarray]:
    """Each distinct non-space character of ``text`` drawn alone by render_sign."""
    return {c: ink(render_sign(c, BOARD, INK).image) for c in dict.fromkeys(text) if c != " "}


def _langs() -> list:
    """The sign languages; Chinese and Japanese need the CJK font package."""
    return [pytest.param(k, marks=needs_cjk if k in ("ja", "zh") else ()) for k in sorted(SIGNS)]


@pytest.mark.parametrize("lang", _langs())
def test_sign_draws_every_character_as_a_glyph(lang):
    text = SIGNS[lang]
    whole = render_sign(text, BOARD, INK)
    assert ink(whole.image).any()
    notdef = ink(render_sign(NOT_A_CHARACTER, BOARD, INK).image)
    assert notdef.any()  # the box is drawn: comparing with it can fail
    assert tofu(sign_shapes(text), notdef) == []


@needs_cjk
def test_cjk_signs_use_the_cjk_font_and_latin_signs_stay_in_dejavu():
    px = 40
    assert Path(font_for(SIGNS["ja"], px).path).name == cjk_font_path().name
    assert font_for(SIGNS["ja"], px).getname()[0] == "Noto Sans CJK JP"  # kana: Japanese face
    assert font_for(SIGNS["zh"], px).getname()[0] == "Noto Sans CJK SC"
    for lang in ("pt", "de"):  # DejaVu covers their accents: drawn exactly as before
        assert Path(font_for(SIGNS[lang], px, bold=True).path).name == "DejaVuSans-Bold.ttf"
    # a Latin name beside a CJK one is drawn in the CJK face, which has Latin too
    assert Path(font_for("東京駅 (Tokyo Station)", px).path).name == cjk_font_path().name


@needs_cjk
def test_map_text_draws_cjk_glyphs():
    def shape(c: str) -> np.ndarray:
        m = text_sprite(c, 20, halo=0)[..., 0] > 127
        rows, cols = np.flatnonzero(m.any(axis=1)), np.flatnonzero(m.any(axis=0))
        return m[rows[0] : rows[-1] + 1, cols[0] : cols[-1] + 1]

    text = SIGNS["ja"] + SIGNS["zh"]
    shapes = {c: shape(c) for c in dict.fromkeys(text) if c != " "}
    assert tofu(shapes, shape(NOT_A_CHARACTER)) == []


def _dejavu_shapes(text: str) -> tuple[dict[str, np.ndarray], np.ndarray]:
    font = load_font(40, bold=True)

    def shape(c: str) -> np.ndarray:
        im = Image.new("RGB", (80, 60), BOARD)
        ImageDraw.Draw(im).text((40, 30), c, font=font, fill=INK, anchor="mm")
        return ink(np.pad(np.asarray(im), ((4, 4), (4, 4), (0, 0)), mode="edge"))

    return {c: shape(c) for c in dict.fromkeys(text) if c != " "}, shape(NOT_A_CHARACTER)


def test_tofu_check_fails_with_dejavu_alone():
    shapes, notdef = _dejavu_shapes(SIGNS["ja"])
    problems = tofu(shapes, notdef)
    assert len(problems) >= len(shapes)  # every CJK character is the box
    # ... while DejaVu passes it on the Latin signs
    for lang in ("pt", "de"):
        assert tofu(*_dejavu_shapes(SIGNS[lang])) == []


def test_without_the_cjk_package_signs_render_as_before_and_warn_once():
    # a fresh interpreter in which importing the font package fails, as when it is absent
    code = textwrap.dedent(
        f"""
        import sys, warnings
        sys.modules["noto_cjk_sans_otc"] = None
        from urban_gym.render.textures import render_sign
        from urban_gym.render.fonts import load_font, font_for, fonts_key
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            a = render_sign({SIGNS["ja"]!r}, (0, 0, 0), (255, 255, 255))
            b = render_sign({SIGNS["zh"]!r}, (0, 0, 0), (255, 255, 255))
        assert font_for({SIGNS["ja"]!r}, 40, True).path == load_font(40, True).path
        n = len([x for x in w if "noto-cjk-sans-otc" in str(x.message)])
        print(n, a.image.shape[0], fonts_key())
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    warned, height, key = out.stdout.split()
    assert warned == "1" and int(height) > 0
    # the sign atlases cached on disk are named by the fonts: another set, other files
    assert key == "nocjk"
    if cjk_font_path() is not None:
        assert fonts_key() != key and cjk_font_path().name in fonts_key()


LANGS = {"ja": "jpn", "zh": "chi_sim", "pt": "por", "de": "deu"}


def _tesseract_langs() -> set[str]:
    if shutil.which("tesseract") is None:
        return set()
    out = subprocess.run(["tesseract", "--list-langs"], capture_output=True, text=True)
    return set(out.stdout.split()[1:])


@pytest.mark.parametrize("lang", _langs())
def test_ocr_reads_the_sign(lang, tmp_path):
    if LANGS[lang] not in _tesseract_langs():
        pytest.skip(f"tesseract with the {LANGS[lang]} language pack is not installed")
    sign = render_sign(SIGNS[lang], BOARD, INK).image
    path = tmp_path / "sign.png"
    # dark text on light, with a margin: how Tesseract reads best
    Image.fromarray(255 - sign.max(axis=2).astype(np.uint8)).save(path)
    out = subprocess.run(
        ["tesseract", str(path), "-", "-l", LANGS[lang], "--psm", "7"],
        capture_output=True,
        text=True,
    )
    read = "".join(out.stdout.split())
    want = "".join(SIGNS[lang].split())
    assert difflib.SequenceMatcher(None, read, want).ratio() >= 0.8, (read, want)


#: a character whose Japanese and simplified-Chinese glyphs differ (the inner strokes)
KANJI = "直"


def _drawn_in(face: str, sign: np.ndarray) -> np.ndarray:
    """The ink of :data:`KANJI` drawn in Noto Sans CJK's ``face`` exactly where
    :func:`render_sign` draws it on a board the size of ``sign``.
    """
    from urban_gym.render.fonts import load_cjk_font
    from urban_gym.render.textures import SIGN_BOARD_M, SIGN_PPM, SIGN_TEXT_EM

    h, w = sign.shape[:2]
    im = Image.new("RGB", (w, h), BOARD)
    font = load_cjk_font(int(SIGN_PPM * SIGN_BOARD_M * SIGN_TEXT_EM), face)
    ImageDraw.Draw(im).text((w / 2, 0.5 * h), KANJI, font=font, fill=INK, anchor="mm")
    return ink(np.asarray(im))


@needs_cjk
def test_a_kanji_only_name_takes_the_face_of_its_language():
    px = 40
    assert font_for(KANJI, px).getname()[0] == "Noto Sans CJK SC"  # no hint: Chinese
    assert font_for(KANJI, px, lang="ja").getname()[0] == "Noto Sans CJK JP"
    assert font_for(KANJI, px, lang="zh-TW").getname()[0] == "Noto Sans CJK TC"
    assert font_for(KANJI, px, lang="fi").getname()[0] == "Noto Sans CJK SC"
    # kana decide whatever the hint says; a Latin name stays in DejaVu
    assert font_for("さくら", px, lang="zh").getname()[0] == "Noto Sans CJK JP"
    assert font_for("Kamppi", px, lang="ja").getname()[0] == "DejaVu Sans"

    ja = render_sign(KANJI, BOARD, INK, lang="ja").image
    zh = render_sign(KANJI, BOARD, INK).image
    jp_ink, sc_ink = _drawn_in("ja", ja), _drawn_in("zh", zh)
    assert not np.array_equal(jp_ink, sc_ink)  # the faces differ here: the test can fail
    assert np.array_equal(ink(ja), jp_ink)
    assert np.array_equal(ink(zh), sc_ink)


def _scene_sign(tags: dict[str, str]) -> np.ndarray:
    """The free-standing sign the renderer's scene draws for one POI named :data:`KANJI`
    with OSM ``tags`` (no building: a sign on a post).
    """
    import networkx as nx
    from shapely.geometry import LineString, box

    from urban_gym.render.scene import Scene
    from urban_gym.world.assemble import assemble_city
    from urban_gym.world.city import POI, Building
    from urban_gym.world.geo import GeoFrame

    net = nx.Graph()
    net.add_node(0, x=-30.0, y=0.0)
    net.add_node(1, x=30.0, y=0.0)
    line = LineString([(-30.0, 0.0), (30.0, 0.0)])
    edge = {"kind": "footway", "highway": "footway", "covered": False, "width": 3.0}
    net.add_edge(0, 1, geometry=line, start=0, length=60.0, name=None, osm_id="w1", **edge)
    poi = POI(0, "n1", KANJI, "shop", "antiques", (0.0, 5.0), tags={"name": KANJI, **tags})
    house = Building(0, "w100", box(20.0, 20.0, 30.0, 30.0), 10.0, "yes", None, "height")
    frame = GeoFrame(35.0, 139.0)
    city = assemble_city("t", frame, [house], [poi], [], [], net, {}, "t", no_building={0})
    scene = Scene(city)
    scene.ensure_signs()
    ((pid, sprite),) = scene.free_signs
    assert pid == 0
    return sprite.rgba


@needs_cjk
def test_a_japanese_places_kanji_sign_is_drawn_in_the_japanese_face():
    from urban_gym.render.scene import _post_sign
    from urban_gym.render.textures import sign_colours

    board, text = sign_colours(0, "shop")

    def post(lang: str | None) -> np.ndarray:
        return _post_sign(render_sign(KANJI, board, text, 1, width_m=4.0, lang=lang)).rgba

    assert not np.array_equal(post("ja"), post(None))
    assert np.array_equal(_scene_sign({"name:ja": KANJI}), post("ja"))
    assert np.array_equal(_scene_sign({"addr:country": "JP"}), post("ja"))
    assert np.array_equal(_scene_sign({}), post(None))  # nothing tells: Chinese, as before


@needs_cjk
def test_map_labels_take_the_hint_too():
    ja, zh = (text_sprite(KANJI, 20, halo=0, lang=x) for x in ("ja", None))
    assert not np.array_equal(ja, zh)
    assert np.array_equal(zh, text_sprite(KANJI, 20, halo=0, lang="zh-Hans"))


@needs_cjk
def test_a_projecting_blade_takes_the_hint_too():
    from urban_gym.render.blades import render_blade

    ja, zh = (render_blade(KANJI, BOARD, INK, lang=x) for x in ("ja", None))
    assert ja.shape == zh.shape and not np.array_equal(ja, zh)
    assert np.array_equal(zh, render_blade(KANJI, BOARD, INK, lang="zh"))
