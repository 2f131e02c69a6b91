"""The texts of UrbanGround's agent (Appendix F), in our own words, one named entry each.

Written to the paper's specification -- the same fields, rules, inputs and placeholders,
none of its sentences. ``--prompts FILE`` (a YAML or JSON mapping of these names to
texts) replaces any of them, e.g. with the paper's exact wording; each ``{placeholder}``
is filled by the ``urbanground-react`` scheme (:mod:`urban_gym.families.citywalk.agent`)
from the task's structured fields and the env's state
(:mod:`urban_gym.families.citywalk.task_text`).

**The system message** (F.1) is ``system.<TYPE>`` + ``actions.<variant>`` +
``protocol.<variant>``, the variant ``question`` (VR, OU, AEQ) or ``navigation`` (the
rest). NP uses LGN's texts, as the paper does.

==========================  ==============================================================
name                        placeholders
==========================  ==============================================================
``system.<TYPE>``           ``{city}`` (the city's name)
``actions.<variant>``       ``{actions}`` (the env's action list)
``protocol.<variant>``      --
``final_answer``            -- (the answer turn of a question, after terminate)
``task.VR/OU/AEQ``          ``{question}``, ``{option_a}`` .. ``{option_d}``, ``{options}``
                            (the four lettered lines)
``task.SGN/LGN``            ``{start}``, ``{goal}``
``task.IN``                 ``{instructions}`` (the turn-by-turn directions)
``task.CN``                 ``{start}``, ``{goal}``, ``{description}``, ``{closures}``
``task.PTS``                ``{start}``, ``{request}``
``task.III``                ``{start}``, ``{everyday_goal}``
``task.TWS``                ``{start}``, ``{time}``, ``{appointments}``,
                            ``{overall_deadline}``
``task.TWS.appointment``    ``{number}``, ``{place}``, ``{activity}``, ``{deadline}``
                            (one line of ``{appointments}``)
``task.MSP``                ``{start}``, ``{description}``, ``{count}``
``task.DCR``                ``{start}``, ``{goal}``, ``{description}``
``reminder.PTS``            ``{request}``
``reminder.TWS.progress``   ``{completed}``, ``{total}``, ``{time}``
``reminder.TWS.next``       ``{place}``, ``{activity}``
``reminder.TWS.due``        ``{deadline}``
``reminder.TWS.left``       ``{minutes_left}``
``reminder.TWS.overdue``    ``{minutes_overdue}``
``reminder.TWS.done``       --
``reminder.MSP``            ``{visited}``, ``{total}``, ``{remaining}``
``notice.DCR``              ``{closures}``
==========================  ==============================================================

The TWS reminder is ``progress`` then either ``next`` + ``due`` + ``left`` (or
``overdue``) -- a clause without its value (no deadline) is left out, and the sentence
gets a full stop unless it ends in one -- or ``done``.
"""

from __future__ import annotations

_NAV_TAIL = (
    " There is no multiple-choice answer in this task: what counts is where you end up. "
    "Nothing hidden is given to you -- no coordinates, no distance readout, no route -- "
    "only the screenshots, the task text and what you remember of your own turns."
)
_PEDESTRIAN_WAYS = (
    " Keep to sidewalks, crossings, footbridges and other ways meant for people; do not cut "
    "across roads or private ground."
)
_L1_TAIL = (
    " Do not give the answer while you explore; you will be asked for it once you "
    "terminate. Nothing hidden is given to you: no coordinates, no compass angles, no road "
    "data."
)
_CLOSURE_LINES = (
    "Every closed segment is given as a short chain of waypoints, and what is closed is "
    "the line from each waypoint to the next -- not an area around them."
)

SYSTEM: dict[str, str] = {
    "system.VR": (
        "Your task: a multiple-choice question about recognising a place in a "
        "3D model of {city}, answered by looking around in first person. Keep the question "
        "and its four options in mind and look for what tells them apart: shop fronts, "
        "signs, buildings, objects, colours, nearby facilities. Turn the camera and take "
        "short steps that give a better view of the signs or landmarks that matter; do not "
        "wander off or look at the same thing twice." + _L1_TAIL
    ),
    "system.OU": (
        "Your task: a multiple-choice question about orientation in a 3D model "
        "of {city}, answered by looking around in first person. The way you face at the "
        "start is the frame of reference: the question asks where a place is relative to "
        "it (ahead, right, behind, left) or which compass way something lies or faces. "
        "Keep track of every turn and step you take yourself, so that a later view is not "
        "mistaken for the first one. Turn in measured amounts and move little: walking far "
        "loses the reference you need." + _L1_TAIL
    ),
    "system.AEQ": (
        "Your task: a multiple-choice question in a 3D model of {city} whose "
        "answer you probably cannot see from where you start: you have to search for it. "
        "Begin by turning around in measured steps; then walk the nearby streets if you "
        "need to, reading street signs, shop fronts, building names and signs of public "
        "facilities. Let the question and the options steer the search, remember which "
        "directions and streets you have already checked so that each move covers new "
        "ground, and base the answer on what you actually see, not on what you know of "
        "the city. Do not stand still or keep looking at the same scene." + _L1_TAIL
    ),
    "system.SGN": (
        "Your task: walk a short distance in a 3D model of {city} to the "
        "destination the task names; it is close enough to be seen from the start. Use "
        "walking, turning and the map in whatever mix works best." + _PEDESTRIAN_WAYS + " "
        "Keep acting turn after turn until you judge that you have arrived, or the turns "
        "run out." + _NAV_TAIL
    ),
    "system.LGN": (
        "Your task: walk to a destination in a 3D model of {city} that is far "
        "from the start and most likely out of sight. The map shows where you are and "
        "where the destination is, and map actions let you study how the two lie; it does "
        "not plan or draw a route -- you work out the way yourself from the map and what "
        "you see." + _PEDESTRIAN_WAYS + " Keep acting turn after turn until you judge "
        "that you have arrived, or the turns run out. The start and the goal are described "
        "once, in the task text." + _NAV_TAIL
    ),
    "system.IN": (
        "Your task: follow turn-by-turn directions through a 3D model of {city}, "
        "in the order given (for instance: straight on to the next junction, left there, "
        "right at the one after). Recognise the junctions, forks, crossings and landmarks "
        "the directions mention in what you see, and keep count of the directions already "
        "done." + _PEDESTRIAN_WAYS + " Keep acting turn after turn until you judge that "
        "you have carried out the last direction and stand where it leads, or the turns "
        "run out." + _NAV_TAIL
    ),
    "system.CN": (
        "Your task: walk to a destination in a 3D model of {city} while one or "
        "more ways are closed from the first turn to the last. " + _CLOSURE_LINES + " "
        "Your own movement must never cross a closure line, in either direction, at any "
        "time: a single crossing fails the task even if you then reach the destination. "
        "Open the map before you set off to see the closures, where you are and where the "
        "destination is, and plan a way around them. Use walking, turning and the map in "
        "whatever mix works best." + _PEDESTRIAN_WAYS + " Keep acting turn after turn "
        "until you judge that you have arrived without crossing a closure, or the turns run "
        "out. You are not warned when you cross one: go by the screenshots (the map "
        "included), the closures described in the task text and your memory of your "
        "way." + _NAV_TAIL
    ),
    "system.PTS": (
        "Your task: take the user to a nearby place of the kind or name they ask for in a "
        "3D model of {city} (a park, a public toilet, the town hall, ...). Find "
        "out where such a place is and go there: look on the map for candidates around "
        "you, check shop fronts and signs at street level to be sure what a place is, and "
        "walk to it." + _PEDESTRIAN_WAYS + " Remember the streets you have searched so "
        "that you do not go round in circles. When you think you are there, stop and "
        "look straight at its entrance or sign: your last position and view are what is "
        "judged." + _NAV_TAIL
    ),
    "system.III": (
        "Your task: someone states an everyday need in a 3D model of {city} "
        "without naming where to go (for instance: they want to pay in some cash, their "
        "eyes need checking, they need paints for a watercolour). Work out what kind of "
        "place would meet the need -- a bank or ATM, an optician, an art shop, a "
        "pharmacy, a phone shop -- then find such a place nearby and walk there. Use "
        "measured turns, walking and the map with purpose, and check names, signs, logos "
        "and entrances before you decide that a place meets the need."
        + _PEDESTRIAN_WAYS
        + " Remember the streets you have searched so that each move covers new ground. "
        "Keep acting until you judge that you have reached a suitable place." + _NAV_TAIL
    ),
    "system.TWS": (
        "Your task: keep today's appointments in a 3D model of {city}. The "
        "schedule lists places in order, each with a time by which you must be there. "
        "Walk to every place in the order listed and get to each one before its time: "
        "arriving late fails the task even if you get there in the end, and so does "
        "visiting them in another order. Plan an efficient way, head straight for the "
        "next appointment, and do not make detours or stop to look around without need. "
        "Before each turn you are told the time, the appointments done and the time left "
        "before the next one: use it to judge when to hurry. The next appointment's place "
        "is marked on the map; open it whenever you need to find your bearings. Use "
        "measured turns, walking and the map with purpose." + _PEDESTRIAN_WAYS + " As soon "
        "as you reach one place, set off for the next." + _NAV_TAIL
    ),
    "system.MSP": (
        "Your task: visit several places in one outing in a 3D model of {city}. "
        "No order is required and there is no schedule: choosing a good order is the "
        "task. Before you set off, work out where each place lies from you and from the "
        "others (each one is marked on the map), choose an order that avoids going back "
        "and forth, then follow it. Use measured turns, walking and the map with "
        "purpose." + _PEDESTRIAN_WAYS + " When you reach one place, go on to the next one "
        "you have not visited yet without lingering. The task ends when every place is "
        "visited or the turns run out; it is scored by how many you reach and how short "
        "your way is." + _NAV_TAIL
    ),
    "system.DCR": (
        "Your task: walk to a destination in a 3D model of {city}. At first "
        "nothing is in the way: set off as on any trip, using walking, turning and the map "
        "in whatever mix works best." + _PEDESTRIAN_WAYS + " During the walk a way may be "
        "closed: a system notice in your observation tells you exactly when. From that "
        "notice on, one or more ways stay closed to the end of the task. "
        + _CLOSURE_LINES
        + " After the notice your own movement must never cross a closure line, in "
        "either direction: a crossing then fails the task even if you reach the "
        "destination. Walking over the same ground before the notice is allowed -- the "
        "closure did not exist for you yet. When the notice comes, open the map to see "
        "the closure, where you are and where the destination is, and plan a new way "
        "around it. Keep acting turn after turn until you judge that you have arrived "
        "without crossing a closure you were told of, or the turns run out. You are not "
        "warned when you cross one: go by the screenshots (the map included), the notice "
        "and your memory of your way." + _NAV_TAIL
    ),
}

_ACTIONS_HEAD = (
    "Each turn you take exactly one action, written as one flat JSON object: its `action` "
    "field is one of the action names below, and it carries only that action's own "
    "parameters. The list gives the form of each action; it is not an example to copy."
    "\n{actions}\n"
)
_ACTIONS_TAIL = (
    "First-person actions work only in the first-person view, map actions only while the "
    "map is open. A move or sprint lasts at most 2 seconds: a longer one is cut to 2 "
    "seconds. There are no actions besides these."
)

ACTIONS: dict[str, str] = {
    "actions.question": _ACTIONS_HEAD
    + "terminate (in either mode) ends the exploration at once; choose it when what you "
    "have seen is enough to answer with confidence, and you are then asked for your "
    "answer in a separate turn. " + _ACTIONS_TAIL,
    "actions.navigation": _ACTIONS_HEAD
    + "map_select only marks a point on the map: it looks nothing up and plans no route, "
    "and no action computes one. terminate (in either mode) ends the navigation at once "
    "and scores where you are; choose it when you believe the task is done, or when you "
    "decide to stop. " + _ACTIONS_TAIL,
}

PROTOCOL: dict[str, str] = {
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
        'for your answer in a turn of its own, as {"answer": "A|B|C|D", "reason": "..."}. '
        "Exploration also ends at the turn limit. You get the task text, the views and "
        "the conversation so far -- nothing of the simulator's hidden state."
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
        "the turn limit; there is no answer to give. You get the task text (which may "
        "describe the start and the goal once), the views and the conversation so far -- "
        "not your coordinates or the distance left. Open the map for the bigger picture: "
        "it shows the task's markers but plans no route."
    ),
    "final_answer": (
        "Exploration is over. Give your answer to the question as exactly one JSON object "
        'and nothing else (no Markdown): {"answer": "A", "B", "C" or "D", '
        '"reason": a short reason based on what you saw}.'
    ),
}

_QUESTION = "{question}\n{options}"

TASKS: dict[str, str] = {
    "task.VR": _QUESTION,
    "task.OU": _QUESTION,
    "task.AEQ": _QUESTION,
    "task.SGN": (
        "Short-range navigation.\nStart: {start}\nGoal: {goal}\nThe goal is within sight "
        "of the start, so watching where you go is usually the quickest way; the map is "
        "there if it helps. No route is computed for you."
    ),
    "task.LGN": (
        "Long-range navigation.\nStart: {start}\nGoal: {goal}\nThe goal is far away: work "
        "out a route from what you see and from the map, then walk it. No route is "
        "computed or drawn for you."
    ),
    "task.IN": "Follow these directions, step by step:\n{instructions}",
    "task.CN": (
        "Navigation with closed ways.\nStart: {start}\nGoal: {goal}\n{description}\n"
        "Closed for the whole task -- never cross any of these lines:\n{closures}\n"
        "Open the map before you set off to see these closures, where you are and where "
        "the goal is, and plan a way around them from your first step."
    ),
    "task.PTS": (
        "Place search.\nWhere you are: {start}\nRequest: take me to {request}.\nFind a "
        "suitable place nearby that meets the request, walk there and stop at its entrance "
        "or in front of its sign. The map, looking around and walking are all yours to "
        "use."
    ),
    "task.III": (
        "Everyday need.\nWhere you are: {start}\nWhat the person wants: {everyday_goal}\n"
        "Work out what kind of place would meet this need, find one nearby from the signs "
        "you see and the map, and walk there. The kind of place is deliberately not named. "
        "The map, looking around and walking are all yours to use."
    ),
    "task.TWS": (
        "Appointments.\nWhere you are: {start}\nThe time now: {time}\nToday's "
        "appointments, in the order you must keep them:\n{appointments}\nEverything has "
        "to be done by {overall_deadline}. Keep the appointments in exactly this order "
        "and reach each place before its time. The clock runs while you act."
    ),
    "task.TWS.appointment": "{number}. {place} -- {activity} -- by {deadline}",
    "task.MSP": (
        "Several stops.\nWhere you are: {start}\n{description}\nThere are {count} places "
        "to visit, in no set order: plan the shortest way through all of them yourself, "
        "then visit every one."
    ),
    "task.DCR": (
        "Navigation.\nStart: {start}\nGoal: {goal}\n{description}\nWalk to the goal. "
        "Nothing is known to block the way at the moment; use walking, turning and the "
        "map as suits you best."
    ),
}

REMINDERS: dict[str, str] = {
    "reminder.PTS": (
        "Reminder: you are looking for {request}. Once you think you are there, stop and "
        "make sure its entrance or sign is plainly in view."
    ),
    "reminder.TWS.progress": (
        "Schedule: {completed} of {total} appointments done. The time now: {time}."
    ),
    "reminder.TWS.next": "Next appointment: {place} ({activity})",
    "reminder.TWS.due": ", by {deadline}",
    "reminder.TWS.left": " -- {minutes_left} minutes left.",
    "reminder.TWS.overdue": " -- OVERDUE by {minutes_overdue} minutes.",
    "reminder.TWS.done": "Every appointment is done.",
    "reminder.MSP": ("Progress: {visited} of {total} places visited. Still to visit: {remaining}."),
    "notice.DCR": (
        "SYSTEM NOTICE: a closure has just appeared on the map. From now until the end of "
        "the task these ways are closed and must not be crossed (crossing them before this "
        "notice was allowed, crossing them now is not):\n{closures}\nOpen the map now to "
        "see the closure, where you are and where the goal is, and plan a new way around "
        "it."
    ),
}

URBANGROUND: dict[str, str] = {**SYSTEM, **ACTIONS, **PROTOCOL, **TASKS, **REMINDERS}
"""Every named text of the ``urbanground-react`` scheme (see the module docstring)."""
