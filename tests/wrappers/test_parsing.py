"""The tolerant reply parser: stages, synonyms, bad replies, and property tests."""

from __future__ import annotations

import json
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.wrappers.recording_env import ACTIONS, GRAPH_ACTIONS, TABLE
from urban_gym.wrappers.parsing import parse_reply
from urban_gym.wrappers.protocols import PROTOCOLS, protocol_for


def test_strict_json_flat_and_nested():
    r = parse_reply('{"action": "move", "direction": "north", "steps": 2}', ACTIONS)
    assert r.stage == "json" and r.action == {"action": "move", "direction": "north", "steps": 2}
    r = parse_reply(
        '{"thought": "go up", "action": {"name": "move", "direction": "N"}, "memory": "m1"}',
        ACTIONS,
    )
    assert r.action == {"action": "move", "direction": "north", "steps": 1}
    assert r.fields == {"thought": "go up", "memory": "m1"}


def test_fenced_block_wins_over_prose_braces():
    text = 'I think {maybe} this:\n```json\n{"action": "turn", "angle": -90}\n```\nok'
    r = parse_reply(text, ACTIONS)
    assert r.stage == "fence" and r.action == {"action": "turn", "angle": -90.0}


def test_first_balanced_object_respects_quotes():
    # the brace inside the string must not end the object early
    text = 'Sure! {"thought": "a } inside", "action": "answer", "text": "x:1 y:2"} and {"action": "stop"}'
    r = parse_reply(text, ACTIONS)
    assert r.stage == "braces"
    assert r.action == {"action": "answer", "text": "x:1 y:2"}
    assert r.fields["thought"] == "a } inside"


def test_synonym_keys_and_containers():
    cases = {
        '{"command": "walk", "parameters": {"direction": "left", "distance": "3"}}': {
            "action": "move",
            "direction": "west",
            "steps": 3,
        },
        '{"next_action": {"move": {"direction": "s"}}}': {
            "action": "move",
            "direction": "south",
            "steps": 1,
        },
        '{"reasoning": "done", "decision": "STOP"}': {"action": "stop"},
        "{'action': 'turn', 'degrees': 45,}": {"action": "turn", "angle": 45.0},
        '[{"action": "done"}]': {"action": "stop"},
        '{"answer": "x:2 y:3"}': {"action": "answer", "text": "x:2 y:3"},  # name as key
        '{"thought": "hmm", "size": 3}': None,  # no action named
    }
    for text, want in cases.items():
        assert parse_reply(text, ACTIONS).action == want, text


def test_answer_field_fills_the_text_parameter_in_react():
    p = protocol_for("react")
    r = p.parse('{"thought": "t", "action": "answer", "answer": "x:4 y:0", "memory": ""}', ACTIONS)
    assert r.action == {"action": "answer", "text": "x:4 y:0"}


def test_bare_name_and_number_for_single_numeric_action():
    assert parse_reply("  stop. ", ACTIONS).action == {"action": "stop"}
    assert parse_reply('{"action": 1}', GRAPH_ACTIONS).action == {"action": "go", "option": 1}


@pytest.mark.parametrize(
    "text,needle",
    [
        ("", "empty"),
        ("   \n", "empty"),
        ("I will walk north now.", "no JSON object"),
        ('{"action": "move", "direction": "nor', "no JSON object"),  # truncated
        ('{"thought": "x", "size": 3}', "no 'action' key"),
        ('{"action": "fly"}', "unknown action 'fly'"),
        ('{"action": "turn", "angle": 400}', "outside [-180, 180]"),
        ('{"action": "move", "direction": "up-left"}', "not allowed"),
        ("[1, 2, 3]", "no action object"),
        ("42", "not a JSON object"),
    ],
)
def test_bad_replies_name_the_problem(text, needle):
    r = parse_reply(text, ACTIONS)
    assert r.action is None and needle in r.error


def test_ten_megabytes_is_read_quickly():
    junk = "{" * 3_000_000 + '"a": [' * 1_000_000 + "x" * 4_000_000
    t0 = time.perf_counter()
    r = parse_reply(junk, ACTIONS)
    assert r.action is None and len(junk) >= 10_000_000
    tail = "words " * 1_700_000 + '{"action": "stop"}'
    assert parse_reply(tail, ACTIONS).action == {"action": "stop"}
    assert time.perf_counter() - t0 < 10.0


# --------------------------------------------------------------------------- properties


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.one_of(
        st.text(max_size=400),
        st.text(alphabet='{}[]"\\`:, \nactionmovestop0123', max_size=400),
        st.binary(max_size=200).map(lambda b: b.decode("latin-1")),
    )
)
def test_parser_never_raises(text):
    for action_set in (ACTIONS, GRAPH_ACTIONS):
        r = parse_reply(text, action_set)
        assert (r.action is None) == bool(r.error)  # an action, or a reason why not


PROSE = st.text(
    alphabet=st.characters(blacklist_characters="{}[]\"`\\'", blacklist_categories=("Cs",)),
    max_size=80,
)


def wrap(kind: int, before: str, body: str, after: str) -> str:
    return [
        body,
        f"{before}\n{body}\n{after}",
        f"```json\n{body}\n```",
        f"{before}\n```\n{body}\n```\n{after}",
    ][kind]


def valid_actions(action_set, table=()):
    return [action_set.normalise(a) for a in [*action_set.examples(), *table]]


@settings(max_examples=200, deadline=None)
@given(
    index=st.integers(0, 10_000),
    protocol=st.sampled_from(sorted(PROTOCOLS)),
    flat=st.booleans(),
    kind=st.integers(0, 3),
    before=PROSE,
    after=PROSE,
)
def test_every_valid_action_round_trips(index, protocol, flat, kind, before, after):
    for action_set, table in ((ACTIONS, TABLE), (GRAPH_ACTIONS, ())):
        actions = valid_actions(action_set, table)
        action = actions[index % len(actions)]
        p = protocol_for(protocol)
        body = (
            json.dumps(action)
            if flat
            else p.format_reply(action, {"thought": "t", "memory": "m"}, action_set)
        )
        r = p.parse(wrap(kind, before, body, after), action_set)
        assert r.action == action, (r.error, body)
