"""Each env's own info of a batched step (:mod:`urban_gym.families.streetgraph.batch_info`),
on a hand-made batch ``info`` of three envs."""

from __future__ import annotations

import copy
import json
import pickle

import numpy as np

from urban_gym.families.streetgraph.batch_info import LazyInfo, info_row, row_infos

ALL = np.ones(3, bool)


def _batch() -> dict:
    """Three envs: every one has ``pose``, ``steps`` and ``task_id``; env 1 also ended
    (``termination``)."""
    return {
        "pose": {
            "x": np.array([1.5, 2.5, 3.5]),
            "_x": ALL.copy(),
            "heading": np.array([0.0, 90.0, 180.0]),
            "_heading": ALL.copy(),
        },
        "_pose": ALL.copy(),
        "steps": np.array([4, 5, 6]),
        "_steps": ALL.copy(),
        "task_id": np.array(["a", "b", "c"], dtype=object),
        "_task_id": ALL.copy(),
        "termination": np.array([None, "arrived", None], dtype=object),
        "_termination": np.array([False, True, False]),
    }


def test_a_row_is_the_envs_values_as_python_values():
    row = info_row(_batch(), 1)
    assert row == {
        "pose": {"x": 2.5, "heading": 90.0},
        "steps": 5,
        "task_id": "b",
        "termination": "arrived",
    }
    assert type(row["steps"]) is int and type(row["pose"]["x"]) is float
    assert list(row) == ["pose", "steps", "task_id", "termination"]  # the batch's order
    assert "termination" not in info_row(_batch(), 0)


def test_row_infos_are_lazy_where_an_env_has_the_shared_keys_only():
    batch = _batch()
    infos = row_infos(batch, {2: {"final": True}}, 3)
    assert type(infos[0]) is LazyInfo  # the shared keys only
    assert type(infos[1]) is dict and infos[1]["termination"] == "arrived"  # built now
    assert infos[2] == {"final": True}  # given whole
    lazy = infos[0]
    # what stable-baselines3 asks of a running env: answered without filling
    assert lazy.get("episode") is None and lazy.get("is_success", 7) == 7
    assert "terminal_observation" not in lazy and "steps" in lazy and len(lazy) == 3
    assert lazy._batch is not None
    # any read of its items fills it with the row
    assert lazy["steps"] == 4 and lazy._batch is None
    assert lazy == info_row(batch, 0) and list(lazy) == ["pose", "steps", "task_id"]


def test_a_lazy_info_behaves_as_its_row_whichever_way_it_is_read():
    want = info_row(_batch(), 2)

    def fresh() -> LazyInfo:
        return row_infos(_batch(), {}, 3)[2]  # type: ignore[return-value]

    assert json.loads(json.dumps(fresh())) == want  # the C encoder too
    assert dict(fresh()) == want and {**fresh()} == want and fresh().copy() == want
    assert want == fresh() and not (want != fresh())
    assert sorted(fresh().items()) == sorted(want.items())
    assert pickle.loads(pickle.dumps(fresh())) == want
    assert copy.deepcopy(fresh()) == want and type(copy.copy(fresh())) is dict
    assert repr(fresh()) == repr(want)
    d = fresh()
    d["extra"] = 1  # a write keeps the row's items
    assert d == {**want, "extra": 1}
    assert fresh().get("steps") == 6 and fresh().pop("task_id") == "c"
