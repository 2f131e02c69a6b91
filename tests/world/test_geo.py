import math

import numpy as np
import pytest
from geographiclib.geodesic import Geodesic

from urban_gym.world.geo import GeoFrame, angle_diff, bearing, bearing_vector


def test_origin_maps_to_zero():
    f = GeoFrame(60.17, 24.94)
    assert f.to_xy(60.17, 24.94) == pytest.approx((0.0, 0.0), abs=1e-9)


def test_distances_match_geodesic_within_half_a_metre_across_5_km():
    f = GeoFrame(60.1716, 24.9443)
    rng = np.random.default_rng(0)
    # points up to ~2.5 km from the origin in every direction: pairs up to ~5 km apart
    lat = 60.1716 + rng.uniform(-0.0225, 0.0225, size=(300, 2))
    lon = 24.9443 + rng.uniform(-0.045, 0.045, size=(300, 2))
    x, y = f.to_xy(lat, lon)
    d_plane = np.hypot(x[:, 0] - x[:, 1], y[:, 0] - y[:, 1])
    d_geo = np.array(
        [Geodesic.WGS84.Inverse(la[0], lo[0], la[1], lo[1])["s12"] for la, lo in zip(lat, lon)]
    )
    assert d_geo.max() > 4000.0  # the test really spans kilometres
    assert np.abs(d_plane - d_geo).max() < 0.5


def test_five_km_north_and_east():
    f = GeoFrame(60.0, 25.0)
    g = Geodesic.WGS84.Direct(60.0, 25.0, 45.0, 5000.0)
    x, y = f.to_xy(g["lat2"], g["lon2"])
    assert np.hypot(x, y) == pytest.approx(5000.0, abs=0.5)
    assert bearing(x, y) == pytest.approx(45.0, abs=0.1)  # grid vs true north: < 0.1 deg


def test_round_trip_is_millimetre_exact():
    f = GeoFrame(60.0, 25.0)
    xs = np.array([-3000.0, 0.0, 1234.5, 2500.0])
    ys = np.array([2500.0, -2000.0, 10.0, -2500.0])
    lat, lon = f.to_latlon(xs, ys)
    x2, y2 = f.to_xy(lat, lon)
    assert np.abs(x2 - xs).max() < 1e-3 and np.abs(y2 - ys).max() < 1e-3


@pytest.mark.parametrize(
    "dx,dy,expected", [(0, 1, 0.0), (1, 0, 90.0), (0, -1, 180.0), (-1, 0, 270.0), (1, 1, 45.0)]
)
def test_bearing_is_clockwise_from_north(dx, dy, expected):
    assert bearing(dx, dy) == pytest.approx(expected)


def test_bearing_vector_inverts_bearing():
    for b in (0.0, 30.0, 90.0, 200.0, 359.0):
        assert bearing(*bearing_vector(b)) == pytest.approx(b)


def test_angle_diff_wraps():
    assert angle_diff(10, 350) == pytest.approx(20)
    assert angle_diff(350, 10) == pytest.approx(-20)
    assert angle_diff(0, 180) == pytest.approx(180)
    assert angle_diff(180, 0) == 180.0  # -180 is reported as +180: the range is (-180, 180]


def test_scalar_and_array_paths_agree():
    """Numbers give floats (the one helper the env, tasks and oracles share), arrays give
    arrays with the same values."""
    dx = np.array([0.0, 1.0, 0.0, -1.0, 3.0, -2.5])
    dy = np.array([1.0, 0.0, -1.0, 0.0, 4.0, -0.5])
    arr = bearing(dx, dy)
    assert isinstance(arr, np.ndarray) and arr.shape == (6,)
    one = [bearing(float(a), float(b)) for a, b in zip(dx, dy)]
    assert all(isinstance(v, float) for v in one)
    assert one[:4] == [0.0, 90.0, 180.0, 270.0]
    assert one[4] == pytest.approx(math.degrees(math.atan2(3, 4)))  # 36.87 deg
    np.testing.assert_allclose(arr, one, rtol=0, atol=1e-12)
    a = np.array([10.0, 350.0, 0.0, 180.0, 725.0])
    b = np.array([350.0, 10.0, 180.0, 0.0, -5.0])
    diffs = angle_diff(a, b)
    assert diffs.tolist() == [20.0, -20.0, 180.0, 180.0, 10.0]
    assert [angle_diff(float(x), float(y)) for x, y in zip(a, b)] == diffs.tolist()


@pytest.mark.parametrize("lat,lon", [(91, 0), (0, 200), (float("nan"), 0)])
def test_bad_origin_is_rejected(lat, lon):
    with pytest.raises(ValueError, match="lat0|lon0"):
        GeoFrame(lat, lon)
