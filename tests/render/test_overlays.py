"""render/overlays.py: the branch arrows drawn into a PoseGraph360 view, checked by hand on
a plain grey image."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from urban_gym.render.overlays import draw_branch_arrows

GREY = 90


def red(img: np.ndarray) -> np.ndarray:
    """Pixels that the arrows turned red (grey stays r == g == b)."""
    r, g = img[..., 0].astype(int), img[..., 1].astype(int)
    return r - g > 80


def test_arrows_point_where_the_branches_go():
    img = np.full((128, 128, 3), GREY, np.uint8)
    ahead = SimpleNamespace(relative=0.0, trajectory=7)
    right = SimpleNamespace(relative=90.0, trajectory=8)
    out = draw_branch_arrows(img, [ahead, right], {"UP": 7})
    assert (img == GREY).all()  # the input is not drawn on
    # dial: radius int(0.16 * 128) = 20, centre (64, 128 - 20 - 3) = (64, 105)
    r, cx, cy = 20, 64, 105
    mask = red(out)
    assert mask[cy - r : cy - 4, cx - 1 : cx + 2].any(axis=1).all()  # UP: a red shaft up
    assert mask[cy - 1 : cy + 2, cx + 4 : cx + r].any(axis=0).all()  # the other: right
    assert not mask[:, : cx - 8].any()  # nothing points left
    assert not mask[: 128 // 2 - 10].any()  # the dial stays in the lower part
    # the selected branch is labelled UP in bright red above its tip; the other is dark
    assert out[: cy - r, :, 0].max() >= 220
    assert out[cy - 1 : cy + 2, cx + 4 : cx + r, 0].max() < 200
    # the dial is a translucent white disc: lighter than the view, darker than white
    assert GREY < out[cy + 8, cx - 8, 0] < 255


def test_small_views_get_no_label():
    img = np.full((48, 48, 3), GREY, np.uint8)
    out = draw_branch_arrows(img, [SimpleNamespace(relative=0.0, trajectory=1)], {"UP": 1})
    cx, cy = 24, 48 - 7 - 2
    assert red(out)[cy - 7 : cy, cx].any()
    assert not red(out)[: cy - 7 - 2].any()  # no label above the arrow's tip


def test_labels_sit_beyond_their_arrow_tips():
    img = np.full((128, 128, 3), GREY, np.uint8)
    branches = [
        SimpleNamespace(relative=rel, trajectory=t) for rel, t in ((-90, 1), (0, 2), (90, 3))
    ]
    out = draw_branch_arrows(img, branches, {"LEFT": 1, "UP": 2, "RIGHT": 3})
    r, cx, cy = 20, 64, 105
    mask = red(out)
    # the UP label: red glyphs in the rows above the tip (cy - r), all in the lower half
    above = mask[: cy - r - 1]
    assert above.any() and not mask[:64].any()
    cols = np.flatnonzero(above.any(axis=0))
    assert cols.min() > cx - 12 and cols.max() < cx + 12  # centred over the arrow
    # LEFT and RIGHT: glyphs beside the dial at its centre's height, beyond the tips
    row = mask[cy - 6 : cy + 6]
    assert row[:, : cx - r - 1].sum() > 20 and row[:, cx + r + 1 :].sum() > 20
    # the labels have a white outline (the map's text style), which the arrows have not
    assert (out[: cy - r - 1] >= 230).all(axis=-1).any()


def drawn_step_by_step(img, branches, choices):
    """The arrows as their docstring describes them, one OpenCV call and one text blit at a
    time: a white anti-aliased disc blended 35 % over, an arrow per branch (thick and red
    when a choice names it), the name's label beyond the tip.
    """
    import math

    import cv2

    from urban_gym.render.overlays import _label_px
    from urban_gym.render.text import blit_text, text_sprite

    out = img.copy()
    h, w = out.shape[:2]
    r = max(4, int(0.16 * min(w, h)))
    cx, cy = w // 2, h - r - max(2, h // 40)
    x0, y0, x1, y1 = max(0, cx - r - 1), max(0, cy - r - 1), min(w, cx + r + 2), min(h, cy + r + 2)
    disc = out[y0:y1, x0:x1].copy()
    cv2.circle(disc, (cx - x0, cy - y0), r, (255, 255, 255), -1, cv2.LINE_AA)
    out[y0:y1, x0:x1] = cv2.addWeighted(disc, 0.35, out[y0:y1, x0:x1], 0.65, 0)
    names = {t: n for n, t in choices.items()}
    thick = max(1, int(round(min(w, h) / 90)))
    line = cv2.LINE_AA if min(w, h) >= 128 else cv2.LINE_8
    for br in branches:
        a = math.radians(br.relative)
        tip = (int(round(cx + r * math.sin(a))), int(round(cy - r * math.cos(a))))
        name = names.get(br.trajectory)
        colour = (230, 20, 20) if name else (120, 30, 30)
        cv2.arrowedLine(out, (cx, cy), tip, colour, thick + bool(name), line, tipLength=0.35)
        if name and min(w, h) >= 64:
            label = text_sprite(name, _label_px(min(w, h)), bold=True, halo=1)
            th, tw = label.shape[:2]
            reach = r + 2 + abs(math.sin(a)) * tw / 2 + abs(math.cos(a)) * th / 2
            lx = min(max(cx + reach * math.sin(a) - tw / 2, 0), w - tw)
            ly = min(max(cy - reach * math.cos(a) - th / 2, 0), h - th)
            blit_text(out, label, lx, ly, (230, 20, 20))
    return out


def test_arrows_are_the_step_by_step_drawing_on_both_backends():
    """The kept per-size geometry and the direct label blend give exactly the pixels of the
    plain recipe, with the compiled text blend and with its numpy reference.
    """
    from urban_gym.render import kernels

    rng = np.random.default_rng(5)
    try:
        for backend in ("numba", "numpy"):
            kernels.set_backend(backend)
            for size in ((40, 40), (84, 84), (128, 96), (200, 150)):
                for _ in range(6):
                    img = rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)
                    n = int(rng.integers(1, 5))
                    branches = [
                        SimpleNamespace(relative=float(rng.uniform(-180, 180)), trajectory=t)
                        for t in range(n)
                    ]
                    choices = dict(zip(("LEFT", "UP", "RIGHT"), rng.permutation(n)[:3].tolist()))
                    want = drawn_step_by_step(img, branches, choices)
                    np.testing.assert_array_equal(draw_branch_arrows(img, branches, choices), want)
    finally:
        kernels.set_backend(None)
