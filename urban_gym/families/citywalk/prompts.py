"""CityWalk's language-model face: its prompt protocol (:class:`ObserveReasonActProtocol`:
UrbanGround's observation / reason / action loop) and the texts of UrbanGround's agent
(:data:`URBANGROUND`, used by the ``urbanground-react`` scheme of
:mod:`urban_gym.families.citywalk.agent`; the texts themselves, one named entry per system
prompt, action space, protocol, task template, reminder and notice, are in
:mod:`urban_gym.families.citywalk.urbanground_texts`).

The texts are written in our own words to the paper's specification (the same fields,
rules and inputs; none of the paper's sentences). ``--prompts FILE`` (a YAML or JSON
mapping of these names to texts) replaces any of them, e.g. with the paper's exact wording;
``{placeholders}`` in braces are filled in by the scheme.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from urban_gym.envs.actions import ActionSet
from urban_gym.families.citywalk.urbanground_texts import URBANGROUND
from urban_gym.wrappers.protocols import PromptProtocol, plain_value

__all__ = ["URBANGROUND", "ObserveReasonActProtocol"]


class ObserveReasonActProtocol(PromptProtocol):
    """CityWalk: UrbanGround's visual ReAct loop (Appendix F), in our own words.

    Every turn the reply is one flat JSON object with ``observation``, ``reason`` and
    ``action``; the action object names its action under ``"action"`` and uses the paper's
    field names (``dir``, ``seconds``, ``yaw_rate``, ``pitch_rate``, ``jump``, ``jump_at``,
    ``yaw``, ``pitch``, ``x``, ``y``, ``east``, ``north``, ``factor``). As in the paper the
    prompt gives the schemas and no numeric example action. A question task ends its
    exploration with ``terminate``; the next turn asks for ``{"answer": "A|B|C|D",
    "reason": ...}``. A user with the paper's exact prompt text loads it from a file of
    their own (``system_prompt`` of the language-model face).
    """

    name = "observe_reason_act"
    intro = (
        "You are a pedestrian in a real city, seen in first person. Each turn you get a "
        "screenshot (the first-person view, or the map while it is open), the task and your "
        "earlier turns, and you choose exactly one action. You never get hidden simulator "
        "state: no coordinates, no distance readout, no computed route."
    )
    reply_fields = ("observation", "reason")
    field_help = {
        "observation": "a non-empty string: the visible evidence in this screenshot that "
        "matters for the task",
        "reason": "a non-empty string: why you take the next action",
    }
    #: The answer turn's ``{"answer": ..., "reason": ...}``: the reason goes to the action.
    fill_from_fields = {"reason": "reason"}

    def system_prompt(self, action_set: ActionSet, include_schema: bool | None = None) -> str:
        """Role, the action space (schemas, no example action), the loop, the reply format
        and the two ways an episode ends (question / navigation).
        """
        parts = [
            self.intro,
            "## Action space\n"
            "One action per turn, written as one flat JSON object whose `action` field is "
            "the action's name; give only the parameters listed for that action. These are "
            "schemas, not examples. First-person actions (move, sprint, look, jump, "
            "open_map) work while you see the first-person view, map actions (close_map, "
            "map_select, map_pan, map_zoom, map_orbit) while the map is open; terminate "
            "works in both. A move or sprint lasts at most 2 seconds: a longer request is "
            "cut to 2 seconds. The map shows markers the task makes visible; it never "
            "computes or shows a route.",
            action_set.describe(),
            "## How to reply\n" + self.reply_instructions(action_set),
            "## Ending\n"
            "- Question tasks: explore until what you see is enough to answer, then choose "
            "terminate; do not answer before that. Exploration also ends when the turn "
            "limit is reached. You are then asked for the final answer in a separate turn: "
            'reply with exactly {"answer": "A|B|C|D", "reason": "..."} (a short reason '
            "based on what you saw).\n"
            "- Navigation tasks: keep going until you believe you have arrived, then choose "
            "terminate: your position then is scored. Reaching the destination also ends "
            "the episode, and so does the turn limit. Stay on sidewalks, crossings and "
            "other pedestrian ways where you can.",
        ]
        if self.show_schema if include_schema is None else include_schema:
            parts.append(
                "JSON schema of the action object:\n"
                + json.dumps(action_set.json_schema(), ensure_ascii=False)
            )
        return "\n\n".join(parts)

    def reply_instructions(self, action_set: ActionSet) -> str:
        """The reply's three fields and the rules of the action object."""
        return "\n".join(
            [
                "Each turn: 1. observe (what in the screenshot matters), 2. reason (with "
                "what you remember of earlier turns), 3. act. Reply with exactly one JSON "
                "object, no Markdown and no other text, with exactly these fields:",
                *(f"- `{f}`: {self.field_help[f]}" for f in self.reply_fields),
                "- `action`: one flat action object of the action space; its name goes "
                'in the string field `"action"` (not `"type"`, and not as a key of its '
                "own); choose every number from what you see and remember.",
                'Shape of a reply: {"observation": "...", "reason": "...", "action": '
                '{"action": "<name>", <its parameters>}}.',
                "A reply that cannot be read costs a turn, like any invalid action.",
            ]
        )

    def format_reply(
        self,
        action: Mapping[str, Any],
        fields: Mapping[str, Any] | None = None,
        action_set: ActionSet | None = None,
    ) -> str:
        """A reply for a canonical ``action``: the answer turn's ``{"answer", "reason"}``,
        else ``{"observation", "reason", "action": {"action": name, ...}}``.
        """
        fields = dict(fields or {})
        if action.get("action") == "answer" and "answer" in action:
            out = {"answer": action.get("answer"), "reason": action.get("reason") or ""}
            return json.dumps(out, ensure_ascii=False)
        obj = {"action": action["action"]}
        obj.update(
            {k: plain_value(v) for k, v in action.items() if k != "action" and v is not None}
        )
        out = {f: fields.get(f, "...") for f in self.reply_fields}
        out["action"] = obj
        for f, v in fields.items():
            out.setdefault(f, v)
        return json.dumps(out, ensure_ascii=False)
