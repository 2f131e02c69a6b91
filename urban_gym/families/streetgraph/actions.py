"""StreetGraph's structured actions (the language-model face) and why an action is invalid."""

from __future__ import annotations

from urban_gym.envs.actions import ActionSet, ActionSpec, Param

#: Why ``stop`` is invalid on an origin-destination task.
STOP_UNAVAILABLE = "stop is not available here: the episode ends when you reach the destination"


def missing_option(option: int, count: int) -> str:
    """Why ``go`` with ``option`` is invalid at a node with ``count`` options."""
    return f"go: option {option} does not exist here; the options are 0..{count - 1}"


def make_action_set(max_degree: int) -> ActionSet:
    """The structured actions of StreetGraph (the language-model face) for up to
    ``max_degree`` options at a node.
    """
    return ActionSet(
        [
            ActionSpec(
                "go",
                "travel along the street of this option to the next intersection (to the "
                "next viewpoint on a task that moves one link at a time)",
                (
                    Param(
                        "option",
                        "int",
                        "the option number as listed",
                        low=0,
                        high=max_degree - 1,
                        key_synonyms=(
                            "index",
                            "street",
                            "choice",
                            "number",
                            "direction",
                            "option_index",
                            "id",
                        ),
                    ),
                ),
                synonyms=("choose", "select", "take", "move", "follow", "option", "pick"),
            ),
            ActionSpec(
                "stop",
                "stop here: you believe you are at the described goal (instruction tasks only)",
                synonyms=("done", "finish", "end", "arrive", "stay"),
            ),
        ]
    )
