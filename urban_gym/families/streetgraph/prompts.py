"""Everything StreetGraph's language-model face writes, in one place: its prompt protocol
(:class:`VerbalizedPathProtocol`: the options with their compass bearings, the path put
into words before the choice) and the texts of CityNav's AgentNav (:data:`AGENTNAV`, used
by the ``agentnav`` scheme of :mod:`urban_gym.families.streetgraph.agent`).

The texts are written in our own words to the paper's specification (the same fields,
rules and inputs; none of the paper's sentences). ``--prompts FILE`` (a YAML or JSON
mapping of these names to texts) replaces any of them, e.g. with the paper's exact wording;
``{placeholders}`` in braces are filled in by the scheme.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium import spaces

from urban_gym.wrappers.parsing import DEFAULT_FIELD_SYNONYMS
from urban_gym.wrappers.protocols import PromptProtocol

#: the system prompt's first paragraph by (instruction task, images shown, link travel)
#: (see :meth:`VerbalizedPathProtocol.for_env`); CityNav's setting is (False, True, False)
INTROS: dict[tuple[bool, bool, bool], str] = {
    (False, True, False): (
        "You walk through a city on its streets, from intersection to intersection, "
        "towards a named destination. There is no map. At each intersection you see one "
        "image per street leaving it, with its compass bearing (0 = north, 90 = east). "
        "Choose the street that brings you closer to the destination."
    ),
    (False, False, False): (
        "You walk through a city on its streets, from intersection to intersection, "
        "towards a named destination. There is no map and there are no pictures: at each "
        "intersection you are told the compass bearing (0 = north, 90 = east) of every "
        "street leaving it. Choose the street that brings you closer to the destination."
    ),
}
for _link in (False, True):
    _moves = (
        "one short step at a time, from one street-level viewpoint to the next"
        if _link
        else "from intersection to intersection"
    )
    _where = "At every viewpoint" if _link else "At each intersection"
    INTROS[(True, True, _link)] = (
        f"You follow a person's written directions through a city's streets, moving {_moves}. "
        "The task text is those directions: the turns to take, what you pass on the way and "
        f"where the walk ends. {_where} you see one image per way on, with its compass "
        "bearing (0 = north, 90 = east), and you are told the direction you are travelling. "
        "Take the way the directions call for next, checking what you see against what they "
        'describe, and choose "stop" once you stand where they say the walk ends.'
    )
    INTROS[(True, False, _link)] = (
        f"You follow a person's written directions through a city's streets, moving {_moves}. "
        "The task text is those directions: the turns to take, what you pass on the way and "
        f"where the walk ends. There are no pictures: {_where.lower()} you are told the "
        "compass bearing (0 = north, 90 = east) of every way on and the direction you are "
        "travelling, so keep count of your turns and of how far you have come. Take the way "
        'the directions call for next, and choose "stop" once you reach where they say the '
        "walk ends."
    )
for _link in (False, True):  # a destination task with link travel reads like street travel
    INTROS.setdefault((False, True, _link), INTROS[(False, True, False)])
    INTROS.setdefault((False, False, _link), INTROS[(False, False, False)])

#: the reply fields of an instruction task (in place of the destination's location and
#: the walking directions to it, which such a task does not have)
INSTRUCTION_FIELDS: tuple[str, ...] = ("instruction_progress", "next_step", "memory", "thought")
INSTRUCTION_FIELD_HELP: dict[str, str] = {
    "instruction_progress": "which of the directions you have carried out so far, and "
    "where in them you are now",
    "next_step": "what the directions tell you to do next",
    "memory": "what to remember for the next step (shown back to you)",
    "thought": "why this choice follows the directions",
}


class VerbalizedPathProtocol(PromptProtocol):
    """StreetGraph: options with compass bearings; verbalize the path before choosing.

    Its wording follows the task (:meth:`for_env`): a destination task (CityNav) asks where
    the destination is and how to walk there; an instruction task (Touchdown) asks how far
    through the directions the agent is and what they say next. Either says whether images
    are shown (a symbolic observation has only bearings).
    """

    name = "verbalized_path"
    intro = INTROS[(False, True, False)]
    #: the heading of the options' list in each observation
    options_heading = "Options (streets leaving this intersection)"
    reply_fields: tuple[str, ...] = (
        "destination_location",
        "current_location",
        "walking_directions",
        "memory",
        "thought",
    )
    field_help = {
        "destination_location": "where exactly the destination is, as well as you know",
        "current_location": "where you estimate you are now",
        "walking_directions": "how to walk from here to the destination",
        "memory": "what to remember for the next intersection (shown back to you)",
        "thought": "why you choose this street",
    }
    field_synonyms = {
        **DEFAULT_FIELD_SYNONYMS,
        "destination_location": ("destination_location", "destination", "goal_location"),
        "current_location": ("current_location", "location", "position", "where_am_i"),
        "walking_directions": ("walking_directions", "directions", "route", "plan"),
        "instruction_progress": ("instruction_progress", "progress", "done_so_far"),
        "next_step": ("next_step", "next", "next_instruction"),
    }

    def for_env(self, env: Any) -> PromptProtocol:
        """This protocol worded for ``env``'s current task: its intro by :data:`INTROS`
        (instruction task or not, images or bearings only, link or street travel) and, on
        an instruction task, the fields :data:`INSTRUCTION_FIELDS`; itself in CityNav's
        setting (a destination task with images).
        """
        u = getattr(env, "unwrapped", env)
        task = getattr(u, "task", None)
        instruction = getattr(task, "type", None) == "instruction"
        images = bool(getattr(u, "images", True))
        link = bool(getattr(u, "link_travel", False)) and instruction
        key = (instruction, images, link)
        if key == (False, True, False):
            return self
        out = copy.copy(self)
        out.intro = INTROS[key]
        if instruction:
            out.reply_fields = tuple(f for f in INSTRUCTION_FIELDS if f not in self.dropped_fields)
            out.field_help = {**self.field_help, **INSTRUCTION_FIELD_HELP}
            out.options_heading = (
                "Options (the ways on from here)"
                if link
                else "Options (streets leaving this intersection)"
            )
        return out

    def observation_parts(
        self, obs: Mapping[str, Any], space: spaces.Space | None, env: Any = None
    ) -> list[tuple[str, Any, str]]:
        """The destination, the direction of travel, then one line and one image per
        option (``Option i: bearing° (compass name)``); padding options are left out.
        """
        if not isinstance(obs, Mapping) or "bearings" not in obs:
            return super().observation_parts(obs, space, env)
        bearings = np.asarray(obs["bearings"], dtype=float).reshape(-1)
        mask = np.asarray(obs.get("action_mask", np.ones(len(bearings) + 1))).reshape(-1)
        valid = [i for i in range(len(bearings)) if i < len(mask) and mask[i] > 0]
        rest = {k: v for k, v in obs.items() if k not in ("bearings", "views", "heading")}
        rest.pop("action_mask", None)
        parts = [p for p in super().observation_parts(rest, space, env) if p[0] == "text"]
        if "heading" in obs:
            h = float(np.asarray(obs["heading"]).reshape(-1)[0]) % 360.0
            parts.append(("text", f"## Your direction of travel\n{_bearing_text(h)}", ""))
        lines = [f"Option {i}: {_bearing_text(bearings[i])}" for i in valid]
        if len(mask) > len(bearings) and mask[len(bearings)] > 0:
            lines.append('You may also "stop" here.')
        parts.append(("text", f"## {self.options_heading}\n" + "\n".join(lines), ""))
        views = obs.get("views")
        if views is not None:
            arr = np.asarray(views)
            for i in valid:
                if i < len(arr):
                    parts.append(("image", arr[i], f"Option {i}: {_bearing_text(bearings[i])}"))
        return parts


def _bearing_text(bearing: float) -> str:
    from urban_gym.wrappers.memory import compass_name

    b = float(bearing) % 360.0
    return f"{b:.0f}° ({compass_name(b)})"


# --------------------------------------------------------------------------- CityNav / AgentNav
# CityNav (AgentNav): the agent sees one image per option with its compass bearing at each
# intersection; the three memory parts (Markovian memory m_t written each step, decision
# history, previous visits with their count); Partial VoP (state the destination's address
# first) and VoP (also where you are and the walking directions from there); the
# self-positioning call every third decision, whose estimate later prompts show.
AGENTNAV: dict[str, str] = {
    "system": (
        "You navigate a real city on its street network, from intersection to "
        "intersection, towards a destination you know only by name. There is no map. At "
        "each intersection you receive one image for each street leaving it, labelled with "
        "its compass bearing (0 = north, 90 = east). Choose the street that takes you "
        "towards the destination, using what you know about the city.\n"
        "Actions:\n{actions}\n"
        "Reply with one JSON object with these fields:\n{fields}"
    ),
    # the same agent on a route described in words (Touchdown-style instruction tasks):
    # no destination is named, so the VoP and address texts do not apply
    "system_instruction": (
        "You walk a real city on its street network, from intersection to intersection, "
        "following a route described to you in words. There is no map. At each "
        "intersection you receive one image for each street leaving it, labelled with its "
        "compass bearing (0 = north, 90 = east). Choose the street that continues the "
        "described route; when the description says you have arrived, stop.\n"
        "Actions:\n{actions}\n"
        "Reply with one JSON object with these fields:\n{fields}"
    ),
    "partial_vop": (
        "Before reasoning about the options, write down the destination's address -- its "
        "street, district and city as precisely as you know them -- and reason from there."
    ),
    "vop": (
        "Before choosing, put your route into words: where the destination is (its "
        "address), where you are now, and the walking directions from here to the "
        "destination, street by street. Then pick the option that starts those directions."
    ),
    "markovian_memory": (
        "Your memory is the only thing that lasts from one intersection to the next: "
        "whatever you write in `memory` is shown to you, word for word, at the next "
        "intersection, and replaces the previous memory. Keep in it everything you still "
        "need -- what lies in which direction, where you have been, your net movement -- "
        "written in the past tense."
    ),
    "decision_history": (
        "Your decisions so far list the direction you took at each intersection, oldest "
        "first; use them to notice loops and backtracking."
    ),
    "previous_visits": (
        "When you come back to an intersection you have visited, you are told how often "
        "you were there and which way you went each time. Avoid repeating a choice that "
        "brought you back, and prefer a direction you have not tried, unless you have a "
        "strong reason (say it)."
    ),
    "self_positioning": (
        "Estimate where you are in the city from the images of this intersection and your "
        "memory. Reply with one JSON object: `estimated_position` (the street, the nearest "
        "crossing street, the district and the city, as precisely as you can), `evidence` "
        "(what in the images or your memory supports it) and `confidence` (a number from 0 "
        "to 1)."
    ),
    # the prompt components C1-C7 of CityNav's prompt-only variants P1-P7 (its appendix,
    # "Component definitions"); urban_gym.families.streetgraph.ablations combines them
    "c1_visual_inference": (
        "Read every image for clues to where it leads before anything else: street and "
        "shop signs, house numbers, names on buildings, transit stops, how the traffic "
        "flows, towers or landmarks on the skyline. Write what each clue tells you in "
        "`visual_cues` and let it guide your choice."
    ),
    "c2_confidence": (
        "Give every option a confidence between 0 and 1 that it takes you closer to the "
        "destination, calibrated so that 0.8 means you would be right four times in five "
        "(`confidence`: option number -> value), and choose the option with the highest "
        "confidence."
    ),
    "c3_protocol": (
        "Decide in four steps, in this order, one field each: `observe` (what each image "
        "shows), `infer` (what that tells you about where you are and where each street "
        "leads), `plan` (which way the destination lies and the route you intend) and "
        "`question` (what could make this plan wrong, and whether it changes your choice)."
    ),
    "c4_cardinal_direction": (
        "Estimate in which compass direction the destination lies from where you are now "
        "(`destination_direction`: N, NE, E, SE, S, SW, W or NW) and prefer the option "
        "whose bearing points most nearly that way."
    ),
    "c5_elimination": (
        "Decide by elimination: rule the options out one at a time -- the street you came "
        "from, streets that brought you back before, streets leading away from the "
        "destination -- with a reason for each (`eliminated`), then choose among the "
        "options left."
    ),
    "c6_team": (
        "You decide for a team. Before you, an image analyst described what each option's "
        "image shows and a planner proposed a route; their reports are in your input. "
        "Weigh them, settle any disagreement, and make the decision."
    ),
    "c6_analyst": (
        "You are the image analyst of a navigation team walking towards the destination "
        "named in the input. Describe, option by option, what the image shows that could "
        "tell where the street leads: signs, names, numbers, landmarks, the kind of area. "
        'Do not choose. Reply with one JSON object: {"analysis": your description}.'
    ),
    "c6_planner": (
        "You are the planner of a navigation team walking towards the destination named in "
        "the input. From the image analyst's report, the memory and what you know of the "
        "city, propose the route: which way the destination lies and which option starts "
        'the route. Reply with one JSON object: {"plan": your route}.'
    ),
    "c7_self_critique": (
        "Before you reply, criticise your own choice in `critique`: why the chosen option "
        "is right and, one by one, why each other option is wrong. If the critique shows "
        "the choice to be inconsistent with what you observed or remembered, change it."
    ),
}

#: The reply fields the prompt components add (component -> fields, in reply order).
COMPONENT_FIELDS: dict[str, tuple[str, ...]] = {
    "C1": ("visual_cues",),
    "C3": ("observe", "infer", "plan", "question"),
    "C4": ("destination_direction",),
    "C5": ("eliminated",),
    "C2": ("confidence",),
    "C7": ("critique",),
}

#: The prompt text of each component (its name in :data:`AGENTNAV`).
COMPONENT_TEXTS: dict[str, str] = {
    "C1": "c1_visual_inference",
    "C2": "c2_confidence",
    "C3": "c3_protocol",
    "C4": "c4_cardinal_direction",
    "C5": "c5_elimination",
    "C6": "c6_team",
    "C7": "c7_self_critique",
}


# --------------------------------------------------------------------------- PReP
# PReP (Zeng et al., 2024), CityNav's outdoor-navigation baseline: perceive the landmarks
# around you with their direction and distance, reflect on them together with the memory of
# earlier steps, plan a long-range route, then decide. Our words, to that description.
PREP: dict[str, str] = {
    "system": (
        "You navigate a real city on its street network, from intersection to "
        "intersection, towards a destination you know only by name. There is no map. At "
        "each intersection you receive one image for each street leaving it, labelled with "
        "its compass bearing (0 = north, 90 = east). Before each decision you have "
        "perceived the landmarks around you, reflected on them with your memory of earlier "
        "steps, and planned a route; those notes are in your input. Choose the street that "
        "carries out the next step of your plan, unless what you see now shows the plan "
        "to be wrong.\n"
        "Actions:\n{actions}\n"
        "Reply with one JSON object with these fields:\n{fields}"
    ),
    "perceive": (
        "Look at the images of this intersection. Name every landmark you recognise or can "
        "read -- buildings, towers, stations, churches, parks, squares, named streets and "
        "well-known shops -- and for each estimate its compass bearing and its distance "
        "from here in metres. Then say where the destination lies from here, as far as "
        "these landmarks and what you know of the city tell you. Reply with one JSON "
        'object: {"perception": your landmarks, bearings, distances and the destination\'s '
        "likely direction}."
    ),
    "reflect": (
        "Put what you perceive now together with your memory of the earlier steps. Where "
        "are you relative to the destination -- its direction and distance from here? Which "
        "landmarks have you seen before, and what did you do then? Have you been going in "
        "circles or away from the destination, and which directions are left untried? "
        'Reply with one JSON object: {"reflection": a few sentences}.'
    ),
    "plan": (
        "Plan the rest of the way to the destination from your reflection: a sequence of "
        "sub-goals (streets to follow, landmarks to reach, directions to keep) that ends at "
        "the destination. Keep your previous plan where it still holds and change it where "
        "the reflection shows it failing. Reply with one JSON object: "
        '{"plan": the numbered sub-goals, the next one first}.'
    ),
}
