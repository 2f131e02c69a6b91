"""Property tests over every registered id. Any JSON-like value as an
action (huge integers, deep nesting, lone surrogates, NaN and infinities, strings, lists,
dicts with synonym keys, numpy scalars) never raises out of ``step`` and always yields an
observation inside ``observation_space``; the same for any reply string through
``make_lmm_env``.

The default run draws a few dozen examples per id (derandomized, so CI sees the same
ones); ``-m slow`` (also marked ``soak``: many minutes, so CI leaves it out) runs 10,000
random examples per id."""

from __future__ import annotations

import json
import math
import time
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.reliability.small import IDS, make_small, small_kwargs
from tests.reliability.test_step_nesting import nested
from urban_gym.envs.actions import ACTION_KEY_SYNONYMS
from urban_gym.wrappers import make_lmm_env
from urban_gym.wrappers.parsing import PARAM_CONTAINER_KEYS, REPLY_ACTION_KEYS

DEFAULT_EXAMPLES = 40
SLOW_EXAMPLES = 10_000
#: (base, exponent, offset) of huge integers: past float range, past Python's 4300-digit
#: str() limit, around int64/uint64 (built on demand: hypothesis cannot repr 10**5000).
HUGE_INTS = ((10, 400, 0), (10, 5000, 0), (10, 4299, 7), (2, 63, 0), (2, 63, 1), (2, 64, 0))
NUMPY = (np.int64(1), np.int32(-3), np.float32(0.5), np.float64("nan"), np.bool_(True), np.array(2))


def names_and_keys(env) -> tuple[list[str], list[str]]:
    """The env's action names (with synonyms and odd casing) and every key it reads."""
    aset = env.unwrapped.action_set
    names: list[str] = []
    keys: list[str] = [*ACTION_KEY_SYNONYMS, *REPLY_ACTION_KEYS, *PARAM_CONTAINER_KEYS]
    for spec in aset.specs:
        names += [spec.name, spec.name.upper(), f" {spec.name.lower()} ", *spec.synonyms]
        for p in spec.params:
            keys += [p.name, p.name.upper(), *p.key_synonyms]
            names += list(p.choices) + list(p.value_synonyms)
    return names, keys


def huge_int(spec: tuple[int, int, int], negative: bool) -> int:
    base, exponent, offset = spec
    value = base**exponent + offset
    return -value if negative else value


def scalars(names: list[str]) -> st.SearchStrategy:
    return st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.builds(huge_int, st.sampled_from(HUGE_INTS), st.booleans()),
        st.floats(),  # NaN and the infinities included
        st.text(st.characters(exclude_categories=()), max_size=24),  # lone surrogates too
        st.sampled_from(names),
        st.sampled_from(NUMPY),
    )


def json_like(names: list[str], keys: list[str], max_depth: int = 5000) -> st.SearchStrategy:
    """Trees of lists and dicts (keys: the env's names and synonyms, or any text) over
    :func:`scalars`, values nested up to ``max_depth`` deep, and action-shaped dicts."""
    leaf = scalars(names)
    key = st.one_of(
        st.sampled_from(keys), st.text(st.characters(exclude_categories=()), max_size=8)
    )
    tree = st.recursive(
        leaf,
        lambda kids: st.one_of(st.lists(kids, max_size=4), st.dictionaries(key, kids, max_size=5)),
        max_leaves=12,
    )
    deep = st.builds(
        nested, st.integers(2, max_depth), st.sampled_from(["dict", "list", "mixed"]), leaf
    )
    action_like = st.builds(
        lambda k, name, params: {k: name, **params},
        st.sampled_from(ACTION_KEY_SYNONYMS),
        st.sampled_from(names),
        st.dictionaries(st.sampled_from(keys), st.one_of(leaf, tree, deep), max_size=4),
    )
    return st.one_of(tree, deep, action_like, action_like)


def actions_for(env) -> st.SearchStrategy:
    names, keys = names_and_keys(env)
    n = int(env.action_space.n)
    return st.one_of(json_like(names, keys), st.integers(-3, n + 3))


class Stepper:
    """Steps one env through many examples, resetting when an episode ends."""

    def __init__(self, env) -> None:
        self.env = env
        self.resets = 0
        self.steps = 0
        self.invalid = 0
        self.env.reset(seed=0)

    def step(self, action: Any) -> dict:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.steps += 1
        assert self.env.observation_space.contains(obs), "observation outside its space"
        assert isinstance(reward, float) and math.isfinite(reward)
        assert isinstance(info["action_valid"], bool)
        if not info["action_valid"]:
            self.invalid += 1
            msg = info["invalid_action"]
            assert isinstance(msg, str) and 0 < len(msg) < 4096
        if terminated or truncated:
            self.resets += 1
            self.env.reset(seed=self.resets)
        return info


def run_property(strategy: st.SearchStrategy, stepper: Stepper, examples: int) -> None:
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=examples <= DEFAULT_EXAMPLES,
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def prop(value: Any) -> None:
        stepper.step(value)

    prop()


@pytest.fixture(scope="module")
def envs():
    made: dict[str, Any] = {}
    yield lambda env_id: made.setdefault(env_id, make_small(env_id, images=False))
    for e in made.values():
        e.close()


@pytest.mark.parametrize("env_id", IDS)
def test_any_json_like_action_is_a_step(env_id, envs):
    env = envs(env_id)
    stepper = Stepper(env)
    run_property(actions_for(env), stepper, DEFAULT_EXAMPLES)
    assert stepper.steps >= DEFAULT_EXAMPLES and stepper.invalid > 0


# ------------------------------------------------------------------ replies


def dumps(value: Any, fence: int, junk: str) -> str:
    """``value`` as JSON text (its short description where JSON cannot write it: numpy
    scalars, integers past 4300 digits), fenced or wrapped in prose, with ``junk`` after."""
    from urban_gym.envs.actions import describe_value

    try:
        text = json.dumps(value, ensure_ascii=bool(fence % 2))
    except (ValueError, RecursionError, TypeError):
        text = describe_value(value, 2000)
    if fence == 1:
        text = f"```json\n{text}\n```"
    elif fence == 2:
        text = f"I will go now. {text} That is my answer."
    return text + junk


def replies_for(env) -> st.SearchStrategy:
    names, keys = names_and_keys(env)
    junk = st.text(st.characters(exclude_categories=()), max_size=12)
    return st.one_of(
        st.text(st.characters(exclude_categories=()), max_size=200),
        st.builds(dumps, json_like(names, keys, max_depth=600), st.integers(0, 3), junk),
    )


@pytest.fixture(scope="module")
def lmm_envs():
    made: dict[str, Any] = {}
    yield lambda env_id: made.setdefault(
        env_id, make_lmm_env(env_id, env_kwargs=small_kwargs(env_id, images=False))
    )
    for e in made.values():
        e.close()


@pytest.mark.parametrize("env_id", IDS)
def test_any_reply_is_a_step_through_make_lmm_env(env_id, lmm_envs):
    env = lmm_envs(env_id)
    stepper = Stepper(env)
    run_property(replies_for(env), stepper, DEFAULT_EXAMPLES)
    assert stepper.steps >= DEFAULT_EXAMPLES and stepper.invalid > 0
    env.messages()  # the prompt for the last observation can be built


# ------------------------------------------------------------------ slow: 10,000 per id


@pytest.mark.slow
@pytest.mark.soak
@pytest.mark.parametrize("env_id", IDS)
def test_any_json_like_action_is_a_step_10000_examples(env_id, envs):
    env = envs(env_id)
    stepper = Stepper(env)
    t0 = time.perf_counter()
    run_property(actions_for(env), stepper, SLOW_EXAMPLES)
    print(f"{env_id}: {stepper.steps} action examples in {time.perf_counter() - t0:.0f} s")
    assert stepper.steps >= SLOW_EXAMPLES


@pytest.mark.slow
@pytest.mark.soak
@pytest.mark.parametrize("env_id", IDS)
def test_any_reply_is_a_step_through_make_lmm_env_10000_examples(env_id, lmm_envs):
    env = lmm_envs(env_id)
    stepper = Stepper(env)
    t0 = time.perf_counter()
    run_property(replies_for(env), stepper, SLOW_EXAMPLES)
    print(f"{env_id}: {stepper.steps} reply examples in {time.perf_counter() - t0:.0f} s")
    assert stepper.steps >= SLOW_EXAMPLES
