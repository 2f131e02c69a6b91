"""Numbers an agent may send. Huge integers (past float range,
past Python's 4300-digit ``str`` limit), NaN and infinities are invalid-action steps whose
message names the value, shortened; numpy scalars are accepted as parameter values and as
indices into the action table."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.reliability.small import IDS, family, make_small, small_kwargs
from urban_gym.envs.actions import ActionSet, ActionSpec, Param
from urban_gym.wrappers import make_lmm_env

HUGE = 10**400  # str() works, float() overflows
HUGER = 10**5000  # str() raises (Python's int max str digits, 4300 by default)


@pytest.fixture(scope="module", params=IDS)
def env(request):
    e = make_small(request.param, images=False)
    yield e
    e.close()


def invalid_step(env, action) -> str:
    """Step ``action``; assert it was an invalid-action step; return its message."""
    obs, reward, terminated, truncated, info = env.step(action)
    assert info["action_valid"] is False
    assert env.observation_space.contains(obs)
    assert reward < 0
    if terminated or truncated:
        env.reset(seed=1)
    msg = info["invalid_action"]
    assert isinstance(msg, str) and len(msg) < 600
    return msg


def numeric_params(env) -> list[tuple[dict, Param]]:
    """Every (example action, numeric parameter) of the env's action set."""
    aset = env.unwrapped.action_set
    out = []
    for spec, example in zip(aset.specs, aset.examples()):
        out += [(example, p) for p in spec.params if p.kind in ("int", "float")]
    return out


def test_huge_integer_index_is_an_invalid_step_naming_it(env):
    env.reset(seed=0)
    assert "5001 digits" in invalid_step(env, HUGER)
    assert "401 digits" in invalid_step(env, HUGE)
    assert "-1000000" in invalid_step(env, -(10**30))


def test_bad_numbers_in_every_numeric_parameter_are_invalid_steps(env):
    from urban_gym.envs.actions import describe_value

    if not numeric_params(env):
        pytest.skip("no numeric parameters in this family's actions")
    env.reset(seed=0)
    for value in (HUGE, -HUGE, HUGER, math.nan, math.inf, "1e999", "nan"):
        for example, param in numeric_params(env):
            msg = invalid_step(env, {**example, param.name: value})
            assert f"{param.name}=" in msg
            assert describe_value(value) in msg


@pytest.mark.parametrize("value", [HUGE, HUGER], ids=["1e400", "1e5000"])
def test_huge_integers_in_any_parameter_never_raise(env, value):
    env.reset(seed=0)
    aset = env.unwrapped.action_set
    for spec, example in zip(aset.specs, aset.examples()):
        for p in spec.params:
            if p.kind == "str" and value == HUGE:
                continue  # a 401-digit number is a (strange but) readable text answer
            msg = invalid_step(env, {**example, p.name: value})
            assert "digits" in msg


def test_citywalk_huge_duration_names_the_value():
    env = make_small("UrbanGym/CityWalk-NoView-v0")
    env.reset(seed=0)
    # above 2 s a duration is clamped (UrbanGround), but this one is no number of seconds
    msg = invalid_step(env, {"action": "move", "direction": "forward", "duration": HUGE})
    assert msg == "move: seconds=100000000000...000 (401 digits) is too large"


#: family -> (reply with a 401-digit number, the start of the message it must get).
REPLIES = {
    "streetgraph": ('{"action":"go","option":1' + "0" * 400 + "}", "go: option="),
    "citywalk": (
        '{"action":"move","direction":"forward","duration":1' + "0" * 400 + "}",
        "move: seconds=",
    ),
    "posegraph360": ('{"action":"W","size":1' + "0" * 400 + "}", "W: size="),
}


@pytest.mark.parametrize("env_id", IDS)
def test_huge_integer_in_a_reply_through_make_lmm_env(env_id):
    env = make_lmm_env(env_id, env_kwargs=small_kwargs(env_id, images=False))
    env.reset(seed=0)
    reply, start = REPLIES[family(env_id)]
    for text in (reply, REPLIES["streetgraph"][0]):
        obs, reward, terminated, truncated, info = env.step(text)
        assert info["action_valid"] is False and info["reply"]["stage"] == "json"
        assert env.observation_space.contains(obs)
        if text == reply:
            assert info["invalid_action"].startswith(start + "100000000000...000 (401 digits)")
    env.close()


# ------------------------------------------------------------------ numpy scalars


def test_numpy_integer_scalars_and_0d_arrays_are_table_indices(env):
    obs, _ = env.reset(seed=4)
    i = int(np.flatnonzero(obs["action_mask"])[0])
    for a in (np.int64(i), np.int32(i), np.uint8(i), np.array(i)):
        obs, _, terminated, truncated, info = env.step(a)
        assert info["action_valid"] is True, (a, info.get("invalid_action"))
        if terminated or truncated:
            obs, _ = env.reset(seed=4)
        i = int(np.flatnonzero(obs["action_mask"])[0])


def test_numpy_scalars_as_parameter_values():
    cw = make_small("UrbanGym/CityWalk-NoView-v0")
    cw.reset(seed=0)
    h0 = cw.unwrapped.walker.heading
    _, _, _, _, info = cw.step({"action": "look", "yaw": np.float32(30.0)})
    assert info["action_valid"] is True
    assert info["action"] == {"action": "look", "yaw": 30.0, "pitch": 0.0}
    assert info["pose"]["heading"] == pytest.approx((h0 + 30.0) % 360.0)
    _, _, _, _, info = cw.step(
        {"action": "move", "direction": "forward", "duration": np.float64(0.5)}
    )
    assert info["action_valid"] is True and info["clock"] == pytest.approx(0.5 + 0.5)

    sg = make_small("UrbanGym/StreetGraph-Procedural-v0", images=False)
    sg.reset(seed=0)
    _, _, _, _, info = sg.step({"action": "go", "option": np.int64(0)})
    assert info["action_valid"] is True and info["decisions"] == 1
    _, _, _, _, info = sg.step({"action": "go", "option": np.float32(0.0)})
    assert info["action_valid"] is True and info["decisions"] == 2
    _, _, _, _, info = sg.step({"action": "go", "option": np.float32(0.5)})
    assert info["invalid_action"] == "go: option=np.float32(0.5) must be a whole number"


def test_param_conversion_keeps_kinds_and_reads_numpy():
    f = Param("yaw", "float", "degrees", low=-180, high=180)
    i = Param("n", "int", "count", low=0, high=10)
    b = Param("ok", "bool", "flag")
    assert f.convert("look", np.float32(0.5)) == 0.5 and type(f.convert("look", 3)) is float
    assert i.convert("go", np.int64(3)) == 3 and type(i.convert("go", np.int64(3))) is int
    assert i.convert("go", "7") == 7 and type(i.convert("go", 7.0)) is int
    assert b.convert("x", np.bool_(True)) is True and b.convert("x", "no") is False
    unbounded = ActionSet([ActionSpec("a", "x", (Param("v", "float", "any"),))])
    with pytest.raises(Exception, match=r"v=100000000000\.\.\.000 \(401 digits\) is too large"):
        unbounded.normalise({"action": "a", "v": HUGE})


def test_to_number_and_describe_value():
    from urban_gym.envs.actions import describe_value, to_number

    assert to_number(HUGER) == HUGER and to_number(" 1,5 ") == 1.5
    assert to_number(np.float32(0.25)) == 0.25 and type(to_number(np.int8(3))) is int
    for bad, why in (
        (math.nan, "finite"),
        ("inf", "finite"),
        ("abc", "not a number"),
        (True, "not a number"),
        (None, "not a number"),
        ([1], "not a number"),
    ):
        with pytest.raises(ValueError, match=why):
            to_number(bad)
    assert describe_value(12345) == "12345"
    assert describe_value(HUGE) == "100000000000...000 (401 digits)"
    assert describe_value(-HUGER) == "-1.000000e+5000 (an integer of about 5001 digits)"
    assert describe_value("\ud800") == "'\\ud800'"
    assert describe_value("x" * 1000).endswith("...") and len(describe_value("x" * 1000)) == 60
