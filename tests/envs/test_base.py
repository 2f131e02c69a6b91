"""The template every family subclasses (:class:`urban_gym.envs.base.UrbanEnv`): the same
task arguments, reset options, action decoding, invalid-reply path and pickling on every
registered id."""

from __future__ import annotations

import pickle

import gymnasium as gym
import numpy as np
import pytest

from tests.reliability.small import IDS, make_small, small_kwargs
from urban_gym.envs.actions import NormalisedAction, UnreadableReply
from urban_gym.envs.base import INVALID_ACTION_REWARD
from urban_gym.errors import UrbanGymError
from urban_gym.families.citywalk.env import CityWalkEnv
from urban_gym.families.posegraph360.env import PoseGraph360Env
from urban_gym.families.streetgraph.env import StreetGraphEnv
from urban_gym.tasks.spec import TaskError

TINY = "procedural:seed=3,blocks=2x2"


@pytest.mark.parametrize("env_id", IDS)
def test_one_spelling_of_reset_options(env_id):
    env = make_small(env_id, images=False)
    u = env.unwrapped
    last = u.tasks[-1]
    assert env.reset(seed=0, options={"task_id": last.id})[1]["task_id"] == last.id
    i = len(u.tasks) - 1
    _, info = env.reset(seed=0, options={"task_index": np.int64(i)})
    assert info["task_id"] == last.id
    _, info = env.reset(seed=0, options={"task": last.to_dict()})
    assert info["task_id"] == last.id and u.task == last
    with pytest.raises(TaskError, match=r"task_index=99999 must be an integer in \[0, "):
        env.reset(options={"task_index": 99999})
    with pytest.raises(TaskError, match="task_id='nope' is not among"):
        env.reset(options={"task_id": "nope"})
    with pytest.raises(TaskError, match=r"reset options \['index'\] unknown"):
        env.reset(options={"index": 0})
    with pytest.raises(TaskError, match="give one of"):
        env.reset(options={"task_id": last.id, "task_index": 0})
    env.close()


@pytest.mark.parametrize("env_id", IDS)
def test_the_same_task_arguments_on_every_family(env_id):
    u = make_small(env_id, images=False).unwrapped
    kw = small_kwargs(env_id, images=False)
    cls = type(u)
    first = u.tasks[0]
    # the filters keep exactly the tasks of those types and difficulties
    env = gym.make(env_id, task_types=[first.type], difficulties=[first.difficulty], **kw)
    kept = env.unwrapped.tasks
    assert first in kept and all(
        (t.type, t.difficulty) == (first.type, first.difficulty) for t in kept
    )
    assert len(kept) == sum(
        (t.type, t.difficulty) == (first.type, first.difficulty) for t in u.tasks
    )
    with pytest.raises(TaskError, match=r"task_types \['teleport'\] are not"):
        gym.make(env_id, task_types=["teleport"], **kw)
    with pytest.raises(TaskError, match=r"difficulties \['trivial'\] unknown"):
        gym.make(env_id, difficulties=["trivial"], **kw)
    # tasks given as dicts work like TaskSpecs
    env = gym.make(env_id, tasks=[first.to_dict()], **kw)
    assert env.unwrapped.tasks == [first] and isinstance(env.unwrapped, cls)


@pytest.mark.parametrize(
    "make",
    [
        lambda: PoseGraph360Env(city="helsinki", suite=None, tasks=_tiny_tasks("posegraph360")),
        lambda: StreetGraphEnv(suite="procedural", city="helsinki", observation="symbolic"),
        lambda: CityWalkEnv(suite="helsinki", city=TINY, view_size=None),
    ],
    ids=["posegraph360", "streetgraph", "citywalk"],
)
def test_tasks_of_another_city_than_an_explicit_city_are_an_error(make, tiny_city):
    """A task's world is its ``task.city``: an env told another city does not quietly run
    them (PoseGraph360 once ran another city's tasks on Helsinki)."""
    with pytest.raises(TaskError, match="but the tasks name the city"):
        make()


def _tiny_tasks(family: str):
    from urban_gym.families.posegraph360 import tasks as T

    assert family == "posegraph360"
    return T.PoseGraphTaskGenerator(TINY, seed=0).suite(per_type=1, types=["localization"])


def test_posegraph360_takes_its_city_from_the_tasks(tiny_city):
    tasks = _tiny_tasks("posegraph360")
    env = PoseGraph360Env(tasks=tasks, view_size=16, pano_width=128)
    assert env.city_spec == TINY and env.spacing == 3.0
    assert env.graph.meta["city_spec"] == TINY
    with pytest.raises(TaskError, match="spacing=5.0 m, but the tasks"):
        PoseGraph360Env(tasks=tasks, spacing=5.0, view_size=16, pano_width=128)


@pytest.mark.parametrize("env_id", IDS)
def test_unreadable_reply_is_an_invalid_step_of_the_env(env_id):
    env = make_small(env_id, images=False)
    env.reset(seed=0)
    _, reward, _, _, info = env.step(UnreadableReply("your reply could not be read: empty"))
    assert not info["action_valid"] and info["invalid_actions"] == 1
    assert info["invalid_action"] == "your reply could not be read: empty"
    assert reward == INVALID_ACTION_REWARD and info["steps"] == 1


@pytest.mark.parametrize("env_id", IDS)
def test_an_action_is_normalised_once(env_id, monkeypatch):
    """The env takes a NormalisedAction of its own action set as it is; a plain dict and
    an action of another set are normalised (once)."""
    env = make_small(env_id, images=False)
    u = env.unwrapped
    obs, _ = env.reset(seed=0)
    i = int(np.flatnonzero(obs["action_mask"])[0])
    canonical = u.action_set.normalise(u.action_table[i])
    assert isinstance(canonical, NormalisedAction) and canonical.action_set is u.action_set
    calls = []
    real = u.action_set.normalise
    monkeypatch.setattr(u.action_set, "normalise", lambda a: calls.append(a) or real(a))
    env.step(canonical)
    assert calls == []
    env.step(dict(canonical))
    assert len(calls) == 1
    # pickled, the action forgets its set: the unpickled env normalises it again
    again = pickle.loads(pickle.dumps(canonical))
    assert again == canonical and type(again) is dict


@pytest.mark.parametrize("env_id", IDS)
def test_pickling_drops_the_listed_caches(env_id):
    env = make_small(env_id, images=False)
    u = env.unwrapped
    env.reset(seed=0)
    assert u.cache_attributes, "a family lists what not to pickle"
    state = u.__getstate__()
    assert not set(u.cache_attributes) & set(state)
    c = pickle.loads(pickle.dumps(u))
    for k in u.cache_attributes:
        assert hasattr(c, k), k  # rebuilt on unpickling
    a = int(np.flatnonzero(u._mask())[0])
    ra, rc = u.step(a), c.step(a)
    assert ra[1:4] == rc[1:4] and ra[4]["pose"] == rc[4]["pose"]


def test_step_before_reset_names_the_class():
    env = StreetGraphEnv(suite="procedural", observation="symbolic")
    with pytest.raises(gym.error.ResetNeeded, match=r"StreetGraphEnv.step\(\) called before"):
        env.step(0)


def test_render_mode_is_checked_by_the_base():
    with pytest.raises(UrbanGymError, match="render_mode='human'"):
        StreetGraphEnv(suite="procedural", observation="symbolic", render_mode="human")
