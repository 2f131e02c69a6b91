"""CityNav / AgentNav (Dalal et al.) as the paper runs it, checked against the paper's own
statements and values:

* destinations are notable places with an address (Sections 3.1 and 4.1: places a model
  can know from the web; Partial VoP asks for the destination's address), on the shipped
  Helsinki suite, and the statistic generate-suite prints;
* the prompt-component ablation (appendix, "Component definitions", Table 6): which of
  C1-C7 each of P1-P7 has, from the variants' definitions and from the prompts they
  render; the rows of Table 5;
* ``--preset citynav``: the appendix's "LLM parameters", row by row;
* a run against the real scripted server with every CityNav variant -- the base model,
  AgentNav, P1-P7, PReP, Self-Reflection -- completing an episode on a small graph, its
  manifest naming the variant and its settings.
"""

from __future__ import annotations

import json
import re

import pytest

from tests.families.streetgraph.streetgraph_fixture import write_fixture
from urban_gym.baselines.lmm.server import ScriptedServer
from urban_gym.cli import build_parser, main
from urban_gym.errors import UrbanGymError
from urban_gym.eval.records import RunDir
from urban_gym.families.streetgraph.ablations import (
    COMPONENT_LADDER,
    COMPONENTS,
    MATRIX,
    PROMPT_VARIANTS,
)
from urban_gym.families.streetgraph.tasks import load_default_suite, suite_statistics
from urban_gym.tasks.spec import TaskSpec
from urban_gym.tasks.suite import save_suite
from urban_gym.world.places import (
    ADDRESS_SOURCES,
    address_from_tags,
    notability,
    place_kind_of,
)

ENV_ID = "UrbanGym/StreetGraph-v0"


# --------------------------------------------------------------------------- destinations
def test_notability_follows_the_tags_a_person_can_read():
    assert notability({"name": "Ateneum", "wikidata": "Q754507"}) == "wikidata"
    assert notability({"name": "X", "wikipedia": "fi:X"}) == "wikipedia"
    assert notability({"railway": "station", "name": "Kaisaniemi"}) == "railway=station"
    assert notability({"tourism": "attraction"}) == "tourism=attraction"
    # a company's or a shop's encyclopaedia entry is about the firm, a brand's about the chain
    assert notability({"office": "company", "wikidata": "Q1"}) == ""
    assert notability({"shop": "beauty", "wikidata": "Q1"}) == ""
    assert notability({"shop": "department_store", "wikidata": "Q1"}) == "wikidata"
    assert notability({"amenity": "cafe", "brand:wikidata": "Q1"}) == ""
    # never a kind "yes"
    assert place_kind_of({"building": "yes"}, "building") == "building"
    assert place_kind_of({"shop": "yes", "building": "yes"}) == "place"
    assert place_kind_of({"building": "train_station", "public_transport": "station"}) == "station"
    a = address_from_tags(
        {"addr:street": "Kaivokatu", "addr:housenumber": "1", "addr:postcode": "00101"}
    )
    assert a is not None and (a.text, a.source) == ("Kaivokatu 1, 00101", "tags")
    assert address_from_tags({"name": "no address"}) is None


def test_the_shipped_suite_goes_to_notable_places_with_addresses():
    tasks = load_default_suite("helsinki")
    for t in tasks:
        g = t.goal
        assert g["notable"], f"{t.id}: {g['name']} is not notable"
        assert g["category"] not in ("yes", ""), t.id
        assert g["address"]["text"] and g["address"]["source"] in ADDRESS_SOURCES, t.id
        assert g["address"]["street"] in g["address"]["text"]
    by_name = {t.goal["name"]: t.goal for t in tasks}
    # by hand from the OSM data: Kiasma's own addr:* tags; the main station's building's
    assert by_name["Kiasma"]["address"]["text"] == "Mannerheiminaukio 2, 00100 Helsinki"
    assert by_name["Kiasma"]["address"]["source"] == "tags"
    station = by_name["Helsingin päärautatieasema"]
    assert (station["category"], station["address"]["text"]) == (
        "station",
        "Kaivokatu 1, 00101 Helsinki",
    )
    stats = suite_statistics(tasks)["goals"]
    assert stats["tasks"] == 100 and stats["notable"] == 100
    assert sum(stats["address_sources"].values()) == 100 and "none" not in stats["address_sources"]


def test_generation_and_info_print_how_many_places_are_notable(tmp_path, capsys):
    out = tmp_path / "hel.jsonl"
    argv = ["generate-suite", "--family", "streetgraph", "--city", "helsinki", "--out", str(out)]
    assert main([*argv, "--per-type", "4"]) == 0
    printed = capsys.readouterr().out
    m = re.search(r"(\d+) uniquely named places in reach of the graph, (\d+) notable", printed)
    assert m and 0 < int(m.group(2)) < int(m.group(1))
    assert re.search(r"tasks\s+4 to \d+ places, 4 notable", printed)
    assert main(["streetgraph-info", "helsinki"]) == 0
    info = capsys.readouterr().out
    assert f"{m.group(1)} uniquely named places in reach of the graph, {m.group(2)} notable" in info


# --------------------------------------------------------------------------- P1-P7 x C1-C7
#: Table 6 as we have it: P3, P4 and P7 read from the prompts the appendix prints, the
#: other rows our assumption (the table's cells are not in the paper's text we have).
TABLE_6 = {
    "P1": {"C1"},
    "P2": {"C1", "C2"},
    "P3": {"C1", "C4", "C5"},
    "P4": {"C1", "C5"},
    "P5": {"C1", "C3", "C4"},
    "P6": {"C1", "C5", "C6"},
    "P7": {"C1", "C2", "C5", "C7"},
}
#: What each component puts in the system prompt or the reply (component -> pattern).
COMPONENT_MARKS = {
    "C1": r"`visual_cues`",
    "C2": r"`confidence`",
    "C3": r"`observe`[\s\S]*`infer`[\s\S]*`plan`[\s\S]*`question`",
    "C4": r"`destination_direction`",
    "C5": r"`eliminated`",
    "C6": r"image analyst[\s\S]*planner",
    "C7": r"`critique`",
}


def test_the_component_matrix_of_p1_to_p7():
    assert list(COMPONENTS) == [f"C{i}" for i in range(1, 8)]
    assert {p: set(v.components) for p, v in PROMPT_VARIANTS.items()} == TABLE_6
    assert {p: set(comps) for p, (comps, _) in MATRIX.items()} == TABLE_6
    for p in ("P3", "P4", "P7"):
        assert PROMPT_VARIANTS[p].basis.startswith("read from the prompt the appendix prints")
    for p in ("P1", "P2", "P5", "P6"):
        assert PROMPT_VARIANTS[p].basis.startswith("assumed")
    # the prompt-only variants keep AgentNav's memory and self-positioning, without VoP
    for v in PROMPT_VARIANTS.values():
        assert v.config["vop"] == "none" and v.config["self_positioning_every"] == 3
    assert set().union(*TABLE_6.values()) == set(COMPONENTS)  # every component is used


@pytest.mark.parametrize("name", sorted(TABLE_6))
def test_each_variant_renders_exactly_its_components(name):
    from tests.baselines.scheme_render import render

    messages = render("agentnav", "streetgraph", None, {"ablation": name})
    system = messages[0]["content"]
    shown = {c for c, mark in COMPONENT_MARKS.items() if re.search(mark, system)}
    assert shown == TABLE_6[name]
    assert "destination_location" not in system  # no VoP in the prompt-only variants


def test_the_rows_of_table_5():
    from urban_gym.baselines.lmm.schemes import load_scheme

    keys = ("markovian_memory", "decision_history", "previous_visits", "vop")
    rows = {
        n: tuple(load_scheme("agentnav", {"ablation": n}).config[k] for k in keys)
        for n in COMPONENT_LADDER
    }
    assert rows == {
        "base": (False, False, False, "none"),
        "markovian-memory": (True, False, False, "none"),
        "decision-history": (True, True, False, "none"),
        "previous-visit": (True, True, True, "none"),
        "partial-vop": (True, True, True, "partial"),
        "vop": (True, True, True, "full"),
    }
    # the last row is AgentNav as the scheme's defaults have it
    assert load_scheme("agentnav", {"ablation": "vop"}).config == {
        **load_scheme("agentnav").config,
        "ablation": "vop",
    }


def test_ablation_errors_name_the_bad_value():
    def options(*extra):
        from urban_gym.eval.presets import agent_options

        args = build_parser().parse_args(["eval", ENV_ID, "--out", "x", "--agent", "lmm", *extra])
        return agent_options(args)

    from urban_gym.baselines.lmm.schemes import load_scheme

    assert options("--scheme", "agentnav", "--ablation", "P3")["scheme_config"] == {
        "ablation": "P3"
    }
    with pytest.raises(UrbanGymError, match=r"ablation 'P9' is not one of .*P1.*P7"):
        load_scheme(
            "agentnav", options("--scheme", "agentnav", "--ablation", "P9")["scheme_config"]
        )
    with pytest.raises(UrbanGymError, match=r"--ablation P3: scheme 'cot' has no ablations"):
        options("--scheme", "cot", "--ablation", "P3")
    with pytest.raises(UrbanGymError, match=r"--ablation P3 needs a scheme"):
        options("--ablation", "P3")
    with pytest.raises(UrbanGymError, match=r"components \['C8'\]"):
        load_scheme("agentnav", {"components": ["C8"]})


# --------------------------------------------------------------------------- the preset
def preset_options(*extra):
    from urban_gym.eval.presets import agent_options

    args = build_parser().parse_args(
        ["eval", ENV_ID, "--out", "x", "--agent", "lmm", "--preset", *extra]
    )
    return agent_options(args)


def test_preset_citynav_has_the_papers_settings_per_model():
    # OpenAI (GPT-4o, GPT-4.1): temperature 1.0, top_p 1.0, penalties 0, n 1, no stream, 8000
    for model in ("gpt-4o", "gpt-4.1", "openai/gpt-4.1-2025-04-14"):
        o = preset_options("citynav", "--model", model)
        assert (o["temperature"], o["max_tokens"]) == (1.0, 8000)
        assert o["extra_body"] == {
            "top_p": 1.0,
            "presence_penalty": 0,
            "frequency_penalty": 0,
            "n": 1,
            "stream": False,
        }
        assert o["preset"]["row"] == "openai"
    # Gemini 2.5 Flash: temperature 1.0, top_p 0.95, top_k 64, one candidate, 8000
    o = preset_options("citynav", "--model", "gemini-2.5-flash")
    assert (o["temperature"], o["max_tokens"]) == (1.0, 8000)
    assert o["extra_body"] == {"top_p": 0.95, "top_k": 64, "n": 1}
    # Qwen 2.5-VL (Ollama): temperature 0.8, top_p 0.9, top_k 40, repeat_penalty 1.1,
    # repeat_last_n 64, num_predict -1
    o = preset_options("citynav", "--model", "qwen2.5vl:32b")
    assert (o["temperature"], o["max_tokens"]) == (0.8, -1)
    assert o["extra_body"] == {
        "top_p": 0.9,
        "top_k": 40,
        "repeat_penalty": 1.1,
        "repeat_last_n": 64,
    }
    # a row named for a model of another name; explicit options win, extra_body merges
    o = preset_options("citynav:gemini", "--model", "my-vlm", "--temperature", "0.2")
    assert o["temperature"] == 0.2 and o["preset"]["row"] == "gemini"
    o = preset_options("citynav", "--model", "gpt-4o", "--extra-body", '{"top_p": 0.5, "seed": 1}')
    assert o["extra_body"]["top_p"] == 0.5 and o["extra_body"]["seed"] == 1
    assert o["extra_body"]["presence_penalty"] == 0


def test_preset_citynav_refuses_a_model_the_paper_gives_no_settings_for():
    with pytest.raises(UrbanGymError, match=r"no settings for model 'gpt-5'.*openai.*gemini.*qwen"):
        preset_options("citynav", "--model", "gpt-5")
    with pytest.raises(UrbanGymError, match=r"no row 'claude'"):
        preset_options("citynav:claude", "--model", "x")


# --------------------------------------------------------------------------- runs
#: every CityNav variant: (scheme, ablation)
VARIANT_RUNS = [
    ("agentnav", "base"),
    ("agentnav", None),
    *[("agentnav", p) for p in sorted(TABLE_6)],
    ("prep", None),
    ("self-reflection", None),
]


@pytest.fixture(scope="module")
def small_suite(tmp_path_factory):
    """One task on the hand-written fixture graph: from X to a named place at c4, with an
    address (two streets' walk, one decision)."""
    tmp = tmp_path_factory.mktemp("citynav")
    d = write_fixture(tmp / "td")
    spec = {"source": "touchdown", "path": str(d), "images": None}
    address = {
        "text": "Kaivokatu 1, 00101 Helsinki",
        "street": "Kaivokatu",
        "housenumber": "1",
        "source": "tags",
        "distance_m": 0.0,
    }
    task = TaskSpec(
        id="od-tower",
        family="streetgraph",
        type="origin_destination",
        difficulty="easy",
        city="fixture",
        instruction="Go to the Clock Tower.",
        start={"node": "X", "heading": 0.0, "graph": spec},
        goal={
            "name": "Clock Tower",
            "nodes": ["c4"],
            "notable": "wikidata",
            "category": "attraction",
            "address": address,
        },
    )
    return save_suite(tmp / "suite.jsonl", [task])


@pytest.mark.parametrize(("scheme", "ablation"), VARIANT_RUNS)
def test_each_variant_completes_an_episode_and_its_manifest_names_it(
    tmp_path, small_suite, scheme, ablation
):
    kw = {"suite": str(small_suite), "observation": "symbolic"}
    out = tmp_path / "run"
    with ScriptedServer(env_id=ENV_ID, env_kwargs=kw, wrap="mixed") as server:
        argv = [
            "eval",
            ENV_ID,
            "--out",
            str(out),
            "--agent",
            "lmm",
            "--suite",
            str(small_suite),
            "--env-kwargs",
            json.dumps({"observation": "symbolic"}),
            "--base-url",
            server.url,
            "--model",
            "gpt-4.1",
            "--preset",
            "citynav",
            "--scheme",
            scheme,
            "--no-progress",
        ]
        assert main(argv + (["--ablation", ablation] if ablation else [])) == 0
    run = RunDir(out)
    (rec,) = run.read_episodes()
    assert (rec["termination"], rec["is_success"]) == ("arrived", True)
    config = run.read_manifest()["agent"]["config"]
    # the variant and its settings
    assert config["scheme"]["name"] == scheme
    assert (config["model"], config["temperature"], config["max_tokens"]) == ("gpt-4.1", 1.0, 8000)
    assert config["preset"]["name"] == "citynav" and config["preset"]["row"] == "openai"
    assert config["extra_body"]["top_p"] == 1.0
    steps = run.read_trace(rec)[1:]
    calls = [c["kind"] for s in steps for c in s.get("calls", [])]
    if scheme == "agentnav":
        variant = config["scheme"]["variant"]
        if ablation is None:
            assert variant["ablation"] is None and variant["all_components_as_in_paper"]
            # VoP: the stated address beside the task's
            assert steps[0]["scheme"]["address"]["task"] == "Kaivokatu 1, 00101 Helsinki"
        else:
            assert (
                variant["ablation"] == ablation
                and config["scheme"]["config"]["ablation"] == ablation
            )
        if ablation in TABLE_6:
            assert set(variant["components"]) == TABLE_6[ablation]
            assert variant["basis"]
            assert "self_positioning" in calls
        if ablation == "base":
            assert not calls and config["scheme"]["config"]["vop"] == "none"
        if ablation == "P6":  # the analyst and the planner, then the decision
            assert calls == ["self_positioning", "perception", "planning"]
    if scheme == "prep":
        assert calls == ["perception", "memory_reflection", "planning"]
        assert config["scheme"]["source"].startswith("PReP")
    if scheme == "self-reflection":
        assert calls == ["draft_review"] and steps[0]["scheme"]["changed"] is False
        assert config["scheme"]["source"].startswith("CityNav")
