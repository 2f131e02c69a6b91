"""``urban-gym report --labeler lmm``: a language model names the dominant failure cause
of each failed episode from its trace, and the report measures its agreement with the
written rules (:mod:`urban_gym.eval.failures`) by Cohen's kappa -- the check the
360CityArena review asked for (its labels came from a model verified by people, with no
agreement figure).

The model receives the task, how the episode ended and a compact trace (per step: the
action, whether it was carried out, the distance to the goal, whether the goal was in view,
the start of the agent's thought), and replies ``{"cause": "<one of the five>"}``.
Episodes the rules mark ``Error`` are not sent; a reply without a readable cause counts in
``unparsed`` and is left out of the kappa.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from urban_gym.eval.failures import CAUSES, ERROR
from urban_gym.eval.stats import cohen_kappa

SYSTEM_PROMPT = (
    "You analyse why an agent failed a city-navigation task. Choose the single dominant "
    "cause among five:\n"
    "Action - low-level control errors: invalid or unreadable actions, walking past the "
    "goal (overshoot), answering or stopping too early.\n"
    "Grounding - the agent's idea of where it is or which way it faces does not match its "
    "true position (wrong self-localization, heading the wrong way, claiming to have "
    "arrived elsewhere).\n"
    "Perception - the target was in view but the agent did not recognise it (did not go "
    "to it or did not name it).\n"
    "Explore - poor exploration: stagnation, loops, revisiting the same places, staying in "
    "one spot, running out of steps.\n"
    "Planning - missed instructions or requirements: left the described route, broke a "
    "constraint (closure, deadline, stops).\n"
    'Reply with one JSON object and nothing else: {"cause": "<Action|Grounding|Perception|'
    'Explore|Planning>"}'
)
MARKER = "Failed episode to label:"


def trace_summary(
    record: Mapping[str, Any], steps: Sequence[Mapping[str, Any]], limit: int = 60
) -> str:
    """The user message for one episode (at most ``limit`` steps, evenly kept)."""
    info = record.get("task_info") or {}
    lines = [
        f"{MARKER} {record.get('key')}",
        f"Task type: {record.get('task_type')} ({record.get('category')}), difficulty "
        f"{record.get('difficulty')}; goal radius {info.get('goal_radius_m')} m.",
        f"Ended: {record.get('termination')} after {record.get('steps')} steps; answer "
        f"{record.get('answer')!r}; metrics "
        + json.dumps(
            {k: v for k, v in (record.get("metrics") or {}).items() if isinstance(v, (int, float))}
        )[:400],
        "Steps (t | action | carried out | distance to goal m | goal in view | thought):",
    ]
    idx = list(range(len(steps)))
    if len(idx) > limit:
        keep = {round(i * (len(idx) - 1) / (limit - 1)) for i in range(limit)}
        idx = sorted(keep)
    for i in idx:
        s = steps[i]
        thought = ((s.get("reply") or {}).get("fields") or {}).get("thought", "")
        lines.append(
            f"{s.get('t')} | {json.dumps(s.get('action'), ensure_ascii=False)[:80]} | "
            f"{s.get('valid', True)} | {s.get('distance_to_goal_m')} | {s.get('goal_visible')} | "
            f"{str(thought)[:100]}"
        )
    return "\n".join(lines)


def parse_label(text: str) -> str | None:
    """The cause named in a reply (the JSON ``cause`` field, else the first cause word)."""
    m = re.search(r'"cause"\s*:\s*"([A-Za-z]+)"', text or "")
    cand = m.group(1) if m else None
    if cand is None:
        m = re.search(r"\b(" + "|".join(CAUSES) + r")\b", text or "", re.IGNORECASE)
        cand = m.group(1) if m else None
    if cand is None:
        return None
    for c in CAUSES:
        if c.lower() == cand.lower():
            return c
    return None


class ModelLabeler:
    """Labels failed episodes with a chat model and compares with the rules.

    Args:
        client: a :class:`~urban_gym.baselines.lmm.client.ChatClient`.
        max_episodes: at most this many failed episodes per run (the first ones).
    """

    def __init__(self, client: Any, max_episodes: int = 200) -> None:
        self.client = client
        self.max_episodes = int(max_episodes)

    def __call__(self, run: Any, breakdown: Mapping[str, Any]) -> dict[str, Any]:
        """Label the run's failed episodes with the model; returns the labels and the agreement with the rules."""
        from urban_gym.baselines.lmm.client import ModelError

        by_key = {r.get("key"): r for r in run.records}
        rows: list[dict[str, Any]] = []
        unparsed = errors = 0
        for ep in breakdown.get("episodes", []):
            if ep["dominant"] == ERROR or len(rows) + unparsed + errors >= self.max_episodes:
                continue
            rec = by_key[ep["key"]]
            msgs = [
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": trace_summary(rec, run.dir.read_trace(rec))},
            ]
            try:
                label = parse_label(self.client.chat(msgs).text)
            except ModelError:
                errors += 1
                continue
            if label is None:
                unparsed += 1
                continue
            rows.append({"key": ep["key"], "rules": ep["dominant"], "model": label})
        rules = [r["rules"] for r in rows]
        model = [r["model"] for r in rows]
        conf: dict[str, Counter] = defaultdict(Counter)
        for a, b in zip(rules, model):
            conf[a][b] += 1
        return {
            "model": self.client.config.model,
            "labeled": len(rows),
            "unparsed": unparsed,
            "errors": errors,
            "kappa": round(cohen_kappa(rules, model), 4) if rows else None,
            "agreement": round(sum(a == b for a, b in zip(rules, model)) / len(rows), 4)
            if rows
            else None,
            "confusion": {k: dict(v) for k, v in conf.items()},
            "episodes": rows,
        }


def label_responder(label_of: Callable[[str], str]) -> Callable[[list], str | None]:
    """A responder of the scripted server for labeling requests: ``{"cause": ...}`` with
    ``label_of(episode key)``; None for other requests.
    """

    def respond(messages: list) -> str | None:
        for msg in reversed(messages):
            if isinstance(msg, dict) and msg.get("role") == "user":
                content = msg.get("content")
                text = content if isinstance(content, str) else ""
                m = re.search(re.escape(MARKER) + r" (\S+)", text)
                return None if m is None else json.dumps({"cause": label_of(m.group(1))})
        return None

    return respond


__all__ = [
    "MARKER",
    "SYSTEM_PROMPT",
    "ModelLabeler",
    "label_responder",
    "parse_label",
    "trace_summary",
]
