"""Rendered frames drawn piecemeal: a view renders only the tiles it reads, a later view
of the frame completes it, and every view equals the one cut from the whole panorama."""

from __future__ import annotations

import numpy as np

from urban_gym.families.posegraph360.worlds import rendered_source
from urban_gym.render import perspective

W = 256


def _spot(city):
    x0, y0, x1, y1 = city.bounds
    return (x0 + x1) / 2 + 3.0, (y0 + y1) / 2 + 1.0


def test_first_view_renders_its_tiles_and_a_turn_completes_the_frame(tiny_city):
    src = rendered_source(tiny_city, W, "day", "clear", 16.0)
    whole = rendered_source(tiny_city, W, "day", "clear", 16.0).render(*_spot(tiny_city))
    drawn: list[tuple] = []
    window = src.window

    def counted(x, y, cols, rows):
        drawn.append((cols, rows))
        return window(x, y, cols, rows)

    src.window = counted
    x, y = _spot(tiny_city)
    size = (64, 64)
    pano, heading = src.view_panorama(("t", 0), x, y, (30.0, 0.0, 90.0, size))
    assert heading == 0.0 and len(drawn) == 1
    (c0, n), (r0, r1) = drawn[0]
    # a 90-degree view reads about a quarter of the columns and half of the rows
    assert n < W // 2 and r1 - r0 < W // 2
    np.testing.assert_array_equal(
        perspective(pano, 30.0, 0.0, 90.0, size), perspective(whole, 30.0, 0.0, 90.0, size)
    )
    # the same view again draws nothing; a view turned away draws the rest of the frame
    src.view_panorama(("t", 0), x, y, (30.0, 0.0, 90.0, size))
    assert len(drawn) == 1
    pano, _ = src.view_panorama(("t", 0), x, y, (200.0, -10.0, 90.0, size))
    assert drawn[1] == ((0, W), (0, W // 2))
    np.testing.assert_array_equal(pano, whole)
    np.testing.assert_array_equal(src.panorama(("t", 0), x, y)[0], whole)
    assert len(drawn) == 2


def test_a_view_across_the_seam_equals_the_whole_panoramas(tiny_city):
    src = rendered_source(tiny_city, W, "dusk", "clear", 16.0)
    x, y = _spot(tiny_city)
    whole = src.render(x, y)
    for yaw in (180.0, -170.0, 175.0):  # the seam of a north-centred panorama is south
        fresh = rendered_source(tiny_city, W, "dusk", "clear", 16.0)
        pano, _ = fresh.view_panorama(("t", 0), x, y, (yaw, 5.0, 70.0, (48, 40)))
        np.testing.assert_array_equal(
            perspective(pano, yaw, 5.0, 70.0, (48, 40)),
            perspective(whole, yaw, 5.0, 70.0, (48, 40)),
        )


def test_env_views_equal_those_cut_from_whole_panoramas():
    """Random masked steps (turns, pitches, walks, branches, resets) of two envs with the
    same seeds: one draws frames piecemeal, the other whole; every observation is equal."""
    import gymnasium as gym

    from urban_gym.families.posegraph360.world.frames import RenderedFrames

    a = gym.make("UrbanGym/PoseGraph360-v0", view_size=84, cache_mb=5.0).unwrapped
    b = gym.make("UrbanGym/PoseGraph360-v0", view_size=84, cache_mb=5.0).unwrapped
    b.graph = b.graph.with_source(RenderedFrames(b.graph.source.render, 5.0))
    assert a.graph.source.shape is not None and b.graph.source.shape is None
    rng = np.random.default_rng(4)
    oa, _ = a.reset(seed=4)
    ob, _ = b.reset(seed=4)
    pitched = False
    for i in range(150):
        assert oa.keys() == ob.keys()
        for k in oa:
            np.testing.assert_array_equal(np.asarray(oa[k]), np.asarray(ob[k]), err_msg=f"{i} {k}")
        act = int(rng.choice(np.flatnonzero(oa["action_mask"])))
        oa, _, end_a, cut_a, _ = a.step(act)
        ob, _, _, _, _ = b.step(act)
        pitched |= a.pitch != 0.0
        if end_a or cut_a:
            oa, _ = a.reset(seed=i)
            ob, _ = b.reset(seed=i)
    assert pitched  # the walk looked up or down too


def test_rain_and_clear_nights_draw_frames_whole(tiny_city):
    # their streaks and stars are scattered over the whole panorama: no windows there
    whole = [("day", "rain"), ("night", "clear"), ("dusk", "rain")]
    piecemeal = [("day", "clear"), ("night", "fog"), ("dusk", "clear")]
    for tod, weather in whole + piecemeal:
        src = rendered_source(tiny_city, W, tod, weather, 1.0)
        assert (src.shape is None) == ((tod, weather) in whole), (tod, weather)


def test_a_frame_drawn_whole_is_kept_as_drawn_unless_the_window_lends_its_buffer(tiny_city):
    x, y = _spot(tiny_city)
    src = rendered_source(tiny_city, W, "day", "clear", 16.0)
    whole = src.render(x, y)
    pano, _ = src.panorama(("t", 0), x, y)  # a new frame asked whole: drawn at once
    np.testing.assert_array_equal(pano, whole)
    assert src.panorama(("t", 0), x, y)[0] is pano  # cached, not drawn again
    # a window handing out a view of a buffer it reuses: the frame keeps a copy
    lent = rendered_source(tiny_city, W, "day", "clear", 16.0)
    buf = np.zeros((W // 2, W, 3), np.uint8)
    window = lent.window

    def borrowed(x, y, cols, rows):
        view = buf[: rows[1] - rows[0], : cols[1]]
        view[:] = window(x, y, cols, rows)
        return view

    lent.window = borrowed
    pano, _ = lent.panorama(("t", 0), x, y)
    buf[:] = 0  # the buffer drawn into again
    np.testing.assert_array_equal(pano, whole)


def test_views_of_two_whole_frames_in_turn_read_each_its_own(tiny_city):
    """A source remembers the whole frame a view last read: views of two frames taken in
    turn each get their own frame's pixels, equal to the frame rendered at once.
    """
    src = rendered_source(tiny_city, W, "day", "clear", 16.0)
    a = _spot(tiny_city)
    b = (a[0] + 6.0, a[1] - 2.0)
    want = {p: src.render(*p) for p in (a, b)}
    for p in (a, b):
        src.panorama(("t", 0), *p)  # drawn whole
    for p in (a, b, b, a, b):
        pano, _ = src.view_panorama(("t", 0), *p, (30.0, 0.0, 90.0, (32, 32)))
        np.testing.assert_array_equal(pano, want[p])
    assert not np.array_equal(want[a], want[b])
