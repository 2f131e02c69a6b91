"""The README's two examples run as documented (on the recording env, made by id)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

from tests.wrappers.recording_env import RecordingEnv, RecordingOracle
from urban_gym.baselines.lmm import ScriptedServer
from urban_gym.eval.records import RunDir

ROOT = Path(__file__).resolve().parents[2]
ENV_ID = "tests.wrappers.recording_env:UrbanGymTest/Recording-v0"


#: the settings a user's shell may hold that would change what the examples do
CLIENT_VARIABLES = (
    "URBAN_GYM_LMM_BASE_URL",
    "OPENAI_BASE_URL",
    "URBAN_GYM_LMM_MODEL",
    "URBAN_GYM_LMM_API_KEY",
    "OPENAI_API_KEY",
)


def start(args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in CLIENT_VARIABLES}
    return subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**base, "PYTHONPATH": str(ROOT), **(env or {})},
    )


def run(args: list[str], env: dict[str, str] | None = None) -> str:
    out = start(args, env)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def test_lmm_agent_example_against_the_scripted_server(tmp_path):
    server = ScriptedServer(
        env_factory=lambda i, k: RecordingEnv(**k),
        oracle_factory=lambda e: RecordingOracle(),
        seed=3,
        wrap="mixed",
    )
    records = tmp_path / "run"
    with server:
        out = run(
            [
                "examples/lmm_agent.py",
                "--env",
                ENV_ID,
                "--episodes",
                "2",
                "--seed",
                "3",
                "--out",
                str(records),
            ],
            {"URBAN_GYM_LMM_BASE_URL": server.url, "URBAN_GYM_LMM_MODEL": "scripted"},
        )
    assert out.count("success=True") == 2, out
    assert f"endpoint: {server.url} (from URBAN_GYM_LMM_BASE_URL)" in out
    assert "model:    scripted (from URBAN_GYM_LMM_MODEL)" in out
    assert "API key:  none (URBAN_GYM_LMM_API_KEY / OPENAI_API_KEY not set" in out
    assert "model error" not in out
    recs = RunDir(records).read_episodes()
    assert [r["task_id"] for r in recs] == ["rec-3", "rec-4"]
    assert all(len(RunDir(records).read_trace(r)) == r["steps"] + 1 for r in recs)


def free_port() -> int:
    """A loopback port nothing listens on (bound for a moment, then closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_lmm_agent_example_says_why_when_the_endpoint_is_down(tmp_path):
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1"
    secret = "sk-test-0123456789abcdef"  # must never be printed
    records = tmp_path / "run"
    args = ["examples/lmm_agent.py", "--env", ENV_ID, "--episodes", "2", "--out", str(records)]
    done = start(
        [*args, "--max-retries", "1", "--timeout", "2"],
        {"URBAN_GYM_LMM_BASE_URL": url, "URBAN_GYM_LMM_API_KEY": secret},
    )
    out, err = done.stdout, done.stderr
    assert done.returncode == 1, out + err
    assert secret not in out + err
    # before the first episode: where it goes, which model, whether a key was found
    head = out[: out.index("episode 0:")]
    assert f"endpoint: {url} (from URBAN_GYM_LMM_BASE_URL)" in head
    assert "model:    gpt-4o-mini (from default)" in head
    assert "API key:  found in URBAN_GYM_LMM_API_KEY" in head
    assert "retries:  1, timeout 2 s per request" in head
    # each episode: the termination and the reason the record holds (1 retry: 2 attempts)
    reason = f"{url}: no completion after 2 attempts (ConnectError: "
    assert out.count("termination=model_error") == 2
    assert out.count(f"  model error: {reason}") == 2
    assert "every episode failed on the endpoint" in err
    recs = RunDir(records).read_episodes()
    assert [r["termination"] for r in recs] == ["model_error", "model_error"]
    assert all(r["error"].startswith(reason) for r in recs)


def test_train_ppo_example():
    out = run(
        [
            "examples/train_ppo.py",
            "--env",
            ENV_ID,
            "--timesteps",
            "128",
            "--n-steps",
            "64",
            "--image-size",
            "36",
            "--eval-episodes",
            "2",
        ]
    )
    assert '"timesteps": 128' in out and "evaluation success rate:" in out
