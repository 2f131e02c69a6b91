"""Issue 39 item 11: the ``urban-gym`` command answers bad input with one line on stderr and
a non-zero status, never a traceback -- a property test over every sub-command (driven
in-process through :func:`urban_gym.cli.main`), and the causes the issue names."""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import random
from pathlib import Path

import gymnasium as gym
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from urban_gym.baselines.agents import OracleAgent
from urban_gym.cli import all_commands, build_parser, main
from urban_gym.cli._errors import count, finite, port

PG = "UrbanGym/PoseGraph360-Procedural-v0"
PARSER = build_parser(all_commands())
SUB = next(a for a in PARSER._actions if isinstance(a, argparse._SubParsersAction))
COMMANDS = sorted(SUB.choices)
BAD_NUMBERS = ["-1", "1" + "0" * 26, "nan", "inf", "-inf", "1e309", "x", "", "0x10", "1.5.2"]


def run(argv: list[str]) -> tuple[int, str]:
    """``main(argv)``: (status, stderr)."""
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        try:
            status = main(argv)
        except SystemExit as exc:  # argparse
            status = exc.code if isinstance(exc.code, int) else 1
    return status, err.getvalue()


def assert_one_line(argv: list[str], status: int, err: str) -> None:
    """A non-zero status and one line on stderr (besides a run's progress bar)."""
    text = err.replace("\r", "\n")
    lines = [x for x in text.strip().splitlines() if x and not x.startswith("episodes:")]
    assert status != 0, (argv, err)
    assert len(lines) == 1 and "Traceback" not in err, (argv, err)
    assert lines[0].startswith("urban-gym"), (argv, err)


def typed_options(cmd: str) -> list[argparse.Action]:
    """The options of ``cmd`` that take a number or a choice (every value of
    :data:`BAD_NUMBERS` is bad for them)."""
    out = []
    for a in SUB.choices[cmd]._actions:
        if not a.option_strings or a.nargs == 0:
            continue
        if a.type in (count, finite, port) or (a.choices and not a.type):
            out.append(a)
    return out


def mistyped(rng: random.Random) -> str:
    """A registered id with one character dropped, doubled or changed."""
    ids = sorted(i for i in gym.registry if i.startswith("UrbanGym/"))
    s = rng.choice(ids)
    i = rng.randrange(len("UrbanGym/"), len(s))
    how = rng.choice(("drop", "double", "change"))
    if how == "drop":
        return s[:i] + s[i + 1 :]
    if how == "double":
        return s[:i] + s[i] + s[i:]
    return s[:i] + ("q" if s[i] != "q" else "z") + s[i + 1 :]


def positional_values(cmd: str, rng: random.Random, tmp: Path, bad: bool) -> list[str]:
    out = []
    for a in SUB.choices[cmd]._actions:
        if a.option_strings or isinstance(a, argparse._HelpAction):
            continue
        n = 2 if a.nargs in ("+", "*") else 1
        for _ in range(n):
            if a.dest == "env_id":
                out.append(mistyped(rng) if bad else PG)
            else:
                choice = rng.choice(("missing", "garbage", "folder"))
                if choice == "missing":
                    out.append(str(tmp / f"no-such-{rng.randrange(10**6)}.jsonl"))
                elif choice == "garbage":
                    f = tmp / f"garbage-{rng.randrange(10**6)}.json"
                    f.write_bytes(bytes(rng.randrange(256) for _ in range(64)))
                    out.append(str(f))
                else:
                    out.append(str(tmp))
    return out


def required_options(cmd: str, tmp: Path) -> list[str]:
    out = []
    for a in SUB.choices[cmd]._actions:
        if a.option_strings and a.required:
            out += [a.option_strings[-1], str(tmp / "out")]
    return out


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(cmd=st.sampled_from(COMMANDS), seed=st.integers(0, 2**32 - 1), mode=st.integers(0, 1))
def test_every_command_answers_bad_arguments_in_one_line(tmp_path, cmd, seed, mode):
    rng = random.Random(seed)
    options = typed_options(cmd)
    has_positional = any(
        not a.option_strings and not isinstance(a, argparse._HelpAction)
        for a in SUB.choices[cmd]._actions
    )
    if mode == 0 and options:  # a number or a choice that cannot be right
        a = rng.choice(options)
        value = rng.choice(BAD_NUMBERS) if a.type else f"not-{rng.choice(list(a.choices))}"
        extra = []
        for b in rng.sample(options, min(2, len(options))):  # and some more, maybe right
            if b is not a:
                extra += [b.option_strings[-1], rng.choice(BAD_NUMBERS + ["1", "0"])]
        argv = [cmd, *positional_values(cmd, rng, tmp_path, bad=False)]
        argv += [*required_options(cmd, tmp_path), *extra, f"{a.option_strings[-1]}={value}"]
    elif has_positional:  # a mistyped env id, a missing or garbage file, a folder
        argv = [cmd, *positional_values(cmd, rng, tmp_path, bad=True)]
        argv += required_options(cmd, tmp_path)
    else:  # an option the command does not have
        argv = [cmd, "--no-such-option", "1"]
    status, err = run(argv)
    assert_one_line(argv, status, err)


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["eval", "UrbanGym/PoseGraph360-Procedurl-v0", "--out", "{tmp}/r"], "Did you mean"),
        (["eval", PG, "--out", "{tmp}/file"], "is a file"),
        (["eval", PG, "--out", "{tmp}/r", "--seeds", str(10**26)], "--seeds"),
        (["eval", PG, "--out", "{tmp}/r", "--workers", "-1"], "--workers"),
        (["play", PG, "--port", "70000"], "not a port"),
        (["serve-scripted", PG, "--port", "-5"], "--port"),
        (["train", "{tmp}/file", "--out", "{tmp}/t", "--timesteps", str(10**26)], "--timesteps"),
        (
            ["eval", PG, "--out", "{tmp}/r", "--agent", "lmm", "--base-url", "http://h:99999/v1"],
            "port outside",
        ),
        (  # every model call of gepa fails: a closed port on loopback
            ["gepa", PG, "--out", "{tmp}/g", "--base-url", "http://127.0.0.1:9/v1"]
            + ["--model", "m", "--max-retries", "0", "--iterations", "1", "--minibatch", "1"],
            "Connection refused",
        ),
    ],
)
def test_the_named_causes(tmp_path, argv, words):
    (tmp_path / "file").write_text("not a folder")
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    status, err = run(argv)
    assert_one_line(argv, status, err)
    assert words in err, err


def test_ctrl_c_is_one_line(tmp_path):
    """Ctrl-C in the middle of a run: one line, status 130, the episodes so far kept."""
    import os
    import signal
    import subprocess
    import sys
    import time

    root = Path(__file__).resolve().parents[2]
    out = tmp_path / "r"
    argv = [sys.executable, "-m", "urban_gym.cli", "eval", PG, "--out", str(out)]
    p = subprocess.Popen(
        [*argv, "--seeds", "2000"],
        cwd=root,
        env=dict(os.environ, PYTHONPATH=str(root)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # a shell's background job starts with SIGINT ignored, and Python then installs no
        # KeyboardInterrupt handler: give the child Ctrl-C's default, as a terminal would
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 120
    while not (out / "episodes.jsonl").exists() or not (out / "episodes.jsonl").stat().st_size:
        assert time.monotonic() < deadline and p.poll() is None
        time.sleep(0.2)
    p.send_signal(signal.SIGINT)
    try:
        _, err = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        # seen twice in whole-suite runs and never alone: the first Ctrl-C went unheeded
        # (an open finding, see the issue 39 note); a second one must still end it in a line
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=90)
    lines = [x for x in err.replace("\r", "\n").splitlines() if x and "episodes:" not in x]
    assert p.returncode == 130 and lines == ["urban-gym eval: error: interrupted (Ctrl-C)"], err


class DyingAgent(OracleAgent):
    """The oracle, except that its process dies at its first action (a killed worker)."""

    def act(self, obs, info):
        os._exit(3)


@pytest.mark.slow  # two worker processes start (about 40 s on two shared cores)
def test_a_dead_worker_is_one_line(tmp_path):
    argv = ["eval", PG, "--out", str(tmp_path / "r"), "--agent", f"{__name__}:DyingAgent"]
    argv += ["--workers", "2", "--task-ids", "localization-easy-000,localization-medium-000"]
    status, err = run(argv)
    assert_one_line(argv, status, err)
    assert "a worker process died" in err and "rerun the command to resume" in err
