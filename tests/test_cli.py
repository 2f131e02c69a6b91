import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import urban_gym
from urban_gym.cli import main


def test_info_helsinki(capsys, helsinki):
    assert main(["info", "helsinki"]) == 0
    out = capsys.readouterr().out
    assert "buildings          446" in out or f"buildings          {len(helsinki.buildings)}" in out
    assert "© OpenStreetMap contributors, ODbL 1.0" in out
    assert "walkable network" in out and "tree" in out


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
