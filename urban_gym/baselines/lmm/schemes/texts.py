"""The prompt texts of the reasoning baselines that run on every family (chain of thought,
Self-Reflection, Reflexion, GEPA: CityNav, section 5.2), written in our own words. The papers' own agents
keep their texts with their family (``urban_gym/families/<name>/prompts.py``).

Each scheme names the texts it uses (``Scheme.prompt_names``); ``--prompts FILE`` (a YAML
or JSON mapping of these names to texts) replaces any of them. ``{placeholders}`` in braces
are filled in by the scheme; a replacement text may use the same ones.
"""

from __future__ import annotations

# --------------------------------------------------------------------------- reasoning baselines
# CityNav (AgentNav), Section 5.2: chain-of-thought, Self-Reflection (each step's draft
# reviewed and refined before acting), Reflexion (reflection across failed attempts) and
# GEPA, run on the family's own prompts.
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
    "review": (
        "You check a navigation agent's draft decision before it is carried out. You get "
        "the agent's instructions, the input it decided on (the same texts and images) "
        "and its draft reply. Go through the draft's reasoning against the input: is what "
        "it says it sees really there, does each step follow from the one before, does the "
        "chosen action serve the task? Then write the final reply in exactly the format "
        "the agent's instructions ask for: correct or deepen the reasoning where it is "
        "wrong or thin, and change the action only where the checked reasoning calls for "
        "another one. Add a `critique` field saying what you found and what you changed."
    ),
    "revise": (
        "You improve the instructions (the system prompt) of a navigation agent. You get "
        "the current instructions and how the agent did with them on some tasks. Write a "
        "better version that keeps every rule about actions and the reply format. Reply "
        'with one JSON object: {"prompt": the new instructions}.'
    ),
}
