"""A damaged run folder has a way out, and a record of the wrong type is never counted:

* a bad line in the middle of ``episodes.jsonl`` (not JSON, ``NaN``, ``is_success:
  "false"``) makes a report refuse, naming the line; a resume moves it to the quarantine
  file with a message naming it, and runs its episode again;
* records whose trace was deleted are run again by a resume;
* a damaged ``manifest.json`` is named, and ``--force`` moves the old run aside;
* ``urban-gym cost`` leaves out a torn last line and counts a duplicated key once.
"""

from __future__ import annotations

import json
import shutil

import pytest

from tests.eval.conftest import SG
from urban_gym.cli import main
from urban_gym.eval.records import RunDir

QUARANTINE = "episodes.quarantine.jsonl"  # where a resume moves unusable lines

EVAL = ["--agent", "random", "--seeds", "2", "--no-progress"]
EVAL += ["--task-ids", ",".join(f"streetgraph-procedural-00{i}" for i in range(5))]
EVAL += ["--env-kwargs", '{"observation": "symbolic"}']
REPORT = ["--no-gifs", "--no-plots", "--resamples", "50"]


@pytest.fixture(scope="module")
def done(tmp_path_factory):
    """A complete run of 5 tasks x 2 seeds (10 episodes) of the random agent."""
    folder = tmp_path_factory.mktemp("damaged") / "run"
    assert main(["eval", SG, "--out", str(folder), *EVAL]) == 0
    return folder


def copy(done, tmp_path):
    folder = tmp_path / "run"
    shutil.copytree(done, folder)
    return folder


def edit_line(folder, n: int, text_of) -> str:
    """Replace line ``n`` (1-based) of episodes.jsonl by ``text_of(record)``; returns it."""
    p = folder / "episodes.jsonl"
    lines = p.read_text().splitlines()
    lines[n - 1] = text_of(json.loads(lines[n - 1]))
    p.write_text("\n".join(lines) + "\n")
    return lines[n - 1]


BAD = {
    "not JSON": lambda r: '{"task_id": "streetgraph-procedural-001", "seed": 0,',
    "is_success a string": lambda r: json.dumps({**r, "is_success": "false"}),
    "is_success NaN": lambda r: json.dumps({**r, "is_success": float("nan")}),
    "NaN score": lambda r: json.dumps({**r, "metrics": {**r["metrics"], "spl": float("nan")}}),
    "seed a boolean": lambda r: json.dumps({**r, "seed": True}),
}


@pytest.mark.parametrize("kind", sorted(BAD))
def test_a_bad_line_is_named_by_report_and_quarantined_by_resume(done, tmp_path, kind, capsys):
    folder = copy(done, tmp_path)
    bad = edit_line(folder, 4, BAD[kind])
    # the report refuses, naming the line: never a success out of "false" or NaN
    assert main(["report", str(folder), "--out", str(tmp_path / "rep"), *REPORT]) == 2
    err = capsys.readouterr().err
    assert "episodes.jsonl, line 4: " in err and err.count("\n") == 1, err
    # the resume moves the line aside, names it, and runs its episode again
    assert main(["eval", SG, "--out", str(folder), *EVAL]) == 0
    captured = capsys.readouterr()
    assert "moved 1 unusable lines" in captured.err and "line 4: " in captured.err
    assert "1 now, 9 before" in captured.out
    assert (folder / QUARANTINE).read_text() == bad + "\n"
    recs = RunDir(folder).read_episodes()
    keys = {(r["task_id"], r["seed"], r["repeat"]) for r in recs}
    assert len(recs) == len(keys) == 10
    assert main(["report", str(folder), "--out", str(tmp_path / "rep"), *REPORT]) == 0


def test_records_whose_traces_are_gone_run_again(done, tmp_path, capsys):
    folder = copy(done, tmp_path)
    for part in (folder / "traces").iterdir():
        part.unlink()
    assert main(["eval", SG, "--out", str(folder), *EVAL]) == 0
    captured = capsys.readouterr()
    assert "moved 10 unusable lines" in captured.err and "is gone" in captured.err
    assert "10 now, 0 before" in captured.out
    d = RunDir(folder)
    recs = d.read_episodes()
    assert len(recs) == 10 and all(len(d.read_trace(r)) == r["steps"] + 1 for r in recs)


def test_a_damaged_manifest_is_named_and_force_moves_the_run_aside(done, tmp_path, capsys):
    folder = copy(done, tmp_path)
    (folder / "manifest.json").write_text('{"env_id": "UrbanGym/')
    assert main(["eval", SG, "--out", str(folder), *EVAL]) == 2
    err = capsys.readouterr().err
    assert "manifest.json: not JSON" in err and "--force" in err
    assert main(["eval", SG, "--out", str(folder), *EVAL, "--force"]) == 0
    assert "10 now, 0 before" in capsys.readouterr().out
    aside = folder / "superseded-1"
    assert (aside / "manifest.json").read_text() == '{"env_id": "UrbanGym/'
    assert (aside / "episodes.jsonl").read_text().count("\n") == 10
    assert RunDir(folder).read_manifest()["env_id"] == SG


def test_cost_leaves_out_a_torn_line_and_counts_a_key_once(tmp_path, capsys):
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "manifest.json").write_text(json.dumps({"agent": {"config": {"model": "m"}}}))
    usage = {"requests": 1, "prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}

    def rec(i: int) -> str:
        r = {"task_id": f"t{i}", "seed": 0, "repeat": 0, "is_success": i == 0, "metrics": {}}
        return json.dumps({**r, "tokens": usage})

    lines = [rec(0), rec(1), rec(2), rec(1)]  # t1 twice
    torn = rec(3)[:40]  # a writer killed mid-line
    (folder / "episodes.jsonl").write_text("\n".join(lines) + "\n" + torn)
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"m": {"prompt": 1.0, "completion": 10.0}}))
    assert main(["cost", str(folder), "--json", "--prices", str(prices)]) == 0
    row = json.loads(capsys.readouterr().out)[0]
    assert (row["episodes"], row["requests"], row["prompt_tokens"]) == (3, 3, 300)
    assert row["completion_tokens"] == 30 and row["total_tokens"] == 330
    assert row["cost_usd"] == pytest.approx((300 * 1.0 + 30 * 10.0) / 1e6)
