"""Every family runs in every embedded city: ``gym.make(id, city=...)`` picks the city's
committed suite, a city without one is named in a clear error, and the oracle solves the
city suites (a sample of each here; every task in the slow tests)."""

from __future__ import annotations

import filecmp
import json

import gymnasium as gym
import pytest

import urban_gym  # noqa: F401  (registers the ids)
from urban_gym.errors import UrbanGymError
from urban_gym.families.citywalk.tasks import CITY_SUITE_SIZES
from urban_gym.families.citywalk.tasks import DEFAULT_SUITES as CW_SUITES
from urban_gym.families.posegraph360.tasks import DEFAULT_SUITES as PG_SUITES
from urban_gym.families.posegraph360.tasks.suites import CITY_SUITES
from urban_gym.families.streetgraph.tasks import DEFAULT_SUITES as SG_SUITES
from urban_gym.families.streetgraph.tasks import SUITE_CONFIGS
from urban_gym.families.streetgraph.tasks.citynav_stats import format_citynav_table, suite_row
from urban_gym.tasks.spec import TaskSpec
from urban_gym.tasks.suite import load_suite
from urban_gym.world.builtin import builtin_names

#: The embedded cities besides Helsinki (whose suites the family tests cover).
NEW_CITIES = [c for c in builtin_names() if c != "helsinki"]
#: Each family's id and the kwargs that make it cheap (no pixels where it can do without).
IDS = {
    "UrbanGym/CityWalk-v0": {"view_size": None},
    "UrbanGym/PoseGraph360-v0": {"observation": "symbolic"},
    "UrbanGym/StreetGraph-v0": {"observation": "symbolic"},
}


def test_every_embedded_city_has_a_suite_of_every_family():
    for city in builtin_names():
        assert city in CW_SUITES and CW_SUITES[city].is_file(), city
        assert city in PG_SUITES and PG_SUITES[city].is_file(), city
        assert city in SG_SUITES and SG_SUITES[city].is_file(), city
    assert set(CITY_SUITE_SIZES) == set(CITY_SUITES) == set(NEW_CITIES)


@pytest.mark.parametrize("env_id", sorted(IDS))
@pytest.mark.parametrize("city", builtin_names())
def test_make_with_city_runs_that_citys_suite(env_id, city):
    env = gym.make(env_id, city=city, **IDS[env_id])
    u = env.unwrapped
    assert {t.city for t in u.tasks} == {city}
    _, info = env.reset(seed=0, options={"task_index": len(u.tasks) - 1})
    assert info["task_id"] == u.tasks[-1].id and "pose" in info
    env.close()


@pytest.mark.parametrize("env_id", sorted(IDS))
def test_a_city_without_a_suite_is_named_with_the_choices(env_id):
    with pytest.raises(UrbanGymError) as err:
        gym.make(env_id, city="tokyo", **IDS[env_id])
    msg = str(err.value)
    assert "'tokyo'" in msg
    assert all(c in msg for c in builtin_names()), msg


@pytest.mark.parametrize("city", NEW_CITIES)
def test_streetgraph_city_suites_keep_their_configs(city):
    """100 tasks, each route at least the config's length and decision points (London and
    Munich: over 2 km with 30+; Sao Paulo: CityNav's 2 km and 50+)."""
    cfg = SUITE_CONFIGS[city]
    tasks = load_suite(SG_SUITES[city])
    assert len(tasks) == 100 and {t.city for t in tasks} == {city}
    assert cfg.min_route_m >= 2000
    for t in tasks:
        assert t.meta["route_length_m"] >= cfg.min_route_m, t.id
        assert t.meta["decision_points"] >= cfg.min_decisions, t.id


def _od(i: int, length: float, decisions: int, notable: str) -> TaskSpec:
    return TaskSpec(
        id=f"t{i}",
        family="streetgraph",
        type="origin_destination",
        difficulty="hard",
        city="x",
        instruction="Go to P.",
        start={"node": "a", "heading": 0.0},
        goal={"name": f"P{i % 2}", "nodes": ["b"], "notable": notable},
        meta={"route_length_m": length, "decision_points": decisions},
    )


def test_citynav_row_of_two_routes_by_hand():
    row = suite_row("x", [_od(0, 2500.0, 60, "wikidata"), _od(1, 1500.0, 20, "")])
    assert row["tasks"] == 2 and row["destinations"] == 2
    assert row["route_m"] == {"mean": 2000.0, "min": 1500.0, "max": 2500.0}
    assert row["decisions"] == {"mean": 40.0, "min": 20.0, "max": 60.0}
    assert row["over_2km"] == row["over_50_decisions"] == row["notable"] == 0.5
    table = format_citynav_table([row])
    assert "| CityNav (paper, each city) | 100 |" in table
    assert "| x | 2 | 2 | 2.00 (1.50-2.50) | 40 (20-60) | 50 % | 50 % | 50 % |" in table


def _solve(env, index: int, oracle) -> dict:
    env.reset(seed=0, options={"task_index": index})
    oracle.reset(env)
    while True:
        _, _, term, trunc, info = env.step(oracle.act(env))
        if term or trunc:
            return info


def _oracles():
    from urban_gym.families.citywalk.oracle import CityWalkOracle
    from urban_gym.families.posegraph360.oracle import PoseGraphOracle
    from urban_gym.families.streetgraph.oracle import StreetGraphOracle

    return {
        "UrbanGym/CityWalk-v0": CityWalkOracle,
        "UrbanGym/PoseGraph360-v0": PoseGraphOracle,
        "UrbanGym/StreetGraph-v0": StreetGraphOracle,
    }


def _failures(env_id: str, city: str, sample: bool) -> list[str]:
    """The ids of the tasks the oracle fails (``sample``: the first task of each type and
    condition variant only)."""
    env = gym.make(env_id, city=city, **IDS[env_id]).unwrapped
    oracle = _oracles()[env_id]()
    first: dict[str, int] = {}
    for i, t in enumerate(env.tasks):
        first.setdefault(f"{t.type}{'*' if 'variant' in t.meta else ''}", i)
    chosen = sorted(first.values()) if sample else range(len(env.tasks))
    return [env.tasks[i].id for i in chosen if not _solve(env, i, oracle)["is_success"]]


@pytest.mark.parametrize("env_id", sorted(IDS))
@pytest.mark.parametrize("city", NEW_CITIES)
def test_oracle_solves_a_sample_of_each_city_suite(env_id, city):
    assert _failures(env_id, city, sample=True) == []


@pytest.mark.slow
@pytest.mark.parametrize("env_id", sorted(IDS))
@pytest.mark.parametrize("city", NEW_CITIES)
def test_oracle_solves_every_task_of_each_city_suite(env_id, city):
    assert _failures(env_id, city, sample=False) == []


def test_streetgraph_suites_command_prints_each_city_under_citynav(capsys):
    from urban_gym.cli import main

    assert main(["streetgraph-suites", "london", "sao_paulo", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["city"] for r in rows] == ["london", "sao_paulo"]
    for r in rows:
        tasks = load_suite(SG_SUITES[r["city"]])
        assert r["tasks"] == len(tasks) == 100
        assert r["route_m"]["min"] == min(t.meta["route_length_m"] for t in tasks)
        assert r["over_2km"] == 1.0
    assert rows[1]["over_50_decisions"] == 1.0  # Sao Paulo meets CityNav's 50 decisions
    assert main(["streetgraph-suites"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[2].startswith("| CityNav (paper, each city) |")
    assert all(f"| {c} | 100 |" in out for c in builtin_names())


def test_streetgraph_suites_command_names_a_bad_suite():
    from urban_gym.cli import main

    assert main(["streetgraph-suites", "tokyo"]) == 2


@pytest.mark.parametrize("env_id", sorted(IDS))
def test_a_run_records_the_suite_of_its_city(env_id):
    """The run manifest's suite file (and so its SHA-256) is the city's own suite."""
    from urban_gym.eval.runner import suite_file
    from urban_gym.tasks.families import family_of_id

    fam = family_of_id(env_id)
    assert fam is not None
    env = gym.make(env_id, city="munich", **IDS[env_id])
    assert suite_file(env, None) == fam.tasks().DEFAULT_SUITES["munich"]
    env = gym.make(env_id, **IDS[env_id])
    assert suite_file(env, None) == fam.tasks().DEFAULT_SUITES["helsinki"]


def test_notable_line_counts_tasks_by_why_their_place_is_notable():
    from urban_gym.world.places import notable_line

    line = notable_line(
        [
            {"name": "Ateneum", "wikidata": "Q754507"},
            {"name": "Bakery", "shop": "bakery", "wikidata": "Q2"},  # a shop's tag: not
            None,  # no named place
            {"name": "Kaisaniemi", "railway": "station"},
        ]
    )
    assert line == "notable places: 2 of 3 tasks with a named place (railway=station 1, wikidata 1)"


def test_streetgraph_city_suite_regenerates_identically(tmp_path):
    from urban_gym.families.streetgraph.tasks import generate

    made = generate("london", out=tmp_path / "london.jsonl")
    assert filecmp.cmp(made.path, SG_SUITES["london"], shallow=False)


@pytest.mark.slow
@pytest.mark.parametrize("family", ["citywalk", "posegraph360"])
def test_city_suites_regenerate_identically(family, tmp_path):
    """``urban-gym generate-suite --family F --city london`` makes the committed file
    (2-5 min each on the 2-core machine)."""
    from urban_gym.tasks.families import get_family

    tasks = get_family(family).tasks()
    made = tasks.generate("london", out=tmp_path / "london.jsonl")
    assert filecmp.cmp(made.path, tasks.DEFAULT_SUITES["london"], shallow=False)
