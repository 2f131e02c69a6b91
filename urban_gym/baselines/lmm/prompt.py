"""Prompt builders: which messages the model sees each turn.

The environment's language-model face (:class:`~urban_gym.wrappers.LMMInterface`)
writes the system prompt and the user message for the *current* observation. A
:class:`PromptBuilder` decides what of the episode's past goes with it: the last
``history`` turns, or all of them (``"all"``: the whole conversation) -- the earlier user
messages as text only (their images dropped), or with their images (``history_images``:
all of them, or those of the last k turns) -- and the model's replies. The family defaults
(:func:`prompt_builder_for`) follow each benchmark: an agent that carries its state in
memory texts sees only the current turn, others see their last few turns
(:meth:`~urban_gym.tasks.families.Family.lmm_defaults`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from urban_gym.tasks.families import FAMILIES, Family

#: ``history`` value for every past turn of the episode (the whole conversation).
ALL_TURNS = "all"


def check_history(history: Any) -> int | str:
    """``history`` as a number of past turns (an int >= 0) or :data:`ALL_TURNS`;
    ValueError naming the value otherwise.
    """
    if history == ALL_TURNS:
        return ALL_TURNS
    if isinstance(history, bool) or not isinstance(history, (int, str)):
        raise ValueError(f"history={history!r} must be a number of turns >= 0 or 'all'")
    try:
        n = int(history)
    except ValueError:
        raise ValueError(f"history={history!r} must be a number of turns >= 0 or 'all'") from None
    if n < 0:
        raise ValueError(f"history={history!r} must be >= 0 (or 'all')")
    return n


def check_history_images(value: Any) -> bool | int:
    """``history_images`` as True (every past turn shown keeps its images), False (none
    does) or an int >= 0 (the last that many past turns keep theirs); ValueError naming the
    value otherwise.
    """
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value >= 0:
        return value
    raise ValueError(f"history_images={value!r} must be true, false or a number of turns >= 0")


class PromptBuilder:
    """Messages for one turn: system, up to ``history`` past turns, the current user turn.

    Args:
        history: past turns (user + assistant pairs) to include; :data:`ALL_TURNS`
            (``"all"``): every past turn of the episode.
        history_images: keep the images of past user turns: True (all shown), False (text
            only, the default) or a number k (the last k past turns keep theirs, older ones
            are text only).
    """

    def __init__(self, history: int | str = 0, history_images: bool | int = False) -> None:
        self.history = check_history(history)
        self.history_images = check_history_images(history_images)
        self.turns: list[tuple[Any, str]] = []

    def reset(self) -> None:
        """Forget the past turns (a new episode)."""
        self.turns = []

    def _window(self) -> list[tuple[Any, str]]:
        h = self.history
        if isinstance(h, str):  # ALL_TURNS
            return list(self.turns)
        return self.turns[-h:] if h else []

    def _keeps_images(self, back: int) -> bool:
        """Whether the past turn ``back`` turns before the current one keeps its images."""
        k = self.history_images
        return k if isinstance(k, bool) else back <= k

    def build(self, lmm_env: Any) -> list[dict[str, Any]]:
        """The messages for the current observation of ``lmm_env`` (a stack whose top
        provides ``messages()``, i.e. a LMMInterface).
        """
        current = lmm_env.messages()
        system, user = current[0], current[-1]
        past: list[dict[str, Any]] = []
        window = self._window()
        for i, (content, reply) in enumerate(window):
            back = len(window) - i
            shown = content if self._keeps_images(back) else self._past_content(content)
            past.append({"role": "user", "content": shown})
            past.append({"role": "assistant", "content": reply})
        self._pending = user["content"]
        return [system, *past, user]

    def record(self, reply: str) -> None:
        """Remember the turn just answered (call after :meth:`build`); the images of turns
        that will never be shown again are dropped here.
        """
        if not self.history:
            return
        self.turns.append((getattr(self, "_pending", ""), reply))
        if isinstance(self.history, int):  # not ALL_TURNS
            self.turns = self.turns[-self.history :]
        k = self.history_images
        if k is not True:
            keep = 0 if k is False else int(k)
            # a turn more than `keep` turns back from the next request loses its images
            i = len(self.turns) - keep - 1
            if 0 <= i < len(self.turns):
                content, reply = self.turns[i]
                self.turns[i] = (self._past_content(content), reply)

    def _past_content(self, content: Any) -> Any:
        if isinstance(content, str):
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
