import json

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
