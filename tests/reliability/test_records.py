"""Nothing is lost from an episode log: every episode of the one episode loop
(:func:`urban_gym.eval.trace.run_episode`) leaves one whole line of strict JSON in a run
folder's ``episodes.jsonl`` and its trace, with the model's tokens on it, whatever the agent
sent, the model replied, or the loop ran into."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tests.strategies import nested_json
from tests.wrappers.recording_env import RecordingEnv, RecordingOracle
from urban_gym.baselines.agents import BaseAgent
from urban_gym.baselines.lmm import ChatClient, ClientConfig, LMMAgent, ScriptedServer
from urban_gym.eval.records import RunDir
from urban_gym.eval.trace import TraceRecorder, run_episode
from urban_gym.strict_json import dumps, json_safe
from urban_gym.wrappers.stacks import make_lmm_env


def _reject(constant: str):
    raise ValueError(f"non-standard JSON constant {constant}")


def strict(line: str):
    """``json.loads`` that refuses NaN, Infinity and -Infinity."""
    return json.loads(line, parse_constant=_reject)


def read_records(path) -> list[dict]:
    """Every line of a JSONL file, strictly parsed; the file must end with a newline and
    be valid UTF-8."""
    text = path.read_bytes().decode("utf-8")
    assert text.endswith("\n"), "the last record is not a whole line"
    return [strict(line) for line in text[:-1].split("\n")]


def depth(v) -> int:
    """Levels of nested containers (iteratively: the values here may be deep)."""
    best, stack = 0, [(v, 0)]
    while stack:
        x, d = stack.pop()
        if isinstance(x, (dict, list)):
            best = max(best, d + 1)
            stack.extend((c, d + 1) for c in (x.values() if isinstance(x, dict) else x))
    return best


def nested(leaf, levels: int, key: str = "a"):
    """``leaf`` inside ``levels`` dicts: {"a": {"a": ... leaf}}."""
    for _ in range(levels):
        leaf = {key: leaf}
    return leaf


# --------------------------------------------------------------------------- the serialiser


def test_the_serialiser_by_hand():
    assert dumps({"x": float("nan"), "y": float("inf"), "z": -math.inf}) == (
        '{"x": null, "y": null, "z": null}'
    )
    assert dumps("a\ud800b") == '"a\ufffdb"'  # a lone surrogate is replaced
    assert dumps("\ud83d\ude00") == '"\U0001f600"'  # a surrogate pair is joined
    assert dumps(2**63 - 1) == "9223372036854775807"
    assert dumps(2**64) == '"18446744073709551616"'
    assert dumps(10**400) == '"<integer of about 401 digits>"'
    assert dumps(-(10**5000)) == '"<negative integer of about 5001 digits>"'
    assert dumps({1: np.int64(2), None: np.float32(0.5), (1, 2): np.bool_(True)}) == (
        '{"1": 2, "null": 0.5, "(1, 2)": true}'
    )
    assert dumps(np.arange(4).reshape(2, 2)) == "[[0, 1], [2, 3]]"
    assert dumps(b"ok\xff") == '"ok\ufffd"'
    assert dumps("line\u2028break") == '"line\\u2028break"'  # str.splitlines breaks there
    cycle: list = [1]
    cycle.append(cycle)
    assert dumps(cycle) == '[1, "<cycle: list>"]'
    assert dumps(nested(1, 3), max_depth=2) == '{"a": {"a": "<dict nested deeper than 2 levels>"}}'
    assert dumps(list(range(5)), max_items=2) == '[0, 1, "<3 more items>"]'
    assert dumps("abcdef", max_chars=2) == '"ab...[4 more characters]"'


def test_the_serialiser_walks_5000_levels_without_recursion():
    deep = nested([1], 5000)
    line = dumps(deep)
    assert depth(strict(line)) == 64  # 63 dicts, then the marker string
    assert line.count('{"a": ') == 64 and "nested deeper than 64 levels" in line


_SURROGATES = st.sampled_from(
    ["\ud800", "\udfff", "\ud83d\ude00", "\ude00\ud83d", "\u2028", "\x85"]
)
_text = st.one_of(
    st.text(st.characters(exclude_categories=()), max_size=12),
    st.lists(st.one_of(_SURROGATES, st.text(max_size=3)), max_size=4).map("".join),
)
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=2**62, max_value=2**70),
    st.sampled_from([(1, 400), (-1, 5000), (1, 19), (-1, 19)]).map(lambda p: p[0] * 10 ** p[1]),
    st.floats(),
    st.sampled_from([math.nan, math.inf, -math.inf]),
    _text,
    st.binary(max_size=12),
    st.integers(-(2**63), 2**63 - 1).map(np.int64),
    st.floats(width=32).map(np.float32),
    st.floats().map(np.float64),
    st.booleans().map(np.bool_),
    hnp.arrays(
        st.sampled_from([np.int8, np.int64, np.float32, np.float64, np.bool_]),
        hnp.array_shapes(min_dims=0, max_dims=3, max_side=3),
    ),
)
_keys = st.one_of(_text, st.integers(), st.floats(), st.none(), st.booleans())


def _containers(inner):
    return st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(_keys, inner, max_size=4),
        st.sets(st.integers() | st.text(max_size=4), max_size=3),
        st.tuples(inner, st.integers(1, 6000)).map(lambda p: nested(p[0], p[1])),
        st.tuples(inner, st.integers(1, 600)).map(lambda p: [p[0]] if p[1] == 1 else [[p[0]]]),
    )


#: Any JSON-like value: huge ints, NaN/inf, surrogates, numpy scalars and arrays, bytes,
#: non-string keys, nesting thousands of levels deep.
json_like = st.recursive(_scalars, _containers, max_leaves=12)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(json_like)
def test_any_value_is_one_strict_json_line(value):
    line = dumps(value)
    assert "\n" not in line and line.splitlines() == [line]
    line.encode("utf-8")  # no lone surrogate left
    back = strict(line)
    assert json_safe(back) == back  # a safe value is its own conversion
    assert depth(back) <= 64


_plain = nested_json(
    st.none()
    | st.booleans()
    | st.integers(-(2**63) + 1, 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)


@settings(max_examples=200, deadline=None)
@given(_plain)
def test_plain_json_values_round_trip_unchanged(value):
    assert strict(dumps(value)) == value


# --------------------------------------------------------------------------- item 2: depth

DEEP_REPLIES = {
    # the action's parameter is an object nested 500 deep
    "parameter 500 deep": '{"action": "move", "direction": '
    + '{"a": ' * 500
    + "1"
    + "}" * 500
    + "}",
    # the action object itself is nested 500 deep under "action"
    "action 500 deep": '{"action": ' * 500 + '"stop"' + "}" * 500,
}


class Sends(BaseAgent):
    """An agent that sends the given actions (reply texts or structured actions) in
    order, then ``stop``; on the language-model face (``face=True``) or the core env."""

    kind = "sends"

    def __init__(self, *actions, face: bool = True) -> None:
        self.actions, self.face = list(actions), face

    def wrap(self, env):
        return make_lmm_env(env) if self.face else env

    def reset(self, env, task, seed=None):
        self.todo = list(self.actions)

    def act(self, obs, info):
        return self.todo.pop(0) if self.todo else '{"action": "stop"}'


def record_episode(env, agent, path, seed=1, **kw):
    """One episode in the one loop, written to the run folder ``path`` as the harness
    writes it; returns the record and its trace as read back from disk."""
    recorder = TraceRecorder(env)
    face = agent.wrap(recorder)
    rec, trace = run_episode(face, agent, seed=seed, recorder=recorder, **kw)
    run = RunDir(path)
    rec["trace"] = run.write_trace(rec["key"], trace)
    run.append(rec)
    run.close()
    (line,) = [r for r in read_records(path / "episodes.jsonl") if r["key"] == rec["key"]]
    return line, run.read_trace(line)


@pytest.mark.parametrize("name", list(DEEP_REPLIES))
def test_a_reply_nested_500_deep_is_recorded_bounded(tmp_path, name):
    env = RecordingEnv()
    rec, steps = record_episode(env, Sends(DEEP_REPLIES[name]), tmp_path)
    assert len(env.received) == 2  # the deep reply's step was applied (and rejected), then stop
    assert rec["steps"] == 2 and rec["termination"] == "terminated_by_agent"
    step = steps[1]
    assert not step["valid"] and step["reply"]["stage"] == "json"
    assert depth(step) <= 20  # every part of the step bounded (16 levels of a value)


def test_an_action_nested_5000_deep_is_recorded_bounded(tmp_path):
    env = RecordingEnv()
    agent = Sends({"action": "stop", "note": nested("leaf", 5000)}, face=False)
    rec, steps = record_episode(env, agent, tmp_path)
    assert rec["termination"] == "terminated_by_agent" and len(env.received) == 1
    assert "nested deeper than 16 levels" in json.dumps(steps[1]["action"]["note"])


def test_a_memory_nested_5000_deep_becomes_bounded_memory_text():
    env = make_lmm_env(RecordingEnv())  # posegraph360: ReflectionMemory
    env.reset(seed=1)
    obs, *_ = env.step({"action": "turn", "angle": 90, "memory": nested(10**5000, 5000)})
    # written as JSON, cut at 16 levels (the leaf, a 5,000-digit integer, is never reached)
    assert obs["memory"] == '{"a": ' * 16 + '"<dict nested deeper than 16 levels>"' + "}" * 16
    assert env.observation_space.contains(obs)


# --------------------------------------------------------------------------- item 3: text


def test_a_lone_surrogate_in_a_reply_does_not_lose_the_record(tmp_path):
    rec, steps = record_episode(RecordingEnv(), Sends('{"action":"stop"} \ud800'), tmp_path)
    assert rec["termination"] == "terminated_by_agent"
    assert steps[1]["reply"]["text"] == '{"action":"stop"} \ufffd'


class OddMetricsEnv(RecordingEnv):
    """A RecordingEnv whose final metrics hold NaN, infinity, a numpy int and a 400-digit
    integer, as a buggy evaluator might."""

    def _end(self, ok, reason):
        obs, r, term, trunc, info = super()._end(ok, reason)
        info["metrics"].update(spl=math.nan, ratio=math.inf, decisions=np.int64(3), huge=10**400)
        return obs, r, term, trunc, info


def test_nan_and_infinity_never_reach_the_file(tmp_path):
    agent = Sends(
        '{"action": "turn", "angle": 90, "thought": NaN, "reason": -Infinity}',
        '{"action": "stop", "thought": Infinity}',
    )
    rec, steps = record_episode(OddMetricsEnv(), agent, tmp_path)  # strict reading
    assert steps[1]["reply"]["fields"]["thought"] is None
    assert steps[1]["reply"]["fields"]["reason"] is None
    m = rec["metrics"]
    assert m["spl"] is None and m["ratio"] is None and m["decisions"] == 3
    assert m["huge"] == "<integer of about 401 digits>"


# --------------------------------------------------------------------------- item 5: usage


def scripted_server(**kw) -> ScriptedServer:
    return ScriptedServer(
        env_factory=lambda i, k: RecordingEnv(**k),
        oracle_factory=lambda env: RecordingOracle(),
        **kw,
    ).start()


def lmm_agent(url: str, **kw) -> LMMAgent:
    cfg = ClientConfig(base_url=url, model="scripted", backoff_s=0.001, jitter=0.0, **kw)
    return LMMAgent(client=ChatClient(cfg))


def test_tokens_are_on_the_written_line_and_each_step(tmp_path):
    with scripted_server(env_id="rec", seed=11) as s:
        agent = lmm_agent(s.url)
        rec, steps = record_episode(RecordingEnv(), agent, tmp_path, seed=11)
    assert rec["termination"] == "arrived"
    tokens = rec["tokens"]
    for k in ("prompt_tokens", "completion_tokens", "total_tokens"):
        assert tokens[k] == sum(r["usage"][k] for r in agent.replies) > 0
    assert tokens["total_tokens"] == tokens["prompt_tokens"] + tokens["completion_tokens"]
    assert tokens["requests"] == rec["steps"] == len(agent.replies)
    # each step carries the tokens of the reply it carried out
    assert [s["tokens"] for s in steps[1:]] == [r["usage"] for r in agent.replies]
    assert rec["timing"]["model_latency_s"] > 0


# --------------------------------------------------------------------------- nothing lost


def _failing_on_step(exc: BaseException, after: int):
    calls = []

    def on_step(obs, info):
        calls.append(1)
        if len(calls) > after:  # the reset's call, then one per step
            raise exc

    return on_step


def test_the_loop_failing_after_two_steps_writes_the_record(tmp_path):
    """A failing callback of the loop (a GIF writer, say) ends the episode as the agent's
    error would: the record says so, and holds the two steps done."""
    with scripted_server(env_id="rec", seed=11) as s:
        on_step = _failing_on_step(RuntimeError("gif writer failed"), 2)
        rec, steps = record_episode(
            RecordingEnv(), lmm_agent(s.url), tmp_path, seed=11, on_step=on_step
        )
    assert rec["termination"] == "agent_error" and rec["steps"] == 2 and not rec["is_success"]
    assert rec["error"] == "RuntimeError: gif writer failed"
    assert rec["tokens"]["requests"] == 2 and len(steps) == 3


def test_ctrl_c_stops_the_loop_and_the_episode_is_not_recorded(tmp_path):
    """Ctrl-C stops the run: the episode in progress is not recorded (half an episode is
    no record), so resuming the run plays it again."""
    with scripted_server(env_id="rec", seed=11) as s:
        with pytest.raises(KeyboardInterrupt):
            record_episode(
                RecordingEnv(),
                lmm_agent(s.url),
                tmp_path,
                seed=11,
                on_step=_failing_on_step(KeyboardInterrupt(), 2),
            )
    assert not (tmp_path / "episodes.jsonl").exists()


class CrashingEnv(RecordingEnv):
    """A RecordingEnv whose dynamics fail on the third step (a bug in an env)."""

    def step(self, action):
        if self.steps == 2:
            raise ZeroDivisionError("division by zero in the dynamics")
        return super().step(action)


def test_an_env_raising_mid_episode_writes_the_record(tmp_path):
    agent = Sends(4, 5, {"action": "turn", "angle": 45}, face=False)
    rec, steps = record_episode(CrashingEnv(), agent, tmp_path, seed=3)
    assert rec["termination"] == "env_error" and rec["steps"] == 2
    assert rec["error"] == "ZeroDivisionError: division by zero in the dynamics"


class Broken(BaseAgent):
    kind = "broken"

    def act(self, obs, info):
        raise ValueError("agent='human' has no oracle here")


def test_an_agent_raising_writes_the_record(tmp_path):
    rec, steps = record_episode(RecordingEnv(), Broken(), tmp_path)
    assert rec["termination"] == "agent_error" and "agent='human'" in rec["error"]
    assert rec["steps"] == 0 and len(steps) == 1


def test_a_line_cut_off_by_a_killed_writer_does_not_swallow_the_next(tmp_path):
    path = tmp_path / "episodes.jsonl"
    path.write_text('{"termination": "arrived"}\n{"termination": "arr', encoding="utf-8")
    run_episode_rec, _ = run_episode(RecordingEnv(), Sends({"action": "stop"}, face=False), seed=1)
    run = RunDir(tmp_path)
    run.append(run_episode_rec)
    run.close()
    lines = path.read_text(encoding="utf-8").split("\n")
    assert lines[1] == '{"termination": "arr' and lines[3] == ""
    assert strict(lines[2])["termination"] == "terminated_by_agent"


WRITER = """
import signal
import sys
from urban_gym.strict_json import append_line
# Python leaves SIGINT ignored when its parent ignored it (a job started with & by a
# script): the Ctrl-C of a terminal is what this test is about, so take it back.
signal.signal(signal.SIGINT, signal.default_int_handler)
record = {"steps": [{"t": i, "text": "x" * 2000} for i in range(300)]}
print("ready", flush=True)
while True:
    append_line(sys.argv[1], record)
"""


def test_ctrl_c_while_writing_leaves_only_whole_lines(tmp_path):
    path = tmp_path / "episodes.jsonl"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE, env=env, text=True
    )
    try:
        assert proc.stdout.readline().strip() == "ready"
        deadline = time.monotonic() + 20
        while (
            not path.exists() or path.stat().st_size < 3_000_000
        ) and time.monotonic() < deadline:
            time.sleep(0.01)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) != 0  # stopped by KeyboardInterrupt
    finally:
        proc.kill()
    recs = read_records(path)  # every line whole and strict, the file ends with "\n"
    assert len(recs) >= 5 and all(len(r["steps"]) == 300 for r in recs)


# --------------------------------------------------------------------------- the guarantee

_reply_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=6,
)
_reply_fields = st.dictionaries(
    st.sampled_from(["thought", "memory", "answer", "option", "direction"]), _reply_values
)
#: Reply texts: any text, JSON with any values (NaN, surrogates, huge ints) for the action
#: and the reply fields, and actions nested up to 900 deep.
_replies = st.one_of(
    _text,
    st.builds(lambda v, f: json.dumps({"action": v, **f}), _reply_values, _reply_fields),
    st.integers(1, 900).map(lambda n: '{"action": ' * n + '"stop"' + "}" * n),
)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(first=st.one_of(json_like, _replies), second=st.one_of(json_like, _replies))
def test_every_episode_leaves_exactly_one_strict_record(tmp_path, first, second):
    """Any JSON-like value or reply text as the agent's action, twice, then a stop: one
    new whole line of strict JSON, and its trace, whether the episode ended, hit the step
    limit, or the env raised (the env side's own tests require it not to)."""
    path = tmp_path / "episodes.jsonl"
    before = len(read_records(path)) if path.exists() else 0
    env = RecordingEnv(max_steps=5)
    recorder = TraceRecorder(env)
    agent = Sends(first, second)
    face = agent.wrap(recorder)
    rec, trace = run_episode(face, agent, recorder=recorder, seed=before)
    run = RunDir(tmp_path)
    rec["trace"] = run.write_trace(rec["key"], trace)
    run.append(rec)
    run.close()
    recs = read_records(path)
    assert len(recs) == before + 1 and len(run.read_trace(recs[-1])) == recs[-1]["steps"] + 1
    ends = {"terminated_by_agent", "arrived", "answered", "step_limit", "env_error"}
    assert recs[-1]["termination"] in ends
