"""The embedded cities (issue 37 item 1): each loads by name where it says it is, is
attributed in NOTICE, and ``urban-gym cities`` reports what ``load_city`` loads.
"""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import pytest

from urban_gym.cli import main
from urban_gym.errors import CityNotFoundError
from urban_gym.tasks.families import get_family
from urban_gym.tasks.suite import load_suite
from urban_gym.world.builtin import BUILTIN, builtin_names
from urban_gym.world.loader import BUILTIN_CITIES, builtin_path, load_city

ROOT = Path(__file__).parents[2]

#: A landmark of each extract's centre, from a map (lat, lon): Helsinki central station,
#: Holborn Viaduct, Marienplatz, Praca da Se.
LANDMARKS = {
    "helsinki": (60.1710, 24.9414),
    "london": (51.5170, -0.1060),
    "munich": (48.1374, 11.5755),
    "sao_paulo": (-23.5503, -46.6340),
}


def _km(a: tuple[float, float], b: tuple[float, float]) -> float:
    dlat = math.radians(b[0] - a[0])
    dlon = math.radians(b[1] - a[1]) * math.cos(math.radians(a[0]))
    return 6371.0 * math.hypot(dlat, dlon)


def test_every_embedded_city_has_a_landmark_here():
    # a new embedded city must be added to LANDMARKS, so the test below checks it too
    assert sorted(LANDMARKS) == builtin_names() == sorted(BUILTIN_CITIES)


@pytest.mark.parametrize("name", sorted(LANDMARKS))
def test_embedded_city_loads_around_its_landmark(name, _isolated_cache):
    city = load_city(name)
    assert city.name == name
    origin = (city.frame.lat0, city.frame.lon0)
    # the world is centred within 1 km of the landmark and covers it
    assert _km(origin, LANDMARKS[name]) < 1.0
    w, h = city.extent
    assert w > 1000 and h > 1000
    s = city.summary()
    assert s["network_nodes"] > 1000 and s["network_km"] > 50
    if "not buildings" in BUILTIN[name].note:
        assert s["buildings"] < 10  # the note tells the truth about a roads-only extract
    else:
        assert s["buildings"] > 400 and s["pois"] > 1000


def test_notice_attributes_every_embedded_file():
    notice = (ROOT / "urban_gym" / "data" / "NOTICE").read_text()
    # the wheel carries the root NOTICE as its licence file: the two say the same
    assert (ROOT / "NOTICE").read_text() == notice
    for name, c in BUILTIN.items():
        assert f"urban_gym/data/{c.file}" in notice, name
        assert builtin_path(name).is_file()
    assert "ODbL" in notice


def test_embedded_map_data_stays_small():
    total = sum(builtin_path(n).stat().st_size for n in BUILTIN)
    assert total < 20_000_000  # a wheel must stay far below PyPI's 100 MB


def test_unknown_city_error_lists_every_embedded_city():
    with pytest.raises(CityNotFoundError) as info:
        load_city("gotham")
    for name in BUILTIN:
        assert name in str(info.value)


def test_cities_command_reports_what_load_city_loads(capsys, _isolated_cache):
    assert main(["cities", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in rows] == builtin_names()
    for r in rows:
        s = load_city(r["name"]).summary()
        assert (r["buildings"], r["pois"], r["network_km"]) == (
            s["buildings"],
            s["pois"],
            s["network_km"],
        )
        w, h = s["extent_m"]
        assert r["area_km2"] == round(w * h / 1e6, 2)
        assert r["file_bytes"] == builtin_path(r["name"]).stat().st_size
        assert "ODbL" in r["licence"]
        for fam, n in r["suites"].items():
            suite = get_family(fam).tasks().DEFAULT_SUITES[r["name"]]
            assert n == len(load_suite(suite)) > 0

    assert main(["cities"]) == 0
    out = capsys.readouterr().out
    for r in rows:
        row = next(line for line in out.splitlines() if line.startswith(r["name"] + " "))
        words = row.split()
        assert int(words[3]) == r["buildings"] and int(words[4]) == r["pois"]
    total = sum(r["file_bytes"] for r in rows)
    assert f"{len(rows)} cities, {total / 1e6:.2f} MB of embedded map data" in out


def test_shrink_script_keeps_what_the_importer_reads(tmp_path):
    # scripts/shrink_osm.py made the embedded extracts; on Helsinki (shipped unshrunk) it
    # must give a smaller file that imports to the same world
    spec = importlib.util.spec_from_file_location("shrink_osm", ROOT / "scripts" / "shrink_osm.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    src = builtin_path("helsinki")
    dst = tmp_path / "helsinki.osm.pbf"
    counts = mod.shrink(str(src), str(dst), None)
    assert counts["ways"] > 0 and dst.stat().st_size < src.stat().st_size
    a = load_city(src, cache=False).summary()
    b = load_city(dst, cache=False).summary()
    a.pop("name"), b.pop("name")
    assert a == b
