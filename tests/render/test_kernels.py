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
    # the images within one level everywhere (they are equal today: same texture
    # coordinates, same cv2.remap), depth and ids exactly equal
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
