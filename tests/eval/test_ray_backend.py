"""The Ray backend (a local ``ray.init()``) writes the same records as the local one."""

from __future__ import annotations

import pytest

from tests.eval.conftest import SG, SYMBOLIC
from tests.eval.test_runner import IDS, sorted_records, traces_by_key
from urban_gym.eval.runner import run

pytest.importorskip("ray")


@pytest.mark.slow
def test_ray_and_local_records_are_identical(tmp_path):
    kw = dict(agent="random", env_kwargs=SYMBOLIC, task_ids=IDS, seeds=3, progress=False)
    run(SG, tmp_path / "local", **kw)
    res = run(SG, tmp_path / "ray", backend="ray", workers=2, **kw)
    assert res.ran == 12
    assert sorted_records(tmp_path / "ray") == sorted_records(tmp_path / "local")
    assert traces_by_key(tmp_path / "ray") == traces_by_key(tmp_path / "local")
