"""``--agent sb3:PATH``: a MaskablePPO trained for a few hundred steps in the test, saved
with the record of its RL face, evaluated by the harness on the same face."""

from __future__ import annotations

import zipfile

import pytest

from tests.eval.conftest import SG, SYMBOLIC
from urban_gym.errors import UrbanGymError
from urban_gym.eval.records import RunDir
from urban_gym.eval.runner import run

pytest.importorskip("sb3_contrib")

IDS = [f"streetgraph-procedural-00{i}" for i in range(3)]


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    from urban_gym.baselines.rl import train_maskable_ppo

    path = tmp_path_factory.mktemp("ppo") / "policy.zip"
    train_maskable_ppo(
        SG,
        total_timesteps=256,
        n_steps=128,
        batch_size=64,
        n_epochs=1,
        image_size=None,
        text="encode",
        env_kwargs=SYMBOLIC,
        save_path=path,
    )
    return path


def test_the_checkpoint_records_its_face(checkpoint):
    from urban_gym.baselines.sb3_agent import FACE_MEMBER, read_face

    with zipfile.ZipFile(checkpoint) as z:
        assert FACE_MEMBER in z.namelist()
    face = read_face(checkpoint)
    assert face["algo"] == "MaskablePPO" and face["env_id"] == SG
    assert face["env_kwargs"] == SYMBOLIC
    assert face["rl_face"] == {
        "image_size": None,
        "text": "encode",
        "text_dim": 64,
        "angles": "raw",
    }


def test_eval_with_a_checkpoint(checkpoint, tmp_path):
    res = run(
        SG, tmp_path, agent=f"sb3:{checkpoint}", env_kwargs=SYMBOLIC, task_ids=IDS, progress=False
    )
    assert res.ran == 3 and res.errors == 0
    d = RunDir(tmp_path)
    cfg = d.read_manifest()["agent"]["config"]
    assert cfg["checkpoint"] == str(checkpoint) and cfg["rl_face"]["text"] == "encode"
    rec = d.read_episodes()[0]
    steps = d.read_trace(rec)
    assert rec["steps"] >= 1 and all(isinstance(s["action"], int) for s in steps[1:])
    # deterministic policy: a second run records the same episodes
    again = run(
        SG,
        tmp_path / "again",
        agent=f"sb3:{checkpoint}",
        env_kwargs=SYMBOLIC,
        task_ids=IDS,
        progress=False,
    )
    assert [r["steps"] for r in again.records] == [r["steps"] for r in res.records]


def test_a_face_that_does_not_fit_is_named(checkpoint, tmp_path):
    from urban_gym.baselines.sb3_agent import write_face

    other = tmp_path / "other.zip"
    other.write_bytes(checkpoint.read_bytes())
    write_face(other, "MaskablePPO", SG, SYMBOLIC, None, text="drop")  # no instruction entry
    with pytest.raises(UrbanGymError, match="does not fit.*instruction"):
        run(
            SG,
            tmp_path / "r",
            agent=f"sb3:{other}",
            env_kwargs=SYMBOLIC,
            task_ids=IDS[:1],
            progress=False,
        )
    bare = tmp_path / "bare.zip"
    with zipfile.ZipFile(checkpoint) as src, zipfile.ZipFile(bare, "w") as dst:
        for n in src.namelist():
            if not n.endswith(".json") or n == "data":
                dst.writestr(n, src.read(n))
    with pytest.raises(UrbanGymError, match="no urban_gym_face.json"):
        run(SG, tmp_path / "b", agent=f"sb3:{bare}", env_kwargs=SYMBOLIC, progress=False)
