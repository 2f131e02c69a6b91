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
