"""A run folder is data: reading or reporting one contacts no network address, reads no
file outside it and writes nothing outside the output folder; a replay re-scores from
the record instead of calling a judge. The attacks are real: a manifest whose judge names
a loopback recording server, a prompt file and a cache outside the folder; trace pointers
that lead out of the folder or to ``/dev/zero`` with a huge length."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tests.reliability.fault_server import FaultServer, completion_body, json_answer
from urban_gym.errors import RecordsError
from urban_gym.eval.records import RunDir
from urban_gym.eval.runner import run

PG = "UrbanGym/PoseGraph360-v0"
SMALL = {"view_size": 16, "pano_width": 128}

#: paths opened by this process while a test watches (sys.addaudithook cannot be undone:
#: the hook stays, and records only while ``_WATCH`` holds a list)
_WATCH: list[list[str]] = []


def _audit(event: str, args: tuple) -> None:
    if event == "open" and _WATCH and args and isinstance(args[0], (str, bytes, os.PathLike)):
        _WATCH[-1].append(os.fsdecode(args[0]))


sys.addaudithook(_audit)


def tree(root: Path, skip: Path) -> dict[str, int]:
    """Every file under ``root`` but those under ``skip``, with its size."""
    return {
        str(p): p.stat().st_size
        for p in root.rglob("*")
        if p.is_file() and skip not in p.parents and p != skip
    }


@pytest.fixture(scope="module")
def judged_run(tmp_path_factory):
    """An oracle run of two relational tasks (answers a fuzzy-match judge scores)."""
    import gymnasium as gym

    env = gym.make(PG, task_types=["relational"], **SMALL)
    ids = [t.id for t in env.unwrapped.tasks][:2]
    env.close()
    folder = tmp_path_factory.mktemp("judged") / "run"
    run(PG, folder, task_ids=ids, env_kwargs=SMALL, progress=False, track_visibility=False)
    return folder


def hostile_copy(src: Path, dest: Path, **manifest: object) -> Path:
    """A copy of the run folder ``src`` with ``manifest`` entries replaced."""
    import shutil

    shutil.copytree(src, dest)
    m = json.loads((dest / "manifest.json").read_text())
    m.update(manifest)
    (dest / "manifest.json").write_text(json.dumps(m))
    return dest


def test_report_of_a_hostile_manifest_calls_no_judge(judged_run, tmp_path, monkeypatch):
    from urban_gym.cli import main

    secret = tmp_path / "secret.txt"
    secret.write_text("A secret of the user.\n---user---\n{answer} {expected}\n")
    startup = tmp_path / "bashrc"
    monkeypatch.setenv("URBAN_GYM_API_KEY", "sk-the-users-key")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-the-users-key")
    with FaultServer(default=json_answer(completion_body("is_correct: True"))) as server:
        judge = {
            "kind": "lmm",
            "base_url": server.url,
            "model": "spy",
            "prompt_file": str(secret),
            "cache": str(startup),
        }
        folder = hostile_copy(judged_run, tmp_path / "shared" / "run", judge=judge)
        out = tmp_path / "shared" / "out"
        before = tree(tmp_path, out)
        _WATCH.append([])
        try:
            status = main(
                ["report", str(folder), "--out", str(out), "--resamples", "50", "--no-plots"]
            )
        finally:
            opened = _WATCH.pop()
        assert status == 0
        assert server.requests == 0  # the recording server received nothing
    assert str(secret) not in opened and str(startup) not in opened
    assert not startup.exists()
    assert tree(tmp_path, out) == before  # nothing written outside the output folder
    rep = json.loads((out / "report.json").read_text())
    gifs = rep["gifs"]
    assert gifs and all((out / g["path"]).is_file() for g in gifs)
    # re-scored from the record: the replays end as recorded, verdicts included
    assert all(g["exact"] for g in gifs), [g["problems"] for g in gifs]


def _pointed(judged_run: Path, tmp_path: Path, where: dict) -> RunDir:
    folder = tmp_path / "run"
    import shutil

    shutil.copytree(judged_run, folder)
    lines = (folder / "episodes.jsonl").read_text().splitlines()
    rec = json.loads(lines[0])
    rec["trace"] = where
    lines[0] = json.dumps(rec)
    (folder / "episodes.jsonl").write_text("\n".join(lines) + "\n")
    return RunDir(folder)


@pytest.mark.parametrize(
    "where",
    [
        {"file": "{outside}", "offset": 0, "length": 20},  # an absolute path
        {"file": "../outside.jsonl", "offset": 0, "length": 20},  # out of the folder
        {"file": "traces/../../outside.jsonl", "offset": 0, "length": 20},
        {"file": "/dev/zero", "offset": 0, "length": 1 << 40},  # a terabyte of zeros
        "../outside.jsonl",  # a format-1 trace path
        "{outside}",
        {"file": "traces/part-0001.jsonl", "offset": 0, "length": 1 << 40},
        {"file": "traces/part-0001.jsonl", "offset": -5, "length": 10},
    ],
)
def test_trace_pointers_stay_inside_the_folder(judged_run, tmp_path, where):
    outside = tmp_path / "outside.jsonl"
    outside.write_text('{"format": 2, "key": "x", "steps": []}\n')

    def fill(v: object) -> object:
        return str(outside) if v == "{outside}" else v

    where = {k: fill(v) for k, v in where.items()} if isinstance(where, dict) else fill(where)
    d = _pointed(judged_run, tmp_path, where)
    rec = d.read_episodes()[0]
    _WATCH.append([])
    try:
        with pytest.raises(RecordsError) as err:
            d.read_trace(rec)
    finally:
        opened = _WATCH.pop()
    assert str(outside) not in opened and "/dev/zero" not in opened
    msg = str(err.value)
    reasons = ("outside the run folder", "not a file", "cut off", "negative offset")
    assert any(r in msg for r in reasons), msg


def test_a_manifest_naming_another_suite_file_is_not_replayed(judged_run, tmp_path):
    from urban_gym.cli import main

    secret = tmp_path / "secret.jsonl"
    secret.write_text('{"id": "not a task of the run"}\n')
    m = json.loads((judged_run / "manifest.json").read_text())
    kwargs = {**m["env_kwargs"], "suite": str(secret)}
    folder = hostile_copy(
        judged_run, tmp_path / "run", env_kwargs=kwargs, suite={"path": str(secret)}
    )
    out = tmp_path / "out"
    _WATCH.append([])
    try:
        status = main(["report", str(folder), "--out", str(out), "--resamples", "50", "--no-plots"])
    finally:
        opened = _WATCH.pop()
    assert status == 2
    assert str(secret) not in opened


def test_a_manifest_env_id_imports_no_module(judged_run, tmp_path, monkeypatch):
    from urban_gym.cli import main

    probe = tmp_path / "mods" / "ug_probe_planted.py"
    probe.parent.mkdir()
    marker = tmp_path / "ran"
    probe.write_text(f"open({str(marker)!r}, 'w').close()\n")
    monkeypatch.syspath_prepend(str(probe.parent))  # a module the user could import
    folder = hostile_copy(judged_run, tmp_path / "run", env_id="ug_probe_planted:Planted-v0")
    out = tmp_path / "out"
    assert main(["report", str(folder), "--out", str(out), "--resamples", "50", "--no-plots"]) == 2
    assert not marker.exists() and "ug_probe_planted" not in sys.modules


@pytest.mark.parametrize("link", ["report/report.md", "report", "report/gifs"])
def test_links_in_the_default_output_folder_are_refused(judged_run, tmp_path, link, capsys):
    from urban_gym.cli import main

    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "report.md").write_text("the user's own file\n")
    target = victim / "report.md" if link.endswith(".md") else victim
    folder = hostile_copy(judged_run, tmp_path / "run")
    (folder / link).parent.mkdir(parents=True, exist_ok=True)
    (folder / link).symlink_to(target)
    before = tree(victim, tmp_path / "none")
    assert main(["report", str(folder), "--resamples", "50", "--no-plots"]) == 2
    assert "symbolic link" in capsys.readouterr().err
    assert tree(victim, tmp_path / "none") == before
    assert (victim / "report.md").read_text() == "the user's own file\n"


@pytest.mark.parametrize("name", ["manifest.json", "episodes.jsonl"])
@pytest.mark.parametrize("target", ["outside", "/dev/zero"])
def test_run_files_that_are_links_out_are_refused(judged_run, tmp_path, name, target, capsys):
    from urban_gym.cli import main

    outside = tmp_path / "outside.json"
    outside.write_text((judged_run / name).read_text())
    folder = hostile_copy(judged_run, tmp_path / "run")
    (folder / name).unlink()
    (folder / name).symlink_to(outside if target == "outside" else Path(target))
    _WATCH.append([])
    try:
        status = main(["report", str(folder), "--out", str(tmp_path / "out"), "--no-gifs"])
    finally:
        opened = _WATCH.pop()
    assert status == 2
    err = capsys.readouterr().err
    assert "leads outside the run folder" in err or "is not a file" in err, err
    assert str(outside) not in opened and "/dev/zero" not in opened
