"""The README's two examples run as documented (on the recording env, made by id)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.wrappers.recording_env import RecordingEnv, RecordingOracle
from urban_gym.baselines.lmm import ScriptedServer

ROOT = Path(__file__).resolve().parents[2]
ENV_ID = "tests.wrappers.recording_env:UrbanGymTest/Recording-v0"


def run(args: list[str], env: dict[str, str] | None = None) -> str:
    out = subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def test_lmm_agent_example_against_the_scripted_server(tmp_path):
    server = ScriptedServer(
        env_factory=lambda i, k: RecordingEnv(**k),
        oracle_factory=lambda e: RecordingOracle(),
        seed=3,
        wrap="mixed",
    )
    records = tmp_path / "eps.jsonl"
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
    recs = [json.loads(line) for line in records.read_text().splitlines()]
    assert [r["task"]["id"] for r in recs] == ["rec-3", "rec-4"]


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
