import pytest

from urban_gym.tasks.spec import TaskError, TaskSpec
from urban_gym.tasks.suite import load_suite, save_suite


def make(i="t1", **kw):
    base = dict(
        id=i,
        family="citywalk",
        type="sgn",
        difficulty="l2",
        city="helsinki",
        instruction="Go to Kahvila Aalto.",
        start={"x": 0.0, "y": 0.0, "heading": 90.0},
        goal={"x": 10.0, "y": 5.0, "radius": 15.0},
    )
    base.update(kw)
    return TaskSpec(**base)


def test_json_round_trip(tmp_path):
    tasks = [make("a", options=("1", "2")), make("b", answer=3, meta={"route_m": 120.5})]
    p = save_suite(tmp_path / "s.jsonl", tasks)
    assert load_suite(p) == tasks


def test_bad_values_are_named():
    with pytest.raises(TaskError, match="family='underwater'"):
        make(family="underwater")
    with pytest.raises(TaskError, match="difficulty='impossible'"):
        make(difficulty="impossible")
    with pytest.raises(TaskError, match="unknown keys \\['colour'\\]"):
        TaskSpec.from_dict({**make().to_dict(), "colour": "red"})


def test_malformed_suite_line_reports_the_line(tmp_path):
    p = tmp_path / "s.jsonl"
    p.write_text(make("a").to_json() + "\n" + "{broken\n")
    with pytest.raises(TaskError, match="line 2"):
        load_suite(p)
    p.write_text(make("a").to_json() + "\n" + make("a").to_json() + "\n")
    with pytest.raises(TaskError, match="line 2: duplicate task id 'a'"):
        load_suite(p)
    with pytest.raises(TaskError, match="no such suite"):
        load_suite(tmp_path / "missing.jsonl")
