"""The official ``openai`` client and the project's own record the same episodes against
``serve-scripted`` (same replies, actions, steps, metrics and token counts)."""

from __future__ import annotations

import pytest

from tests.eval.conftest import SG, SYMBOLIC
from urban_gym.baselines.lmm.server import ScriptedServer
from urban_gym.eval.records import RunDir
from urban_gym.eval.runner import run

pytest.importorskip("openai")

IDS = [f"streetgraph-procedural-00{i}" for i in range(2)]


def strip_timing(x):
    if isinstance(x, dict):
        return {k: strip_timing(v) for k, v in x.items() if k not in ("timing", "trace")}
    if isinstance(x, list):
        return [strip_timing(v) for v in x]
    return x


def record_run(tmp_path, client: str, scheme: str | None):
    out = tmp_path / client
    opts = {"model": "m", "client": client, "temperature": 0.5, "extra_body": {"seed": 7}}
    if scheme:
        opts["scheme"] = scheme
    with ScriptedServer(
        env_id=SG, env_kwargs=SYMBOLIC, wrap="mixed", policy="noisy-oracle:0.3"
    ) as server:
        run(
            SG,
            out,
            agent="lmm",
            agent_options={"base_url": server.url, **opts},
            env_kwargs=SYMBOLIC,
            task_ids=IDS,
            progress=False,
        )
    d = RunDir(out)
    recs = d.read_episodes()
    return [strip_timing(r) for r in recs], [strip_timing(d.read_trace(r)) for r in recs], d


@pytest.mark.parametrize("scheme", [None, "agentnav"])
def test_official_and_own_client_give_identical_records(tmp_path, scheme):
    ours, our_traces, d1 = record_run(tmp_path, "httpx", scheme)
    theirs, their_traces, d2 = record_run(tmp_path, "openai", scheme)
    assert ours == theirs
    assert our_traces == their_traces
    assert sum(r["tokens"]["total_tokens"] for r in ours) > 0
    assert d2.read_manifest()["agent"]["config"]["client"] == "openai"
