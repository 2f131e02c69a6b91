"""Issue 39 items 3, 7 and 9 on a real loopback model server
(:mod:`tests.reliability.fault_server`): the client's credentials never reach a record,
a trace, a manifest or an error message; every model option is checked before the first
request; and one request has an overall deadline (a dripping server, an endless stream, a
``Retry-After`` of a day)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.reliability.fault_server import Answer, FaultServer, completion_body, json_answer
from tests.wrappers.recording_env import episode
from urban_gym.baselines.lmm import ChatClient, ClientConfig, LMMAgent, ModelError
from urban_gym.cli import main
from urban_gym.errors import InputError

ROOT = Path(__file__).resolve().parents[2]
MESSAGES = [{"role": "user", "content": "where to?"}]
KEY = "sk-test-THE-KEY-0123456789"
PASSWORD = "hunter2-pw-xyz"
QUERY_KEY = "q-secret-98765"
SECRETS = (KEY, PASSWORD, QUERY_KEY)


def with_credentials(url: str) -> str:
    """``url`` (http://127.0.0.1:PORT/v1) with a user:password and a ?key= value in it."""
    return url.replace("http://", f"http://alice:{PASSWORD}@") + f"?key={QUERY_KEY}"


def client(url: str, **kw) -> ChatClient:
    base = {"model": "m", "backoff_s": 0.001, "jitter": 0.0, "timeout_s": 5.0}
    return ChatClient(ClientConfig(base_url=url, **{**base, **kw}))


def assert_no_secret(text: str) -> None:
    for s in SECRETS:
        assert s not in text


# ----------------------------------------------------------------------- item 3
def test_an_error_body_echoing_the_key_is_redacted():
    echo = json_answer({"error": {"message": f"invalid api key {KEY}"}}, status=401)
    with FaultServer([echo, echo]) as s:
        with pytest.raises(ModelError) as plain:
            client(s.url, api_key=KEY, max_retries=0).chat(MESSAGES)
        assert KEY in s.seen[0].decode("latin-1")  # the key was sent, as it must be
        c = client(with_credentials(s.url), api_key=KEY, max_retries=0)
        with pytest.raises(ModelError) as e:
            c.chat(MESSAGES)
        # the ?key= of the base URL goes with the request, after the path
        assert s.seen[1].startswith(f"/v1/chat/completions?key={QUERY_KEY}".encode())
    assert_no_secret(str(plain.value) + str(e.value))
    assert "invalid api key [REDACTED]" in str(e.value)
    assert "alice" not in str(e.value) and "key=[REDACTED]" in str(e.value)


def test_a_reply_echoing_the_key_reaches_no_record_or_trace():
    turn = json_answer(completion_body(f'{{"action": "turn", "angle": 90}} my key is {KEY}'))
    bad = json_answer({"error": {"message": f"quota of {KEY} spent"}}, status=403)
    with FaultServer([turn, turn, bad]) as s:
        agent = LMMAgent(client=client(with_credentials(s.url), api_key=KEY, max_retries=0))
        rec, steps = episode(agent, seed=2)
        config = agent.config()
    assert rec["termination"] == "model_error" and rec["steps"] == 2
    text = json.dumps([rec, steps, config], default=str)
    assert_no_secret(text)
    assert "[REDACTED]" in text  # the echo was there, replaced


def test_the_manifest_command_line_and_records_hold_no_credentials(tmp_path):
    out = tmp_path / "run"
    echo = json_answer({"error": {"message": f"bad key {KEY}"}}, status=401)
    with FaultServer(default=echo) as s:
        argv = [
            *("eval", "UrbanGym/PoseGraph360-Procedural-v0", "--out", str(out)),
            *("--agent", "lmm", "--model", "m", "--max-retries", "0"),
            *("--base-url", with_credentials(s.url), "--task-ids", "localization-easy-000"),
        ]
        env = dict(os.environ, PYTHONPATH=str(ROOT), OPENAI_API_KEY=KEY)
        p = subprocess.run(
            [sys.executable, "-m", "urban_gym.cli", *argv],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert s.requests >= 1, p.stderr
    written = [f for f in out.rglob("*") if f.is_file()]
    assert any(f.name == "episodes.jsonl" for f in written)
    for f in written:
        assert_no_secret(f.read_text(errors="replace"))
    assert_no_secret(p.stdout + p.stderr)
    manifest = json.loads((out / "manifest.json").read_text())
    assert any("[REDACTED]@127.0.0.1" in a for a in manifest["runs"][0]["command"])
    (rec,) = [json.loads(x) for x in (out / "episodes.jsonl").read_text().splitlines()]
    assert rec["termination"] == "model_error" and "bad key [REDACTED]" in rec["error"]


# ----------------------------------------------------------------------- item 7
@pytest.mark.parametrize(
    ("option", "value", "words"),
    [
        ("--temperature", "nan", "--temperature: 'nan' is not a finite number"),
        ("--temperature", "-1", "--temperature -1.0"),
        ("--timeout", "-1", "--timeout -1.0"),
        ("--timeout", "inf", "--timeout: 'inf' is not a finite number"),
        ("--max-retries", "-1", "--max-retries: '-1' is not from 0"),
        ("--max-tokens", "0", "--max-tokens 0"),
        ("--extra-body", '{"top_p": NaN}', "--extra-body"),
        ("--request-deadline", "0", "--request-deadline 0.0"),
        ("--base-url", "http://127.0.0.1:99999/v1", "port outside 1..65535"),
        ("--base-url", "ftp://127.0.0.1/v1", "--base-url 'ftp://127.0.0.1/v1'"),
        ("--image-budget", "-5", "--image-budget: '-5' is not from 0"),
    ],
)
def test_a_bad_model_option_is_refused_before_any_episode(tmp_path, capsys, option, value, words):
    with FaultServer() as s:
        base = ["--base-url", s.url] if option != "--base-url" else []
        argv = ["eval", "UrbanGym/PoseGraph360-Procedural-v0", "--out", str(tmp_path / "r")]
        argv += ["--agent", "lmm", "--model", "m", *base, f"{option}={value}"]
        try:
            status = main(argv)
        except SystemExit as exc:  # refused while parsing
            status = exc.code
        assert status == 2 and s.requests == 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and words in err, err
    assert not (tmp_path / "r" / "episodes.jsonl").exists()


def test_client_config_names_the_bad_setting():
    for kw, words in [
        ({"temperature": float("nan")}, "--temperature nan"),
        ({"max_retries": 1.5}, "--max-retries 1.5 (max_retries): must be a whole number"),
        ({"extra_body": {"a": [float("inf")]}}, "is not strict JSON"),
        ({"jitter": 2.0}, "jitter=2.0"),
    ]:
        with pytest.raises(InputError) as e:
            ClientConfig(**kw)
        assert words in str(e.value)


# ----------------------------------------------------------------------- item 9
def test_a_dripping_server_ends_at_the_request_deadline():
    body = json.dumps(completion_body()).encode()
    with FaultServer(default=Answer(body, drip_s=0.2)) as s:
        c = client(s.url, deadline_s=1.5, max_retries=3)
        t0 = time.monotonic()
        with pytest.raises(ModelError, match="request deadline of 1.5 s"):
            c.chat(MESSAGES)
        took = time.monotonic() - t0
    assert 1.4 < took < 4.0  # each byte came within --timeout: only the deadline ends it


def test_an_endless_stream_ends_at_the_request_deadline():
    with FaultServer(
        default=Answer(b'{"choices": [', length=False, forever=True, drip_s=0.001)
    ) as s:
        c = client(s.url, deadline_s=1.0, max_retries=0)
        t0 = time.monotonic()
        with pytest.raises(ModelError, match="still arriving at the request deadline"):
            c.chat(MESSAGES)
    assert time.monotonic() - t0 < 3.0


def test_a_retry_after_of_a_day_is_not_waited_for():
    busy = Answer(b"busy", status=429, headers={"Retry-After": "86400"})
    with FaultServer(default=busy) as s:
        cfg = ClientConfig(
            base_url=s.url, model="m", max_backoff_s=1e5, deadline_s=60.0, jitter=0.0
        )
        waits: list[float] = []
        c = ChatClient(cfg, sleep=waits.append)
        with pytest.raises(ModelError, match="request deadline of 60 s") as e:
            c.chat(MESSAGES)
    assert waits == [] and s.requests == 1 and "would wait 8.64e+04 s" in str(e.value)


def test_the_deadline_ends_the_episode_as_a_model_error_with_its_reason():
    turn = json_answer(completion_body('{"action": "turn", "angle": 90}'))
    drip = Answer(json.dumps(completion_body()).encode(), drip_s=0.2)
    with FaultServer([turn], default=drip) as s:
        agent = LMMAgent(client=client(s.url, deadline_s=1.0, max_retries=0))
        rec, _ = episode(agent, seed=2)
    assert rec["termination"] == "model_error" and rec["steps"] == 1
    assert "request deadline of 1 s" in rec["error"]
