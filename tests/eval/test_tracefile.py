"""Trace format 2: an episode's trace as one line of a part file. Round trips of every
kind of step, torn and misplaced lines, part files of their own, the fast capture of the
usual step against the general one."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from tests.eval.conftest import SG, SYMBOLIC
from urban_gym.eval.records import RecordsError, RunDir, comparable, episode_name
from urban_gym.eval.trace import TraceRecorder, add_step, run_episode, start_trace
from urban_gym.eval.tracefile import (
    EpisodeTrace,
    TraceAppender,
    pack_floats,
    trace_line,
    trace_steps,
    unpack_floats,
)
from urban_gym.eval.worker import EpisodeWorker, RunSpec


def info(x, y, heading, d, valid=True, why="", gv=None, **extra):
    """An info dict of the schema (what an UrbanEnv gives after a step)."""
    out = {
        "pose": {"x": x, "y": y, "heading": heading},
        "distance_to_goal_m": d,
        "steps": 0,
        "invalid_actions": 0,
        "action_valid": valid,
        "invalid_action": why,
        "task_id": "t",
    }
    if gv is not None:
        out["goal_visible"] = gv
    out.update(extra)
    return out


def a_trace() -> tuple[EpisodeTrace, list[dict]]:
    """A trace with every kind of step, and its steps written out by hand."""
    reply = {"text": "go 1", "stage": "json", "ok": True, "error": "", "fields": {}}
    t = start_trace(info(0.0, 0.0, 90.0, 12.5, gv=False))
    add_step(t, info(1.25, -3.5, 180.0, 10.0, gv=True), {"action": "go", "option": 1}, 0.5, None)
    add_step(
        t, info(1.25, -3.5, 180.0, 10.0, valid=False, why="no street", gv=False), 7, -1.0, None
    )
    add_step(
        t,
        {"pose": None, "distance_to_goal_m": math.inf, "action_valid": True, "goal_visible": 1},
        {"unreadable": "?"},
        math.nan,
        {"reply": reply, "tokens": {"total_tokens": 9}},
    )
    add_step(
        t, info(0.1 + 0.2, -0.0, 359.75, 5e-324, gv=np.bool_(False)), {"text": "Kiosk"}, 2, None
    )
    odd = {**info(0, 0, 0, 1.0), "pose": {"x": 1, "y": 2, "z": 3}}  # no heading
    add_step(t, odd, 3, np.float32(0.25), None)
    pose0, pose1 = {"x": 0.0, "y": 0.0, "heading": 90.0}, {"x": 1.25, "y": -3.5, "heading": 180.0}
    steps = [
        {"t": 0, "pose": pose0, "distance_to_goal_m": 12.5, "goal_visible": False},
        {
            "t": 1,
            "action": {"action": "go", "option": 1},
            "valid": True,
            "reward": 0.5,
            "pose": pose1,
            "distance_to_goal_m": 10.0,
            "goal_visible": True,
        },
        {
            "t": 2,
            "action": 7,
            "valid": False,
            "invalid_action": "no street",
            "reward": -1.0,
            "pose": pose1,
            "distance_to_goal_m": 10.0,
            "goal_visible": False,
        },
        {
            "t": 3,
            "action": {"unreadable": "?"},
            "valid": True,
            "reward": None,  # NaN: null
            "pose": None,  # no pose in the info
            "distance_to_goal_m": None,  # not finite: null
            "goal_visible": True,  # 1: a bool
            "reply": reply,
            "tokens": {"total_tokens": 9},
        },
        {
            "t": 4,
            "action": {"text": "Kiosk"},
            "valid": True,
            "reward": 2.0,
            "pose": {"x": 0.30000000000000004, "y": -0.0, "heading": 359.75},
            "distance_to_goal_m": 5e-324,
            "goal_visible": False,
        },
        {
            "t": 5,
            "action": 3,
            "valid": True,
            "reward": 0.25,
            "pose": {"x": 1.0, "y": 2.0},  # the numbers it has
            "distance_to_goal_m": 1.0,
            "goal_visible": None,
        },
    ]
    return t, steps


def test_an_episode_trace_reads_back_as_its_steps(tmp_path):
    t, steps = a_trace()
    assert t.steps() == steps
    d = RunDir(tmp_path)
    where = d.write_trace("ep__s0__r0", t, small_ints=True)
    assert where == {"file": "traces/part-0001.jsonl", "offset": 0, "length": where["length"]}
    back = d.read_trace({"key": "ep__s0__r0", "trace": where})
    assert back == steps
    assert math.copysign(1.0, back[4]["pose"]["y"]) == -1.0  # -0.0 kept
    assert type(back[4]["reward"]) is float and type(back[4]["goal_visible"]) is bool
    # the line is one strict JSON object with the columns
    line = (tmp_path / where["file"]).read_bytes()
    assert line.endswith(b"\n") and line.count(b"\n") == 1 and len(line) == where["length"]
    obj = json.loads(line, parse_constant=lambda c: pytest.fail(f"non-strict {c}"))
    assert obj["action"][:3] == [None, {"action": "go", "option": 1}, 7]
    assert obj["valid"] == [None, True, False, True, True, True]
    assert obj["more"]["5"] == {"pose": {"x": 1.0, "y": 2.0}}
    assert obj["more"]["2"] == {"invalid_action": "no street"}
    assert obj["float_fields"] == ["reward", "x", "y", "heading", "distance_to_goal_m"]


def test_steps_given_as_objects_round_trip(tmp_path):
    steps = [{"t": 0, "pose": {"x": 1.5, "y": -2.0, "heading": 90.0}}, {"t": 1, "action": 3}]
    d = RunDir(tmp_path)
    where = d.write_trace("k", steps)
    assert d.read_trace({"key": "k", "trace": where}) == steps
    assert d.read_trace(where) == steps  # the place alone (no key to check)


def test_shared_actions_keep_the_types_json_tells_apart(tmp_path):
    """Steps share one copy of an action they repeat, but never 1 for True or 1.0."""
    from urban_gym.eval.trace import _plain_steps

    given = [{"o": 1}, {"o": 1}, {"o": True}, {"o": 1.0}, {"o": 1}, {"o": -0.0}, {"o": 0.0}]

    class Env:
        """Steps that echo the pose of the schema; the episode ends after the actions."""

        unwrapped = None

        def __init__(self):
            self.n = 0

        def step(self, action):
            self.n += 1
            return None, 0.0, self.n == len(given), False, info(float(self.n), 0.0, 0.0, 1.0)

    class Agent:
        def __init__(self):
            self.i = 0

        def act(self, obs, info):
            self.i += 1
            return given[self.i - 1]

    t = start_trace(info(0.0, 0.0, 0.0, 1.0))
    _plain_steps(Env(), Agent(), None, info(0.0, 0.0, 0.0, 1.0), t)
    assert t.actions[1] is t.actions[2] is t.actions[5]  # one copy of {"o": 1}
    assert t.actions[1] is not given[0]  # a copy: the agent may change its dict later
    given[0]["o"] = 99
    d = RunDir(tmp_path)
    back = [s["action"] for s in d.read_trace(d.write_trace("k", t, small_ints=True))[1:]]
    assert back == [{"o": 1}, {"o": 1}, {"o": True}, {"o": 1.0}, {"o": 1}, {"o": -0.0}, {"o": 0.0}]
    assert [type(a["o"]) for a in back] == [int, int, bool, float, int, float, float]
    assert math.copysign(1.0, back[5]["o"]) == -1.0
    line = (tmp_path / "traces/part-0001.jsonl").read_text()
    assert '{"o": true}, {"o": 1.0}, {"o": 1}, {"o": -0.0}' in line


def test_a_torn_or_misplaced_trace_is_named(tmp_path):
    t, steps = a_trace()
    d = RunDir(tmp_path)
    a = d.write_trace("a", t, small_ints=True)
    d.close()
    part = tmp_path / a["file"]
    with open(part, "ab") as f:  # a writer killed mid-line
        f.write(b'{"format": 2, "key": "b", "action": [null, 3')
    d2 = RunDir(tmp_path)  # the rerun: a writer of its own, in a part of its own
    b = d2.write_trace("b", [{"t": 0}], small_ints=True)
    assert b["file"] == "traces/part-0002.jsonl" and b["offset"] == 0
    assert d2.read_trace({"key": "a", "trace": a}) == steps  # the whole line before: intact
    assert d2.read_trace({"key": "b", "trace": b}) == [{"t": 0}]
    torn = {"file": a["file"], "offset": a["length"], "length": 60}
    with pytest.raises(RecordsError, match="cut off"):
        d2.read_trace({"key": "b", "trace": torn})
    with pytest.raises(RecordsError, match="the trace of 'a', not of 'b'"):
        d2.read_trace({"key": "b", "trace": a})
    with pytest.raises(RecordsError, match="not a JSON object"):
        d2.read_trace({"key": "a", "trace": {**a, "offset": 1, "length": a["length"] - 1}})
    with pytest.raises(RecordsError, match="is missing"):
        d2.read_trace({"key": "a", "trace": {**a, "file": "traces/part-0009.jsonl"}})
    with pytest.raises(RecordsError, match="does not say where"):
        d2.read_trace({"key": "a", "trace": 12})
    part.write_bytes(part.read_bytes()[: a["length"] - 10])  # the file cut short
    with pytest.raises(RecordsError, match="cut off"):
        d2.read_trace({"key": "a", "trace": a})


def test_each_writer_appends_to_parts_of_its_own(tmp_path):
    """A writer creates the part after the highest one there (O_EXCL: never one another
    writer has), appends to it only, and starts a new one when it is full."""
    (tmp_path / "traces").mkdir()
    (tmp_path / "traces" / "part-0002.jsonl").write_bytes(b"x\n")  # another writer's
    one, two = TraceAppender(tmp_path / "traces"), TraceAppender(tmp_path / "traces")
    w1 = one.write(b"1\n")
    w2 = two.write(b"22\n")
    w3 = one.write(b"333\n")
    assert (w1["file"], w2["file"], w3["file"]) == (
        "traces/part-0003.jsonl",
        "traces/part-0004.jsonl",
        "traces/part-0003.jsonl",
    )
    assert (w1["offset"], w3["offset"], w3["length"]) == (0, 2, 4)
    small = TraceAppender(tmp_path / "traces", part_bytes=3)
    x, y = small.write(b"abc\n"), small.write(b"d\n")  # the first fills its part
    assert (x["file"], y["file"], y["offset"]) == (
        "traces/part-0005.jsonl",
        "traces/part-0006.jsonl",
        0,
    )
    for w in (one, two, small):
        w.close()
    assert (tmp_path / "traces/part-0003.jsonl").read_bytes() == b"1\n333\n"
    assert (tmp_path / "traces/part-0002.jsonl").read_bytes() == b"x\n"  # untouched


def test_floats_are_exact_and_nan_reads_as_null():
    values = [0.1 + 0.2, -0.0, 5e-324, 1e308, -123456.789, math.nan, math.inf, 3, None, "x"]
    back = unpack_floats(pack_floats(values))
    assert back[:5] == values[:5] and back[5:] == [None, None, 3.0, None, None]
    assert math.copysign(1.0, back[1]) == -1.0
    with pytest.raises(ValueError, match="not base64"):
        unpack_floats("!!")
    with pytest.raises(ValueError, match="multiple of 8"):
        unpack_floats(pack_floats([1.0])[:-4])


def test_a_line_of_another_format_is_refused():
    with pytest.raises(ValueError, match="format 1, not 2"):
        trace_steps({"format": 1, "steps": []})
    good = json.loads(trace_line("k", a_trace()[0]))
    with pytest.raises(ValueError, match="6 steps and 5 floats"):
        trace_steps({**good, "floats": pack_floats([0.0] * 5)})
    with pytest.raises(ValueError, match="columns"):
        trace_steps({**good, "valid": None})


@pytest.mark.parametrize(
    ("env_id", "kwargs", "agent"),
    [
        (SG, SYMBOLIC, "oracle"),
        (SG, SYMBOLIC, "random"),
        (
            "UrbanGym/PoseGraph360-Procedural-v0",
            {"view_size": 32, "track_visibility": True},
            "random",
        ),
    ],
)
def test_the_fast_capture_writes_what_the_general_one_does(tmp_path, env_id, kwargs, agent):
    """An agent acting on the core env is recorded inline, step by step; the same episodes
    recorded through a TraceRecorder (the general path, as for a language model's face)
    give the same records and steps."""
    from urban_gym.eval.runner import episode_keys

    w = EpisodeWorker(RunSpec(env_id, kwargs, agent, run_dir=str(tmp_path)))
    assert w.recorder is None  # the agent acts on the core env: the fast path
    recorder = TraceRecorder(w.core)
    keys = episode_keys(w.core.unwrapped.tasks, None, 2)[::5][:8]
    for k in keys:
        task = w.tasks[k.task_id]
        fast, fast_trace = run_episode(w.face, w.agent, k, task=task)
        slow, slow_trace = run_episode(recorder, w.agent, k, task=task, recorder=recorder)
        assert k.name == episode_name(k.task_id, k.seed, k.repeat)
        assert comparable(fast) == comparable(slow)
        assert fast_trace.steps() == slow_trace.steps()
        assert len(fast_trace) == fast["steps"] + 1 > 1
    w.close()
