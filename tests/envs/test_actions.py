import pytest

from urban_gym.envs.actions import ActionSet, ActionSpec, InvalidAction, Param

SET = ActionSet(
    [
        ActionSpec(
            "W",
            "walk forward",
            (
                Param(
                    "size",
                    "enum",
                    "how far",
                    ("SMALL", "MEDIUM", "LARGE"),
                    required=False,
                    default="MEDIUM",
                    value_synonyms={"m": "MEDIUM"},
                ),
            ),
            synonyms=("forward",),
        ),
        ActionSpec(
            "look",
            "turn the head",
            (Param("yaw", "float", "degrees", low=-180, high=180, key_synonyms=("heading",)),),
        ),
        ActionSpec("answer", "give the answer", (Param("text", "str", "the answer"),)),
    ]
)


def test_normalise_is_tolerant_about_names_keys_and_values():
    assert SET.normalise("w") == {"action": "W", "size": "MEDIUM"}
    assert SET.normalise({"Action": "forward", "SIZE": "large"}) == {"action": "W", "size": "LARGE"}
    assert SET.normalise({"command": "W", "size": "m"}) == {"action": "W", "size": "MEDIUM"}
    assert SET.normalise({"action": "look", "heading": "-90"}) == {"action": "look", "yaw": -90.0}
    assert SET.normalise({"action": "answer", "text": " x:1 y:2 "}) == {
        "action": "answer",
        "text": "x:1 y:2",
    }


@pytest.mark.parametrize(
    "raw,match",
    [
        ({"action": "fly"}, "unknown action 'fly'"),
        ({"size": "SMALL"}, "no 'action' key"),
        ({"action": "look", "yaw": 400}, r"yaw=400 is outside \[-180, 180\]"),
        ({"action": "look", "yaw": "left"}, "yaw='left' is not a number"),
        ({"action": "look"}, "missing parameter 'yaw'"),
        ({"action": "W", "size": "HUGE"}, "size='HUGE' is not allowed"),
        ({"action": "answer", "text": "  "}, "text must not be empty"),
        (42, "must be an object"),
    ],
)
def test_bad_actions_name_the_bad_value(raw, match):
    with pytest.raises(InvalidAction, match=match):
        SET.normalise(raw)


def test_examples_are_valid_and_schema_lists_every_action():
    for ex in SET.examples():
        assert SET.normalise(ex) == ex
    schema = SET.json_schema()
    assert [s["properties"]["action"]["const"] for s in schema["oneOf"]] == ["W", "look", "answer"]
    text = SET.describe()
    assert "`look`" in text and "[-180, 180]" in text


def test_duplicate_names_rejected():
    with pytest.raises(ValueError, match="used twice"):
        ActionSet([ActionSpec("a", "x"), ActionSpec("b", "y", synonyms=("A",))])


def test_describe_value_writes_containers_briefly_and_never_raises():
    """Containers item by item up to the limit, nesting past three levels as ``...``, a
    one-item tuple with its comma; a mapping whose ``items()`` fails is ``{...}``."""
    from collections import namedtuple

    from urban_gym.envs.actions import describe_value

    class BrokenMapping(dict):
        def items(self):
            raise RuntimeError("no items")

    point = namedtuple("point", "x y")
    assert describe_value({"a": [1, 2], 3: (4,)}) == "{'a': [1, 2], 3: (4,)}"
    assert describe_value([1, [2, [3, [4, [5]]]]]) == "[1, [2, [3, [...]]]]"
    assert describe_value(point(1, 2)) == "(1, 2)"
    assert describe_value(([], {}, ())) == "([], {}, ())"
    assert describe_value(list(range(100)), limit=20) == "[0, 1, 2, 3, 4, 5..."
    assert describe_value(BrokenMapping(a=1)) == "{...}"
