"""Prompt builders: which messages the model sees each turn.

The environment's language-model face (:class:`~urban_gym.wrappers.LMMInterface`)
writes the system prompt and the user message for the *current* observation. A
:class:`PromptBuilder` decides what of the episode's past goes with it: the last
``history`` turns (the earlier user messages as text only -- their images dropped, or kept
with ``history_images`` -- and the model's replies). The family defaults
(:func:`prompt_builder_for`) follow each benchmark: an agent that carries its state in
memory texts sees only the current turn, others see their last few turns
(:meth:`~urban_gym.tasks.families.Family.lmm_defaults`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from urban_gym.tasks.families import FAMILIES, Family


class PromptBuilder:
    """Messages for one turn: system, up to ``history`` past turns, the current user turn.

    Args:
        history: past turns (user + assistant pairs) to include.
        history_images: keep the images of past user turns (default: text only).
    """

    def __init__(self, history: int = 0, history_images: bool = False) -> None:
        if history < 0:
            raise ValueError(f"history={history!r} must be >= 0")
        self.history = int(history)
        self.history_images = history_images
        self.turns: list[tuple[Any, str]] = []

    def reset(self) -> None:
        """Forget the past turns (a new episode)."""
        self.turns = []

    def build(self, lmm_env: Any) -> list[dict[str, Any]]:
        """The messages for the current observation of ``lmm_env`` (a stack whose top
        provides ``messages()``, i.e. a LMMInterface).
        """
        current = lmm_env.messages()
        system, user = current[0], current[-1]
        past: list[dict[str, Any]] = []
        if self.history:
            for content, reply in self.turns[-self.history :]:
                past.append({"role": "user", "content": self._past_content(content)})
                past.append({"role": "assistant", "content": reply})
        self._pending = user["content"]
        return [system, *past, user]

    def record(self, reply: str) -> None:
        """Remember the turn just answered (call after :meth:`build`)."""
        if self.history:
            self.turns.append((getattr(self, "_pending", ""), reply))
            self.turns = self.turns[-self.history :]

    def _past_content(self, content: Any) -> Any:
        if isinstance(content, str) or self.history_images:
            return content
        texts = [
            p.get("text", "")
            for p in content
            if isinstance(p, Mapping)
            and p.get("type") == "text"
            and not str(p.get("text", "")).startswith("Image: ")
        ]
        return "\n\n".join(texts) + "\n\n(images of this past turn not repeated)"


def prompt_builder_for(family: Family | str | None) -> PromptBuilder:
    """The default prompt builder of a family (a :class:`Family` or its name): its
    ``history`` and ``history_images``; no history for None or an unknown name.
    """
    fam = FAMILIES.get(family) if isinstance(family, str) else family
    if fam is None:
        return PromptBuilder()
    d = fam.lmm_defaults()
    return PromptBuilder(history=d.history, history_images=d.history_images)
