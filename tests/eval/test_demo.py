"""``urban-gym demo`` (here with the StreetGraph family only, to keep the test short)."""

from __future__ import annotations

import imageio.v3 as iio

from urban_gym.cli import main
from urban_gym.eval.records import RunDir
from urban_gym.families.streetgraph.env import FRAME_TILE
from urban_gym.render import frame as F


def test_demo_prints_metrics_and_writes_a_gif(tmp_path, capsys):
    status = main(["demo", "--families", "streetgraph", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "streetgraph: scripted model server at http://127.0.0.1:" in out
    assert "termination=arrived success=True steps=22" in out
    assert '"decision_accuracy": 1.0' in out
    # the record and its trace are the harness's: a run folder's episodes and traces
    run = RunDir(tmp_path)
    (rec,) = run.read_episodes()
    assert (
        rec["termination"] == "arrived" and rec["steps"] == 22 and rec["tokens"]["requests"] == 22
    )
    steps = run.read_trace(rec)
    assert len(steps) == 23 and all(s["reply"]["ok"] for s in steps[1:])
    frames = iio.imread(tmp_path / "streetgraph.gif", index=None)
    # one frame after the reset and one per step: the 256 px map, then the env's render()
    # (160 px per option, 230 px tall); under them the street views the model was sent at
    # their own 512x512 (the language-model default), in rows of three; a status
    # line under all; padded to the largest frame
    strip = F.status_line("step", 10).shape[0]
    assert frames.shape[0] == 23
    rows = (frames.shape[1] - 256 - 4 - strip + 4) // (512 + 4)
    assert rows in (1, 2) and frames.shape[1] == 256 + 4 + rows * 516 - 4 + strip
    assert frames.shape[2] >= 3 * 512 + 2 * 4
    first = frames[0]
    assert first[:256, :256].std() > 20  # the map
    assert first[:FRAME_TILE, 256 + 2 : 256 + FRAME_TILE - 2].std() > 20  # option 0's view
    assert first[260 : 260 + 512, :512].std() > 20  # option 0 as the model sees it
    # the status line's text under the model's images (frames are padded at the bottom)
    assert any((f[-strip:].min(axis=2) < 100).any() for f in frames)
