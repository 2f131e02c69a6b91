"""The language-model face of an environment: observations as chat messages, replies as
actions.

:class:`LMMInterface` wraps any urban_gym environment. Its ``step`` takes the
model's reply *text*; the tolerant parser (:mod:`urban_gym.wrappers.parsing`) reads the
action from it and the wrapped env carries it out. :meth:`LMMInterface.messages`
gives the OpenAI-format chat messages for the current observation: a system prompt with the
env's action schema and the reply format of the family's protocol
(:mod:`urban_gym.wrappers.protocols`), and a user message with the task, the memory texts,
what went wrong last step, and the images as base64 data URLs within a byte budget.

The wrapper's action space is ``spaces.Text``: a reply. A reply from which no action can
be read is never an exception: the wrapper hands the env an
:class:`~urban_gym.envs.actions.UnreadableReply` carrying the parser's plain-words reason,
and the env takes its invalid-action path (the step is used up and counted in
``info["invalid_actions"]``, the reason is ``info["invalid_action"]``); the wrapper feeds the
reason back in the next user message and counts it in ``info["unreadable_replies"]``. A
reply whose action object was found but is invalid (unknown name, value out of range) is
passed to the env as it is, so the env's own message is fed back. An action the parser
read is normalised once: the env takes the parser's canonical action as it is.

Wrappers below this one see the reply: the action they receive is a :class:`ReplyAction`
(a ``dict`` with the canonical action, plus ``.reply`` and ``.text``) or an
``UnreadableReply`` (with the same two attributes), which the memory and episode-record
wrappers read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from urban_gym.envs.actions import NormalisedAction, UnreadableReply
from urban_gym.envs.text import text_charset
from urban_gym.errors import InputError
from urban_gym.wrappers.images import FittedImages, fit_images
from urban_gym.wrappers.parsing import ParsedReply
from urban_gym.wrappers.protocols import PromptProtocol, protocol_for

#: Characters of a reply kept in ``ReplyAction.text`` (and so in episode records).
MAX_KEPT_REPLY_CHARS = 20_000
#: The longest reply the wrapper's ``Text`` action space holds (a longer one is still
#: read: the space says what a reply is, the parser takes anything).
MAX_REPLY_CHARS = 100_000


def _kept(text: str) -> tuple[str, bool]:
    """``text`` cut to :data:`MAX_KEPT_REPLY_CHARS` characters, and whether it was cut."""
    if len(text) <= MAX_KEPT_REPLY_CHARS:
        return text, False
    return text[:MAX_KEPT_REPLY_CHARS], True


class ReplyAction(NormalisedAction):
    """A structured action that came from a model's reply.

    The dict itself is what the env receives: the canonical action the parser read (a
    :class:`~urban_gym.envs.actions.NormalisedAction` of the env's action set, taken as
    it is), or the raw action object when it could not be normalised (the env normalises
    it and names what is wrong). ``reply`` is the
    :class:`~urban_gym.wrappers.parsing.ParsedReply`; ``text`` the reply text, cut to
    :data:`MAX_KEPT_REPLY_CHARS` characters.
    """

    def __init__(self, action: Mapping[str, Any], reply: ParsedReply, text: str) -> None:
        aset = action.action_set if isinstance(action, NormalisedAction) else None
        super().__init__(action, aset)
        self.reply = reply
        self.text, self.text_truncated = _kept(text)

    def __reduce__(self):  # pickles as a plain dict action with its reply
        return (_rebuild_reply_action, (dict(self), self.reply, self.text))


def _rebuild_reply_action(action: dict, reply: ParsedReply, text: str) -> ReplyAction:
    return ReplyAction(action, reply, text)


class LMMInterface(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Chat messages out, reply text in (see the module docstring).

    ``action_space`` is ``spaces.Text`` (a reply of up to :data:`MAX_REPLY_CHARS`
    characters: printable text in any script the env's texts use).

    Args:
        env: an urban_gym env (exposes ``unwrapped.action_set`` and ``unwrapped.task``).
        protocol: a :class:`PromptProtocol`, a protocol name (``react``,
            ``verbalized_path``, ``observe_reason_act``, ``generic``), or None for the
            protocol of the task's family (chosen at the first reset).
        image_budget_bytes: the most bytes all data URLs of one user message may take
            together; images are downscaled in steps until they fit
            (:func:`~urban_gym.wrappers.images.fit_images`).
        image_format: ``"JPEG"`` or ``"PNG"``.
        max_image_side: cap on an image's longer side in pixels before encoding.
        image_downscale_step: the factor per downscaling step (0.75; 0.85 = 15% steps).
        include_images: False for a text-only model (images are left out).
        include_schema: put the JSON schema of the actions into the system prompt
            (None: as the protocol does, its ``show_schema``).

    ``step`` also accepts an int or a dict (passed through unchanged) so that scripted
    agents can drive the same stack. ``info`` gains ``reply`` (what the parser read) and
    ``unreadable_replies`` on steps that took a reply.
    """

    def __init__(
        self,
        env: gym.Env,
        protocol: str | PromptProtocol | None = None,
        image_budget_bytes: int = 4_000_000,
        image_format: str = "JPEG",
        image_quality: int = 85,
        max_image_side: int | None = None,
        include_images: bool = True,
        include_schema: bool | None = None,
        image_downscale_step: float = 0.75,
    ) -> None:
        gym.utils.RecordConstructorArgs.__init__(
            self,
            protocol=protocol,
            image_budget_bytes=image_budget_bytes,
            image_format=image_format,
            image_quality=image_quality,
            max_image_side=max_image_side,
            include_images=include_images,
            include_schema=include_schema,
            image_downscale_step=image_downscale_step,
        )
        gym.Wrapper.__init__(self, env)
        self.action_space = spaces.Text(
            MAX_REPLY_CHARS, min_length=0, charset=_reply_charset(env.observation_space)
        )
        self.protocol: PromptProtocol | None = (
            protocol_for(protocol) if protocol is not None else None
        )
        self.image_budget_bytes = int(image_budget_bytes)
        self.image_format = image_format
        self.image_quality = int(image_quality)
        self.max_image_side = max_image_side
        if not 0.0 < float(image_downscale_step) < 1.0:
            raise InputError(
                f"image_downscale_step={image_downscale_step!r} must be in (0, 1), e.g. 0.85"
            )
        self.image_downscale_step = float(image_downscale_step)
        self.include_images = include_images
        self.include_schema = include_schema
        self.unreadable_replies = 0
        self.replies = 0
        self.last_image_fit: FittedImages | None = None
        self._obs: Any = None
        self._feedback = ""

    # ------------------------------------------------------------------ gym API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Reset the env, pick the family's prompt protocol and zero the unreadable-reply count."""
        obs, info = self.env.reset(seed=seed, options=options)
        if self.protocol is None:
            task = getattr(self.env.unwrapped, "task", None)
            self.protocol = protocol_for(getattr(task, "family", None))
        self.unreadable_replies = 0
        self.replies = 0
        self._obs = obs
        self._feedback = ""
        return obs, info

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        """Step with a reply text (parsed by the protocol) or a structured action."""
        parsed: ParsedReply | None = None
        if isinstance(action, str):
            parsed = self.read_reply(action)
            action = self._to_env_action(parsed, action)
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._obs = obs
        if parsed is not None:
            info["reply"] = parsed.to_dict()
            info["unreadable_replies"] = self.unreadable_replies
        valid = info.get("action_valid", True)
        self._feedback = "" if valid else str(info.get("invalid_action", "invalid action"))
        return obs, reward, terminated, truncated, info

    # ------------------------------------------------------------------ replies
    @property
    def action_set(self):
        """The unwrapped env's :class:`~urban_gym.envs.actions.ActionSet`."""
        return self.env.unwrapped.action_set

    def read_reply(self, text: str) -> ParsedReply:
        """Parse a reply with the protocol's parser (never raises)."""
        return self._protocol().parse(text, self.action_set)

    def _to_env_action(self, parsed: ParsedReply, text: str) -> ReplyAction | UnreadableReply:
        self.replies += 1
        if parsed.ok:
            return ReplyAction(parsed.action or {}, parsed, text)
        if parsed.stage and isinstance(parsed.raw_action, (dict, str)):
            raw = parsed.raw_action
            raw = {"action": raw} if isinstance(raw, str) else raw
            return ReplyAction(raw, parsed, text)
        self.unreadable_replies += 1
        kept, _ = _kept(text)
        return UnreadableReply("your reply could not be read: " + parsed.error, parsed, kept)

    # ------------------------------------------------------------------ prompts
    def _protocol(self) -> PromptProtocol:
        """The protocol as it reads for the env's current task (:meth:`PromptProtocol.for_env`)."""
        return (self.protocol or protocol_for(None)).for_env(self.env)

    def system_prompt(self) -> str:
        """The system message text for this env (its current task's wording)."""
        protocol = self._protocol()
        schema = self.include_schema
        if schema is None:
            schema = bool(getattr(protocol, "show_schema", True))
        text = protocol.system_prompt(self.action_set, include_schema=schema)
        if not self.include_images:
            text += "\n\n(You receive text only; no images are shown.)"
        return text

    def user_content(self, obs: Any = None) -> str | list[dict[str, Any]]:
        """The user message content for ``obs`` (default: the latest observation).

        A list of OpenAI content parts (``text`` and ``image_url`` with a data URL), or a
        plain string when there are no images.
        """
        protocol = self._protocol()
        obs = self._obs if obs is None else obs
        parts = protocol.observation_parts(obs, self.env.observation_space, self.env)
        texts = [p[1] for p in parts if p[0] == "text"]
        images = [(p[1], p[2]) for p in parts if p[0] == "image"] if self.include_images else []
        if self._feedback:
            texts.append(
                "## Your last reply was not carried out\n"
                + self._feedback
                + "\nThe step was used up. Reply with one valid JSON object."
            )
        texts.append("Reply with one JSON object as described in the system prompt.")
        if not images:
            self.last_image_fit = None
            return "\n\n".join(texts)
        fit = fit_images(
            [np.asarray(im) for im, _ in images],
            self.image_budget_bytes,
            fmt=self.image_format,
            quality=self.image_quality,
            max_side=self.max_image_side,
            step=self.image_downscale_step,
        )
        self.last_image_fit = fit
        content: list[dict[str, Any]] = [{"type": "text", "text": "\n\n".join(texts)}]
        for (_, caption), url in zip(images, fit.urls):
            content.append({"type": "text", "text": f"Image: {caption}"})
            content.append({"type": "image_url", "image_url": {"url": url}})
        if fit.dropped:
            content.append(
                {"type": "text", "text": f"({fit.dropped} image(s) left out: size limit)"}
            )
        return content

    def messages(self, obs: Any = None) -> list[dict[str, Any]]:
        """``[system, user]`` chat messages for ``obs`` (default: the latest observation)."""
        return [
            {"role": "system", "content": self.system_prompt()},
            {"role": "user", "content": self.user_content(obs)},
        ]

    @property
    def feedback(self) -> str:
        """What went wrong with the last action ("" when it was carried out)."""
        return self._feedback


def _reply_charset(space: Any) -> frozenset[str]:
    """The characters of a reply: printable text (:data:`~urban_gym.envs.text.BASE_CHARSET`)
    plus those of the env's ``Text`` observations (a city's names in any script).
    """
    chars: set[str] = set(text_charset(()))
    for sub in getattr(space, "spaces", {}).values():
        if isinstance(sub, spaces.Text):
            chars.update(sub.character_set)
    return frozenset(chars)
