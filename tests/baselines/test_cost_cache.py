"""Cost and reproducibility of language-model runs: the price table, the response cache
(a rerun makes no request, costs nothing and records the same episodes) and concurrent
episodes against one endpoint (with retries after 429s)."""

from __future__ import annotations

import json

import pytest

from tests.eval.conftest import SG, SYMBOLIC
from urban_gym.baselines.lmm.costs import cost_usd, load_prices, run_cost
from urban_gym.baselines.lmm.server import ScriptedServer
from urban_gym.errors import UrbanGymError
from urban_gym.eval.records import RunDir
from urban_gym.eval.runner import run

IDS = [f"streetgraph-procedural-00{i}" for i in range(3)]


def lmm_run(out, url, workers=1, **opts):
    return run(
        SG,
        out,
        agent="lmm",
        agent_options={"base_url": url, "model": "m", **opts},
        env_kwargs=SYMBOLIC,
        task_ids=IDS,
        workers=workers,
        progress=False,
    )


def comparable(d: RunDir):
    out = []
    for r in d.read_episodes():
        steps = [
            {k: v for k, v in s.items() if k not in ("timing", "tokens")} for s in d.read_trace(r)
        ]
        rec = {k: v for k, v in r.items() if k not in ("timing", "tokens", "trace")}
        out.append((rec, steps))
    return sorted(out, key=lambda x: x[0]["key"])


def test_price_table_by_hand(tmp_path):
    f = tmp_path / "prices.yaml"
    f.write_text("m*: {prompt: 1.0, completion: 2.0}\nother: {prompt: 5}\n")
    prices = load_prices(f)
    assert prices["other"] == {"prompt": 5.0, "completion": 0.0}
    # 1,000,000 prompt tokens at $1 + 500,000 completion tokens at $2 per million
    assert cost_usd({"prompt_tokens": 10**6, "completion_tokens": 5 * 10**5}, "m-1", prices) == 2.0
    assert cost_usd({"prompt_tokens": 10**6}, "unknown", prices) == 0.0
    f.write_text("m: {prompt: cheap}\n")
    with pytest.raises(UrbanGymError, match="'m' has a price that is not a number"):
        load_prices(f)


def test_a_cached_rerun_makes_no_request_costs_nothing_and_records_the_same(tmp_path):
    cache = tmp_path / "cache"
    with ScriptedServer(
        env_id=SG, env_kwargs=SYMBOLIC, wrap="mixed", policy="noisy-oracle:0.3"
    ) as server:
        lmm_run(tmp_path / "first", server.url, cache=str(cache))
        first_requests = server.requests
    with ScriptedServer(env_id=SG, env_kwargs=SYMBOLIC, policy="random") as other:
        # a different policy: any request that reached it would change the episodes
        lmm_run(tmp_path / "again", other.url, cache=str(cache))
        assert other.requests == 0
    a, b = RunDir(tmp_path / "first"), RunDir(tmp_path / "again")
    assert comparable(a) == comparable(b)
    prices = {"m": {"prompt": 1.0, "completion": 2.0}}
    first, again = run_cost(tmp_path / "first", prices), run_cost(tmp_path / "again", prices)
    assert first["requests"] == first_requests and first["cost_usd"] > 0
    expected = (first["prompt_tokens"] * 1.0 + first["completion_tokens"] * 2.0) / 1e6
    assert first["cost_usd"] == pytest.approx(expected, abs=1e-6)
    assert (again["requests"], again["total_tokens"], again["cost_usd"]) == (0, 0, 0.0)
    assert len(list(cache.rglob("*.json"))) == first_requests  # one entry per request


def test_concurrent_episodes_against_one_server_record_the_same(tmp_path):
    with ScriptedServer(
        env_id=SG, env_kwargs=SYMBOLIC, wrap="mixed", policy="noisy-oracle:0.3"
    ) as server:
        lmm_run(tmp_path / "one", server.url)
    with ScriptedServer(
        env_id=SG,
        env_kwargs=SYMBOLIC,
        wrap="mixed",
        policy="noisy-oracle:0.3",
        faults=[429, 429, 503],  # the first requests are refused: the clients back off
    ) as server:
        res = lmm_run(tmp_path / "three", server.url, workers=3, max_retries=4)
        assert len(server.sessions) == len(IDS)  # one env in lockstep per episode
    assert res.errors == 0
    assert comparable(RunDir(tmp_path / "one")) == comparable(RunDir(tmp_path / "three"))
    retries = sum(r["tokens"]["retries"] for r in RunDir(tmp_path / "three").read_episodes())
    assert retries == 3


def test_cost_command_prints_the_run(tmp_path):
    import subprocess
    import sys

    from tests.eval.conftest import ROOT

    with ScriptedServer(env_id=SG, env_kwargs=SYMBOLIC) as server:
        lmm_run(tmp_path / "r", server.url)
    (tmp_path / "p.json").write_text(json.dumps({"m": {"prompt": 2.0, "completion": 0.0}}))
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "urban_gym.cli",
            "cost",
            str(tmp_path / "r"),
            "--json",
            "--prices",
            str(tmp_path / "p.json"),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT)},
        check=True,
    )
    row = json.loads(out.stdout)[0]
    assert row["cost_usd"] == pytest.approx(row["prompt_tokens"] * 2.0 / 1e6, abs=1e-6)
    assert row["episodes"] == len(IDS)
