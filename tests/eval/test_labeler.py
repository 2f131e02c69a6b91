"""``report --labeler lmm``: a model labels failed episodes (a real loopback server answers
from a table) and the report gives Cohen's kappa against the rules."""

from __future__ import annotations

import json
import re
from collections import Counter

import gymnasium as gym
import numpy as np
import pytest

from tests.eval.test_failures import CASES
from urban_gym.baselines.lmm.client import ChatClient, ClientConfig
from urban_gym.baselines.lmm.server import ScriptedServer
from urban_gym.eval.failures import classify
from urban_gym.eval.labeler import ModelLabeler, label_responder, parse_label
from urban_gym.eval.records import RunDir
from urban_gym.eval.report import failure_breakdown, load_run, name_runs


def fake_run(path):
    """A run folder holding the constructed failures of the rule tests."""
    d = RunDir(path)
    d.write_manifest({"env_id": "X-v0", "family": "posegraph360", "agent": {"spec": "random"}})
    truth = {}
    for i, (_, _, rec, steps) in enumerate(CASES):
        key = f"case{i}__s0__r0"
        r = {
            **rec,
            "task_id": f"case{i}",
            "seed": 0,
            "repeat": 0,
            "key": key,
            "category": "c",
            "steps": len(steps) - 1,
        }
        r["trace"] = d.write_trace(key, steps)
        d.append(r)
        truth[key] = classify(r, steps)["dominant"]
    run = load_run(path)
    name_runs([run])
    return run, truth


def label(run, label_of):
    with ScriptedServer(responders=[label_responder(label_of)]) as server:
        client = ChatClient(ClientConfig(base_url=server.url, model="labeler"))
        return ModelLabeler(client)(run, failure_breakdown(run))


def test_labels_that_match_the_rules_give_kappa_one(tmp_path):
    run, truth = fake_run(tmp_path)
    res = label(run, truth.__getitem__)
    assert res["labeled"] == len(CASES) and res["kappa"] == 1.0 and res["agreement"] == 1.0


def test_a_model_that_always_says_explore_gets_kappa_zero(tmp_path):
    run, truth = fake_run(tmp_path)
    res = label(run, lambda key: "Explore")
    # p_o = share of rule labels that are Explore = p_e (the model's share is 1): kappa 0
    n_explore = Counter(truth.values())["Explore"]
    assert res["agreement"] == round(n_explore / len(CASES), 4)
    assert res["kappa"] == 0.0
    assert res["confusion"]["Action"] == {"Explore": Counter(truth.values())["Action"]}


def test_parse_label():
    assert parse_label('{"cause": "perception"}') == "Perception"
    assert parse_label("The dominant cause is Grounding.") == "Grounding"
    assert parse_label("no idea") is None


# --------------------------------------------------------------------------- with images
def test_spread_steps_by_hand():
    from urban_gym.eval.labeler_images import spread_steps

    assert spread_steps(11, 3) == [0, 5, 10]  # evenly spaced, ending with the last
    assert spread_steps(51, 6) == [0, 10, 20, 30, 40, 50]
    assert spread_steps(5, 9) == [0, 1, 2, 3, 4]  # all fit
    assert spread_steps(5, 1) == [4] and spread_steps(0, 3) == []


PG = "UrbanGym/PoseGraph360-v0"
VIEW = {"view_size": 48, "pano_width": 192}


@pytest.fixture(scope="module")
def failed_run(tmp_path_factory):
    """A random agent's run on a few landmark-image tasks of the shipped suite (it fails
    them): traces to replay."""
    from urban_gym.eval.runner import run

    env = gym.make(PG, task_types=["landmark_image"], **VIEW)
    ids = [t.id for t in env.unwrapped.tasks][:4]
    env.close()
    out = tmp_path_factory.mktemp("failed") / "random"
    run(PG, out, agent="random", env_kwargs=VIEW, task_ids=ids, progress=False)
    return out


class ViewsSeen(gym.Wrapper):
    """Keeps every ``view`` the env gives."""

    def __init__(self, env):
        super().__init__(env)
        self.seen = []

    def reset(self, **kw):
        obs, info = self.env.reset(**kw)
        self.seen.append(obs["view"])
        return obs, info

    def step(self, action):
        out = self.env.step(action)
        self.seen.append(out[0]["view"])
        return out


def _report_with_images(run_dir, out, budget):
    """``urban-gym report --labeler lmm --labeler-images`` against the scripted server;
    returns the requests' messages as the server received them."""
    from urban_gym.cli import main

    got: list[list] = []

    def responder(messages):
        got.append(messages)
        return json.dumps({"cause": "Explore"})

    with ScriptedServer(responders=[responder]) as server:
        args = ["report", str(run_dir), "--out", str(out), "--no-gifs", "--no-plots"]
        args += ["--resamples", "100", "--labeler", "lmm", "--labeler-images"]
        args += ["--labeler-base-url", server.url, "--labeler-model", "labeler-m"]
        args += ["--labeler-image-budget", str(budget)]
        assert main(args) == 0
    return got


def _shown(messages):
    """The steps a request shows, and its images by step: ``{t: [(caption, array)]}``."""
    from urban_gym.wrappers.images import decode_data_url

    system, user = messages
    parts = user["content"]
    shown: dict[int, list] = {}
    caption = None
    for p in parts:
        if p["type"] == "text" and re.match(r"Step \d+: ", p["text"]):  # the step's action
            shown.setdefault(int(p["text"].split(":")[0][5:]), [])
        if p["type"] == "text" and p["text"].startswith("Step ") and p["text"].endswith(":"):
            t, caption = p["text"][5:-1].split(", ", 1)
            shown.setdefault(int(t), [])
        elif p["type"] == "image_url":
            shown[int(t)].append((caption, decode_data_url(p["image_url"]["url"])))
    size = sum(len(p["image_url"]["url"]) for p in parts if p["type"] == "image_url")
    return system["content"], parts, shown, size


def test_the_labeller_sees_views_and_maps_within_the_budget(failed_run, tmp_path):
    from urban_gym.eval.labeler import IMAGES_NOTE
    from urban_gym.eval.labeler_images import spread_steps
    from urban_gym.eval.trace import replay
    from urban_gym.eval.worker import RunSpec, make_env

    recs = {r["key"]: r for r in RunDir(failed_run).read_episodes()}
    # a budget large enough for every step of every episode
    got = _report_with_images(failed_run, tmp_path / "all", 10**8)
    assert len(got) == len(recs)  # one request per failed episode
    env = make_env(RunSpec(PG, VIEW, "oracle"))
    for messages in got:
        system, parts, shown, _ = _shown(messages)
        assert system.endswith(IMAGES_NOTE)
        key = parts[0]["text"].split("\n")[0].split(": ")[1]
        rec = recs[key]
        steps = RunDir(failed_run).read_trace(rec)
        assert sorted(shown) == list(range(len(steps)))  # every step
        caps = [c for c, _ in shown[0]]
        assert caps == ["view", "reference", "location map"]  # the task's image once
        assert all("reference" not in [c for c, _ in v] for t, v in shown.items() if t)
        # the views are the agent's own: the last one against a replay of the episode
        views = ViewsSeen(env)
        replay(views, rec, steps)
        last = dict(shown[len(steps) - 1]).get("view")
        if last is not None:  # (a view that did not change since the step before is not resent)
            assert last.shape == (48, 48, 3)
            assert np.abs(last.astype(int) - views.seen[-1].astype(int)).mean() < 12  # JPEG
        texts = [p["text"] for p in parts if p["type"] == "text"]
        assert f"Images of {len(steps)} of the episode's {len(steps)} steps" in texts[-1]
    env.close()
    md = (tmp_path / "all" / "report.md").read_text()
    assert "and the agent's views and location maps of" in md
    # a small budget: fewer steps, evenly spaced, always the last, within the budget
    budget = 12_000
    fewer = 0
    for messages in _report_with_images(failed_run, tmp_path / "small", budget):
        _, parts, shown, size = _shown(messages)
        key = parts[0]["text"].split("\n")[0].split(": ")[1]
        n = len(RunDir(failed_run).read_trace(recs[key]))
        assert 0 < size <= budget
        assert max(shown) == n - 1 and sorted(shown) == spread_steps(n, len(shown))
        fewer += len(shown) < n
    assert fewer >= 2  # the longer episodes did not fit whole


def test_labeller_images_need_the_model_labeller(failed_run, tmp_path):
    from urban_gym.cli import main

    args = ["report", str(failed_run), "--out", str(tmp_path), "--labeler-images"]
    assert main(args) != 0


def test_one_step_over_the_budget_is_shrunk(failed_run):
    """The last step alone over the budget: its images shrunk in 15% steps until they fit
    (360CityArena's appendix A.4); a budget too small for any image sends none."""
    from urban_gym.eval.labeler_images import episode_images
    from urban_gym.eval.worker import RunSpec, make_env

    d = RunDir(failed_run)
    rec = max(d.read_episodes(), key=lambda r: r["steps"])
    steps = d.read_trace(rec)
    env = make_env(RunSpec(PG, VIEW, "oracle"))
    whole = episode_images(env, rec, steps, budget=10**8)
    assert whole.sent == list(range(len(steps))) and whole.exact and whole.scale == 1.0
    small = episode_images(env, rec, steps, budget=4000)
    assert small.sent == [len(steps) - 1] and small.total_bytes <= 4000
    assert small.scale < 1.0  # 48 px views shrunk (0.85 per step)
    assert [c for c, _ in small.images[len(steps) - 1]][0] == "view"
    none = episode_images(env, rec, steps, budget=100)
    assert none.total_bytes == 0 and none.sent == []
    env.close()
