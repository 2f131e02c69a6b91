"""``urban-gym report --labeler lmm``: a language model names the dominant failure cause
of each failed episode from its trace, and the report measures its agreement with the
written rules (:mod:`urban_gym.eval.failures`) by Cohen's kappa -- the check the
360CityArena review asked for (its labels came from a model verified by people, with no
agreement figure).

The model receives the task, how the episode ended and a compact trace (per step: the
action, whether it was carried out, the distance to the goal, whether the goal was in view,
the start of the agent's thought), and replies ``{"cause": "<one of the five>"}``. With
``images`` (``--labeler-images``) it also sees what 360CityArena's labeller saw (its
section 5.2: viewpoint images, maps and thoughts): the agent's view and a map of its
location at evenly spaced steps and the last, each with the step's action and whole
thought, the images within a byte budget per episode (:mod:`urban_gym.eval.labeler_images`:
made by replaying the episode from its trace).
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
#: Added to the system prompt when the labeller sees images.
IMAGES_NOTE = (
    "Besides the trace you receive, for some of the agent's steps (evenly spaced, always "
    "the last one), the image the agent saw and, where there is one, a map of where it "
    "was, with the step's action and the agent's thought. Use them to tell what the agent "
    "could see from what it did."
)


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


def image_content(
    record: Mapping[str, Any], steps: Sequence[Mapping[str, Any]], images: Any
) -> list[dict[str, Any]]:
    """The user message of one episode with images: the trace (:func:`trace_summary`),
    then per chosen step its action, the agent's thought and its images
    (:class:`~urban_gym.eval.labeler_images.EpisodeImages`), and a line saying how many
    steps are shown.
    """
    parts: list[dict[str, Any]] = [{"type": "text", "text": trace_summary(record, steps)}]
    for t in images.sent:
        s = steps[t] if t < len(steps) else {}
        thought = ((s.get("reply") or {}).get("fields") or {}).get("thought", "")
        action = json.dumps(s.get("action"), ensure_ascii=False)[:200]
        text = f"Step {t}: action {action}" if t else "Step 0: the start"
        parts.append(
            {
                "type": "text",
                "text": text + (f"; thought: {str(thought)[:1000]}" if thought else ""),
            }
        )
        if not images.images[t]:
            parts.append({"type": "text", "text": f"(step {t}: the same images as before)"})
        for caption, url in images.images[t]:
            parts.append({"type": "text", "text": f"Step {t}, {caption}:"})
            parts.append({"type": "image_url", "image_url": {"url": url}})
    parts.append(
        {
            "type": "text",
            "text": f"Images of {len(images.sent)} of the episode's {images.steps} steps "
            "(evenly spaced, with the last one)."
            if images.sent
            else "No image of this episode fitted the size limit.",
        }
    )
    return parts


class ModelLabeler:
    """Labels failed episodes with a chat model and compares with the rules.

    Args:
        client: a :class:`~urban_gym.baselines.lmm.client.ChatClient`.
        max_episodes: at most this many failed episodes per run (the first ones).
        images: send the agent's views and location maps of each episode too
            (:mod:`urban_gym.eval.labeler_images`).
        image_budget: bytes of images (their data URLs) per episode.
    """

    def __init__(
        self,
        client: Any,
        max_episodes: int = 200,
        images: bool = False,
        image_budget: int | None = None,
    ) -> None:
        from urban_gym.eval.labeler_images import IMAGE_BUDGET

        self.client = client
        self.max_episodes = int(max_episodes)
        self.images = bool(images)
        self.image_budget = int(image_budget if image_budget is not None else IMAGE_BUDGET)
        if self.image_budget <= 0:
            from urban_gym.errors import InputError

            raise InputError(f"image_budget={image_budget!r} must be a positive number of bytes")

    def _replay_env(self, run: Any) -> Any:
        """A fresh core env of ``run`` to replay its episodes (for their images)."""
        from urban_gym.eval.replay import replay_env

        return replay_env(run, render_mode=None)

    def _messages(self, rec: Any, steps: Any, env: Any, shown: dict) -> list[dict[str, Any]]:
        if env is None:
            return [
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": trace_summary(rec, steps)},
            ]
        from urban_gym.eval.labeler_images import episode_images

        imgs = episode_images(env, rec, steps, budget=self.image_budget)
        shown["episodes"] += 1
        shown["steps"] += len(imgs.sent)
        shown["bytes"] += imgs.total_bytes
        shown["inexact_replays"] += not imgs.exact
        return [
            {"role": "system", "content": SYSTEM_PROMPT + "\n" + IMAGES_NOTE},
            {"role": "user", "content": image_content(rec, steps, imgs)},
        ]

    def __call__(self, run: Any, breakdown: Mapping[str, Any]) -> dict[str, Any]:
        """Label the run's failed episodes with the model; returns the labels and the agreement with the rules."""
        from urban_gym.baselines.lmm.client import ModelError

        by_key = {r.get("key"): r for r in run.records}
        rows: list[dict[str, Any]] = []
        unparsed = errors = 0
        shown = dict.fromkeys(("episodes", "steps", "bytes", "inexact_replays"), 0)
        todo = [ep for ep in breakdown.get("episodes", []) if ep["dominant"] != ERROR]
        env = self._replay_env(run) if self.images and todo else None
        try:
            for ep in todo:
                if len(rows) + unparsed + errors >= self.max_episodes:
                    break
                rec = by_key[ep["key"]]
                msgs = self._messages(rec, run.dir.read_trace(rec), env, shown)
                try:
                    label = parse_label(self.client.chat(msgs).text)
                except ModelError:
                    errors += 1
                    continue
                if label is None:
                    unparsed += 1
                    continue
                rows.append({"key": ep["key"], "rules": ep["dominant"], "model": label})
        finally:
            if env is not None:
                env.close()
        rules = [r["rules"] for r in rows]
        model = [r["model"] for r in rows]
        conf: dict[str, Counter] = defaultdict(Counter)
        for a, b in zip(rules, model):
            conf[a][b] += 1
        inputs: dict[str, Any] = {"trace": True, "images": self.images}
        if self.images:
            inputs.update(budget_bytes=self.image_budget, **shown)
        return {
            "model": self.client.config.model,
            "inputs": inputs,
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
                if isinstance(content, list):  # text and image parts
                    content = "\n".join(
                        str(p.get("text", "")) for p in content if isinstance(p, dict)
                    )
                text = content if isinstance(content, str) else ""
                m = re.search(re.escape(MARKER) + r" (\S+)", text)
                return None if m is None else json.dumps({"cause": label_of(m.group(1))})
        return None

    return respond


__all__ = [
    "IMAGES_NOTE",
    "MARKER",
    "SYSTEM_PROMPT",
    "ModelLabeler",
    "image_content",
    "label_responder",
    "parse_label",
    "trace_summary",
]
