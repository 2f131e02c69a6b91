"""Everything PoseGraph360's language-model face writes, in one place: its prompt protocol
(:class:`ReActProtocol`: ReAct JSON replies with a reflection memory) and the texts of
360CityArena's agent (:data:`REACT_REFLECTION`, used by the ``react-reflection`` scheme of
:mod:`urban_gym.families.posegraph360.agent`).

The texts are written in our own words to the paper's specification (the same fields,
rules and inputs; none of the paper's sentences). ``--prompts FILE`` (a YAML or JSON
mapping of these names to texts) replaces any of them, e.g. with the paper's exact wording;
``{placeholders}`` in braces are filled in by the scheme.
"""

from __future__ import annotations

from typing import Any

from urban_gym.envs.actions import ActionSet
from urban_gym.errors import InvalidAction
from urban_gym.families.posegraph360.tasks.types import DEFAULT_FORWARD_FRAMES
from urban_gym.wrappers.protocols import PromptProtocol


class ReActProtocol(PromptProtocol):
    """PoseGraph360: think, act, keep notes, answer (ReAct JSON).

    The reply is 360CityArena's (Appendix B.1): one flat JSON object
    ``{"thought": ..., "action": "W", "memory": ..., "answer": "MEDIUM"}`` -- the action's
    name alone in ``action``, the size of a move or turn (SMALL / MEDIUM / LARGE) and the
    final answer in ``answer`` -- and no JSON schema, which the paper's prompt does not
    show (``LMMInterface(include_schema=True)``, ``--action-schema``, adds it). The parser
    reads the nested form (``"action": {"name": "W", "size": "SMALL"}``) as well.
    """

    name = "react"
    action_format = "flat"
    param_fields = {"size": "answer", "text": "answer"}
    reply_order = ("thought", "action", "memory", "answer")
    show_schema = False
    intro = (
        "You explore a city through 360-degree street-level video. You see one camera view "
        "at a time; at a junction the streets you can take are drawn as red arrows. Think "
        "step by step, then act. End the task with the ANSWER "
        "action when you know the answer or have reached the goal."
    )
    reply_fields = ("thought", "memory", "answer")
    field_help = {
        "thought": "what you see and why you take this action",
        "memory": "your reflection memory, shown back to you next turn verbatim; an empty "
        'string ("") keeps the memory as it is (see "Reflection memory" below)',
        "answer": "with ANSWER: your final answer (in a navigation task it may stay empty: "
        "ANSWER then means you have arrived); with W, A, D, Q or E: the size, SMALL, MEDIUM "
        "or LARGE; otherwise an empty string",
    }
    fill_from_fields = {"*": "answer"}

    #: The reflection instruction (360CityArena's reflection rules, in our own words).
    reflection = (
        "## Reflection memory\n"
        "You only see the current view, so your memory is what carries you from step to "
        "step. Read any text you can make out in the view and record what matters. The "
        "memory you write replaces the one shown to you, so never write a fresh note in "
        "place of the old one: copy the previous reflection and extend it. Keep more "
        "rather than less. Reflect on: the goal of the task and your current plan; what "
        "you tried and whether it worked; the places you have been and what you found "
        "there; where you are now and what is still to do. To leave the memory unchanged, "
        'write an empty string ("").'
    )

    def reply_instructions(self, action_set: ActionSet) -> str:
        """The reply's fields, the size rule of W/A/D/Q/E and the reflection instruction
        (none when the face keeps no memory: :meth:`without_fields`).
        """
        small, medium, large = DEFAULT_FORWARD_FRAMES
        sizes = (
            f"Sizes: W moves SMALL = {small} frame, MEDIUM = {medium} frames, LARGE = {large} "
            "frames; A, D, Q and E turn SMALL = 30°, MEDIUM = 60°, LARGE = 90° (24° when no "
            'size is given). Put the size in "answer", e.g. {"action": "A", "answer": "LARGE"}.'
        )
        parts = [super().reply_instructions(action_set), sizes]
        if "memory" in self.reply_fields:
            parts.append(self.reflection)
        return "\n\n".join(parts)

    def example_fields(self) -> dict[str, Any]:
        """The reply fields of the example reply (placeholders; an empty answer)."""
        return {"thought": "...", "memory": "...", "answer": ""}

    def example_actions(self, action_set: ActionSet) -> list[dict[str, Any]]:
        """The example replies' actions, as the paper's examples go: a move with its size,
        a reset of the view, an answer (Appendix B.1).
        """
        return example_actions(action_set)


def example_actions(action_set: ActionSet) -> list[dict[str, Any]]:
    """A MEDIUM move forward, S and an ANSWER with a grid cell -- those of ``action_set``'s
    actions that exist (any other set: its own examples).
    """
    wanted = [
        {"action": "W", "size": "MEDIUM"},
        {"action": "S"},
        {"action": "ANSWER", "text": "x:1 y:2"},
    ]
    out = []
    for a in wanted:
        try:
            out.append(dict(action_set.normalise(a)))
        except InvalidAction:  # an action set without that action or parameter
            continue
    return out or action_set.examples()


# --------------------------------------------------------------------------- 360CityArena
# 360CityArena, Appendix B: a system prompt (ReAct with memory, the actions and their rules,
# the two kinds of image, the JSON reply with thought/action/memory/answer, examples), a
# reflection prompt (how to keep the reflection memory) and one task prompt per type.
REACT_REFLECTION: dict[str, str] = {
    "system": (
        "You explore a city as an agent that alternates reasoning and acting (ReAct). At "
        "every step:\n"
        "1. Think: look at where you are and decide what to do next.\n"
        "2. Act: pick exactly one of the actions below.\n"
        "{actions}\n"
        "Rules of movement:\n"
        "- LEFT, RIGHT and UP take the street marked by a red arrow; choose UP when the big "
        "red arrow points straight ahead and you want to keep going.\n"
        "- LEFT, RIGHT and UP are only possible while you see a red arrow for them.\n"
        "- When W does not move you on, turn the camera to look around: the red arrows "
        "appear at junctions, and you can only go where an arrow shows a way.\n"
        "3. Observe: the next message shows you the result of your action.\n"
        "Images you receive:\n"
        "- the camera view: what you see in front of you, first person;\n"
        "- the map (when given): a top-down map of where you are, the red arrow marking "
        "your position and the way you face.\n"
        "Use both: the map tells you where you are and helps you plan the route.\n"
        "Reply with one flat JSON object with these fields:\n"
        "{fields}\n"
        "Sizes: W, A, D, Q and E take a size SMALL, MEDIUM or LARGE, written in `answer` "
        "(W: a short, normal or long move; A/D: about 30, 60 or 90 degrees, Q/E the same "
        "up or down, LARGE looking straight up or down; without a size a turn or tilt is "
        "about 24 degrees). Put only the size in `answer` with W, nothing else.\n"
        "Example replies:\n{examples}\n"
        "Reply with the JSON object alone, without code fences. Study the camera view "
        "closely before each action and use the map when you have one."
    ),
    "memory": (
        "You keep a written memory: put into `memory` whatever you will need later, or "
        "leave it as an empty string to keep your memory as it is."
    ),
    "reflection": (
        "You see only the current step and at most a few steps before it, so your "
        "reflection memory is how you remember the goal, your plan and what you found. "
        "Read every sign and text in view and note what matters. Your memory replaces the previous one when you write it: carry over "
        "everything from the previous memory that you still need and add the new notes -- "
        "never drop earlier notes by accident. Write generously; you will need it all. "
        "Worth keeping: the goal and its sub-goals, what worked and what did not, the "
        "places you have been and what was there, and where you are now. Think step by "
        "step, then write your updated memory."
    ),
    "task.localization": (
        "{instruction}\nFind out where you started. The reference image is a map with a "
        "grid over it. Your answer must be one cell of that grid: the cell of your starting "
        'position, written as "x:<column> y:<row>" with the integer indices of the grid, '
        "never metres or other coordinates. Explore before you answer -- walk a little, "
        "turn and tilt the camera, look at landmarks from several sides -- and answer only "
        "when you are sure. You have at most {max_steps} steps; answer with the ANSWER "
        "action."
    ),
    "task.landmark_name": (
        "{instruction}\nOnce you stand in front of the place, confirm with the ANSWER "
        "action. It is not far from where you start."
    ),
    "task.landmark_image": (
        "{instruction}\nThe place is the one in the reference image. Once you stand in "
        "front of it, confirm with the ANSWER action. It is not far from where you start."
    ),
    "task.map_navigation": (
        "{instruction}\nWalk from where you start to the goal using the actions. The "
        "reference image is a map: the BLUE marker is your start, the RED marker the goal. "
        "When you have reached the goal, confirm with the ANSWER action."
    ),
    "task.vln": (
        "{instruction}\nReach the destination by following the directions, in order. "
        "When you have arrived, use the ANSWER action."
    ),
    "task.object_count": (
        "{instruction}\nCount only the objects in the stated area, side or stretch of "
        "road, measured from where you stand and along the road described; leave out "
        "anything outside it. A block means all four sides of it unless one side is named. "
        "Give the answer as a number with the ANSWER action."
    ),
    "task.relational": (
        "{instruction}\nThe named place is close by: find it, then give the name asked "
        "for with the ANSWER action."
    ),
}
