"""``urban-gym play`` as a person starts it: the URL it prints serves the page; Ctrl-C
records the running episode as abandoned; after a hard kill the unrecorded task is offered
again."""

from __future__ import annotations

import json
import re
import signal

import httpx
import pytest

from tests.eval.conftest import cli
from urban_gym.eval.records import RunDir

PG = "UrbanGym/PoseGraph360-Procedural-v0"
TASKS = "localization-easy-000,localization-medium-000,object_count-easy-000"


def start(out) -> tuple:
    p = cli("play", PG, "--tasks", TASKS, "--out", str(out), "--port", "0", text=True)
    lines = []
    for line in p.stdout:
        lines.append(line)
        m = re.search(r"open (http://127\.0\.0\.1:\d+/\?token=\S+) in a browser", line)
        if m:
            return p, m.group(1), "".join(lines)
    raise AssertionError(f"no URL printed: {lines} {p.stderr.read()}")


def test_play_command_serves_stops_and_resumes(tmp_path):
    out = tmp_path / "human"
    p, url, text = start(out)
    try:
        assert "3 episodes, 0 recorded before, 3 to play" in text
        with httpx.Client(base_url=url.split("?")[0], timeout=60, follow_redirects=True) as c:
            assert c.get("/").status_code == 403  # without the token
            assert "urban_gym play" in c.get(url).text  # the printed URL sets the cookie
            st = c.post("/api/session").json()
            assert st["task"]["number"] == 1
            st = c.post("/api/act", json={"control": "answer", "params": {"text": "x:0 y:0"}})
            assert st.json()["last"]["termination"] == "answered"
            assert c.post("/api/next").json()["task"]["number"] == 2
        p.kill()  # a hard kill while task 2 runs: it is not recorded
        p.wait(30)
    finally:
        if p.poll() is None:
            p.kill()
    assert [r["task_id"] for r in RunDir(out).read_episodes()] == ["localization-easy-000"]

    p, url, text = start(out)  # again: task 2 is offered again
    try:
        assert "1 recorded before, 2 to play" in text
        with httpx.Client(base_url=url.split("?")[0], timeout=60, follow_redirects=True) as c:
            c.get(url)
            assert c.post("/api/session").json()["task"]["number"] == 2
        p.send_signal(signal.SIGINT)  # Ctrl-C: task 2 is recorded as abandoned
        assert p.wait(60) == 0
    finally:
        if p.poll() is None:
            p.kill()
    assert "urban-gym report" in p.stderr.read()
    recs = RunDir(out).read_episodes()
    assert [(r["task_id"], r["termination"]) for r in recs] == [
        ("localization-easy-000", "answered"),
        ("localization-medium-000", "abandoned"),
    ]
    assert recs[1]["error"] == "abandoned: the server stopped"
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["agent"]["kind"] == "human" and len(manifest["runs"]) == 2
    assert manifest["runs"][0]["command"][:2] == ["urban-gym", "play"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--idle-timeout", "0"], "--idle-timeout=0.0 must be > 0 s"),
        (["--tasks", "no-such-task"], "no-such-task"),
    ],
)
def test_play_command_names_bad_arguments(tmp_path, args, message):
    p = cli("play", PG, "--out", str(tmp_path / "h"), *args, text=True)
    _, err = p.communicate(timeout=120)
    assert p.returncode == 2 and message in err
