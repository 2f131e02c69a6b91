"""``urban-gym demo`` (here with the StreetGraph family only, to keep the test short)."""

from __future__ import annotations

import json

import imageio.v3 as iio

from urban_gym.cli import main


def test_demo_prints_metrics_and_writes_a_gif(tmp_path, capsys):
    status = main(["demo", "--families", "streetgraph", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "scripted model server at http://127.0.0.1:" in out and "server stopped" in out
    assert "termination=arrived success=True steps=16" in out
    assert '"decision_accuracy": 1.0' in out
    rec = json.loads((tmp_path / "episodes.jsonl").read_text().splitlines()[-1])
    assert rec["termination"] == "arrived" and rec["l"] == 16
    frames = iio.imread(tmp_path / "streetgraph.gif", index=None)
    # one frame after the reset and one per step; views on the left, the 256 px map right
    assert frames.shape[0] == 17 and frames.shape[1] == 256 + 22 and frames.shape[2] > 256
