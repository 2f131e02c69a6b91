"""What the model is sent under each setting -- main, without location, without memory,
without map -- for every scheme on every family it runs on, read from the chat requests
the scripted server received.

360CityArena (Watanabe et al.), appendix A.4: each step the model gets "the viewpoint
image, a map indicating the agent's current location, the Reflection Memory, and the
task-specific reference image" -- the main setting: one map, with the agent's arrow. Its
Section 5.2 / Table 3 compare the agent "w/o location": no map of its current location.
"Without memory" drops the memory texts (as CityNav's component table switches AgentNav's
memory off); "without map" drops every map image. An explicit switch wins over the
scheme's defaults and the family's (:mod:`urban_gym.baselines.lmm.face`), whatever the
scheme: the schemes come from the registry, so one added later is covered too.

A setting a family has nothing for (StreetGraph and CityWalk show no location map) is
checked as a no-op recorded in the manifest's face description; asking a family for a
map it cannot draw is an error naming the family.
"""

from __future__ import annotations

import base64
import io
import json

import gymnasium as gym
import numpy as np
import pytest
from PIL import Image

from tests.conformance.scripted import scripted_episode
from urban_gym.baselines.lmm.agent import LMMAgent
from urban_gym.baselines.lmm.schemes import schemes
from urban_gym.baselines.lmm.server import ScriptedServer
from urban_gym.errors import InputError
from urban_gym.families.posegraph360.env import LOCATION_ARROW
from urban_gym.render.map import STYLE
from urban_gym.tasks.families import FAMILIES
from urban_gym.wrappers.protocols import title

#: family -> (env id, small gym.make kwargs, the task type of the episode)
FAMILY_ENVS = {
    "posegraph360": (
        "UrbanGym/PoseGraph360-Procedural-v0",
        {"view_size": 48, "pano_width": 192, "map_size": 128},
        "map_navigation",  # a task with a reference image (its route map)
    ),
    "streetgraph": ("UrbanGym/StreetGraph-Procedural-v0", {"image_size": 32}, None),
    "citywalk": ("UrbanGym/CityWalk-v0", {"view_size": 32}, "SGN"),
}
#: setting -> the agent's explicit switches
SETTINGS = {
    "main": {},
    "without-location": {"location": False},
    "without-memory": {"memory": "none"},
    "without-map": {"map": False},
}
#: captions of the map images in a user message (the location map, an extra map)
MAP_CAPTIONS = ("Map", "Overview map")
#: headings of the memory texts in a user message
MEMORY_HEADINGS = ("## Your memory", "## Your decisions so far", "## Previous visits")
#: pixels of the agent arrow's fill that make an arrow: a map draws 16-40 of them after JPEG
#: encoding (fewer where the arrow sits on the task's start marker), a map or view without
#: the arrow at most 3
ARROW_PIXELS = 10


def _cases():
    out = []
    for name, cls in schemes().items():
        for family in cls.families or tuple(FAMILIES):
            for setting in SETTINGS:
                out.append(pytest.param(name, family, setting, id=f"{name}-{family}-{setting}"))
    return out


@pytest.fixture(scope="module")
def worlds():
    """family -> (client's core env, scripted server, task); made on first use."""
    made: dict[str, tuple] = {}

    def get(family):
        if family not in made:
            assert family in FAMILY_ENVS, f"add a small env of family {family!r} to FAMILY_ENVS"
            env_id, kw, task_type = FAMILY_ENVS[family]
            core = gym.make(env_id, **kw)
            mirror = gym.make(env_id, **kw)  # the server's env, reused episode after episode
            server = ScriptedServer(
                env_id=env_id,
                env_kwargs=kw,
                env_factory=lambda i, k: mirror,
                record_requests=True,
            ).start()
            tasks = core.unwrapped.tasks
            task = next(t for t in tasks if task_type is None or t.type == task_type)
            made[family] = (core, server, task)
        return made[family]

    yield get
    for core, server, _ in made.values():
        server.stop()
        core.close()


@pytest.fixture(scope="module")
def episodes(worlds):
    """(scheme, family, setting) -> (action requests, face description); run once each."""
    done: dict[tuple, tuple] = {}

    def get(scheme, family, setting, steps=2):
        key = (scheme, family, setting)
        if key not in done:
            done[key] = run(worlds(family), scheme, SETTINGS[setting], steps)
        return done[key]

    return get


def run(world, scheme, switches, steps=2):
    """An episode of ``steps`` steps: the action requests sent, the face description."""
    core, server, task = world
    sent, description = scripted_episode(core, server, task, steps, scheme=scheme, **switches)
    return [r for r in sent if r["kind"] is None], description


# --------------------------------------------------------------------------- reading requests
def shown(request):
    """``(captions, images, texts)`` of a request's current user message."""
    content = request["messages"][-1]["content"]
    if isinstance(content, str):
        return [], [], [content]
    captions, images, texts, caption = [], [], [], None
    for part in content:
        if part["type"] == "text" and part["text"].startswith("Image: "):
            caption = part["text"][len("Image: ") :]
        elif part["type"] == "text":
            texts.append(part["text"])
        else:
            url = part["image_url"]["url"]
            data = base64.b64decode(url.split(",", 1)[1])
            images.append(np.asarray(Image.open(io.BytesIO(data)).convert("RGB")).astype(int))
            captions.append(caption)
            caption = None
    return captions, images, texts


def arrow_pixels(image, colour=STYLE["agent_fill"]):
    """Pixels of an agent-arrow fill colour (within JPEG noise): the core map's amber, or
    the red of PoseGraph360's map of the current location.
    """
    r, g, b = colour
    near = (abs(image[..., 0] - r) < 60) & (abs(image[..., 1] - g) < 60)
    return int((near & (abs(image[..., 2] - b) < 120)).sum())


def maps_of(request, face):
    """``[(caption, arrow pixels)]`` of the map images of a request; a map the face
    describes as the family's map of the current location is checked for its red arrow
    (red elsewhere, a map-navigation task's goal marker, is not an arrow), any other for
    the core map's amber one.
    """
    captions, images, _ = shown(request)
    kinds = {title(m["key"]): m["kind"] for m in face["maps"]}
    return [
        (c, arrow_pixels(im, LOCATION_ARROW if kinds.get(c) == "location" else STYLE["agent_fill"]))
        for c, im in zip(captions, images)
        if c in MAP_CAPTIONS
    ]


def others_of(request):
    """The captions of the images that are not maps (camera views, reference images)."""
    return [c for c in shown(request)[0] if c not in MAP_CAPTIONS]


def memory_shown(request):
    return any(h in t for t in shown(request)[2] for h in MEMORY_HEADINGS)


# --------------------------------------------------------------------------- the matrix
@pytest.mark.parametrize("scheme,family,setting", _cases())
def test_the_model_sees_what_the_setting_says(episodes, scheme, family, setting):
    sent, face = episodes(scheme, family, setting)
    main, main_face = episodes(scheme, family, "main")
    assert len(sent) == 2 and len(main) == 2, "two action requests each"
    first, second = sent
    # the camera view(s) and the task's reference image are never ablated
    assert others_of(first) == others_of(main[0]) and others_of(main[0])
    maps = maps_of(first, face)
    if setting == "main":
        if family == "posegraph360":  # A.4: one map of the current location, with the arrow
            assert [c for c, _ in maps] == ["Map"], maps
            assert maps[0][1] >= ARROW_PIXELS, "the location map shows the agent's arrow"
            assert memory_shown(second), "A.4: the reflection memory is an input every step"
        else:  # a family that draws no location map gets none
            assert maps == []
    elif setting in ("without-location", "without-map"):
        assert maps == [], f"{setting}: the model was sent maps {maps}"
        assert face["maps"] == [] and not face["agent_arrow"]
        assert face["sources"]["location"].startswith("user")
        if not main_face["maps"]:  # nothing to remove: a recorded no-op
            assert any("nothing removed" in n for n in face["notes"]), face["notes"]
    elif setting == "without-memory":
        assert maps == maps_of(main[0], main_face)
        assert not memory_shown(first) and not memory_shown(second)
        # nor is the model asked to write a memory it will never be shown
        system = first["messages"][0]["content"]
        assert '"memory"' not in system and "`memory`" not in system, system
        assert "Reflection memory" not in system
        assert face["memory"] is None and face["sources"]["memory"] == "user"
    # no image anywhere shows the arrow without a location map
    if setting in ("without-location", "without-map"):
        captions, images, _ = shown(first)
        for c, im in zip(captions, images):
            if c not in ("View",) and not (c or "").startswith("Views"):
                assert arrow_pixels(im) < ARROW_PIXELS, f"{c} shows the agent's arrow"
    # the manifest's description says what was sent
    assert [m["key"] for m in face["maps"]] == [
        "map" if c == "Map" else "overview_map" for c, _ in maps
    ]
    keys = [i["key"] for i in face["images"] if i["key"] not in ("map", "overview_map")]
    others = others_of(first)
    assert keys and len(others) >= len(keys)  # a key may hold several images (options)
    if set(others) <= {title(k) for k in keys}:  # one image per key, captioned by its key
        assert set(others) == {title(k) for k in keys}
    if setting != "without-memory" and face["memory"] is not None:
        assert memory_shown(second)
    if face["memory"] is None:
        assert not memory_shown(second)
    past = sum(m["role"] == "assistant" for m in second["messages"])
    turns = face["history"]["turns"]  # a number, or "all": the whole conversation
    assert past == (1 if turns == "all" else min(1, turns)), "the history window named"


# --------------------------------------------------------------------------- around the matrix
def test_without_memory_switches_off_a_schemes_own_memory(worlds):
    """PReP keeps its own memory of earlier steps (no memory texts on the face): *without
    memory* empties what its reflection call is shown, and the manifest says so.
    """
    core, server, task = worlds("streetgraph")
    seen = {}
    for setting in ("main", "without-memory"):
        sent, face = scripted_episode(core, server, task, 2, scheme="prep", **SETTINGS[setting])
        second = [r for r in sent if r["kind"] == "memory_reflection"][1]
        seen[setting] = (second["messages"][-1]["content"], face["notes"])
    text, notes = seen["main"]
    assert "Decision 1: perceived" in text and not any("own memory" in n for n in notes)
    text, notes = seen["without-memory"]
    assert "Decision 1" not in text and "keeps no memory" in text
    assert any("the scheme's own memory" in n for n in notes), notes


def test_without_location_draws_an_extra_map_without_the_arrow(worlds):
    """``--map --no-location-prior``: the extra map stays, north-up over the district,
    and no image shows the agent's arrow; with the location shown both maps carry it.
    """
    world = worlds("posegraph360")
    sent, face = run(world, "react-reflection", {"map": {"size": 128}}, steps=1)
    maps = maps_of(sent[0], face)
    assert [c for c, _ in maps] == ["Map", "Overview map"]
    assert all(px >= ARROW_PIXELS for _, px in maps), maps  # the check sees an arrow
    assert face["sources"]["map"] == "user" and face["agent_arrow"]
    sent, face = run(world, "react-reflection", {"map": {"size": 128}, "location": False}, 1)
    maps = maps_of(sent[0], face)
    assert [c for c, _ in maps] == ["Map"]  # the only map now: under the key "map"
    assert maps[0][1] < ARROW_PIXELS, "the map without location shows the agent's arrow"
    assert face["maps"] == [{"key": "map", "kind": "map", "view": "district", "agent_arrow": False}]


@pytest.mark.parametrize("family", ["streetgraph", "citywalk"])
def test_asking_a_family_for_a_location_map_it_cannot_draw_is_an_error(worlds, family):
    core, server, _ = worlds(family)
    agent = LMMAgent(base_url=server.url, model="m", location=True)
    with pytest.raises(InputError, match=f"the '{family}' family draws no map"):
        agent.wrap(core)
    agent.close()


def test_without_map_and_a_location_map_contradict(worlds):
    core, server, _ = worlds("posegraph360")
    agent = LMMAgent(base_url=server.url, model="m", map=False, location=True)
    with pytest.raises(InputError, match="contradicts location=True"):
        agent.wrap(core)
    agent.close()


def test_citywalk_records_that_its_own_map_tool_stays(episodes):
    _, face = episodes("urbanground-react", "citywalk", "without-location")
    assert any("open_map" in n for n in face["notes"]), face["notes"]


def test_no_map_is_told_from_the_default_on_the_command_line():
    from urban_gym.baselines.lmm.options import lmm_options
    from urban_gym.cli import build_parser

    def parse(*extra):
        argv = ["eval", "UrbanGym/PoseGraph360-v0", "--out", "x", "--agent", "lmm", *extra]
        return build_parser().parse_args(argv)

    assert "map" not in lmm_options(parse())  # not given: the scheme's or family's
    assert lmm_options(parse("--no-map"))["map"] is False
    assert lmm_options(parse("--map"))["map"] is True
    opts = lmm_options(parse("--history", "1", "--no-history-images", "--memory", "none"))
    assert (opts["history"], opts["history_images"], opts["memory"]) == (1, False, "none")


def test_eval_records_what_the_model_saw_in_the_manifest(tmp_path, worlds):
    """The issue's own command line, ``--scheme react-reflection --no-location-prior``,
    through ``urban-gym eval``: no map is sent, and the manifest says so.
    """
    from urban_gym.cli import main
    from urban_gym.eval.records import RunDir

    env_id, kw, _ = FAMILY_ENVS["posegraph360"]
    core, server, _ = worlds("posegraph360")
    task = next(t for t in core.unwrapped.tasks if t.type == "localization")
    start = len(server.recorded)
    argv = ["eval", env_id, "--out", str(tmp_path / "run"), "--agent", "lmm"]
    argv += ["--scheme", "react-reflection", "--no-location-prior", "--base-url", server.url]
    argv += ["--model", "m", "--env-kwargs", json.dumps(kw), "--task-ids", task.id]
    assert main([*argv, "--no-progress", "--no-visibility", "--max-episodes", "1"]) == 0
    sent = [r for r in server.recorded[start:] if r["kind"] is None]
    assert sent and not any(c in MAP_CAPTIONS for r in sent for c in shown(r)[0])
    config = RunDir(tmp_path / "run").read_manifest()["agent"]["config"]
    face = config["face"]
    assert config["location"] is False and face["maps"] == [] and not face["agent_arrow"]
    assert face["sources"]["location"] == "user" and face["sources"]["memory"] == "scheme"
    assert face["memory"] == {"kind": "reflection", "budget": 4000}
    assert face["reply_format"]["action"] == "flat" and not face["reply_format"]["json_schema"]
    assert {i["key"] for i in face["images"]} == {"view", "reference"}
