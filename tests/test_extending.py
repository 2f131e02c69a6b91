"""``docs/extending.md``, run: a whole family defined inside ``tests/`` (the folder
:mod:`tests.toy_family`, laid out as every family of ``urban_gym/families/`` is) registers,
runs under ``gym.make``, passes ``check_env`` with warnings as errors, takes the goal modes,
drives both faces (the RL face under MaskablePPO, the language-model face against the
real loopback scripted server), is evaluated and reported by ``urban-gym eval`` and
``urban-gym report``, is played over HTTP on the ``urban-gym play`` page, and its suite
generator works through ``urban-gym generate-suite`` -- without a file of ``urban_gym/``
knowing of it. Plus the task type (``patrol``) and the metric (``stops_in_order``) the doc
adds, and the check that keeps the doc honest: every code block of the doc is a region of
this module or of the toy family, character for character, and every region is in the doc.
"""

from __future__ import annotations

import filecmp
import json
import re
import textwrap
import warnings
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import tests.toy_family as toy
from tests.toy_family import tasks as toy_tasks
from tests.toy_family.oracle import CorridorOracle
from urban_gym.envs.info import check_info
from urban_gym.tasks.families import FAMILIES
from urban_gym.tasks.spec import TaskError
from urban_gym.tasks.suite import load_suite

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "extending.md"
SOURCES = {
    f"tests/toy_family/{p.name}": p for p in sorted((ROOT / "tests" / "toy_family").glob("*.py"))
} | {"tests/test_extending.py": ROOT / "tests" / "test_extending.py"}


@pytest.fixture
def registered():
    """The toy family and its id, registered for one test (the registries are
    process-wide: other tests must not see the toy)."""
    yield toy.register()
    toy.unregister()


# ----------------------------------------------------------------------- the family
def test_gym_make_and_check_env(registered):
    # [doc:run]
    env = gym.make("Toy/Corridor-v0")
    obs, info = env.reset(seed=0, options={"task_id": "reach-3"})  # walk from cell 0 to 3
    assert obs["cell"][0] == 0.0 and info["distance_to_goal_m"] == 3.0
    obs, reward, terminated, truncated, info = env.step(0)  # table entry 0: one cell east
    assert obs["cell"][0] == 1.0 and info["pose"] == {"x": 1.0, "y": 0.0, "heading": 90.0}
    *_, info = env.step({"action": "walk", "cells": 2})  # a structured action
    *_, terminated, _, info = env.step({"action": "stop"})
    assert terminated and info["is_success"] and info["metrics"]["spl"] == 1.0

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning of the env checker fails the test
        check_env(gym.make("Toy/Corridor-v0", render_mode="rgb_array").unwrapped)
    # [/doc:run]
    check_info(info)
    assert FAMILIES["toy_corridor"] is registered


def test_an_invalid_action_is_a_step_not_a_crash(registered):
    env = gym.make("Toy/Corridor-v0")
    env.reset(seed=0, options={"task_id": "reach-0"})
    _, reward, terminated, _, info = env.step(1)  # west from cell 0: masked, and invalid
    assert not terminated and not info["action_valid"] and reward < 0
    assert info["invalid_action"] == "cells=-1 from cell 0 leaves 0..9"
    assert info["invalid_actions"] == 1 and info["pose"]["x"] == 0.0


def test_goal_modes(registered):
    # [doc:goal-modes]
    env = gym.make("Toy/Corridor-v0", goal="vector")
    obs, _ = env.reset(seed=0, options={"task_id": "reach-3"})  # cell 3, due east of cell 0
    assert np.allclose(obs["goal_vector"][[0, 1, 7]], [0.0, 1.0, 1.0])  # straight ahead
    assert env.observation_space.contains(obs)
    landmarks = gym.make("Toy/Corridor-v0", goal="landmarks").reset(seed=0)[0]["goal_landmarks"]
    assert landmarks.shape == (16,) and abs(landmarks.sum() - 1.0) < 1e-5
    with pytest.raises(ValueError, match="goal='image' cannot apply: the corridor is not"):
        gym.make("Toy/Corridor-v0", goal="image")
    # [/doc:goal-modes]
    text = gym.make("Toy/Corridor-v0", goal="text").reset(seed=0)[0]["goal_text"]
    assert text.sum() > 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(gym.make("Toy/Corridor-v0", goal="vector").unwrapped)


def test_rl_face_under_maskable_ppo(registered):
    # [doc:rl-face]
    from urban_gym.baselines.rl import train_maskable_ppo
    from urban_gym.wrappers.rl import make_rl_env

    rl = make_rl_env("Toy/Corridor-v0", image_size=None)  # the Text instruction is dropped
    obs, _ = rl.reset(seed=0, options={"task_id": "reach-0"})
    assert set(obs) == {"cell", "action_mask"}
    assert rl.action_masks().tolist() == [True, False, True]  # no walking west at cell 0
    model, stats = train_maskable_ppo(
        "Toy/Corridor-v0", total_timesteps=256, n_steps=64, batch_size=32, image_size=None
    )
    assert stats["invalid_actions"] == 0  # the masks reached the policy
    # [/doc:rl-face]
    assert stats["timesteps"] >= 256 and stats["updates"] == 8 and stats["param_change"] > 0


def test_lmm_face_against_the_scripted_server(registered):
    # [doc:lm-face]
    from urban_gym.baselines.lmm import LMMAgent, ScriptedServer
    from urban_gym.eval.trace import run_episode

    options = {"task_id": "patrol-0"}  # from cell 3 visit 9, then 0
    with ScriptedServer("Toy/Corridor-v0", wrap="mixed") as server:
        agent = LMMAgent(base_url=server.url, model="scripted")
        face = agent.wrap(gym.make("Toy/Corridor-v0"))  # prompts, replies parsed into actions
        record, trace = run_episode(face, agent, seed=0, options=options)
    assert record["is_success"] and record["metrics"]["stops_in_order"] == 1.0
    assert record["steps"] == 6 + 9 + 1  # 6 cells east, 9 west, stop
    # [/doc:lm-face]
    assert record["unreadable_replies"] == 0 and record["tokens"]["requests"] == 16


def test_a_bad_reply_is_an_invalid_step(registered):
    from urban_gym.wrappers.stacks import make_lmm_env

    lm = make_lmm_env("Toy/Corridor-v0", memory=None)
    lm.reset(seed=0, options={"task_id": "reach-1"})
    *_, info = lm.step('{"action": {"name": "walk", "cells": 7}}')
    assert not info["action_valid"] and "cells=7 is outside [-2, 2]" in info["invalid_action"]
    *_, info = lm.step("I would rather not.")
    assert not info["action_valid"] and info["unreadable_replies"] == 1
    *_, info = lm.step('{"action": {"name": "walk", "cells": 2}}')
    assert info["action_valid"] and info["pose"]["x"] == 2.0


def test_the_oracle_runner_solves_the_suite(registered):
    # [doc:oracle-runner]
    from urban_gym.baselines.agents import OracleAgent
    from urban_gym.baselines.oracles import make_oracle
    from urban_gym.eval.trace import run_episode

    env = gym.make("Toy/Corridor-v0")
    assert isinstance(make_oracle(env), CorridorOracle)  # found through the registry
    for task in env.unwrapped.tasks:
        record, trace = run_episode(env, OracleAgent(), seed=0, options={"task_id": task.id})
        assert record["is_success"] and record["metrics"]["spl"] == 1.0, task.id
        assert record["steps"] == toy_tasks.route_length(task) + 1  # every cell, then stop
    # [/doc:oracle-runner]
    assert len(env.unwrapped.tasks) == 8


def test_eval_and_report_through_the_cli(registered, tmp_path):
    # [doc:eval-report]
    from urban_gym.cli import main

    run = tmp_path / "oracle"
    assert main(["eval", "Toy/Corridor-v0", "--agent", "oracle", "--out", str(run)]) == 0
    assert main(["report", str(run), "--out", str(tmp_path / "report")]) == 0
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    assert report["results"]["oracle"]["overall"]["metrics"]["success"]["mean"] == 1.0
    # [/doc:eval-report]
    episodes = [json.loads(line) for line in (run / "episodes.jsonl").read_text().splitlines()]
    assert len(episodes) == 8 and {e["family"] for e in episodes} == {"toy_corridor"}
    assert set(report["results"]["oracle"]["by_type"]) == {"reach", "patrol"}
    assert (tmp_path / "report" / "report.md").read_text().count("| reach |") >= 1


def test_play_over_http(registered, tmp_path):
    # [doc:play]
    import httpx

    from urban_gym.play.app import PlayServer
    from urban_gym.play.run import PlayRun

    run = PlayRun("Toy/Corridor-v0", tmp_path / "human", task_ids=["reach-3"])
    with (
        PlayServer(run) as server,
        httpx.Client(base_url=server.url, headers=server.headers, timeout=60) as page,
    ):
        assert page.get("/api/config").json()["controls"]["family"] == "toy_corridor"
        page.post("/api/session")
        for control in ("east", "east", "east", "stop"):  # cell 0 to 3, then stop
            state = page.post("/api/act", json={"control": control, "params": {}}).json()
    assert state["last"] == {"number": 1, "termination": "arrived", "steps": 4}
    # [/doc:play]
    from urban_gym.eval.records import RunDir

    (rec,) = RunDir(tmp_path / "human").read_episodes()
    assert rec["task_id"] == "reach-3" and rec["steps"] == 4 and rec["is_success"]


def test_generate_suite_through_the_cli(registered, tmp_path, capsys):
    # [doc:generate-suite]
    from urban_gym.cli import main

    out = tmp_path / "corridor.jsonl"
    args = ["--family", "toy_corridor", "--city", "corridor", "--out", str(out)]
    assert main(["generate-suite", *args]) == 0
    assert filecmp.cmp(out, toy_tasks.DEFAULT_SUITES["corridor"], shallow=False)  # the same
    # [/doc:generate-suite]
    printed = capsys.readouterr().out
    assert "wrote 8 toy_corridor tasks" in printed and "patrol: 4 of 4" in printed


def test_unregistered_the_family_is_gone(registered):
    toy.unregister()
    with pytest.raises(TaskError, match="family='toy_corridor' is not one of"):
        load_suite(toy_tasks.DEFAULT_SUITES["corridor"])
    assert "Toy/Corridor-v0" not in gym.registry
    toy.register()  # the fixture unregisters it again


# ----------------------------------------------------------------------- the added type
def test_the_patrol_type(registered):
    # [doc:test-type]
    env = gym.make("Toy/Corridor-v0", task_types=["patrol"])
    assert {t.type for t in env.unwrapped.tasks} == {"patrol"}
    env.reset(seed=0, options={"task_id": "patrol-1"})  # from cell 1 visit 7, then 6
    for action in [0] * 6 + [1]:  # east to 7, west to 6
        env.step(action)
    *_, terminated, _, info = env.step(2)
    assert terminated and info["metrics"]["success"] == 1.0
    assert info["metrics"]["stops_in_order"] == 1.0 and info["metrics"]["spl"] == 1.0

    env.reset(seed=0, options={"task_id": "patrol-1"})
    for action in [0] * 5 + [2]:  # east to 6 and stop: 7 was never visited
        *_, info = env.step(action)
    assert info["metrics"]["success"] == 0.0 and info["metrics"]["stops_in_order"] == 0.0
    # [/doc:test-type]


def test_check_task_names_the_bad_cells(registered):
    task = load_suite(toy_tasks.DEFAULT_SUITES["corridor"])[4]  # patrol-0
    with pytest.raises(TaskError, match=r"start/goal cells \[3, 9, 10\]"):
        toy_tasks.check_task(task.replace(goal={"stops": [9, 10]}))
    with pytest.raises(TaskError, match="type='sprint' is not one of reach, patrol"):
        toy_tasks.check_task(task.replace(type="sprint"))


# ----------------------------------------------------------------------- the added metric
def test_stops_in_order():
    # [doc:test-metric]
    from tests.toy_family.tasks import stops_in_order

    assert stops_in_order([3, 4, 5, 6, 7], [5, 7]) == 1.0
    assert stops_in_order([3, 4, 5, 6, 7], [7, 5]) == 0.5  # 5 came before 7
    assert stops_in_order([7, 6, 5, 6, 7], [7, 5]) == 1.0
    assert stops_in_order([0, 1, 2], [5, 1]) == 0.0  # 1 counts only after 5
    assert stops_in_order([4], []) == 1.0
    # [/doc:test-metric]


# ----------------------------------------------------------------------- the doc
SNIPPET = re.compile(r"<!-- snippet: (\S+)#(\S+) -->\n```python\n(.*?)```", re.S)
REGION = re.compile(r"^([ \t]*)# \[doc:(\S+)\]\n(.*?)^[ \t]*# \[/doc:\2\]\n", re.S | re.M)
MARKER = re.compile(r"^[ \t]*# \[/?doc:\S+\]\n", re.M)


def regions(text: str) -> dict[str, str]:
    """The ``# [doc:NAME]`` ... ``# [/doc:NAME]`` regions of a source text, dedented,
    without the marker lines of the regions nested inside (which count as regions too)."""
    out: dict[str, str] = {}
    for m in REGION.finditer(text):
        out[m[2]] = textwrap.dedent(MARKER.sub("", m[3])).rstrip("\n") + "\n"
        out.update(regions(m[3]))
    return out


def test_every_code_block_of_the_doc_is_the_code():
    doc = DOC.read_text(encoding="utf-8")
    found = {(m[1], m[2]): m[3] for m in SNIPPET.finditer(doc)}
    assert len(found) == doc.count("```python"), "a python block without a snippet marker"
    known = {
        (f, name): body
        for f, path in SOURCES.items()
        for name, body in regions(path.read_text(encoding="utf-8")).items()
    }
    for key, body in found.items():
        assert key in known, f"the doc quotes {key[0]}#{key[1]}, which is no region"
        assert body == known[key], f"{key[0]}#{key[1]} differs from the code"
    missing = sorted(f"{f}#{n}" for f, n in known.keys() - found.keys())
    assert not missing, f"regions the doc does not show: {missing}"


def test_the_region_reader():
    text = "a\n    # [doc:out]\n    x = 1\n    # [doc:in]\n    y = 2\n    # [/doc:in]\n"
    text += "    # [/doc:out]\n# [doc:last]\nz = 3\n# [/doc:last]\n"
    assert regions(text) == {"out": "x = 1\ny = 2\n", "in": "y = 2\n", "last": "z = 3\n"}


def test_no_file_under_urban_gym_names_the_toy():
    named = [
        p
        for p in (ROOT / "urban_gym").rglob("*")
        if p.is_file()
        and p.suffix in (".py", ".json", ".jsonl", ".toml", ".js", ".html")
        and re.search(r"toy_corridor|Toy/Corridor|toy_family", p.read_text(errors="ignore"))
    ]
    assert not named, named
