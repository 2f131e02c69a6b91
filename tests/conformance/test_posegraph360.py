"""Conformance with 360CityArena (seed 000, Watanabe et al.; appendix B.1 and B.2).

The paper's agent replies with one JSON object ``{"thought", "action", "memory",
"answer"}``; the size of a move or a turn is written in ``"answer"`` (SMALL / MEDIUM /
LARGE; turns 30° / 60° / 90°, 24° when omitted), an empty ``"memory"`` means "do not
update", and ``ANSWER`` ends the task. The replies below are the paper's own examples, or
its format with the values it names, read through the language-model face.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.world.posegraph_frames import folder_graph
from urban_gym.envs.posegraph360 import PoseGraph360Env
from urban_gym.tasks.spec import TaskSpec
from urban_gym.world.posegraph import load_posegraph
from urban_gym.wrappers.language_model import LanguageModelInterface
from urban_gym.wrappers.memory import ReflectionMemory
from urban_gym.wrappers.protocols import protocol_for

TINY = "procedural:seed=3,blocks=2x2"
SPACING = 106.0 / 35  # the south spoke: 36 frames from (0, -106) to (0, 0)


@pytest.fixture(scope="module")
def graph(tiny_city, tmp_path_factory):
    return folder_graph(load_posegraph(TINY), tmp_path_factory.mktemp("frames"))


def _south(g):
    return next(
        t
        for t in g.trajectories
        if np.allclose(t.xy[0], (0, -106)) and np.allclose(t.xy[-1], (0, 0))
    )


def _task(g, type_="map_navigation", frame=3):
    t = _south(g)
    x, y = (float(v) for v in t.xy[frame])
    start = {"trajectory": t.id, "frame": frame, "x": x, "y": y, "heading": 0.0}
    start.update(yaw=0.0, pitch=0.0)
    if type_ == "map_navigation":
        extra = {
            "goal": {
                "x": 0.0,
                "y": 106.0,
                "radius": 10.0,
                "map": {"center": [0, 0], "extent": 300},
            },
            "reference_images": ("route_map",),
        }
    else:
        extra = {"answer": "4", "options": tuple(str(i) for i in range(10))}
    return TaskSpec(
        id=f"conf-{type_}",
        family="posegraph360",
        type=type_,
        difficulty="easy",
        city=TINY,
        instruction="Walk to the goal." if type_ == "map_navigation" else "Count the trees.",
        start=start,
        **extra,
    )


def face(graph, type_="map_navigation"):
    env = PoseGraph360Env(city=TINY, tasks=[_task(graph, type_)], posegraph=graph, view_size=32)
    lm = LanguageModelInterface(ReflectionMemory(env, budget=2000), protocol="react")
    lm.reset(seed=0)
    return lm


def reply(thought="", action="W", memory="", answer=""):
    import json

    return json.dumps({"thought": thought, "action": action, "memory": memory, "answer": answer})


@pytest.mark.parametrize(
    ("action", "answer", "yaw"),
    [
        ("A", "LARGE", -90.0),
        ("A", "MEDIUM", -60.0),
        ("A", "SMALL", -30.0),
        ("D", "LARGE", 90.0),
        ("D", "", 24.0),  # "if answer is omitted" -> 24°
    ],
)
def test_turn_size_is_read_from_answer(graph, action, answer, yaw):
    lm = face(graph)
    _, _, _, _, info = lm.step(reply(action=action, answer=answer))
    assert info["action_valid"] is True
    assert info["yaw_offset"] == pytest.approx(yaw)


@pytest.mark.parametrize(("answer", "frames"), [("SMALL", 1), ("MEDIUM", 3), ("LARGE", 5)])
def test_move_size_is_read_from_answer(graph, answer, frames):
    lm = face(graph)
    _, _, _, _, info = lm.step(reply(action="W", answer=answer))
    assert info["state"]["frame"] == 3 + frames


@pytest.mark.parametrize(("answer", "pitch"), [("SMALL", 30.0), ("", 24.0), ("LARGE", 60.0)])
def test_tilt_takes_sizes_like_turns(graph, answer, pitch):
    # Q tilts up by the size (LARGE's 90° stops at the +60° limit); E tilts back down
    lm = face(graph)
    _, _, _, _, info = lm.step(reply(action="Q", answer=answer))
    assert info["action_valid"] is True and info["pitch"] == pytest.approx(pitch)
    _, _, _, _, info = lm.step(reply(action="E", answer="SMALL"))
    assert info["pitch"] == pytest.approx(pitch - 30.0)


def test_the_papers_examples_and_the_empty_memory_rule(graph):
    lm = face(graph)
    plan = (
        "1. My short term plan is to find the signboard of the road. "
        "2. I need to move forward to find the signboard."
    )
    # the paper's first example: W with a memory (no size: SMALL, one frame)
    obs, _, _, _, info = lm.step(reply("I need to move forward", "W", plan, ""))
    assert info["state"]["frame"] == 4 and obs["memory"] == plan
    # the paper's second example: S with an empty memory keeps the memory
    obs, _, _, _, info = lm.step(reply("I need to turn to the direction of travel", "S", "", ""))
    assert info["action_valid"] is True and obs["memory"] == plan
    # a new memory replaces it
    obs, *_ = lm.step(reply(action="A", memory=plan + " 3. Turned left.", answer="SMALL"))
    assert obs["memory"].endswith("3. Turned left.")


def test_answer_with_empty_answer_confirms_arrival_in_navigation(graph):
    lm = face(graph)
    _, _, term, _, info = lm.step(reply("I am at the goal", "ANSWER", "", ""))
    assert info["action_valid"] is True and term
    assert info["termination"] == "answered"


def test_answer_with_empty_answer_is_invalid_in_a_question_task(graph):
    lm = face(graph, "object_count")
    _, _, term, _, info = lm.step(reply(action="ANSWER", answer=""))
    assert info["action_valid"] is False and not term
    assert "must not be empty" in info["invalid_action"]
    _, _, term, _, info = lm.step(reply(action="ANSWER", answer="4"))
    assert term and info["is_success"] is True


def test_the_system_prompt_carries_the_size_rule_and_the_reflection_rules(graph):
    env = PoseGraph360Env(city=TINY, tasks=[_task(graph)], posegraph=graph, view_size=32)
    text = protocol_for("react").system_prompt(env.action_set)
    assert "30°" in text and "60°" in text and "90°" in text and "24°" in text
    assert '{"action": "A", "answer": "LARGE"}' in text
    low = text.lower()
    # keep and extend the previous reflection, never overwrite it; what to reflect on
    assert "copy the previous reflection and extend it" in low
    for topic in ("goal", "tried and whether it worked", "places you have been", "where you are"):
        assert topic in low, topic
    assert 'empty string ("")' in low
