"""``urban-gym sensitivity``: real oracle and random runs on PoseGraph360 tasks rescored at
scaled success radii -- 1.0x gives back every recorded success, the rates match the
report's, Kendall's tau on rankings checked by hand; the command's output and files."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

from urban_gym.errors import UrbanGymError
from urban_gym.eval.records import RunDir
from urban_gym.eval.sensitivity import (
    DEFAULT,
    Variant,
    kendall_tau,
    sensitivity,
    variants,
)
from urban_gym.tasks.families import ThresholdSweep, get_family

PG = "UrbanGym/PoseGraph360-v0"
SMALL = {"view_size": 32, "pano_width": 128}
PER_TYPE = {"landmark_name": 3, "map_navigation": 3, "vln": 2, "object_count": 2}


def pick_tasks() -> list[str]:
    """A few tasks of each type from the loaded suite (ids are not pinned)."""
    env = gym.make(PG, **SMALL)
    ids: list[str] = []
    for tt, n in PER_TYPE.items():
        ids += [t.id for t in env.unwrapped.tasks if t.type == tt][:n]
    env.close()
    assert len(ids) == sum(PER_TYPE.values())
    return ids


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    from urban_gym.eval.runner import run

    base = tmp_path_factory.mktemp("sens")
    ids = pick_tasks()
    for agent in ("oracle", "random"):
        run(
            PG,
            base / agent,
            agent=agent,
            env_kwargs=SMALL,
            task_ids=ids,
            seeds=2,
            progress=False,
            track_visibility=False,
        )
    return base


def test_rescoring_at_the_default_gives_the_recorded_success(runs):
    fam = get_family("posegraph360")
    for agent in ("oracle", "random"):
        for rec in RunDir(runs / agent).read_episodes():
            got = fam.rescore(rec, 1.0)
            if rec["task_type"] == "object_count":
                assert got is None  # a question: no radius
            else:
                assert got is rec["is_success"], rec["key"]
            # a radius as large as the final distance: success exactly when it answered
            d = (rec["metrics"] or {}).get("distance_to_goal")
            if d is not None:
                answered = bool(rec["metrics"]["answered"])
                assert fam.rescore(rec, radius_m=d) is answered
                assert fam.rescore(rec, radius_m=d * 0.999) is False or d == 0.0


def test_rates_match_the_report_and_tau_by_hand(runs):
    from urban_gym.eval.report import build_report

    res = sensitivity([runs / "oracle", runs / "random"])
    assert res["variants"] == [
        "0.75x",
        "1.0x",
        "1.25x",
        "1.5x",
        "map_navigation 15 m",
        "map_navigation 20 m",
        "map_navigation 25 m",
    ]
    rep = build_report([runs / "oracle", runs / "random"], resamples=100, failures=False)
    for r in res["runs"]:
        assert r["reproduced"] and r["differ_at_default"] == 0
        assert r["episodes"] == 2 * sum(PER_TYPE.values())
        overall = rep["results"][r["name"]]["overall"]["metrics"]["success"]["mean"]
        assert r["rates"]["1.0x"] == pytest.approx(overall)
        # map_navigation at its own 20 m is the default
        assert r["rates"]["map_navigation 20 m"] == r["rates"]["1.0x"]
    oracle, rnd = res["runs"]
    # the oracle ends on the goal: it succeeds at every threshold
    assert set(oracle["rates"].values()) == {1.0}
    assert set(oracle["type_rates"].values()) == {1.0}
    # two runs in the same order at every threshold (oracle above random): tau = 1 -- unless
    # random succeeds as often as the oracle, which it does not on navigation tasks
    assert all(rnd["rates"][v] < 1.0 for v in res["variants"])
    assert set(res["tau"].values()) == {1.0}
    assert res["notes"] == []


def test_the_command_prints_and_writes(runs, tmp_path, capsys):
    from urban_gym.cli import main

    out = tmp_path / "s"
    assert main(["sensitivity", str(runs / "oracle"), str(runs / "random"), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "Kendall's tau vs 1.0x" in text and "360CityArena, section 3.4" in text
    assert "oracle: rescoring at 1.0x reproduces all 20 recorded successes." in text
    data = json.loads((out / "sensitivity.json").read_text())
    assert data["tau"]["1.5x"] == 1.0
    assert (out / "sensitivity.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # one run: the rates, and a note that tau needs two runs
    assert main(["sensitivity", str(runs / "random"), "--out", str(tmp_path / "one")]) == 0
    text = capsys.readouterr().out
    assert "it needs two runs or more" in text and "Kendall's tau vs" not in text
    one = json.loads((tmp_path / "one" / "sensitivity.json").read_text())
    assert set(one["tau"].values()) == {None}
    # thresholds from the command line
    args = ["--scales", "0.5,2", "--radii", "vln=5,30", "--no-plot", "--out", str(tmp_path / "c")]
    assert main(["sensitivity", str(runs / "oracle"), *args]) == 0
    own = json.loads((tmp_path / "c" / "sensitivity.json").read_text())
    assert own["variants"] == ["0.5x", "1.0x", "2.0x", "vln 5 m", "vln 30 m"]
    assert not (tmp_path / "c" / "sensitivity.png").exists()


def test_kendall_tau_by_hand():
    # three runs ranked A > B > C at the default
    default = [0.9, 0.5, 0.1]
    assert kendall_tau(default, [0.8, 0.6, 0.2]) == 1.0  # same order
    assert kendall_tau(default, [0.1, 0.5, 0.9]) == -1.0  # reversed
    # A and B swap: 2 concordant pairs of 3, 1 discordant -> (2 - 1) / 3
    assert kendall_tau(default, [0.5, 0.9, 0.1]) == pytest.approx(1 / 3, abs=1e-4)
    # A and B tie: tau-b = (2 - 0) / sqrt(3 * (3 - 1))
    assert kendall_tau(default, [0.9, 0.9, 0.1]) == pytest.approx(2 / 6**0.5, abs=1e-4)
    assert kendall_tau([0.5], [0.5]) is None  # one run
    assert kendall_tau([0.5, 0.5], [0.1, 0.9]) is None  # every run ties: undefined


def test_variants_and_bad_input():
    vs = variants(ThresholdSweep(scales=(1.5, 0.75), radii={"vln": (5.0,)}))
    assert [v.label for v in vs] == ["0.75x", "1.0x", "1.5x", "vln 5 m"]
    assert vs[1] == DEFAULT and DEFAULT.is_default and not Variant(2.0).is_default
    with pytest.raises(UrbanGymError, match="scale -1"):
        variants(ThresholdSweep(scales=(-1.0,)))
    with pytest.raises(UrbanGymError, match="radius 0"):
        variants(ThresholdSweep(scales=(), radii={"vln": (0,)}))


def test_runs_of_a_family_without_radii_are_refused(tmp_path):
    """The toy family of tests/ declares no threshold sweep: its runs are refused, naming
    the family, unless the thresholds are given (then its rescoring, None everywhere,
    keeps every recorded success)."""
    from tests import toy_family as toy
    from urban_gym.eval.runner import run

    toy.register()
    try:
        run(toy.ENV_ID, tmp_path, agent="oracle", progress=False, track_visibility=False)
        with pytest.raises(UrbanGymError, match="'toy_corridor' declares no success radius"):
            sensitivity([tmp_path])
        res = sensitivity([tmp_path], scales=[2.0])
        assert res["runs"][0]["rates"]["2.0x"] == res["runs"][0]["rates"]["1.0x"] == 1.0
    finally:
        toy.unregister()
