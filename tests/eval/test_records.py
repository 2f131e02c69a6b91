"""Run folders: whole-line records, torn-line repair, manifests that must match."""

from __future__ import annotations

import json

import pytest

from urban_gym.eval.records import (
    ManifestMismatch,
    RecordsError,
    RunDir,
    comparable,
    episode_name,
)


def rec(tid: str, seed: int = 0, repeat: int = 0, **kw) -> dict:
    return {"task_id": tid, "seed": seed, "repeat": repeat, **kw}


def test_a_torn_last_line_is_dropped_and_cut_off(tmp_path):
    d = RunDir(tmp_path)
    d.append(rec("a", success=1))
    d.append(rec("b"))
    whole = d.episodes_path.read_bytes()
    with open(d.episodes_path, "ab") as f:
        f.write(b'{"task_id": "c", "seed": 0, "rep')  # a writer killed mid-line
    assert [r["task_id"] for r in d.read_episodes()] == ["a", "b"]
    assert d.episodes_path.read_bytes() != whole  # reading alone repairs nothing
    assert [r["task_id"] for r in d.read_episodes(repair=True)] == ["a", "b"]
    assert d.episodes_path.read_bytes() == whole
    d.append(rec("c"))
    assert [r["task_id"] for r in d.read_episodes()] == ["a", "b", "c"]


def test_a_bad_whole_line_is_named_and_duplicates_keep_the_first(tmp_path):
    d = RunDir(tmp_path)
    d.append(rec("a", v=1))
    d.append(rec("a", v=2))
    assert [r["v"] for r in d.read_episodes()] == [1]
    with open(d.episodes_path, "ab") as f:
        f.write(b"not json\n")
    with pytest.raises(RecordsError, match=r"episodes.jsonl, line 3"):
        d.read_episodes()


def test_manifest_mismatch_is_refused_unless_forced(tmp_path):
    d = RunDir(tmp_path)
    m = {"env_id": "X-v0", "agent": {"spec": "oracle"}, "seeds": 1}
    assert d.start(m, {"started": "t0"}) is False
    d.append(rec("a"))
    assert d.start(dict(m), {"started": "t1"}) is True  # same run: resume
    assert [r["started"] for r in d.read_manifest()["runs"]] == ["t0", "t1"]
    other = {**m, "agent": {"spec": "random"}}
    with pytest.raises(ManifestMismatch, match=r"agent: .*oracle.* -> .*random"):
        d.start(other, {"started": "t2"})
    assert d.start(other, {"started": "t3"}, force=True) is False
    assert (tmp_path / "superseded-1" / "episodes.jsonl").exists()  # nothing deleted
    assert d.read_episodes() == [] and d.read_manifest()["agent"]["spec"] == "random"


def test_episode_names_are_safe_and_distinct():
    assert episode_name("sg-000", 3, 1) == "sg-000__s3__r1"
    a, b = episode_name("a/b", 0, 0), episode_name("a_b", 0, 0)
    assert "/" not in a and a != b


def test_comparable_drops_the_wall_clock_fields_and_the_trace_place():
    where = {"file": "traces/part-0002.jsonl", "offset": 4096, "length": 512}
    r = rec("a", metrics={"x": float("nan")}, timing={"wall_s": 1.0}, trace=where)
    assert comparable(r) == {"task_id": "a", "seed": 0, "repeat": 0, "metrics": {"x": None}}
    assert json.loads(json.dumps(comparable(r))) == comparable(r)


def test_line_appender_starts_after_a_torn_line_and_writes_whole_lines(tmp_path):
    from urban_gym.strict_json import LineAppender

    p = tmp_path / "x.jsonl"
    p.write_bytes(b'{"a": 1}\n{"b": ')  # torn
    with LineAppender(p) as out:
        out.write('{"c": 3}')
        out.write('{"d": 4}')
        with pytest.raises(ValueError, match="one line"):
            out.write('{"e": 5}\n{"f": 6}')
    assert p.read_bytes() == b'{"a": 1}\n{"b": \n{"c": 3}\n{"d": 4}\n'


def test_fast_record_lines_are_those_of_strict_json():
    from urban_gym.eval.records import strict_line
    from urban_gym.strict_json import dumps

    for value in (
        {"a": 1.5, "b": [1, "x", None, True], "c": {"d": "é"}},
        {"nan": float("nan"), "inf": float("inf")},  # -> null
        {"s": "line\u2028break", "lone": "\ud800"},
        {"big": 2**70},  # -> a string of digits
        {"small": 0.00014285714286188522, "big": -(2**64)},
    ):
        assert strict_line(value) == dumps(value)


def test_a_long_integer_is_told_from_a_float_with_many_digits():
    from urban_gym.eval.jsonlines import has_long_int

    # a float's repr has a point or an exponent next to its digits: no integer
    assert not has_long_int('{"d": 0.00014285714286188522, "e": 1.2345678901234567e+19}')
    assert not has_long_int("[123456789012345678]")  # 18 digits
    assert has_long_int("[9223372036854775807]")  # 19: may not fit (the slow path decides)
    assert has_long_int('{"n": -123456789012345678901}')
    assert has_long_int('"a string 12345678901234567890"')  # a false alarm: only slower


def test_format_1_traces_still_read_and_a_bad_line_is_named(tmp_path):
    """Records written before trace format 2 point at a file per episode by its path."""
    d = RunDir(tmp_path)
    steps = [{"t": 0, "pose": {"x": 1.5, "y": -2.0, "heading": 90.0}}, {"t": 1, "action": 3}]
    rel = "traces/k.jsonl"
    (tmp_path / "traces").mkdir()
    (tmp_path / rel).write_text("".join(json.dumps(s) + "\n" for s in steps))
    assert d.read_trace(rel) == steps
    assert d.read_trace(rec("k", trace=rel, key="k__s0__r0")) == steps
    p = tmp_path / rel
    # two halves of one object on two lines: valid JSON only when the lines are joined
    p.write_text('{"t": 0}\n{"t": 1, "a": [1\n2]}\n')
    with pytest.raises(RecordsError, match=r"k.jsonl, line 2: not JSON"):
        d.read_trace(rel)
    p.write_text('{"t": 0}\n\n[1, 2]\n')  # a blank line is skipped; a non-object is kept
    assert d.read_trace(rel) == [{"t": 0}, [1, 2]]
