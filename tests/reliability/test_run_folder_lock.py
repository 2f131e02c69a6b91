"""One writer per run folder: a second ``urban-gym eval`` on the same ``--out`` is refused
with a message naming the live holder's process, and the lock of a holder killed with
``kill -9`` is taken over. Two evals started at once never record an episode twice."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from tests.eval.conftest import ROOT, SG, cli
from urban_gym.eval.records import RunDir
from urban_gym.eval.runlock import LOCK, RunLock

ARGS = ["--agent", "random", "--no-progress", "--env-kwargs", '{"observation": "symbolic"}']


def hold_lock(folder) -> subprocess.Popen:
    """A process that takes the run folder's lock and sleeps (says "held" when it has it)."""
    code = textwrap.dedent(
        f"""
        import time
        from urban_gym.eval.runlock import RunLock
        RunLock({str(folder)!r}).acquire()
        print("held", flush=True)
        time.sleep(600)
        """
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True)
    assert p.stdout is not None and p.stdout.readline().strip() == "held"
    return p


def test_a_live_holder_is_named_and_a_dead_one_taken_over(tmp_path, capsys):
    from urban_gym.cli import main

    out = tmp_path / "run"
    holder = hold_lock(out)
    try:
        args = ["eval", SG, "--out", str(out), *ARGS]
        assert main([*args, "--max-episodes", "3"]) == 2
        err = capsys.readouterr().err
        assert f"in use by process {holder.pid}" in err and err.count("\n") == 1
        assert not (out / "episodes.jsonl").exists()  # nothing written
        with pytest.raises(Exception, match=f"process {holder.pid}"):
            RunLock(out).acquire()
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(30)
    assert (out / LOCK).exists()  # the dead holder's file stays, with its pid
    assert main([*args, "--max-episodes", "3"]) == 0
    captured = capsys.readouterr()
    assert f"took over the lock of process {holder.pid}, which is gone" in captured.err
    assert len(RunDir(out).read_episodes()) == 3
    assert not (out / LOCK).exists()  # released at the end


def test_two_evals_on_one_folder_record_each_episode_once(tmp_path):
    out = tmp_path / "run"
    procs = [cli("eval", SG, "--out", str(out), "--seeds", "2", *ARGS) for _ in range(2)]
    results = [p.communicate(timeout=300) for p in procs]
    codes = [p.returncode for p in procs]
    assert 0 in codes and set(codes) <= {0, 2}, [e.decode() for _, e in results]
    for p, (_, err) in zip(procs, results):
        if p.returncode == 2:
            assert "in use by process" in err.decode()
    recs = RunDir(out).read_episodes()
    keys = [(r["task_id"], r["seed"], r["repeat"]) for r in recs]
    lines = (out / "episodes.jsonl").read_bytes().count(b"\n")
    assert lines == len(keys) == len(set(keys)) == 200


def test_the_lock_is_taken_before_the_env_and_agent_are_built(tmp_path, capsys):
    """A refused second run spends nothing: with the folder held, an eval whose agent could
    not even load (a module that does not exist) is refused for the lock, not for the
    agent; and a run that fails before writing leaves no empty folder behind.
    """
    from urban_gym.cli import main

    out = tmp_path / "run"
    holder = hold_lock(out)
    try:
        bad_agent = ["--agent", "no_such_module_xyz:Agent", "--no-progress"]
        assert main(["eval", SG, "--out", str(out), *bad_agent]) == 2
        err = capsys.readouterr().err
        assert f"in use by process {holder.pid}" in err and "no_such_module_xyz" not in err
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(30)
    fresh = tmp_path / "fresh"
    assert main(["eval", SG, "--out", str(fresh), *bad_agent]) == 2
    assert "no_such_module_xyz" in capsys.readouterr().err
    assert not fresh.exists()  # the folder the failed run would have made is gone again
