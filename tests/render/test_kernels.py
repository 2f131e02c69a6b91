"""The compiled ray caster against the numpy reference: the same images, depth and ids on
Helsinki and on a procedural city (views from many places, headings and conditions,
inside buildings too), and the numpy path with one clear warning where numba cannot run.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from urban_gym.render import Conditions, FirstPersonRenderer, PanoramaRenderer, kernels

ROOT = Path(__file__).resolve().parents[2]
numba = pytest.importorskip("numba")


@pytest.fixture(autouse=True)
def _default_backend():
    yield
    kernels.set_backend(None)


def both(fn, *args, **kwargs):
    kernels.set_backend("numpy")
    ref = fn(*args, **kwargs)
    kernels.set_backend("numba")
    assert kernels.backend() == "numba"
    got = fn(*args, **kwargs)
    return ref, got


def places(city, n, seed=0):
    rng = np.random.default_rng(seed)
    x0, y0, x1, y1 = city.bounds
    return [(rng.uniform(x0, x1), rng.uniform(y0, y1)) for _ in range(n)]


def conditions(i):
    tod = ("day", "dusk", "night")[i % 3]
    weather = ("clear", "fog", "rain", "clear")[i % 4]
    return Conditions(time_of_day=tod, weather=weather, seed=i)


def assert_same(ref, got, where):
    # the images within one level everywhere (they are equal today: the same texture
    # coordinates sampled by cv2.remap, the boards by a sampler with OpenCV's arithmetic),
    # depth and ids exactly equal
    diff = np.abs(ref.rgb.astype(int) - got.rgb.astype(int))
    assert diff.max() <= 1 and diff.mean() < 0.01, (where, diff.max(), diff.mean())
    np.testing.assert_array_equal(ref.depth, got.depth, err_msg=str(where))
    np.testing.assert_array_equal(ref.ids, got.ids, err_msg=str(where))


@pytest.mark.parametrize("city_name", ["helsinki", "tiny_city"])
def test_first_person_views_match_the_reference(city_name, request):
    city = request.getfixturevalue(city_name)
    inside = 0
    for size in ((84, 84), (96, 64)):
        r = FirstPersonRenderer(city, *size)
        for i, (x, y) in enumerate(places(city, 10)):
            inside += city.building_at(x, y) is not None
            ref, got = both(r.render, x, y, 37.0 * i, 0.0, conditions(i), depth=True, ids=True)
            assert_same(ref, got, (size, x, y))
    assert inside  # some places lie inside buildings: the room path is pinned too


@pytest.mark.parametrize("city_name", ["helsinki", "tiny_city"])
def test_panoramas_and_pitched_views_match_the_reference(city_name, request):
    city = request.getfixturevalue(city_name)
    pano = PanoramaRenderer(city, 512, 256)
    fp = FirstPersonRenderer(city, 64, 48)
    for i, (x, y) in enumerate(places(city, 6, seed=1)):
        ref, got = both(pano.render, x, y, conditions(i), depth=True, ids=True)
        assert_same(ref, got, ("pano", x, y))
        ref, got = both(fp.render, x, y, 10.0 * i, 20.0, conditions(i), depth=True, ids=True)
        assert_same(ref, got, ("pitched", x, y))


def test_backend_switch_rejects_unknown_names():
    with pytest.raises(ValueError, match="backend='cuda'"):
        kernels.set_backend("cuda")


def test_without_numba_the_numpy_path_draws_with_one_warning(tmp_path):
    # a fresh interpreter in which `import numba` fails: one RuntimeWarning, same image
    code = textwrap.dedent(
        """
        import sys, warnings
        import numpy as np
        sys.modules["numba"] = None  # import numba -> ImportError
        from urban_gym.world import load_city
        from urban_gym.render import FirstPersonRenderer, kernels
        city = load_city("procedural:seed=3,blocks=2x2")
        r = FirstPersonRenderer(city, 32, 32)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            a = r.render(0.0, 0.0, 0.0).rgb
            b = r.render(0.0, 0.0, 0.0).rgb
        msgs = [str(x.message) for x in w if issubclass(x.category, RuntimeWarning)]
        assert len(msgs) == 1 and "numpy path" in msgs[0], msgs
        assert kernels.backend() == "numpy"
        np.save(sys.argv[1], a)
        """
    )
    out = tmp_path / "view.npy"
    env = {"PYTHONPATH": str(ROOT), "URBAN_GYM_CACHE": str(tmp_path / "cache")}
    import os

    proc = subprocess.run(
        [sys.executable, "-c", code, str(out)],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    from urban_gym.world import load_city

    city = load_city("procedural:seed=3,blocks=2x2")
    kernels.set_backend("numba")
    np.testing.assert_array_equal(
        np.load(out), FirstPersonRenderer(city, 32, 32).render(0.0, 0.0, 0.0).rgb
    )


@pytest.mark.slow
def test_an_unwritable_or_stale_cache_still_renders(tmp_path):
    # numba's cache under a path that cannot be a folder (a file: unwritable even for
    # root), then a fresh folder twice (written, then loaded): every run renders
    locked = tmp_path / "not-a-folder"
    locked.write_text("x")
    code = (
        "from urban_gym.world import load_city\n"
        "from urban_gym.render import FirstPersonRenderer, kernels\n"
        "r = FirstPersonRenderer(load_city('procedural:seed=3,blocks=2x2'), 24, 24)\n"
        "r.render(0.0, 0.0, 0.0)\n"
        "print(kernels.backend())\n"
    )
    import os

    for cache in (locked, tmp_path / "fresh", tmp_path / "fresh"):
        proc = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            env={
                **os.environ,
                "PYTHONPATH": str(ROOT),
                "NUMBA_CACHE_DIR": str(cache),
                "URBAN_GYM_CACHE": str(tmp_path / "world"),
            },
            timeout=300,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert proc.stdout.split()[-1] in ("numba", "numpy")


@pytest.mark.parametrize("city_name", ["helsinki", "tiny_city"])
def test_wall_candidates_match_the_reference(city_name, request):
    # the compiled candidate pass keeps the same walls, in the same order, with the same
    # relative endpoints and column spans as the numpy one -- outside and inside
    # buildings, for a narrow view (culled behind the eye) and a full panorama
    from urban_gym.render import raycast
    from urban_gym.render.panorama import check_position

    city = request.getfixturevalue(city_name)
    fp = FirstPersonRenderer(city, 84, 84)
    pano = PanoramaRenderer(city, 256, 128)
    k = kernels.compiled()
    assert k is not None
    inside = nonempty = 0
    for i, (x, y) in enumerate(places(city, 25, seed=2)):
        fx, fy, room = check_position(fp.scene, x, y, fp.inside, fp.eye_height)
        inside += room is not None
        window = raycast.ColumnCamera.equirect(100, 90, 17.0 * i, 100.0, 50.0, -30.0)
        for cam in (fp._base.with_yaw(29.0 * i), pano.camera, window):
            kernels.set_backend("numpy")
            ref = raycast.wall_candidates(fp.scene, cam, fx, fy, room)
            kernels.set_backend("numba")
            got = raycast.wall_candidates(fp.scene, cam, fx, fy, room)
            assert len(got.segs) == len(ref.segs)
            nonempty += bool(len(got.segs))
            for name in ("segs", "ax", "ay", "bx", "by", "i0", "cnt"):
                np.testing.assert_array_equal(getattr(ref, name), getattr(got, name), name)
            if room is None:
                assert ref.inner is None and got.inner is None
            else:
                np.testing.assert_array_equal(ref.inner, got.inner)
    assert inside and nonempty >= 50  # of 75 views


@pytest.mark.parametrize("city_name", ["helsinki", "tiny_city"])
def test_sprites_match_the_reference(city_name, request):
    # pedestrians a few metres ahead, at day and at night (lamps glow: the numpy blit),
    # clear and foggy: the compiled blit paints the same pixels, ids and depth
    import math

    from urban_gym.render.ids import PEDESTRIAN_BASE

    city = request.getfixturevalue(city_name)
    r = FirstPersonRenderer(city, 84, 84)
    seen = 0
    for i, (x, y) in enumerate(places(city, 12, seed=3)):
        if city.building_at(x, y) is not None:
            continue
        yaw = 41.0 * i
        fx, fy = math.sin(math.radians(yaw)), math.cos(math.radians(yaw))
        peds = [
            (x + d * fx + o * fy, y + d * fy - o * fx) for d, o in ((2.5, 0.3), (6, -1), (12, 2))
        ]
        cond = Conditions(time_of_day=("day", "night")[i % 2], weather=("clear", "fog")[i % 2])
        ref, got = both(r.render, x, y, yaw, 0.0, cond, peds, depth=True, ids=True)
        assert_same(ref, got, (x, y))
        seen += int((got.ids >= PEDESTRIAN_BASE).sum() > 0)
    assert seen >= 3


def test_map_labels_match_the_reference(helsinki):
    # the compiled label layout places the same labels: maps at several scales,
    # rotations and sizes are equal pixel for pixel, and labels show on them
    from urban_gym.render import MapMarkers, MapRenderer

    r = MapRenderer(helsinki)
    for i, (x, y) in enumerate(places(helsinki, 8, seed=4)):
        kw = dict(
            center=(x, y),
            metres_per_pixel=(0.5, 1.0, 2.0, 4.0)[i % 4],
            size=((84, 84), (256, 192))[i % 2],
            rotation=(0.0, 33.0)[i % 2],
            markers=MapMarkers(agent=(x, y, 10.0 * i)),
        )
        ref, got = both(r.render, labels=True, **kw)
        np.testing.assert_array_equal(ref, got, err_msg=str(kw))
        if i % 2:
            assert (ref != r.render(labels=False, **kw)).any(), kw


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_label_layout_by_hand(backend):
    # five POIs, nearest first, labels 20 px wide in a 100 px map (4x4 px cells):
    # (10, 20) is placed (cells rows 3-6, cols 3-8); (12, 22) overlaps it: a dot;
    # (90, 50) would run past the right edge: a dot; (10, 60) is free: placed;
    # (5, 3) would start above the top: a dot
    from urban_gym.render.map import MapRenderer

    kernels.set_backend(backend)
    cols = np.array([10.0, 12.0, 90.0, 10.0, 5.0])
    rows = np.array([20.0, 22.0, 50.0, 60.0, 3.0])
    taken = np.zeros((27, 27), bool)
    got = MapRenderer._label_layout(cols, rows, np.full(5, 20), taken, 100)
    assert got.tolist() == [1, 0, 0, 1, 0]
    assert taken.sum() == 2 * 4 * 6 and taken[3:7, 3:9].all() and taken[13:17, 3:9].all()


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_label_candidates_by_hand(backend, tiny_city):
    # a 100x100 px north-up map at 1 m a pixel centred on (0, 0): the POI at (10, 20) m
    # shows at column 60, row 30; (0, -5) at column 50, row 55 and nearer the centre, so
    # first; (-60, 0) lies off the map; (0, 5) ties with (0, -5) and comes after it (a
    # stable sort: index order)
    from urban_gym.render.map import MapRenderer

    kernels.set_backend(backend)
    r = MapRenderer(tiny_city)
    r._poi_xy = np.array([[10.0, 20.0], [-60.0, 0.0], [0.0, -5.0], [0.0, 5.0]])
    r._poi_by_x = None
    idx, cols, rows = r._label_candidates((0.0, 0.0, 1.0, 100, 100, 0.0))
    assert idx.tolist() == [2, 3, 0]
    assert cols.tolist() == [50.0, 50.0, 60.0] and rows.tolist() == [55.0, 45.0, 30.0]


@pytest.mark.parametrize("city_name", ["helsinki", "tiny_city"])
def test_culling_walls_behind_a_narrow_view_changes_no_pixel(city_name, request, monkeypatch):
    # a view at most 120 degrees wide -- a perspective view, or the panorama window of a
    # pitched view -- leaves out the walls behind the eye: its frames are the same as
    # with every facing wall a candidate
    from urban_gym.render import raycast
    from urban_gym.render.panorama import check_position

    city = request.getfixturevalue(city_name)
    fp = FirstPersonRenderer(city, 84, 84)
    cond = Conditions()
    for i, (x, y) in enumerate(places(city, 8, seed=5)):
        fx, fy, room = check_position(fp.scene, x, y, fp.inside, fp.eye_height)
        for cam in (
            fp._base.with_yaw(23.0 * i),
            raycast.ColumnCamera.equirect(96, 96, 31.0 * i, 110.0, 60.0, -40.0),
        ):
            assert raycast._view_direction(cam) is not None
            culled = raycast.cast(fp.scene, cam, fx, fy, 1.6, cond, True, True, room)
            with monkeypatch.context() as m:
                m.setattr(raycast, "_view_direction", lambda cam: None)
                full = raycast.cast(fp.scene, cam, fx, fy, 1.6, cond, True, True, room)
            for a, b in zip(culled, full):
                np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("city_name", ["helsinki", "tiny_city"])
def test_sprite_plan_matches_the_reference(city_name, request):
    # the compiled plan draws the same billboards, in the same order, at the same boxes
    # as the numpy one: a perspective view, a full panorama and a pitched view's window,
    # with pedestrians around the eye; some are drawn, some hidden or out of view
    import math

    from urban_gym.render import raycast, sprites
    from urban_gym.render.panorama import check_position

    city = request.getfixturevalue(city_name)
    fp = FirstPersonRenderer(city, 84, 84)
    pano = PanoramaRenderer(city, 256, 128)
    drawn = 0
    for i, (x, y) in enumerate(places(city, 20, seed=6)):
        fx, fy, room = check_position(fp.scene, x, y, fp.inside, fp.eye_height)
        a = math.radians(37.0 * i)
        peds = np.array(
            [
                (fx + d * math.sin(a + o), fy + d * math.cos(a + o))
                for d, o in ((2.0, 0.1), (5.0, -0.4), (11.0, 0.7), (30.0, 2.5), (95.0, 0.0))
            ]
        )
        window = raycast.ColumnCamera.equirect(100, 90, 37.0 * i - 50.0, 100.0, 50.0, -30.0)
        for cam in (fp._base.with_yaw(37.0 * i), pano.camera, window):
            fp.scene.ensure_signs()
            hits = raycast.find_hits(fp.scene, cam, fx, fy, 1.6, room)
            t0 = np.full(cam.width, np.inf)
            first = hits.rank == 0
            t0[hits.col[first]] = hits.t[first]
            n0 = np.ascontiguousarray(hits.bounds[:, -3])
            kernels.set_backend("numpy")
            ref = sprites._plan(fp.scene, cam, fx, fy, 1.6, peds, t0, n0)
            kernels.set_backend("numba")
            got = sprites._plan(fp.scene, cam, fx, fy, 1.6, peds, t0, n0)
            for r, g in zip(ref, got):
                np.testing.assert_array_equal(r, g)
            drawn += len(got[0])
    assert drawn > 20


def test_sign_points_match_the_reference(helsinki):
    # views towards shops from across the street: the compiled pass finds the same board
    # pixels, in the same order, with the same atlas positions and POIs
    import math

    from urban_gym.render import boards, raycast
    from urban_gym.render.panorama import check_position

    fp = FirstPersonRenderer(helsinki, 84, 84)
    fp.scene.ensure_signs()
    painted = 0
    for s in fp.scene.signs[:: max(1, len(fp.scene.signs) // 25)][:25]:
        p = helsinki.pois[s.poi].anchor
        for back in (8.0, 15.0):
            for heading in range(0, 360, 90):
                hx, hy = math.sin(math.radians(heading)), math.cos(math.radians(heading))
                x, y = p[0] - back * hx, p[1] - back * hy
                if not helsinki.contains(x, y) or helsinki.building_at(x, y) is not None:
                    continue
                fx, fy, room = check_position(fp.scene, x, y, fp.inside, fp.eye_height)
                cam = fp._base.with_yaw(float(heading))
                hits = raycast.find_hits(fp.scene, cam, fx, fy, 1.6, room)
                kernels.set_backend("numpy")
                ref = boards.sign_points(fp.scene, cam, 1.6, hits)
                kernels.set_backend("numba")
                got = boards.sign_points(fp.scene, cam, 1.6, hits)
                for r, g in zip(ref, got):
                    np.testing.assert_array_equal(r, g)
                painted += len(got[0])
    assert painted > 1000


def test_the_environment_variable_chooses_the_backend(monkeypatch):
    """``URBAN_GYM_KERNELS`` is read at the first frame and again after ``set_backend``
    (not at every frame); a bad value names itself."""
    monkeypatch.setenv("URBAN_GYM_KERNELS", "numpy")
    kernels.set_backend(None)
    assert kernels.backend() == "numpy"
    monkeypatch.setenv("URBAN_GYM_KERNELS", "numba")
    assert kernels.backend() == "numpy"  # read once
    kernels.set_backend(None)
    assert kernels.backend() == "numba"
    kernels.set_backend("numpy")  # an explicit choice wins over the environment
    assert kernels.backend() == "numpy"
    monkeypatch.setenv("URBAN_GYM_KERNELS", "cuda")
    kernels.set_backend(None)
    with pytest.raises(ValueError, match="URBAN_GYM_KERNELS='cuda'"):
        kernels.backend()
    monkeypatch.delenv("URBAN_GYM_KERNELS")
    kernels.set_backend(None)
    assert kernels.backend() == "numba"


def test_sprites_over_the_panorama_edge_match_the_reference(helsinki):
    # a street object due south of the viewer straddles the panorama's left and right
    # edges (bearing 180): the batched compiled blit draws it on both sides, as the
    # per-sprite numpy reference does -- same pixels, ids and depth, day and night
    from urban_gym.render.ids import OBJECT_BASE
    from urban_gym.render.scene import scene_for

    scene = scene_for(helsinki, 400.0)
    pano = PanoramaRenderer(helsinki, 512, 256)
    wrapped = 0
    for k in range(0, len(scene.obj_xy), max(1, len(scene.obj_xy) // 40)):
        ox, oy = map(float, scene.obj_xy[k])
        x, y = ox, oy + 3.0
        if not helsinki.contains(x, y) or helsinki.building_at(x, y) is not None:
            continue
        cond = Conditions(time_of_day=("day", "night")[k % 2])
        ref, got = both(pano.render, x, y, cond, depth=True, ids=True)
        assert_same(ref, got, (k, x, y))
        iid = OBJECT_BASE + int(scene.obj_ids[k])
        wrapped += bool((got.ids[:, 0] == iid).any() and (got.ids[:, -1] == iid).any())
    assert wrapped >= 3


@pytest.mark.parametrize("city_name", ["helsinki", "tiny_city"])
def test_run_parameters_match_the_reference(city_name, request):
    # the compiled run pass gives every run of a frame the same texture column, step, row,
    # distance and id as the numpy one, to the bit -- outside and inside buildings (the
    # ceiling run), with ids and without
    from urban_gym.render import raycast
    from urban_gym.render.panorama import check_position

    city = request.getfixturevalue(city_name)
    fp = FirstPersonRenderer(city, 84, 84)
    pano = PanoramaRenderer(city, 256, 128)
    assert kernels.compiled() is not None
    inside = hits_seen = 0
    for i, (x, y) in enumerate(places(city, 25, seed=5)):
        fx, fy, room = check_position(fp.scene, x, y, fp.inside, fp.eye_height)
        inside += room is not None
        for cam in (fp._base.with_yaw(23.0 * i), pano.camera):
            hits = raycast.find_hits(fp.scene, cam, fx, fy, fp.eye_height, room)
            hits_seen += len(hits.col)
            for want_ids in (True, False):
                ref = raycast._runs_numpy(fp.scene, cam, hits, fp.eye_height, room, want_ids)
                got = raycast._runs(fp.scene, cam, hits, fp.eye_height, room, want_ids)
                for name in ("P", "D", "S", "t", "ids"):
                    a, b = getattr(ref, name), getattr(got, name)
                    if a is None:
                        assert b is None, name
                    else:
                        assert a.dtype == b.dtype, name
                        np.testing.assert_array_equal(a, b, err_msg=f"{name} at {(x, y)}")
    assert inside and hits_seen > 1000


@pytest.mark.parametrize("city_name", ["helsinki", "tiny_city"])
def test_cell_walls_match_the_reference(city_name, request):
    # the compiled gather of a grid cell's candidate walls keeps the same walls in the
    # same order as the numpy one, in the middle of the city and at its corners (cells
    # whose neighbourhood runs off the grid)
    from urban_gym.render.scene import CELL_M, scene_for

    city = request.getfixturevalue(city_name)
    scene = scene_for(city, 400.0)
    assert kernels.compiled() is not None
    x0, y0, x1, y1 = city.bounds
    pts = places(city, 20, seed=6) + [(x0 + 1, y0 + 1), (x1 - 1, y1 - 1), (x0 + 1, y1 - 1)]
    kept = 0
    for x, y in pts:
        ci, cj = int((x - scene.gx0) // CELL_M), int((y - scene.gy0) // CELL_M)
        ref = scene._cell_walls_numpy(ci, cj)
        got = scene._cell_walls(ci, cj)
        assert got.dtype == ref.dtype == np.int64
        np.testing.assert_array_equal(ref, got, err_msg=str((x, y)))
        kept += len(got)
    assert kept > 100


def test_call_runs_a_kernel_or_answers_none_for_the_numpy_path():
    # two walls of a grid of two cells, one in each: (0, 0)-(1, 0) and (10, 0)-(11, 0);
    # the walls within 5 m of (0, 0) are the first only, within 20 m both
    grid_start = np.array([0, 1, 2], np.int64)
    grid_segs = np.array([0, 1], np.int32)
    ends = [np.array(v, np.float64) for v in ([0.0, 10.0], [0.0, 0.0], [1.0, 11.0], [0.0, 0.0])]
    args = (grid_start, grid_segs, 0, 1, 0, 0, 2, *ends, 0.0, 0.0)
    np.testing.assert_array_equal(kernels.call("cell_candidates", *args, 5.0), [0])
    np.testing.assert_array_equal(kernels.call("cell_candidates", *args, 20.0), [0, 1])
    kernels.set_backend("numpy")
    assert kernels.call("cell_candidates", *args, 5.0) is None


def test_the_sampler_is_opencvs_bilinear():
    # the boards' sampler against cv2.remap (INTER_LINEAR, BORDER_REPLICATE) at random
    # positions, a quarter of them outside the image, on RGB and RGBA images: every level equal
    import cv2

    from urban_gym.render.kernels import frame

    @numba.njit
    def sample_all(src, xs, ys):
        out = np.zeros((1, len(xs), 3), np.uint8)
        for i in range(len(xs)):
            frame.sample(src, xs[i], ys[i], out, 0, i)
        return out

    rng = np.random.default_rng(7)
    for channels in (3, 4):
        img = rng.integers(0, 256, (57, 83, channels), dtype=np.uint8)
        xs = rng.uniform(-4, 87, 4096).astype(np.float32)
        ys = rng.uniform(-4, 61, 4096).astype(np.float32)
        xs[:64] = np.round(xs[:64])  # on pixel centres, and halfway between
        ys[64:128] = np.round(ys[64:128]) + 0.5
        want = cv2.remap(
            img, xs[None], ys[None], cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE
        )[..., :3]
        np.testing.assert_array_equal(sample_all(img, xs, ys), want)


def test_the_ground_light_table_is_cv2_multiply():
    from urban_gym.render import raycast
    from urban_gym.render.ground import AMBIENT

    levels = np.arange(256)
    np.testing.assert_array_equal(raycast._ground_light("day"), np.stack([levels] * 3))
    night = raycast._ground_light("night")
    for ch in range(3):  # rounded to nearest: 200 * 0.2 = 40, 255 * 0.26 = 66.3 -> 66
        np.testing.assert_array_equal(night[ch], np.rint(levels * AMBIENT["night"][ch]))
    assert night[0, 200] == 40 and night[2, 255] == 66


def test_the_column_table_search_is_searchsorted():
    # a camera's column table answers as np.searchsorted, on ties and between columns too,
    # and so does a table whose every entry is wrong (the search steps to the answer)
    from urban_gym.render.kernels import columns
    from urban_gym.render.raycast import ColumnCamera

    @numba.njit
    def search_all(relx, lut, bins, vs, right):
        return np.array([columns._search(relx, lut, bins, v, right) for v in vs])

    rng = np.random.default_rng(3)
    for cam in (ColumnCamera.perspective(84, 84, 90.0, 10.0), ColumnCamera.equirect(336, 168)):
        lut, bins = cam.column_lut()
        vs = np.concatenate([rng.uniform(-0.5, 13.0, 2000), cam.relx[::7], [0.0, 4 * np.pi]])
        for right, side in ((False, "left"), (True, "right")):
            want = np.searchsorted(cam.relx, vs, side=side)
            np.testing.assert_array_equal(search_all(cam.relx, lut, bins, vs, right), want)
            wrong = np.zeros_like(lut)  # every search starts at column 0
            np.testing.assert_array_equal(search_all(cam.relx, wrong, bins, vs, right), want)
    relx = np.array([0.1, 0.2, 0.2, 0.5])  # by hand: 0.2 is in columns 1 and 2
    lut = np.zeros(8, np.int64)
    assert search_all(relx, lut, 1.0, np.array([0.2]), False)[0] == 1
    assert search_all(relx, lut, 1.0, np.array([0.2]), True)[0] == 3


def test_mod_2pi_is_pythons():
    from urban_gym.render.kernels import columns

    @numba.njit
    def mod_all(vs):
        return np.array([columns._mod_2pi(v) for v in vs])

    two_pi = 2 * np.pi
    vs = np.array([0.0, -0.0, 1.0, -1.0, two_pi, -two_pi, 3 * two_pi + 0.5, -7.5, 1e-300, -1e-300])
    got = mod_all(vs)
    want = np.array([v % two_pi for v in vs])
    np.testing.assert_array_equal(got, want)
    assert got[3] == two_pi - 1.0 and got[4] == 0.0


def test_sprite_sampling_by_hand():
    # a 2-pixel sprite (black, then R=200 G=100 B=40; opaque) drawn 4 pixels wide samples
    # it at x = -0.25, 0.25, 0.75, 1.25: 0, a quarter, three quarters, all of the second
    # pixel (the edge replicated); the half-transparent second row is not painted. The
    # numpy reference (cv2.remap) and the compiled blit give the same
    from urban_gym.render import sprites
    from urban_gym.render.kernels.sprites import _blit_sampled

    img = np.zeros((2, 2, 4), np.uint8)
    img[0, 1] = (200, 100, 40, 255)
    img[0, 0, 3] = 255
    img[1, :, 3] = 100
    ref = sprites._sampled(img, (0, 0, 4, 2), (0, 4, 0, 2))
    assert ref[0, :, 0].tolist() == [0, 50, 150, 200]
    assert ref[0, :, 1].tolist() == [0, 25, 75, 100]
    rgb = np.zeros((2, 4, 4), np.uint8)
    inf = np.full((4, 2), np.inf, np.float32)
    none = np.zeros((0, 0), np.float32)
    got = _blit_sampled(
        rgb, np.zeros((0, 0), np.int32), none, none, inf, 0, img, 0, 0, 4, 2, 5.0, 7
    )
    assert got == 4  # the first row only: the second's alpha is 100
    np.testing.assert_array_equal(rgb[0, :, :3], ref[0, :, :3])
    assert not rgb[1].any()
    # a wall nearer than 5 m in front of the second column hides the sprite there
    rgb[:] = 0
    inf[1, 0] = 3.0
    _blit_sampled(rgb, np.zeros((0, 0), np.int32), none, none, inf, 0, img, 0, 0, 4, 2, 5.0, 7)
    assert rgb[0, :, 0].tolist() == [0, 0, 150, 200]


def test_lamps_at_night_match_the_reference(helsinki):
    # viewers 6 m from street lamps, facing them, at dusk and at night: the compiled blit
    # paints the lamps and adds their light as the numpy reference does
    import math

    from urban_gym.render.ids import OBJECT_BASE
    from urban_gym.render.scene import scene_for

    scene = scene_for(helsinki, 400.0)
    lamps = [k for k, spr in enumerate(scene.obj_sprite) if spr.glow]
    assert lamps
    r = FirstPersonRenderer(helsinki, 84, 84)
    lit = 0
    for n, k in enumerate(lamps[:: max(1, len(lamps) // 30)][:30]):
        ox, oy = map(float, scene.obj_xy[k])
        for yaw in (0.0, 120.0, 240.0):
            x = ox - 6.0 * math.sin(math.radians(yaw))
            y = oy - 6.0 * math.cos(math.radians(yaw))
            if not helsinki.contains(x, y) or helsinki.building_at(x, y) is not None:
                continue
            cond = Conditions(time_of_day=("dusk", "night")[n % 2])
            ref, got = both(r.render, x, y, yaw, 0.0, cond, depth=True, ids=True)
            np.testing.assert_array_equal(ref.rgb, got.rgb, err_msg=str((k, yaw)))
            np.testing.assert_array_equal(ref.ids, got.ids)
            lit += bool((got.ids == OBJECT_BASE + int(scene.obj_ids[k])).any())
            break
    assert lit >= 10


def test_blade_rows_match_the_reference(helsinki):
    # the rows the blade pass widens the band to, compiled and numpy, beside shops with
    # projecting signs: a perspective view, a pitched view's window, a full panorama
    from urban_gym.render import blades, raycast

    fp = FirstPersonRenderer(helsinki, 84, 84)
    sc = fp.scene
    sc.ensure_signs()
    cams = (
        fp._base.with_yaw(30.0),
        raycast.ColumnCamera.equirect(100, 90, -20.0, 100.0, 50.0, -30.0),
        raycast.ColumnCamera.equirect(256, 128),
    )
    seen = 0
    for k in range(0, len(sc.blade_poi), max(1, len(sc.blade_poi) // 40)):
        x = float(sc.blade_xy[k, 0]) + 1.5
        y = float(sc.blade_xy[k, 1]) - 1.0
        cand = blades.blade_candidates(sc, x, y)
        for cam in cams:
            for eye in (1.6, 4.0):
                ref = blades._blade_rows_numpy(sc.blade_xy, sc.blade_z, cand, cam, x, y, eye)
                got = kernels.call(
                    "blade_rows",
                    sc.blade_xy,
                    sc.blade_z,
                    cand,
                    x,
                    y,
                    eye,
                    blades.BLADE_RANGE_M,
                    cam.b,
                    cam.a,
                )
                assert tuple(got) == tuple(ref), (k, cam.kind, eye)
                seen += ref[0] > 0 and ref[1] < ref[2]
    assert seen > 20
