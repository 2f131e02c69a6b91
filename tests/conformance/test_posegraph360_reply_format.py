"""PoseGraph360's reply format and history window, as 360CityArena (Watanabe et al.) runs
its agent.

Appendix B.1: the agent replies with one flat JSON object -- ``"thought"``, ``"action"``
(the action's name alone), ``"memory"``, ``"answer"`` -- and the size of a move or turn
goes in ``"answer"``: SMALL / MEDIUM / LARGE, turns of 30° / 60° / 90°, 24° when it is
omitted. The prompt shows that format and its examples, and no JSON schema. Appendix B.2:
"You will only see your last few observations and actions", besides the reflection
memory; appendix A.4 lists the images of the current step only. Our window: the last 3
steps as text (``react-reflection``'s ``history``, ``history_images``; ``--history``
wins).

The prompts and requests are read from what the real scripted server received.
"""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

from tests.conformance.scripted import scripted_episode
from urban_gym.baselines.lmm.agent import LMMAgent
from urban_gym.baselines.lmm.schemes import load_scheme
from urban_gym.baselines.lmm.server import ScriptedServer
from urban_gym.wrappers.protocols import protocol_for

ENV_ID = "UrbanGym/PoseGraph360-Procedural-v0"
KWARGS = {"view_size": 48, "pano_width": 192, "map_size": 64}

# Appendix B.1's three example replies, quoted (their keys and values as printed).
PAPER_EXAMPLES = [
    (
        {
            "thought": "I need to move forward",
            "action": "W",
            "memory": "1. My short term plan is to find the signboard of the road. 2. I need "
            "to move forward to find the signboard.",
            "answer": "",
        },
        {"action": "W", "size": "SMALL"},  # no size given: a SMALL move (one frame)
    ),
    (
        {
            "thought": "I need to turn to the direction of travel",
            "action": "S",
            "memory": "",
            "answer": "",
        },
        {"action": "S"},
    ),
    (
        {
            "thought": "",
            "action": "ANSWER",
            "memory": "The name of the city is Tokyo.",
            "answer": "x:100 y:100",
        },
        {"action": "ANSWER", "text": "x:100 y:100"},
    ),
]
# B.1's size rules in its own format: the size in "answer".
SIZED = [
    ({"action": "W", "answer": "MEDIUM"}, {"action": "W", "size": "MEDIUM"}),
    ({"action": "W", "answer": "LARGE"}, {"action": "W", "size": "LARGE"}),
    ({"action": "A", "answer": "LARGE"}, {"action": "A", "size": "LARGE"}),
    ({"action": "D", "answer": "SMALL"}, {"action": "D", "size": "SMALL"}),
    ({"action": "Q", "answer": "MEDIUM"}, {"action": "Q", "size": "MEDIUM"}),
    ({"action": "E", "answer": ""}, {"action": "E", "size": None}),  # omitted: 24°
]
# The nested form the parser also reads.
NESTED = [
    ({"thought": "t", "action": {"name": "W", "size": "SMALL"}, "memory": ""}, "W", "SMALL"),
    ({"thought": "t", "action": {"name": "A", "size": "LARGE"}, "memory": ""}, "A", "LARGE"),
    ({"action": {"action": "D", "size": "MEDIUM"}}, "D", "MEDIUM"),
]


@pytest.fixture(scope="module")
def world():
    core = gym.make(ENV_ID, **KWARGS)
    mirror = gym.make(ENV_ID, **KWARGS)
    server = ScriptedServer(
        env_id=ENV_ID, env_kwargs=KWARGS, env_factory=lambda i, k: mirror, record_requests=True
    ).start()
    yield core, server
    server.stop()
    core.close()


def parsers():
    """The family's protocol and the react-reflection scheme's."""
    return [protocol_for("posegraph360"), load_scheme("react-reflection").protocol("posegraph360")]


def parsed(protocol, reply, action_set):
    p = protocol.parse(json.dumps(reply), action_set)
    assert p.ok, p.error
    return {k: v for k, v in p.action.items() if v is not None or k == "size"}


@pytest.mark.parametrize("reply,want", PAPER_EXAMPLES + SIZED)
def test_the_papers_flat_replies_parse_into_action_and_size(world, reply, want):
    aset = world[0].unwrapped.action_set
    for protocol in parsers():
        got = parsed(protocol, reply, aset)
        assert got["action"] == want["action"]
        for k, v in want.items():
            assert got.get(k) == v, (protocol.name, got)


@pytest.mark.parametrize("reply,name,size", NESTED)
def test_the_nested_form_still_parses(world, reply, name, size):
    aset = world[0].unwrapped.action_set
    for protocol in parsers():
        got = parsed(protocol, reply, aset)
        assert (got["action"], got["size"]) == (name, size)


def test_our_example_replies_are_flat_and_read_back(world):
    """Every example reply the prompt shows is a flat object in the paper's key order,
    and parses into the action it was written from.
    """
    aset = world[0].unwrapped.action_set
    for protocol in parsers():
        for action in protocol.example_actions(aset):
            text = protocol.format_reply(action, protocol.example_fields(), aset)
            reply = json.loads(text)
            assert isinstance(reply["action"], str)
            assert list(reply)[:4] == ["thought", "action", "memory", "answer"]
            assert protocol.parse(text, aset).action == aset.normalise(action)


# --------------------------------------------------------------------------- what is sent
def episode(world, steps, **options):
    """Run ``steps`` steps of a map-navigation task; the action requests sent."""
    core, server = world
    task = next(t for t in core.unwrapped.tasks if t.type == "map_navigation")
    sent, _ = scripted_episode(core, server, task, steps, full=True, **options)
    return [r["messages"] for r in sent if r["kind"] is None]


@pytest.mark.parametrize("scheme", ["react-reflection", None])
def test_the_system_prompt_sent_teaches_the_flat_form(world, scheme):
    (first,) = episode(world, 1, scheme=scheme)
    system = first[0]["content"]
    assert first[0]["role"] == "system"
    assert '"action": "W"' in system and '"answer": "MEDIUM"' in system  # B.1's form
    assert '{"thought": "...", "action": "W", "memory": "...", "answer": "MEDIUM"}' in system
    assert '"action": {' not in system and '"name": "W"' not in system  # not the nested one
    assert "`size`" not in system  # the size is taught as `answer`
    assert "JSON schema" not in system and '"oneOf"' not in system
    # the schema only when asked for
    (first,) = episode(world, 1, scheme=scheme, action_schema=True)
    assert '"oneOf"' in first[0]["content"]


def past_turns(messages):
    """``(user, assistant)`` pairs between the system message and the current turn."""
    middle = messages[1:-1]
    assert [m["role"] for m in middle] == ["user", "assistant"] * (len(middle) // 2)
    return list(zip(middle[::2], middle[1::2]))


def texts(content):
    if isinstance(content, str):
        return content
    return "\n\n".join(p["text"] for p in content if p["type"] == "text")


@pytest.mark.parametrize(
    "options,window,images",
    [
        ({"scheme": "react-reflection"}, 3, False),  # the scheme's default
        ({"scheme": "react-reflection", "history": 1}, 1, False),  # --history wins
        ({"scheme": "react-reflection", "scheme_config": {"history": 2}}, 2, False),
        ({"scheme": "react-reflection", "history_images": True}, 3, True),
        ({"scheme": "react-reflection", "history": 0}, 0, False),
    ],
)
def test_the_history_window_shows_exactly_n_past_steps(world, options, window, images):
    sent = episode(world, 5, **options)
    assert len(sent) == 5
    for k, messages in enumerate(sent):  # k steps before this one
        pairs = past_turns(messages)
        assert len(pairs) == min(k, window), f"step {k + 1}"
        for j, (user, assistant) in enumerate(pairs):
            earlier = sent[k - len(pairs) + j]  # the request of that past step
            assert texts(user["content"]).startswith(texts(earlier[-1]["content"])[:200])
            has_images = not isinstance(user["content"], str) and any(
                p["type"] == "image_url" for p in user["content"]
            )
            assert has_images is images
            assert json.loads(_json_of(assistant["content"]))["action"]  # the reply given


def _json_of(text):
    """The JSON object of a scripted reply (plain, fenced or in prose)."""
    return text[text.index("{") : text.rindex("}") + 1]


def test_the_manifest_names_the_window_and_the_format(world):
    core, server = world
    agent = LMMAgent(base_url=server.url, model="m", scheme="react-reflection")
    face = agent.describe_face(core)
    agent.close()
    assert face["history"] == {"turns": 3, "images": False}
    assert face["sources"]["history"] == "scheme"
    fmt = face["reply_format"]
    assert fmt["keys"] == ["thought", "action", "memory", "answer"]
    assert fmt["action"] == "flat" and fmt["param_fields"] == {"size": "answer", "text": "answer"}
    assert fmt["json_schema"] is False
