"""The prompt texts of the schemes, written in our own words to each paper's specification
(the same fields, rules and inputs; none of the papers' sentences).

Each scheme names the texts it uses (``Scheme.prompt_names``); ``--prompts FILE`` (a YAML
or JSON mapping of these names to texts) replaces any of them, e.g. with a paper's exact
wording for an exact reproduction. ``{placeholders}`` in braces are filled in by the
scheme (``{landmark}``, ``{directions}``, ...); a replacement text may use the same ones.
"""

from __future__ import annotations

# --------------------------------------------------------------------------- 360CityArena
# Appendix B of seed 000: a system prompt (ReAct with memory, the actions and their rules,
# the two kinds of image, the JSON reply with thought/action/memory/answer, examples), a
# reflection prompt (how to keep the reflection memory) and one task prompt per type.
REACT_REFLECTION: dict[str, str] = {
    "system": (
        "You explore a city as an agent that alternates reasoning and acting (ReAct) and "
        "keeps a written memory. At every step:\n"
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
        "Reply with a JSON object with these fields:\n"
        "{fields}\n"
        "Leave `memory` as an empty string to keep your memory as it is.\n"
        "Sizes: W, A, D, Q and E take a size SMALL, MEDIUM or LARGE, in `answer` or as the "
        "action's `size` (W: a short, normal or long move; A/D: about 30, 60 or 90 degrees, "
        "Q/E the same up or down within 60 degrees; without a size a turn or tilt is about "
        "24 degrees). Put only the size with W, nothing else.\n"
        "Example replies:\n{examples}\n"
        "Reply with the JSON object alone, without code fences. Study the camera view "
        "closely before each action, use the map when you have one, and put into `memory` "
        "whatever you will need later."
    ),
    "reflection": (
        "You see only the current step, so your reflection memory is how you remember the "
        "goal, your plan and what you found. Read every sign and text in view and note what "
        "matters. Your memory replaces the previous one when you write it: carry over "
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

# --------------------------------------------------------------------------- CityNav / AgentNav
# Seed 003: the agent sees one image per option with its compass bearing at each
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
}

# --------------------------------------------------------------------------- UrbanGround
# Seed 002, appendix F.1: the system message is the task's prompt, then the action space
# (one flat object per turn, the `action` field names it, only its own parameters, no
# `type` field, a move or sprint lasts at most 2 s and a longer one is clamped, first-
# person actions only in first-person mode and map actions only with the map open, no
# action outside the list), then the ReAct output protocol (observation, reason, action;
# exactly one JSON object, no Markdown). Questions: do not answer while exploring;
# terminate, then give the final answer as {"answer": "A|B|C|D", "reason": ...}.
# Navigation: terminate on arrival; the state at that moment is scored.
URBANGROUND: dict[str, str] = {
    "task.question": (
        "You answer a multiple-choice question about a real city by exploring it in first "
        "person. Keep the question and its options in mind and gather the visual evidence "
        "that tells the options apart -- shop fronts, signs, buildings, objects, colours. "
        "Prefer turning the camera and short moves that give a better view over wandering "
        "or looking at the same thing twice."
    ),
    "task.navigation": (
        "You walk through a real city in first person to reach the destination of your "
        "task. Use the street layout, signs and crossings you see, and the map when it "
        "helps, to find your way."
    ),
    "actions": (
        "Each turn you take exactly one action, written as one flat JSON object: its "
        "`action` field is one of the action names below, and it carries only that "
        "action's own parameters. The list gives the form of each action; it is not an "
        "example to copy.\n{actions}\n"
        "First-person actions work only in the first-person view, map actions only while "
        "the map is open. A move or sprint lasts at most 2 seconds: a longer one is cut to "
        "2 seconds. There are no actions besides these."
    ),
    "protocol.question": (
        "Every exploration turn is one round of a visual ReAct loop:\n"
        "1. observation: the evidence in the current view that matters for the question;\n"
        "2. reason: how that evidence and what you saw and did before decide what to "
        "look at next;\n"
        "3. action: one action from the list.\n"
        "Reply with exactly one JSON object and nothing else (no Markdown), with exactly "
        "the fields `observation` (a short, non-empty text), `reason` (a short, non-empty "
        "text) and `action` (the flat action object; its name goes in its `action` field, "
        "never in a `type` field or as a key). Choose every number from what you see and "
        "remember; there is no example to copy. Do not answer the question while you "
        "explore: when you have seen enough, choose terminate and you will then be asked "
        "for your answer. Exploration also ends at the turn limit. You get the task text, "
        "the views and the conversation so far -- nothing of the simulator's hidden state."
    ),
    "protocol.navigation": (
        "Every navigation turn is one round of a visual ReAct loop:\n"
        "1. observation: the evidence in the current view that matters for the way "
        "(street layout, signs, crossings, obstacles);\n"
        "2. reason: how that evidence and what you saw and did before decide your next "
        "move towards the destination;\n"
        "3. action: one action from the list.\n"
        "Reply with exactly one JSON object and nothing else (no Markdown), with exactly "
        "the fields `observation` (a short, non-empty text), `reason` (a short, non-empty "
        "text) and `action` (the flat action object; its name goes in its `action` field, "
        "never in a `type` field or as a key). Choose every number from what you see and "
        "remember; there is no example to copy. Keep going until you believe you have "
        "arrived, then choose terminate: your position at that moment is scored (you may "
        "also terminate to give up). Without terminate the episode ends on arrival or at "
        "the turn limit; there is no answer to give. You get the task text, the views and "
        "the conversation so far -- not your coordinates or the distance left. Open the "
        "map for the bigger picture: it shows the task's markers but plans no route."
    ),
    "final_answer": (
        "Exploration is over. Give your answer to the question as exactly one JSON object "
        'and nothing else (no Markdown): {"answer": "A", "B", "C" or "D", '
        '"reason": a short reason based on what you saw}.'
    ),
}

# --------------------------------------------------------------------------- reasoning baselines
# Seed 003, section 5.2: chain-of-thought, self-reflection (Reflexion) and GEPA, run on the
# family's own prompts.
REASONING: dict[str, str] = {
    "cot": (
        "Before you choose, think it through step by step in the `reasoning` field: what "
        "you see, what it tells you about where you are and where the goal is, and which "
        "action follows. Then give the action."
    ),
    "reflexion": (
        "You have tried this task before and failed. Your reflections on those attempts "
        "follow; use them to do better this time."
    ),
    "reflect": (
        "Your attempt at the task below failed. Look back at it: what went wrong, and what "
        'will you do differently next time? Reply with one JSON object: {"reflection": '
        "a few sentences, in the first person, that you will read at your next attempt}."
    ),
    "revise": (
        "You improve the instructions (the system prompt) of a navigation agent. You get "
        "the current instructions and how the agent did with them on some tasks. Write a "
        "better version that keeps every rule about actions and the reply format. Reply "
        'with one JSON object: {"prompt": the new instructions}.'
    ),
}
