"""What UrbanGround's agent is told (Appendix F), read from the requests the real loopback
scripted server received.

F.1: the system message is the task type's prompt, then the action space, then the ReAct
output protocol, each in a question variant (terminate, then a separate answer turn
``{"answer": "A|B|C|D", "reason": ...}``) and a navigation variant (the map plans no
route); the agent keeps its whole conversation. F.2-F.6: a task template per type with the
task's fields; PTS's goal reminder, TWS's schedule status (minutes left or OVERDUE) and
MSP's route progress before each observation; CN's closures in the task text and DCR's
one-time notice, each closed segment a chain of waypoints; NP takes LGN's prompt and
template.
"""

from __future__ import annotations

import dataclasses
import math
import re

import gymnasium as gym
import pytest

from tests.conformance.scripted import scripted_episode
from urban_gym.baselines.lmm.schemes import load_scheme
from urban_gym.baselines.lmm.server import ScriptedServer
from urban_gym.errors import UrbanGymError
from urban_gym.families.citywalk.tasks.types import OPTION_LETTERS, compass_name
from urban_gym.world.geo import bearing

ENV_ID = "UrbanGym/CityWalk-v0"
KW = {"view_size": 32}
TYPES = ("VR", "OU", "AEQ", "SGN", "LGN", "IN", "CN", "PTS", "III", "TWS", "MSP", "DCR", "NP")
QUESTION_TYPES = ("VR", "OU", "AEQ")
TEXTS = load_scheme("urbanground-react").prompts


@pytest.fixture(scope="module")
def suite():
    core = gym.make(ENV_ID, view_size=None)
    tasks = {}
    for t in core.unwrapped.tasks:
        tasks.setdefault(t.type, t)
    core.close()
    return tasks


@pytest.fixture(scope="module")
def world():
    """tasks (or None: the shipped suite) -> (core env, server); made once per task list."""
    made: dict = {}

    def get(tasks=None):
        key = None if tasks is None else tuple(t.id for t in tasks)
        if key not in made:
            kw = dict(KW) if tasks is None else {**KW, "tasks": list(tasks)}
            core, mirror = gym.make(ENV_ID, **kw), gym.make(ENV_ID, **kw)
            server = ScriptedServer(
                env_id=ENV_ID, env_kwargs=kw, env_factory=lambda i, k: mirror, record_requests=True
            ).start()
            made[key] = (core, server)
        return made[key]

    yield get
    for core, server in made.values():
        server.stop()
        core.close()


def actions(world, task, steps, tasks=None, **options):
    """The action requests of ``steps`` steps of ``task`` (and the face description)."""
    core, server = world(tasks)
    options.setdefault("scheme", "urbanground-react")
    sent, face = scripted_episode(core, server, task, steps, **options)
    return [r["messages"] for r in sent if r["kind"] is None], face


def texts(content):
    """The text parts of a message's content, in order."""
    if isinstance(content, str):
        return [content]
    return [p["text"] for p in content if p["type"] == "text"]


def paragraphs(messages):
    """The paragraphs (blank-line separated) of the current user message's texts."""
    return "\n\n".join(texts(messages[-1]["content"])).split("\n\n")


def task_block(messages):
    (block,) = [p for p in paragraphs(messages) if p.startswith("## Task\n")]
    return block[len("## Task\n") :]


def order_of(messages, prefix):
    """Index of the first paragraph of the current user message starting with ``prefix``."""
    for i, p in enumerate(paragraphs(messages)):
        if p.startswith(prefix):
            return i
    raise AssertionError(f"no paragraph starting with {prefix!r}")


def before_the_image(messages, prefix):
    """Whether the text part holding ``prefix`` comes before the first image."""
    content = messages[-1]["content"]
    at = next(i for i, p in enumerate(content) if p["type"] == "text" and prefix in p["text"])
    return at < next(i for i, p in enumerate(content) if p["type"] == "image_url")


def hhmm(seconds):
    s = int(seconds) % 86400
    return f"{s // 3600:02d}:{s // 60 % 60:02d}"


# --------------------------------------------------------------------------- F.1
@pytest.mark.parametrize("kind", TYPES)
def test_the_system_message_is_the_types_prompt_then_actions_then_protocol(world, suite, kind):
    (first,), _ = actions(world, suite[kind], 1)
    system = first[0]["content"]
    own = "LGN" if kind == "NP" else kind  # F.6: NP uses LGN's prompt
    variant = "question" if kind in QUESTION_TYPES else "navigation"
    prompt = TEXTS[f"system.{own}"].replace("{city}", "Helsinki")
    protocol = TEXTS[f"protocol.{variant}"]
    head, rest = TEXTS[f"actions.{variant}"].split("{actions}")
    assert system.startswith(prompt + "\n\n" + head)
    assert rest + "\n\n" + protocol in system
    assert system.index(prompt) < system.index(head) < system.index(protocol)
    if variant == "question":  # terminate, then a separate answer turn
        assert '{"answer": "A|B|C|D", "reason": "..."}' in system
        assert "plans no route" not in system
    else:
        assert "plans no route" in system and '"answer": "A|B|C|D"' not in system


def test_np_is_told_exactly_what_lgn_is(world, suite):
    (np_,), _ = actions(world, suite["NP"], 1)
    (lgn,), _ = actions(world, suite["LGN"], 1)
    assert np_[0]["content"] == lgn[0]["content"]
    # the same template: the two task texts differ only in the start and goal lines
    a, b = task_block(np_).splitlines(), task_block(lgn).splitlines()
    assert len(a) == len(b) and a[0] == b[0] and a[3:] == b[3:]
    assert a[1].startswith("Start: ") and a[2].startswith("Goal: ")


# --------------------------------------------------------------------------- F.2-F.6
@pytest.mark.parametrize("kind", QUESTION_TYPES)
def test_a_question_is_laid_out_as_question_then_lettered_options(world, suite, kind):
    task = suite[kind]
    (first,), _ = actions(world, task, 1)
    lines = task_block(first).splitlines()
    assert lines[-4:] == [f"{L}. {o}" for L, o in zip(OPTION_LETTERS, task.options)]
    question = "\n".join(lines[:-4])
    assert question and task.instruction.startswith(question)
    assert "Options:" not in question and "terminate" not in question


@pytest.mark.parametrize("kind", ["SGN", "LGN", "CN", "DCR", "NP"])
def test_start_and_goal_come_from_the_task(world, suite, kind):
    task = suite[kind]
    (first,), _ = actions(world, task, 1)
    block = task_block(first)
    goal = re.search(r"^Goal: (.*)$", block, re.M).group(1)
    assert goal.startswith(task.goal["name"])
    start = re.search(r"^Start: (.*)$", block, re.M).group(1)
    assert re.match(r"(on |at |in |about \d+ m )", start), start  # a street or a place
    assert "Closed segment" not in block or kind == "CN"  # DCR's closure comes later


def test_in_gives_the_turn_by_turn_directions(world, suite):
    task = suite["IN"]
    (first,), _ = actions(world, task, 1)
    assert task_block(first) == TEXTS["task.IN"].replace("{instructions}", task.instruction)


def test_iii_gives_the_everyday_goal_and_pts_the_request(world, suite):
    (iii,), _ = actions(world, suite["III"], 1)
    assert f"What the person wants: {suite['III'].meta['intent']}" in task_block(iii)
    (pts,), _ = actions(world, suite["PTS"], 1)
    kinds = [k.replace("_", " ") for k in suite["PTS"].meta["kinds"]]
    request = re.search(r"^Request: take me to (.*)\.$", task_block(pts), re.M).group(1)
    assert request.startswith("the nearest ") and any(k in request for k in kinds)


def test_tws_lists_every_appointment_with_deadline_and_the_overall_deadline(world, suite):
    task = suite["TWS"]
    (first,), _ = actions(world, task, 1)
    block = task_block(first)
    stops = task.goal["stops"]
    lines = [ln for ln in block.splitlines() if re.match(r"\d+\. ", ln)]
    assert len(lines) == len(stops)
    for i, (line, stop) in enumerate(zip(lines, stops), 1):
        assert line.startswith(f"{i}. {stop['name']}")
        assert line.endswith(f" -- by {hhmm(stop['deadline'])}")
        assert line.count(" -- ") == 2  # place -- activity -- deadline
    assert f"The time now: {hhmm(task.start['clock'])}" in block
    assert f"done by {hhmm(max(s['deadline'] for s in stops))}." in block


def test_msp_gives_the_number_of_destinations(world, suite):
    task = suite["MSP"]
    (first,), _ = actions(world, task, 1)
    block = task_block(first)
    stops = task.goal["stops"]
    assert f"There are {len(stops)} places to visit" in block
    for i, stop in enumerate(stops, 1):
        assert re.search(rf"^{i}\. {re.escape(stop['name'])}", block, re.M)


def chain_steps(points):
    """``waypoint k+1 N m <dir> of waypoint k`` for each link of a closure, by hand."""
    out = []
    for k, (p, q) in enumerate(zip(points[:-1], points[1:]), 1):
        d = max(1, round(math.dist(p, q)))
        direction = compass_name(bearing(q[0] - p[0], q[1] - p[1]))
        out.append(f"waypoint {k + 1} {d} m {direction} of waypoint {k}")
    return out


def test_cn_describes_each_closure_as_a_chain_of_waypoints(world, suite):
    task = suite["CN"]
    (first,), _ = actions(world, task, 1)
    block = task_block(first)
    closures = task.constraints["closures"]
    for i, c in enumerate(closures, 1):
        assert f"Closed segment {i} ({len(c['points'])} waypoints;" in block
        for link in chain_steps(c["points"]):
            assert link in block
    assert "red line" not in block


# --------------------------------------------------------------------------- reminders
def test_pts_reminds_of_the_request_before_every_observation(world, suite):
    task = suite["PTS"]
    sent, _ = actions(world, task, 3)
    request = re.search(r"^Request: take me to (.*)\.$", task_block(sent[0]), re.M).group(1)
    want = TEXTS["reminder.PTS"].replace("{request}", request)
    for messages in sent:
        i = order_of(messages, want)
        assert order_of(messages, "## Task") < i < order_of(messages, "## Status")
        assert before_the_image(messages, want)


def tight_tws(task):
    """The suite's TWS task starting 4 s before its first deadline."""
    first = task.goal["stops"][0]
    start = {**task.start, "clock": first["deadline"] - 4}
    return dataclasses.replace(task, id="tws-tight", start=start)


def test_tws_status_counts_minutes_left_then_overdue(world, suite):
    task = tight_tws(suite["TWS"])
    deadline = task.goal["stops"][0]["deadline"]
    sent, _ = actions(world, task, 5, tasks=[task])
    seen = set()
    for messages in sent:
        status = next(t for t in paragraphs(messages) if t.startswith("## Status"))
        h, m, s = (int(v) for v in re.search(r"Time (\d\d):(\d\d):(\d\d)", status).groups())
        now = h * 3600 + m * 60 + s
        name = task.goal["stops"][0]["name"]
        head = f"Schedule: 0 of {len(task.goal['stops'])} appointments done. "
        reminder = next(t for t in paragraphs(messages) if t.startswith(head))
        assert f"The time now: {hhmm(now)}. Next appointment: {name} (" in reminder
        assert f"), by {hhmm(deadline)} -- " in reminder
        if now <= deadline:  # minutes left, rounded down
            want = f"{(deadline - now) // 60} minutes left."
            seen.add("left")
        else:  # minutes late, rounded up
            want = f"OVERDUE by {-((now - deadline) // -60)} minutes."
            seen.add("overdue")
        assert reminder.endswith(want), (now, reminder)
        assert want.rstrip(".") in status  # every face's status says the same
        assert order_of(messages, head) < order_of(messages, "## Status")
    assert seen == {"left", "overdue"}  # the deadline passed during the episode


def msp_at_first_stop(task):
    """The suite's MSP task starting on its first stop."""
    s = task.goal["stops"][0]
    start = {**task.start, "x": s["x"], "y": s["y"]}
    return dataclasses.replace(task, id="msp-at-stop", start=start)


def test_msp_progress_before_every_observation(world, suite):
    task = msp_at_first_stop(suite["MSP"])
    stops = [s["name"] for s in task.goal["stops"]]
    sent, _ = actions(world, task, 2, tasks=[task])
    n = len(stops)
    before = f"Progress: 0 of {n} places visited. Still to visit: "
    after = f"Progress: 1 of {n} places visited. Still to visit: "
    (r0,) = [t for t in paragraphs(sent[0]) if t.startswith(before)]
    (r1,) = [t for t in paragraphs(sent[1]) if t.startswith(after)]
    assert all(name in r0 for name in stops)
    assert stops[0] not in r1 and all(name in r1 for name in stops[1:])
    for messages, head in ((sent[0], before), (sent[1], after)):
        assert order_of(messages, head) < order_of(messages, "## Status")
        assert before_the_image(messages, head)


def dcr_now(task):
    """The suite's DCR task whose closure appears on the first step (trigger 1 km)."""
    c = dict(task.constraints["closures"][0])
    c["trigger"] = [task.start["x"], task.start["y"], 1000.0]
    constraints = {**task.constraints, "closures": [c]}
    return dataclasses.replace(task, id="dcr-now", constraints=constraints)


def test_dcr_notice_once_with_the_closure_as_a_waypoint_chain(world, suite):
    task = dcr_now(suite["DCR"])
    sent, _ = actions(world, task, 3, tasks=[task])
    head = TEXTS["notice.DCR"].split("{closures}")[0]
    points = task.constraints["closures"][0]["points"]

    def notices(messages):
        return [t for t in paragraphs(messages) if t.startswith(head)]

    assert notices(sent[0]) == [] and notices(sent[2]) == []  # once: the step it appears
    (notice,) = notices(sent[1])
    assert f"Closed segment 1 ({len(points)} waypoints;" in notice
    for link in chain_steps(points):
        assert link in notice
    assert order_of(sent[1], head) < order_of(sent[1], "## Status")
    assert before_the_image(sent[1], head)
    # the env's own wording of the same notice is not repeated
    assert not any("NOTICE: a way ahead" in t for t in paragraphs(sent[1]))


# --------------------------------------------------------------------------- overrides
def test_an_override_replaces_exactly_the_named_text(world, suite, tmp_path):
    f = tmp_path / "paper.yaml"
    f.write_text(
        "system.SGN: 'PAPER SGN PROMPT in {city}.'\n"
        "task.SGN: '[Short Navigation Task] Start: {start} Goal: {goal} PAPER'\n",
        encoding="utf-8",
    )
    (ours,), _ = actions(world, suite["SGN"], 1)
    (theirs,), _ = actions(world, suite["SGN"], 1, prompts=str(f))
    first = "PAPER SGN PROMPT in Helsinki."
    assert theirs[0]["content"] == ours[0]["content"].replace(
        TEXTS["system.SGN"].replace("{city}", "Helsinki"), first
    )
    assert theirs[0]["content"].startswith(first + "\n\n")
    block = task_block(theirs)
    start = re.search(r"^Start: (.*)$", task_block(ours), re.M).group(1)
    goal = re.search(r"^Goal: (.*)$", task_block(ours), re.M).group(1)
    assert block == f"[Short Navigation Task] Start: {start} Goal: {goal} PAPER"
    # everything else of the user message is as before
    assert paragraphs(theirs)[1:] == paragraphs(ours)[1:]
    (lgn,), _ = actions(world, suite["LGN"], 1, prompts=str(f))
    assert lgn[0]["content"].startswith(TEXTS["system.LGN"].replace("{city}", "Helsinki"))
    f.write_text("system.XYZ: x\n", encoding="utf-8")
    with pytest.raises(UrbanGymError, match=r"unknown prompt names \['system.XYZ'\]"):
        load_scheme("urbanground-react", prompts=f)


# --------------------------------------------------------------------------- memory
def past_pairs(messages):
    middle = messages[1:-1]
    assert [m["role"] for m in middle] == ["user", "assistant"] * (len(middle) // 2)
    return list(zip(middle[::2], middle[1::2]))


def has_image(content):
    return not isinstance(content, str) and any(p["type"] == "image_url" for p in content)


def test_the_whole_conversation_is_kept_without_past_images(world, suite):
    sent, face = actions(world, suite["LGN"], 6)
    assert face["history"] == {"turns": "all", "images": False}
    assert face["sources"]["history"] == "scheme"
    for k, messages in enumerate(sent):
        pairs = past_pairs(messages)
        assert len(pairs) == k  # every earlier turn
        for j, (user, _) in enumerate(pairs):
            assert not has_image(user["content"])
            earlier = "\n\n".join(texts(sent[j][-1]["content"]))
            assert user["content"].startswith(earlier.split("\n\nImage: ")[0])


@pytest.mark.parametrize(
    "options,window,images",
    [
        ({"history": 2}, 2, 0),  # --history wins over the scheme's default
        ({"scheme_config": {"past_images": 2}}, 5, 2),  # the last 2 past turns keep theirs
        ({"history_images": True}, 5, 5),  # --history-images wins
    ],
)
def test_the_history_switches_win(world, suite, options, window, images):
    sent, face = actions(world, suite["LGN"], 6, **options)
    last = sent[-1]
    pairs = past_pairs(last)
    assert len(pairs) == window
    kept = [has_image(user["content"]) for user, _ in pairs]
    assert kept == [False] * (window - images) + [True] * images
