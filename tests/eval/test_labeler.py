"""``report --labeler lmm``: a model labels failed episodes (a real loopback server answers
from a table) and the report gives Cohen's kappa against the rules."""

from __future__ import annotations

from collections import Counter

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
