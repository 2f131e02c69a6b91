"""Each scheme's rendered messages for a fixed observation, stored and compared; a
checklist that our texts state every rule, field and input of the paper's prompt; and
``--prompts FILE`` replacing our texts.

After a deliberate change of a prompt, refresh the stored messages with
``URBAN_GYM_REFRESH_SNAPSHOTS=1 pytest tests/baselines/test_prompt_snapshots.py`` and read
the diff before committing it.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from tests.baselines.scheme_render import render, text_of
from urban_gym.baselines.lmm.schemes import load_scheme
from urban_gym.errors import UrbanGymError

SNAPSHOTS = Path(__file__).parent / "snapshots"

#: snapshot name -> (scheme, family, task type, config)
CASES = {
    "react-reflection-localization": ("react-reflection", "posegraph360", "localization", None),
    "react-reflection-vln": ("react-reflection", "posegraph360", "vln", None),
    "agentnav-full": ("agentnav", "streetgraph", None, None),
    "agentnav-partial-no-memory": (
        "agentnav",
        "streetgraph",
        None,
        {"vop": "partial", "markovian_memory": False, "decision_history": False},
    ),
    "urbanground-react-question": ("urbanground-react", "citywalk", "VR", None),
    "urbanground-react-navigation": ("urbanground-react", "citywalk", "SGN", None),
    "cot-posegraph360": ("cot", "posegraph360", "map_navigation", None),
    "cot-streetgraph": ("cot", "streetgraph", None, None),
    "cot-citywalk": ("cot", "citywalk", "SGN", None),
    "reflexion-streetgraph": ("reflexion", "streetgraph", None, None),
    "gepa-citywalk": ("gepa", "citywalk", "SGN", {"instructions": "EVOLVED INSTRUCTIONS"}),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_rendered_messages_match_the_snapshot(name):
    scheme, family, task_type, config = CASES[name]
    messages = render(scheme, family, task_type, config)
    path = SNAPSHOTS / f"{name}.json"
    text = json.dumps(messages, indent=1, ensure_ascii=False) + "\n"
    if os.environ.get("URBAN_GYM_REFRESH_SNAPSHOTS"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"no snapshot {path.name}: run with URBAN_GYM_REFRESH_SNAPSHOTS=1"
    assert text == path.read_text(encoding="utf-8"), f"{name}: the rendered messages changed"


# --------------------------------------------------------------------------- checklists
# Each item: what the paper's prompt states (paraphrased), and a pattern our text must match.
REACT_REFLECTION_SYSTEM = [
    ("the ReAct procedure: reason, act, observe", r"Think:.*\n.*Act:.*[\s\S]*Observe:"),
    (
        "actions W, A, D, Q, E, S, LEFT, UP, RIGHT, ANSWER",
        r"`W`[\s\S]*`A`[\s\S]*`D`[\s\S]*`Q`"
        r"[\s\S]*`E`[\s\S]*`S`[\s\S]*`LEFT`[\s\S]*`UP`[\s\S]*`RIGHT`[\s\S]*`ANSWER`",
    ),
    ("UP for the big red arrow straight ahead", r"UP when the big red arrow points straight"),
    ("LEFT/RIGHT/UP only with a visible red arrow", r"only possible while you see a red arrow"),
    ("look around when W does not move you", r"When W does not move you on, turn the camera"),
    ("two kinds of image: camera view and map", r"camera view[\s\S]*the map \(when given\)"),
    ("the map's red arrow is position and direction", r"red arrow marking your position"),
    (
        "reply fields thought, action, memory, answer, in that order",
        r"`thought`[\s\S]*`action`[\s\S]*`memory`"
        r"[\s\S]*`answer`",
    ),
    ("the action's name alone, flat", r"`action`: the action's name alone"),
    ("an empty memory string keeps the memory", r"empty string to keep your memory"),
    (
        "sizes SMALL/MEDIUM/LARGE; 30/60/90 degrees; 24 by default",
        r"SMALL, MEDIUM or LARGE"
        r"[\s\S]*30, 60 or 90 degrees[\s\S]*24 degrees",
    ),
    ("only the size in answer with W", r"only the size in `answer` with W"),
    ("examples of replies", r"Example replies:\n\{"),
    ("no code fences, the JSON object alone", r"JSON object alone, without code fences"),
    (
        "use the map when provided; memory for later",
        r"use the map when you have one[\s\S]*"
        r"`memory` whatever you will need later",
    ),
]
REACT_REFLECTION_REFLECTION = [
    (
        "only the last few observations are seen",
        r"You see only the current step and at most a few steps before it",
    ),
    ("read all text on screen", r"Read every sign and text in view"),
    (
        "do not overwrite: copy the previous reflection and add",
        r"carry over everything from "
        r"the previous memory[\s\S]*add the new notes",
    ),
    ("do not be conservative", r"Write generously"),
    (
        "goals; strategies that worked or not; places visited; current status",
        r"goal[\s\S]*"
        r"what worked and what did not[\s\S]*places you have been[\s\S]*where you are now",
    ),
    ("think step by step and update", r"Think step by step, then write your updated memory"),
]
REACT_REFLECTION_TASKS = {
    "localization": [
        r"grid",
        r"x:<column> y:<row>",
        r"integer indices",
        r"never metres",
        r"walk a little, turn and tilt",
        r"at most 50 steps",
        r"ANSWER",
    ],
    "landmark_name": [r"in front of", r"ANSWER", r"not far from where you start"],
    "landmark_image": [r"reference image", r"ANSWER", r"not far from where you start"],
    "map_navigation": [r"BLUE marker is your start", r"RED marker the goal", r"ANSWER"],
    "vln": [r"following the directions", r"ANSWER"],
    "object_count": [
        r"Count only",
        r"leave out anything outside",
        r"all four sides",
        r"one side is named",
        r"as a number",
    ],
    "relational": [r"close by", r"give the name"],
}
INPUTS_360 = ["Image: View", "Image: Reference", "Image: Map"]

AGENTNAV_ITEMS = [
    (
        "options with images and compass bearings",
        r"one image for each street[\s\S]*compass "
        r"bearing",
    ),
    ("no map; world knowledge", r"There is no map"),
    ("partial VoP: the destination's address first", r"destination_location"),
    (
        "VoP: where you are and the walking directions",
        r"`current_location`[\s\S]*"
        r"`walking_directions`",
    ),
    (
        "Markovian memory shown verbatim next step, in the past tense",
        r"word for word[\s\S]*"
        r"past tense",
    ),
    ("decision history", r"decisions so far"),
    (
        "previous visits: count and choices; avoid repeating",
        r"how often you were there[\s\S]*"
        r"Avoid repeating",
    ),
]
URBANGROUND_ITEMS = [
    ("one flat JSON action object per turn", r"exactly one action, written as one flat JSON"),
    (
        "the `action` field names it; only its parameters",
        r"`action` field is one of the "
        r"action names[\s\S]*only that action's own parameters",
    ),
    ("the schema is not an example", r"not an example to copy"),
    (
        "mode rules: first-person vs map",
        r"First-person actions work only[\s\S]*map actions "
        r"only while the map is open",
    ),
    ("move/sprint at most 2 s, clamped", r"at most 2 seconds: a longer one is cut"),
    ("no action outside the list", r"no actions besides these"),
    (
        "ReAct: observation, reason, action",
        r"1\. observation[\s\S]*2\. reason[\s\S]*"
        r"3\. action",
    ),
    (
        "exactly one JSON object, no Markdown",
        r"exactly one JSON object and nothing else "
        r"\(no Markdown\)",
    ),
    (
        "non-empty observation and reason",
        r"`observation` \(a short, non-empty text\)[\s\S]*"
        r"`reason` \(a short, non-empty text\)",
    ),
    (
        "nested action uses `action`, no `type`, not keyed by name",
        r"never in a `type` field "
        r"or as a key",
    ),
    ("no concrete numeric example", r"there is no example to copy"),
    ("no hidden simulator state", r"hidden state|not your coordinates"),
]
URBANGROUND_QUESTION = [
    r"Do not answer the question while you explore",
    r"choose terminate "
    r"and you will then be asked",
    r"turn limit",
]
URBANGROUND_NAVIGATION = [
    r"choose terminate: your position at that moment is scored",
    r"no answer to give",
    r"Open the map",
    r"plans no route",
]


def check(text: str, items) -> list[str]:
    missing = []
    for item in items:
        what, pattern = item if isinstance(item, tuple) else (item, item)
        if not re.search(pattern, text):
            missing.append(what)
    return missing


def test_react_reflection_states_appendix_b():
    for task_type, items in REACT_REFLECTION_TASKS.items():
        messages = render("react-reflection", "posegraph360", task_type)
        system, user = messages[0]["content"], text_of(messages[1:])
        assert check(system, REACT_REFLECTION_SYSTEM) == []
        assert check(system, REACT_REFLECTION_REFLECTION) == []
        assert check(user, items) == [], task_type
    # the inputs: camera view, map of the current location, the reference image (when the
    # task has one); the reflection memory is shown once written
    user = text_of(render("react-reflection", "posegraph360", "map_navigation")[1:])
    assert all(i in user for i in INPUTS_360)


def test_agentnav_states_its_components():
    system = render("agentnav", "streetgraph")[0]["content"]
    assert check(system, AGENTNAV_ITEMS) == []
    off = render(
        "agentnav",
        "streetgraph",
        config={"vop": "none", "markovian_memory": False, "previous_visits": False},
    )[0]["content"]
    assert check(off, AGENTNAV_ITEMS) == [
        "partial VoP: the destination's address first",
        "VoP: where you are and the walking directions",
        "Markovian memory shown verbatim next step, in the past tense",
        "previous visits: count and choices; avoid repeating",
    ]
    sp = load_scheme("agentnav").prompts["self_positioning"]
    assert check(sp, [r"`estimated_position`", r"`evidence`", r"`confidence`"]) == []


def test_urbanground_states_appendix_f1():
    q = render("urbanground-react", "citywalk", "VR")[0]["content"]
    n = render("urbanground-react", "citywalk", "SGN")[0]["content"]
    assert check(q, URBANGROUND_ITEMS + URBANGROUND_QUESTION) == []
    assert check(n, URBANGROUND_ITEMS + URBANGROUND_NAVIGATION) == []
    final = load_scheme("urbanground-react").prompts["final_answer"]
    assert check(final, [r'"answer": "A", "B", "C" or "D"', r'"reason"', r"no Markdown"]) == []


def test_prompts_file_replaces_our_texts(tmp_path):
    f = tmp_path / "prompts.yaml"
    f.write_text("reflection: |\n  PAPER REFLECTION TEXT\ntask.vln: 'Directions: {instruction}'\n")
    messages = render("react-reflection", "posegraph360", "vln", prompts=str(f))
    assert "PAPER REFLECTION TEXT" in messages[0]["content"]
    assert "Think step by step, then write" not in messages[0]["content"]
    assert "## Task\nDirections: Follow these directions" in text_of(messages[1:])
    f.write_text("reflexion: x\n")
    with pytest.raises(UrbanGymError, match=r"unknown prompt names \['reflexion'\]"):
        load_scheme("react-reflection", prompts=f)


def test_scheme_config_file_and_bad_keys(tmp_path):
    f = tmp_path / "agentnav.yaml"
    f.write_text("vop: partial\nself_positioning_every: 0\n")
    s = load_scheme("agentnav", f)
    assert (s.config["vop"], s.config["self_positioning_every"]) == ("partial", 0)
    with pytest.raises(UrbanGymError, match=r"unknown config keys \['vopp'\]"):
        load_scheme("agentnav", {"vopp": "full"})
    with pytest.raises(UrbanGymError, match="vop='half' is not one of"):
        load_scheme("agentnav", {"vop": "half"})
    with pytest.raises(UrbanGymError, match="markovian_memory=1 must be a bool"):
        load_scheme("agentnav", {"markovian_memory": 1})
    with pytest.raises(UrbanGymError, match="unknown scheme 'react'"):
        load_scheme("react")
