import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import urban_gym
from urban_gym.cli import main


def _info_table(out: str) -> dict[str, list[str]]:
    """``urban-gym info`` output as ``{label: [value words]}``; indented rows (the
    breakdowns) are keyed ``"<section>/<label>"``."""
    table: dict[str, list[str]] = {}
    section = ""
    for line in out.splitlines():
        label, value = line[:19].strip(), line[19:].split()
        if line.startswith("  "):
            table[f"{section}/{label}"] = value
        else:
            section = label
            table[label] = value
    return table


def test_info_helsinki(capsys, helsinki):
    """Every count printed is the city's own, and each breakdown adds up to its total."""
    assert main(["info", "helsinki"]) == 0
    t = _info_table(capsys.readouterr().out)
    assert int(t["buildings"][0]) == len(helsinki.buildings) > 400
    assert int(t["POIs"][0]) == len(helsinki.pois) > 1000
    pois = {k: int(v[0]) for k, v in t.items() if k.startswith("POIs/")}
    assert sum(pois.values()) == len(helsinki.pois) and pois["POIs/shop"] > 100
    nodes, _, edges, _, km, _ = t["walkable network"]
    assert int(nodes) == helsinki.network.number_of_nodes()
    assert int(edges) == helsinki.network.number_of_edges()
    length_m = sum(d["length"] for _, _, d in helsinki.network.edges(data=True))
    assert float(km) == pytest.approx(length_m / 1000.0, abs=0.005)
    by_kind = [float(v[0]) for k, v in t.items() if k.startswith("walkable network/")]
    assert sum(by_kind) == pytest.approx(float(km), abs=0.005 * len(by_kind))
    trees = sum(o.kind == "tree" for o in helsinki.objects)
    assert int(t["street objects/tree"][0]) == trees > 100
    objects = [int(v[0]) for k, v in t.items() if k.startswith("street objects/")]
    assert sum(objects) == int(t["street objects"][0]) == len(helsinki.objects)
    assert " ".join(t["data"]) == "© OpenStreetMap contributors, ODbL 1.0"


def test_info_json_matches_summary(capsys, tiny_city):
    assert main(["info", "procedural:seed=3,blocks=2x2", "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["buildings"] == len(tiny_city.buildings)
    assert s["pois"] == len(tiny_city.pois)


def test_info_unknown_city_is_a_clean_error(capsys):
    assert main(["info", "gotham"]) == 2
    err = capsys.readouterr().err
    assert "unknown city 'gotham'" in err and "Traceback" not in err


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version_prints_the_package_version(flag, capsys):
    # the version in pyproject.toml, as the installed package and the command report it
    pyproject = (Path(__file__).parents[1] / "pyproject.toml").read_text()
    version = re.search(r'^version = "([^"]+)"$', pyproject, re.M).group(1)
    assert urban_gym.__version__ == version
    with pytest.raises(SystemExit) as exit_info:
        main([flag])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out == f"urban-gym {version}\n"
    # the installed command, in its own process
    done = subprocess.run(
        [sys.executable, "-m", "urban_gym.cli", flag], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and done.stdout == f"urban-gym {version}\n"
