"""The language-model fuzzy_match judge against a real loopback server that answers
judge requests from ground truth (the city's POI names), its cache, prompt files, the
agreement report, and the harness with --judge lmm."""

from __future__ import annotations

import json

import pytest

from urban_gym.baselines.lmm.client import ChatClient, ClientConfig
from urban_gym.baselines.lmm.judge import (
    USER_MARKER,
    LLMJudge,
    judge_responder,
    load_prompt,
    parse_verdict,
    poi_name_truth,
)
from urban_gym.baselines.lmm.server import ScriptedServer
from urban_gym.errors import UrbanGymError
from urban_gym.tasks.metrics import fuzzy_match
from urban_gym.world import load_city


@pytest.fixture(scope="module")
def server():
    truth = poi_name_truth(load_city("helsinki"))
    with ScriptedServer(responders=[judge_responder(truth)]) as s:
        yield s


def judge_for(server, **kw) -> LLMJudge:
    return LLMJudge(ChatClient(ClientConfig(base_url=server.url, model="judge")), **kw)


def test_the_judge_accepts_other_names_of_the_same_place(server, tmp_path):
    j = judge_for(server, cache_path=tmp_path / "cache.jsonl")
    assert j("Ravintola La Mer", ["Ravintola La Mer"])
    assert j("la mer", ["Ravintola La Mer"])  # generic word dropped: the same place
    assert j("Hilton", ["Hilton Helsinki Strand"])  # an OSM alias of that POI
    assert not j("Hilton", ["Ravintola La Mer"])
    assert not j("", ["Ravintola La Mer"])  # no answer: no call
    before = server.answered
    assert j("la mer", ["Ravintola La Mer"])  # cached
    assert server.answered == before and j.calls == 4
    lines = (tmp_path / "cache.jsonl").read_text().splitlines()
    assert json.loads(lines[1]) == {
        "answer": "la mer",
        "expected": "Ravintola La Mer",
        "is_correct": True,
    }
    again = judge_for(server, cache_path=tmp_path / "cache.jsonl")
    assert again("Hilton", ["Hilton Helsinki Strand"]) and again.calls == 0
    # the deterministic judge does not accept the short form; the model judge does
    assert not fuzzy_match("la mer", "Ravintola La Mer")
    assert fuzzy_match("la mer", "Ravintola La Mer", judge=j)


def test_parse_verdict():
    assert parse_verdict("is_correct: True") is True
    assert parse_verdict("Reasoning...\nIS_CORRECT = false") is False
    assert parse_verdict("True") is True
    assert parse_verdict("maybe") is None


def test_prompt_files(tmp_path, server):
    p = tmp_path / "judge.txt"
    p.write_text(
        f"You are a helpful assistant.\n{USER_MARKER}\nUser answer: {{answer}}\n"
        "Expected answer: {expected}\nOutput: is_correct: True/False"
    )
    system, user = load_prompt(p)
    assert system == "You are a helpful assistant." and user.startswith("User answer: {answer}")
    j = judge_for(server, prompt_file=p)
    assert j("La Mer", ["Ravintola La Mer"])  # the server reads the 360CityArena format too
    bad = tmp_path / "bad.txt"
    bad.write_text(f"system\n{USER_MARKER}\nno placeholders")
    with pytest.raises(UrbanGymError, match=r"\{answer\}"):
        load_prompt(bad)


def test_judge_agreement_on_the_suite(server, capsys):
    from urban_gym.cli import main

    assert main(["judge-agreement", "--judge-base-url", server.url, "--judge-model", "j"]) == 0
    out = capsys.readouterr().out
    assert "judged answers:" in out and "Cohen's kappa" in out
    from urban_gym.families.posegraph360.judge_agreement import agreement, probes

    items = probes()
    assert len({i["task_id"] for i in items}) == 25  # the Helsinki suite's relational tasks
    res = agreement(items, judge_for(server))
    src = res["by_source"]
    assert src["expected name"]["rules"] == src["expected name"]["model"] == 25
    assert src["wrong option"]["rules"] == 0 and src["wrong option"]["model"] == 0
    assert res["table"]["model_only"] >= 1  # short forms only the model accepts
    assert 0.0 < res["kappa"] < 1.0


def test_eval_with_the_model_judge(server, tmp_path):
    from urban_gym.eval.records import RunDir
    from urban_gym.eval.runner import run

    res = run(
        "UrbanGym/PoseGraph360-v0",
        tmp_path,
        agent="oracle",
        env_kwargs={"task_types": ["relational"], "view_size": 32, "pano_width": 128},
        task_ids=[f"relational-easy-00{i}" for i in range(3)],
        judge={"base_url": server.url, "model": "judge", "cache": str(tmp_path / "j.jsonl")},
        track_visibility=False,
        progress=False,
    )
    assert res.successes == 3
    assert RunDir(tmp_path).read_manifest()["judge"]["base_url"] == server.url
    assert len((tmp_path / "j.jsonl").read_text().splitlines()) == 3


def test_serve_scripted_judges_by_the_served_city_before_any_episode():
    """``urban-gym serve-scripted`` answers judge calls from the served env's POI names even
    when no episode has started (``urban-gym judge-agreement`` against it)."""
    from urban_gym.baselines.lmm.judge import server_judge_responder

    server = ScriptedServer(
        env_id="UrbanGym/PoseGraph360-v0", env_kwargs={"view_size": 16, "pano_width": 64}
    )
    server.responders.append(server_judge_responder(server))
    with server:
        assert server.env is None and not server.sessions
        j = judge_for(server)
        assert j("It is Cafe Esplanad.", ["Cafe Esplanad"])  # a sentence's filler aside
        assert j("Hilton", ["Hilton Helsinki Strand"])  # an OSM alias
        assert not j("Hilton", ["Ravintola La Mer"])
