"""The play server on a real loopback socket, driven over HTTP by several clients: the
records are the harness's, sessions are separate, abandonment is recorded, restarts resume,
and ``urban-gym report`` compares a human run with the oracle's."""

from __future__ import annotations

import json
import os
import time

import gymnasium as gym
import httpx
import pytest

from urban_gym.eval.failures import ERROR, classify
from urban_gym.eval.records import ManifestMismatch, RunDir
from urban_gym.eval.report import build_report
from urban_gym.eval.runner import run as eval_run
from urban_gym.eval.trace import replay
from urban_gym.play.app import PlayServer
from urban_gym.play.run import PlayRun
from urban_gym.play.session import PlaySettings

PG = "UrbanGym/PoseGraph360-Procedural-v0"
# one-step question tasks, in the env's order
TASKS = [
    "localization-easy-000",
    "localization-medium-000",
    "object_count-easy-000",
    "relational-easy-000",
]


def client(server: PlayServer) -> httpx.Client:
    return httpx.Client(base_url=server.url, headers=server.headers, timeout=60)


def answer_right(c: httpx.Client, run: PlayRun, state: dict) -> dict:
    """Answer the running task with the oracle's (true) answer, as a person who knows."""
    s = next(x for x in run.sessions.values() if x.sid == state["session"])
    text = s.oracle_action()["text"]
    return c.post("/api/act", json={"control": "answer", "params": {"text": text}}).json()


def records(path) -> dict[str, dict]:
    return {r["task_id"]: r for r in RunDir(path).read_episodes()}


def test_a_human_run_is_a_run_like_any_other(tmp_path):
    """Four tasks played over HTTP (three right, one wrong), then the report: a human table
    with CIs and the paired comparison with the oracle on the same tasks."""
    human = tmp_path / "human"
    run = PlayRun(PG, human, task_ids=TASKS)
    with PlayServer(run) as srv, client(srv) as c:
        assert c.get("/").status_code == 200 and "play.js" in c.get("/").text
        assert c.get("/static/play.js").status_code == 200
        cfg = c.get("/api/config").json()
        assert cfg["family"] == "posegraph360" and cfg["controls"]["answer_box"] is True
        st = c.post("/api/session").json()
        assert st["phase"] == "playing" and st["task"] == {"number": 1, "of": 4}
        played = []
        for n in range(4):
            played.append(st["task"]["number"])
            if n == 1:  # a wrong answer (the grid has no cell x:9)
                st = c.post("/api/act", json={"control": "answer", "params": {"text": "x:9 y:9"}})
                st = st.json()
            else:
                st = answer_right(c, run, st)
            assert st["phase"] == "between" and st["last"]["termination"] == "answered"
            assert st["server_ms"] > 0
            st = c.post("/api/next").json()
        assert played == [1, 2, 3, 4] and st["phase"] == "done"
        stats = c.get("/api/stats").json()
        assert stats["latency_ms"]["answer"]["n"] == 4 and stats["progress"]["recorded"] == 4
    m = json.loads((human / "manifest.json").read_text())
    assert m["agent"] == {
        "spec": "human",
        "kind": "human",
        "options": {},
        "config": {"kind": "human", "interface": "browser (urban-gym play)"},
    }
    assert m["env_id"] == PG and m["episodes"] == 4 and m["runs"][0]["backend"] == "play"
    recs = records(human)
    assert [recs[t]["is_success"] for t in TASKS] == [True, False, True, True]
    wrong = recs[TASKS[1]]
    assert (
        wrong["answer"] == "x:9 y:9"
        and wrong["steps"] == 1
        and wrong["tokens"]["total_tokens"] == 0
    )
    trace = RunDir(human).read_trace(wrong)
    assert trace[1]["action"] == {"action": "ANSWER", "text": "x:9 y:9"} and trace[1]["valid"]
    assert wrong["timing"]["model_latency_s"] == trace[1]["timing"]["latency_s"] >= 0
    assert len({r["session"] for r in recs.values()}) == 1
    # a person's episode replays exactly from its trace (the report's GIFs rely on it)
    env = gym.make(PG, track_visibility=True)
    for r in recs.values():
        exact, _, problems = replay(env, r, RunDir(human).read_trace(r))
        assert exact, problems

    oracle = tmp_path / "oracle"
    eval_run(PG, oracle, agent="oracle", task_ids=TASKS, progress=False)
    rep = build_report([human, oracle], resamples=2000, failures=True)
    h = rep["results"]["human"]
    assert h["overall"]["tasks"] == 4
    assert h["overall"]["metrics"]["success"]["mean"] == 0.75
    assert 0.0 <= h["overall"]["metrics"]["success"]["low"] <= 0.75
    assert h["overall"]["metrics"]["success"]["high"] == 1.0
    (cmp,) = rep["comparisons"]
    assert (cmp["a"], cmp["b"], cmp["tasks"]) == ("human", "oracle", 4)
    assert cmp["metrics"]["success"]["diff"]["mean"] == 0.25
    mc = cmp["mcnemar"]
    assert (mc["pairs"], mc["both"], mc["a_only"], mc["b_only"], mc["p"]) == (4, 3, 0, 1, 1.0)
    assert rep["runs"][0]["agent"]["kind"] == "human" and rep["runs"][0]["complete"]


def test_sessions_are_separate_and_get_the_next_free_task(tmp_path):
    run = PlayRun(PG, tmp_path / "h", task_ids=TASKS)
    with PlayServer(run) as srv, client(srv) as a, client(srv) as b:
        sa = a.post("/api/session").json()
        sb = b.post("/api/session").json()
        assert sa["session"] != sb["session"]
        assert (sa["task"]["number"], sb["task"]["number"]) == (1, 2)
        ta = next(s for s in run.sessions.values() if s.sid == sa["session"])
        tb = next(s for s in run.sessions.values() if s.sid == sb["session"])
        assert ta.env is not tb.env and ta.env.unwrapped.task.id == TASKS[0]
        assert tb.env.unwrapped.task.id == TASKS[1]
        answer_right(a, run, sa)
        # A's next task is the first one neither recorded nor being played: number 3
        assert a.post("/api/next").json()["task"]["number"] == 3
        assert b.post("/api/session").json()["task"]["number"] == 2  # B's page reloaded
        answer_right(b, run, sb)
        assert b.post("/api/next").json()["task"]["number"] == 4
        # errors: a step while none can be taken, a control the page cannot mean, no cookie
        r = b.post("/api/act", json={"control": "no-such", "params": {}})
        assert r.status_code == 400 and "no control 'no-such'" in r.json()["error"]
        r = httpx.post(
            srv.url + "api/act", json={"control": "W", "params": {}}, headers=srv.headers
        )
        assert r.status_code == 400 and "no session" in r.json()["error"]
        answer_right(b, run, b.post("/api/session").json())
        r = b.post("/api/act", json={"control": "W", "params": {}})
        assert r.status_code == 409 and "between" in r.json()["error"]
    recs = records(tmp_path / "h")
    assert recs[TASKS[0]]["session"] == sa["session"] and recs[TASKS[1]]["session"] == sb["session"]
    # A's task 3 was still running when the server stopped: recorded as abandoned
    assert recs[TASKS[2]]["termination"] == "abandoned"
    assert recs[TASKS[2]]["error"] == "abandoned: the server stopped"
    assert recs[TASKS[3]]["is_success"]


def test_abandoned_sessions_are_recorded_and_a_restart_resumes(tmp_path):
    out = tmp_path / "h"
    settings = PlaySettings(idle_timeout_s=600, heartbeat_timeout_s=300, leave_grace_s=5)
    run = PlayRun(PG, out, task_ids=TASKS, settings=settings)
    with PlayServer(run) as srv, client(srv) as a, client(srv) as b, client(srv) as c:
        sa = a.post("/api/session").json()
        sb = b.post("/api/session").json()
        sc = c.post("/api/session").json()
        # A closes the tab (the page's beacon); B walks once then its browser dies; C idles
        assert a.post("/api/leave").status_code == 204
        st = b.post("/api/act", json={"control": "D", "params": {"size": "LARGE"}}).json()
        assert st["step"] == 1 and st["phase"] == "playing"
        now = time.monotonic()
        assert run.reap(now + 1) == []  # within every grace period: nothing happens
        assert run.reap(now + 6) == [sa["session"]]
        assert run.reap(now + 301) == [sb["session"], sc["session"]]
        for s in run.sessions.values():
            s.join(10)
        recs = records(out)
        assert {t: recs[t]["error"] for t in TASKS[:3]} == {
            TASKS[0]: "abandoned: the page was closed",
            TASKS[1]: "abandoned: the page stopped answering (no request for 300 s)",
            TASKS[2]: "abandoned: the page stopped answering (no request for 300 s)",
        }
        assert all(recs[t]["termination"] == "abandoned" for t in TASKS[:3])
        assert recs[TASKS[1]]["steps"] == 1 and not recs[TASKS[1]]["is_success"]
        steps = RunDir(out).read_trace(recs[TASKS[1]])
        assert classify(recs[TASKS[1]], steps)["dominant"] == ERROR  # not the agent's fault
        env = gym.make(PG, track_visibility=True)
        assert replay(env, recs[TASKS[1]], steps)[0]  # replays exactly, up to where it stopped
        assert RunDir(out).read_trace(recs[TASKS[1]])[1]["action"] == {
            "action": "D",
            "size": "LARGE",
        }
        # the page of A comes back: its last task is recorded, the next is number 4
        st = a.post("/api/session").json()
        assert st["phase"] == "between" and st["last"]["termination"] == "abandoned"
    assert len(RunDir(out).read_episodes()) == 3
    # a restart resumes: the recorded keys are skipped, the next session gets task 4
    again = PlayRun(PG, out, task_ids=TASKS, settings=settings)
    assert again.resumed and again.done_before == 3
    with PlayServer(again) as srv, client(srv) as d:
        st = d.post("/api/session").json()
        assert st["task"]["number"] == 4 and st["progress"]["recorded"] == 3
        answer_right(d, again, st)
        assert d.post("/api/next").json()["phase"] == "done"
    assert len(RunDir(out).read_episodes()) == 4
    assert len(json.loads((out / "manifest.json").read_text())["runs"]) == 2
    with pytest.raises(ManifestMismatch, match="tasks"):
        PlayRun(PG, out, task_ids=TASKS[:2])


def test_the_reaper_thread_abandons_a_silent_page(tmp_path):
    settings = PlaySettings(heartbeat_timeout_s=0.3, reap_interval_s=0.05)
    run = PlayRun(PG, tmp_path / "h", task_ids=TASKS[:1], settings=settings)
    with PlayServer(run) as srv, client(srv) as a:
        a.post("/api/session")
        t0 = time.monotonic()
        while not RunDir(tmp_path / "h").read_episodes() and time.monotonic() - t0 < 10:
            time.sleep(0.05)
        (rec,) = RunDir(tmp_path / "h").read_episodes()
        assert rec["termination"] == "abandoned" and "stopped answering" in rec["error"]
        assert 0.3 <= time.monotonic() - t0 < 10


def test_a_second_play_or_eval_on_a_live_run_folder_is_refused(tmp_path):
    """Human play holds the run folder's lock like ``urban-gym eval`` (issue 39 item 5): a
    second writer is refused naming this process, and the folder is free again once the
    first run closes."""
    from urban_gym.errors import UrbanGymError

    human = tmp_path / "human"
    first = PlayRun(PG, human, task_ids=TASKS[:1])
    try:
        with pytest.raises(UrbanGymError, match=rf"in use by process {os.getpid()}"):
            PlayRun(PG, human, task_ids=TASKS[:1])
        with pytest.raises(UrbanGymError, match="in use by"):
            eval_run(PG, human, "oracle", task_ids=TASKS[:1])
    finally:
        first.close()
    again = PlayRun(PG, human, task_ids=TASKS[:1])  # resumes the same run
    assert again.resumed
    again.close()
