"""Every env's ``Text`` spaces accept any script a city's names come in.

A task whose instruction holds Cyrillic, CJK and Arabic names loads into every family,
its observation shows the text unchanged, and Gymnasium's ``Text`` space (``contains``,
``sample``) and ``check_env`` agree with it. Task filters (``task_types=``,
``difficulties=``) run before any per-task check, so a task filtered out never makes an env
fail.
"""

from __future__ import annotations

import dataclasses
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.spaces import Text
from gymnasium.utils.env_checker import check_env

import urban_gym  # noqa: F401  (registers the ids)
from urban_gym.envs.text import BASE_CHARSET, clean_text, task_charset, task_texts, text_charset
from urban_gym.tasks.spec import TaskError, TaskSpec

TINY = "procedural:seed=3,blocks=2x2"
#: A Russian, a Chinese and an Arabic café, and a Japanese street.
NAMES = ("Кофейня Пушкин", "咖啡馆 月", "مقهى القمر", "銀座通り")
TEXT = f"Walk to {NAMES[0]}, then {NAMES[1]}, then {NAMES[2]} on {NAMES[3]}."


def _non_latin(text: str) -> set[str]:
    return {c for c in text if c not in BASE_CHARSET}


def test_task_charset_holds_every_character_of_the_task_texts():
    task = TaskSpec(
        id="t",
        family="citywalk",
        type="TWS",
        difficulty="l4",
        city=TINY,
        instruction=TEXT,
        start={"x": 0.0, "y": 0.0, "heading": 0.0},
        goal={
            "stops": [
                {"x": 1.0, "y": 2.0, "name": "Пекарня Хлеб"},
                {"x": 3.0, "y": 4.0, "name": "ラーメン一番"},
            ]
        },
        constraints={"closures": [{"id": "c0", "points": [[0, 0], [1, 1]], "label": "شارع النيل"}]},
    )
    texts = list(task_texts(task))
    assert texts == [TEXT, "Пекарня Хлеб", "ラーメン一番", "شارع النيل"]
    cs = task_charset([task])
    for text in texts:
        assert set(text) <= cs
    # the base stays; only the task's characters are added: 'К', 'ф', '咖', 'م', ...
    assert BASE_CHARSET <= cs
    assert cs - BASE_CHARSET == set().union(*(_non_latin(t) for t in texts))
    space = Text(4096, min_length=0, charset=cs)
    assert space.contains(TEXT) and space.contains("Пекарня Хлеб")
    assert not space.contains("Ж")  # a Cyrillic letter no task uses
    space.seed(0)
    assert all(space.contains(space.sample()) for _ in range(20))


def test_surrogates_never_enter_a_charset_and_are_replaced():
    cs = text_charset(["ok \ud800 then"])
    assert "\ud800" not in cs and "o" in cs
    assert clean_text("ok \ud800 then", cs) == "ok ? then"
    assert clean_text("Кофейня", BASE_CHARSET) == "???????"
    assert clean_text("abcdef", BASE_CHARSET, max_length=3) == "abc"


def _citywalk_tasks(city) -> list[TaskSpec]:
    from urban_gym.families.citywalk.tasks import generate_tasks

    tasks = generate_tasks(city, TINY, per_type=1, variants_per_type=0, seed=0, types=["OU", "SGN"])
    out = []
    for t in tasks:
        if t.options:  # the question's options and answer carry the names too
            opts = tuple(f"{o} {NAMES[i % 3]}" for i, o in enumerate(t.options))
            ans = opts[t.options.index(t.answer)]
            t = dataclasses.replace(t, options=opts, answer=ans)
        out.append(dataclasses.replace(t, instruction=TEXT))
    return out


def _posegraph_tasks(city) -> list[TaskSpec]:
    from urban_gym.families.posegraph360 import tasks as T

    tasks = T.PoseGraphTaskGenerator(TINY, seed=0).suite(per_type=1, types=["localization", "vln"])
    return [dataclasses.replace(t, instruction=TEXT) for t in tasks]


def _streetgraph_tasks(city) -> list[TaskSpec]:
    from urban_gym.families.streetgraph.tasks import load_default_suite

    return [dataclasses.replace(t, instruction=TEXT) for t in load_default_suite("procedural")[:2]]


FAMILIES = {
    "UrbanGym/CityWalk-NoView-v0": (_citywalk_tasks, {}),
    "UrbanGym/PoseGraph360-v0": (
        _posegraph_tasks,
        {"city": TINY, "view_size": 32, "pano_width": 256},
    ),
    "UrbanGym/StreetGraph-v0": (_streetgraph_tasks, {"observation": "symbolic"}),
}


@pytest.mark.parametrize("env_id", sorted(FAMILIES))
def test_every_family_loads_and_shows_non_latin_text(env_id, tiny_city):
    make_tasks, kwargs = FAMILIES[env_id]
    tasks = make_tasks(tiny_city)
    env = gym.make(env_id, tasks=tasks, **kwargs)
    space = env.observation_space["instruction"]
    assert _non_latin(TEXT) <= space.character_set
    obs, _ = env.reset(seed=0)
    assert obs["instruction"] == TEXT  # unchanged: no '?' in place of a name
    assert env.observation_space.contains(obs)
    rng = np.random.default_rng(0)
    for _ in range(3):
        valid = np.flatnonzero(obs["action_mask"])
        obs, _, terminated, truncated, _ = env.step(int(rng.choice(valid)))
        assert env.observation_space.contains(obs)
        if terminated or truncated:
            break
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env.unwrapped, skip_render_check=True)
    env.close()


def test_citywalk_question_options_keep_their_script(tiny_city):
    env = gym.make(
        "UrbanGym/CityWalk-NoView-v0", tasks=_citywalk_tasks(tiny_city), task_types=["OU"]
    )
    u = env.unwrapped
    assert set("".join(u.task.options)) <= env.observation_space["status"].character_set
    assert all(any(n in o for n in NAMES) for o in u.task.options)


def test_posegraph_task_types_filter_before_the_task_checks(tiny_city):
    from urban_gym.families.posegraph360 import tasks as T

    good = T.PoseGraphTaskGenerator(TINY, seed=0).generate("localization", 1)[0]
    # a landmark task without a goal: check_task rejects it
    other = "hard" if good.difficulty != "hard" else "easy"
    bad = dataclasses.replace(
        good, id="bad", type="landmark_name", difficulty=other, goal={}, answer=None
    )
    kwargs = {"city": TINY, "view_size": 32, "pano_width": 256}
    with pytest.raises(TaskError, match="task 'bad': goal.x must be a number"):
        gym.make("UrbanGym/PoseGraph360-v0", tasks=[good, bad], **kwargs)
    env = gym.make(
        "UrbanGym/PoseGraph360-v0", tasks=[good, bad], task_types=["localization"], **kwargs
    )
    assert [t.id for t in env.unwrapped.tasks] == [good.id]
    env = gym.make(
        "UrbanGym/PoseGraph360-v0",
        tasks=[good, bad],
        difficulties=[good.difficulty],
        task_types=["localization", "landmark_name"],
        **kwargs,
    )
    assert [t.id for t in env.unwrapped.tasks] == [good.id]


def test_citywalk_task_types_filter_before_the_task_checks(tiny_city):
    good = _citywalk_tasks(tiny_city)[0]
    bad = dataclasses.replace(good, id="bad", type="SGN", goal={"x": "far"})
    with pytest.raises(TaskError, match="task 'bad': goal.x='far'"):
        gym.make("UrbanGym/CityWalk-NoView-v0", tasks=[good, bad])
    env = gym.make("UrbanGym/CityWalk-NoView-v0", tasks=[good, bad], task_types=[good.type])
    assert [t.id for t in env.unwrapped.tasks] == [good.id]


def test_memory_keeps_the_city_names_the_agent_writes(tiny_city):
    from urban_gym.wrappers.memory import MEMORY_CHARSET, ReflectionMemory

    env = ReflectionMemory(
        gym.make("UrbanGym/CityWalk-NoView-v0", tasks=_citywalk_tasks(tiny_city))
    )
    assert MEMORY_CHARSET < env.observation_space["memory"].character_set
    env.reset(seed=0)
    note = f"Looking for {NAMES[0]} and {NAMES[1]}; passed {NAMES[2]}. Ж"
    obs, *_ = env.step({"action": "look", "yaw": 30, "memory": note})
    # the city's names survive; 'Ж', in no task, is replaced
    assert obs["memory"] == note[:-1] + "?"
    assert env.observation_space.contains(obs)
