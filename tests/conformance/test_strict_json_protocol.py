"""Conformance with the strict-JSON evaluation protocol (seed 004): reasoning tags.

The protocol accepts "JSON objects embedded in prose or Markdown fences after removing
reasoning tags": what a model writes inside a reasoning block is not its reply.
"""

from __future__ import annotations

import pytest

from urban_gym.envs.posegraph360_actions import make_action_set
from urban_gym.wrappers.parsing import parse_reply, strip_reasoning

ACTIONS = make_action_set()


def test_the_issue_example_executes_the_action_after_the_think_block():
    r = parse_reply('<think>{"action":"D"}</think>{"action":"A"}', ACTIONS)
    assert r.ok and r.action["action"] == "A"
    assert r.reasoning_chars == len('<think>{"action":"D"}</think>')


@pytest.mark.parametrize(
    "reply",
    [
        '<reasoning>I will press {"action": "D"}</reasoning>\n{"action": "A"}',
        '<THINKING>\n{"action": "D"}\n</THINKING>```json\n{"action": "A"}\n```',
        '<think type="long">{"action":"D"}</think> Final: {"action": "A"}',
        '<analysis>{"action":"D"}</analysis><reflection>{"action":"W"}</reflection>{"action":"A"}',
        # a chat template opened the block: only its closing tag is in the reply
        'first {"action": "D"} then no </think>{"action": "A"}',
    ],
)
def test_reasoning_blocks_of_any_name_are_removed(reply):
    r = parse_reply(reply, ACTIONS)
    assert r.ok and r.action["action"] == "A", reply


def test_a_reply_that_is_only_reasoning_is_invalid_with_a_clear_message():
    r = parse_reply('<think>{"action": "D"}', ACTIONS)  # cut off inside the block
    assert not r.ok and "only reasoning" in r.error
    r = parse_reply('<think>{"action": "D"}</think>', ACTIONS)
    assert not r.ok and "only reasoning" in r.error


def test_text_without_tags_is_unchanged():
    text = '{"thought": "a < b and b > c", "action": "W"}'
    assert strip_reasoning(text) is text
    assert parse_reply(text, ACTIONS).action["action"] == "W"
