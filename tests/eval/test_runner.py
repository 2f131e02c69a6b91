"""The runner: records and traces of any agent, seeds, resume, parallel workers, errors."""

from __future__ import annotations

import json

import pytest

from tests.eval.conftest import SG, SYMBOLIC
from urban_gym.errors import UrbanGymError
from urban_gym.eval.records import ManifestMismatch, RunDir, comparable
from urban_gym.eval.runner import episode_keys, run

IDS = [f"streetgraph-procedural-00{i}" for i in range(4)]


def sorted_records(path) -> list[dict]:
    recs = [comparable(r) for r in RunDir(path).read_episodes()]
    return sorted(recs, key=lambda r: (r["task_id"], r["seed"], r["repeat"]))


def traces_by_key(path) -> dict[str, list[dict]]:
    """Every record's trace, by key, without its wall-clock entries."""
    d = RunDir(path)
    return {
        r["key"]: [{k: v for k, v in s.items() if k != "timing"} for s in d.read_trace(r)]
        for r in d.read_episodes()
    }


def test_oracle_records_traces_and_manifest(tmp_path):
    res = run(
        SG,
        tmp_path,
        agent="oracle",
        env_kwargs=SYMBOLIC,
        task_ids=IDS[:3],
        seeds=2,
        seed=5,
        progress=False,
    )
    assert (res.total, res.ran, res.successes, res.errors) == (6, 6, 6, 0)
    d = RunDir(tmp_path)
    recs = d.read_episodes()
    assert [(r["task_id"][-1], r["seed"], r["repeat"]) for r in recs] == [
        ("0", 5, 0),
        ("1", 5, 0),
        ("2", 5, 0),
        ("0", 6, 1),
        ("1", 6, 1),
        ("2", 6, 1),
    ]
    r = recs[1]
    assert r["agent_seed"] == 5 * 100003 + 1  # seeding "repeat": seed * 100003 + task index
    assert (
        r["termination"] == "arrived"
        and r["is_success"]
        and r["metrics"]["spl"] == pytest.approx(1.0)
    )
    assert r["task_type"] == "origin_destination" and r["category"] == "origin_destination"
    assert r["end"]["distance_to_goal_m"] == 0.0 and r["goal_seen"] is False
    steps = d.read_trace(r)
    assert len(steps) == r["steps"] + 1 and steps[0]["t"] == 0
    assert all(s["action"]["action"] == "go" for s in steps[1:])  # the oracle's dicts
    assert steps[-1]["distance_to_goal_m"] == 0.0
    assert set(r["timing"]) == {"wall_s", "model_latency_s", "finished_at"}
    m = d.read_manifest()
    assert m["env_id"] == SG and m["env_kwargs"] == {**SYMBOLIC, "track_visibility": True}
    assert m["suite"]["spec"] == "procedural" and len(m["suite"]["sha256"]) == 64
    assert m["suite"]["path"].endswith("streetgraph/suites/procedural.jsonl")
    assert m["agent"] == {
        "spec": "oracle",
        "kind": "oracle",
        "options": {},
        "config": {"kind": "oracle"},
    }
    assert (m["seeds"], m["seed"], m["seeding"], m["episodes"]) == (2, 5, "repeat", 6)
    assert m["tasks"]["count"] == 3 and m["tasks"]["filter"]["task_ids"] == IDS[:3]


def test_task_seeding_gives_every_episode_its_own_seed():
    class T:
        def __init__(self, i):
            self.id = f"t{i}"

    keys = episode_keys([T(i) for i in range(3)], ["t2", "t0"], seeds=2, seed=10, seeding="task")
    assert [(k.task_id, k.seed, k.repeat, k.agent_seed) for k in keys] == [
        ("t0", 10, 0, 10),
        ("t2", 12, 0, 12),
        ("t0", 13, 1, 13),
        ("t2", 15, 1, 15),
    ]
    with pytest.raises(UrbanGymError, match=r"\['nope'\]"):
        episode_keys([T(0)], ["nope"])


def test_resume_completes_with_one_record_per_key(tmp_path):
    full = tmp_path / "full"
    part = tmp_path / "part"
    kw = dict(agent="random", env_kwargs=SYMBOLIC, task_ids=IDS, seeds=2, progress=False)
    run(SG, full, **kw)
    first = run(SG, part, max_episodes=3, **kw)
    assert first.ran == 3
    second = run(SG, part, **kw)
    assert (second.done_before, second.ran) == (3, 5)
    assert sorted_records(part) == sorted_records(full)
    assert traces_by_key(part) == traces_by_key(full)
    # the rerun's traces are in a part file of its own
    assert sorted(p.name for p in (part / "traces").iterdir()) == [
        "part-0001.jsonl",
        "part-0002.jsonl",
    ]
    assert len(RunDir(part).read_manifest()["runs"]) == 2
    with pytest.raises(ManifestMismatch, match="seeds: 2 -> 3"):
        run(SG, part, **{**kw, "seeds": 3})


def test_two_workers_write_the_records_of_one(tmp_path):
    kw = dict(agent="random", env_kwargs=SYMBOLIC, task_ids=IDS, seeds=3, progress=False)
    run(SG, tmp_path / "one", **kw)
    res = run(SG, tmp_path / "two", workers=2, **kw)
    assert res.ran == 12
    assert sorted_records(tmp_path / "two") == sorted_records(tmp_path / "one")
    assert traces_by_key(tmp_path / "two") == traces_by_key(tmp_path / "one")
    # each worker process wrote its traces into a part file of its own
    assert len(list((tmp_path / "two" / "traces").iterdir())) == 2


class Crashy:
    """An agent of the module:Class kind whose act raises on task 1."""

    def reset(self, env, task):  # no seed parameter: the loader adapts it
        self.env, self.task = env, task

    def act(self, obs, info):
        if self.task.id.endswith("1"):
            raise RuntimeError("boom")
        return 0


def test_an_agent_error_is_recorded_and_the_run_goes_on(tmp_path):
    res = run(
        SG,
        tmp_path,
        agent="tests.eval.test_runner:Crashy",
        env_kwargs=SYMBOLIC,
        task_ids=IDS[:3],
        progress=False,
    )
    recs = {r["task_id"]: r for r in RunDir(tmp_path).read_episodes()}
    assert res.errors == 1 and len(recs) == 3
    bad = recs[IDS[1]]
    assert bad["termination"] == "agent_error" and bad["error"] == "RuntimeError: boom"
    assert not bad["is_success"] and bad["metrics"] == {"success": 0.0}
    assert recs[IDS[0]]["termination"] != "agent_error"
    manifest = RunDir(tmp_path).read_manifest()
    assert manifest["agent"]["kind"] == "custom"


def test_bad_agent_specs_are_named(tmp_path):
    with pytest.raises(UrbanGymError, match="'sb3:'"):
        run(SG, tmp_path, agent="sb3:", env_kwargs=SYMBOLIC, progress=False)
    with pytest.raises(UrbanGymError, match="no_such_module"):
        run(SG, tmp_path / "x", agent="no_such_module:Agent", env_kwargs=SYMBOLIC, progress=False)


def test_every_line_is_strict_json(tmp_path):
    run(SG, tmp_path, agent="oracle", env_kwargs=SYMBOLIC, task_ids=IDS[:2], progress=False)
    files = [tmp_path / "episodes.jsonl", *(tmp_path / "traces").iterdir()]
    lines = [line for f in files for line in f.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == 4  # two records, two traces
    for line in lines:
        json.loads(line, parse_constant=lambda c: pytest.fail(f"non-strict constant {c}"))


def test_the_set_up_is_frozen_for_the_episodes_and_thawed_after(tmp_path):
    """The world, env and agent are kept out of the collector's full passes during the
    episodes (gc.freeze), and given back at the end."""
    import gc

    before = gc.get_freeze_count()
    agent = "tests.eval.test_runner:FreezeWatcher"
    run(SG, tmp_path, agent=agent, env_kwargs=SYMBOLIC, task_ids=IDS[:1], progress=False)
    seen = FreezeWatcher.seen
    assert before == 0 and gc.get_freeze_count() == 0
    assert seen and min(seen) > 1000  # the set-up's objects were frozen while it acted


class FreezeWatcher:
    """An agent that notes how many objects the collector keeps frozen at each step."""

    seen: list[int] = []

    def reset(self, env, task):
        pass

    def act(self, obs, info):
        import gc

        FreezeWatcher.seen.append(gc.get_freeze_count())
        return 0


def test_the_eval_command(tmp_path, capsys):
    from urban_gym.cli import main

    out = tmp_path / "run"
    args = [
        "eval",
        "UrbanGym/CityWalk-NoView-v0",
        "--out",
        str(out),
        "--no-progress",
        "--task-types",
        "VR,SGN",
        "--difficulties",
        "l2",
        "--seeds",
        "2",
        "--agent",
        "random",
    ]
    assert main(args) == 0
    # the 63 SGN tasks of level l2 (VR is l1), 2 seeds each
    assert "126/126 episodes recorded (126 now, 0 before)" in capsys.readouterr().out
    m = RunDir(out).read_manifest()
    assert m["env_kwargs"]["task_types"] == ["VR", "SGN"]
    assert m["env_kwargs"]["difficulties"] == ["l2"]
    assert {r["task_type"] for r in RunDir(out).read_episodes()} == {"SGN"}
    assert main(args) == 0  # resumes: nothing left to do
    assert "126/126 episodes recorded (0 now, 126 before)" in capsys.readouterr().out
    assert main([*args[:-1], "oracle"]) == 2  # a different agent into the same folder
    assert "holds a different run" in capsys.readouterr().err


def test_the_progress_bar_shows_eta_successes_and_tokens(tmp_path, capsys):
    run(SG, tmp_path, agent="oracle", env_kwargs=SYMBOLIC, task_ids=IDS, progress=True)
    err = capsys.readouterr().err
    final = err.replace("\r", "\n").strip().splitlines()[-1]
    # tqdm's "n/total [elapsed<remaining, rate]" and the run's postfix
    assert "4/4 [" in final and "<00:00" in final, final
    assert "success=4/4 (100%)" in final and "tokens=0" in final and "errors=0" in final
