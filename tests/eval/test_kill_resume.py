"""Kill a real run (``kill -9`` of the ``urban-gym eval`` process) mid-way, twice; rerunning
the same command completes it with exactly one record per key, equal to an uninterrupted
run's records."""

from __future__ import annotations

import json
import os
import signal
import time

import pytest

from tests.eval.conftest import SG, cli
from tests.eval.test_runner import traces_by_key
from urban_gym.eval.records import RunDir, comparable
from urban_gym.eval.runner import run

SEEDS = 4
ARGS = [
    "eval",
    SG,
    "--agent",
    "random",
    "--seeds",
    str(SEEDS),
    "--no-progress",
    "--env-kwargs",
    '{"observation": "symbolic"}',
]


def lines(path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def kill_after(out, at_least: int, timeout: float = 120.0) -> int:
    p = cli(*ARGS, "--out", str(out))
    t0 = time.monotonic()
    try:
        while lines(out / "episodes.jsonl") < at_least:
            assert p.poll() is None, p.stderr.read().decode()
            assert time.monotonic() - t0 < timeout, "the run did not get going"
            time.sleep(0.002)
        os.kill(p.pid, signal.SIGKILL)
    finally:
        p.wait(30)
    assert p.returncode == -signal.SIGKILL
    return lines(out / "episodes.jsonl")


@pytest.mark.slow
def test_kill_twice_then_resume(tmp_path):
    out = tmp_path / "run"
    n1 = kill_after(out, 30)
    n2 = kill_after(out, n1 + 60)
    total = 100 * SEEDS
    assert n1 < n2 < total  # killed mid-way, twice
    p = cli(*ARGS, "--out", str(out))
    stdout, stderr = p.communicate(timeout=300)
    assert p.returncode == 0, stderr.decode()
    assert f"{total}/{total} episodes recorded" in stdout.decode()
    recs = RunDir(out).read_episodes()
    keys = [(r["task_id"], r["seed"], r["repeat"]) for r in recs]
    assert len(keys) == len(set(keys)) == total
    assert len(RunDir(out).read_manifest()["runs"]) == 3
    # every trace is whole, and the records are those of an uninterrupted run
    for r in recs[:: max(1, total // 40)]:
        assert len(RunDir(out).read_trace(r)) == r["steps"] + 1
    clean = tmp_path / "clean"
    run(
        SG,
        clean,
        agent="random",
        seeds=SEEDS,
        env_kwargs={"observation": "symbolic"},
        progress=False,
    )
    key = lambda r: (r["task_id"], r["seed"], r["repeat"])  # noqa: E731
    assert sorted(map(comparable, recs), key=key) == sorted(
        map(comparable, RunDir(clean).read_episodes()), key=key
    )
    assert traces_by_key(out) == traces_by_key(clean)
    # each of the three invocations wrote its own part file; a killed one may end in a
    # torn line (no record points at it), every other line is a whole trace
    parts = sorted((out / "traces").iterdir())
    assert [p.name for p in parts] == [f"part-000{i}.jsonl" for i in (1, 2, 3)]
    for p in parts:
        lines = p.read_bytes().split(b"\n")
        for line in lines[:-1]:
            assert json.loads(line)["format"] == 2
