"""The scheme framework: a named way of prompting a language model, with its config.

A :class:`Scheme` decides, for the language-model agent of the harness
(:class:`~urban_gym.baselines.lmm.agent.LMMAgent`), the defaults of the stack the agent
acts on (memory wrapper, maps, past turns shown -- the user's explicit switches win over
them, :mod:`urban_gym.baselines.lmm.face`), which prompt protocol writes the messages
(:class:`SchemeProtocol`: the scheme's texts around the env's own action list and
observation), and what happens around each step (:meth:`Scheme.act`: extra calls such as
self-positioning or a final answer). Its ``config`` is a small mapping (a YAML file on the
command line) with defaults; unknown keys are an error naming the valid ones. The run
manifest records the scheme's name, its config and the digest of its prompt texts.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from urban_gym.errors import InputError
from urban_gym.wrappers.parsing import ParsedReply
from urban_gym.wrappers.protocols import PromptProtocol, protocol_for


class SchemeProtocol(PromptProtocol):
    """A family protocol with a scheme's texts: its own system prompt and reply fields,
    some observation keys hidden, and extra texts in each user message.

    Args:
        base: the family's protocol (its observation layout and parser synonyms).
        system: ``(action_set, protocol) -> str``, the system prompt.
        reply_fields: the reply's fields besides the action, in order.
        field_help: one line per field.
        hidden: observation keys not shown.
        extra: ``(obs, env) -> list of texts`` put after the observation's texts.
        example_fields: the placeholder fields of the example reply.
    """

    def __init__(
        self,
        base: PromptProtocol,
        system: Callable[[Any, SchemeProtocol], str],
        reply_fields: Sequence[str],
        field_help: Mapping[str, str],
        hidden: Sequence[str] = (),
        extra: Callable[[Any, Any], list[str]] | None = None,
        example_fields: Mapping[str, Any] | None = None,
    ) -> None:
        self.base = base
        self.name = f"scheme:{base.name}"
        self._system = system
        self.reply_fields = tuple(reply_fields)
        self.field_help = dict(field_help)
        self.field_synonyms = base.field_synonyms
        self.fill_from_fields = base.fill_from_fields
        self.action_format = base.action_format
        self.param_fields = base.param_fields
        self.reply_order = base.reply_order
        self.show_schema = base.show_schema
        self.hidden = frozenset(hidden)
        self._extra = extra
        self._example = dict(example_fields or {})

    def system_prompt(self, action_set: Any, include_schema: bool | None = None) -> str:
        """The scheme's system prompt (``include_schema`` adds the action JSON schema;
        None: as the family's protocol does).
        """
        from urban_gym.wrappers.protocols import action_object_schema

        text = self._system(action_set, self)
        if self.show_schema if include_schema is None else include_schema:
            text += "\n\nJSON schema of the action object:\n" + json.dumps(
                action_object_schema(action_set), ensure_ascii=False
            )
        return text

    def fields_text(self, action_set: Any = None) -> str:
        """One line per reply field, then the action's (nested object or flat name, as the
        family's protocol writes it).
        """
        if self.action_format == "flat":  # in the order a reply writes them
            return "\n".join(
                self.action_help(action_set)
                if f == "action"
                else f"- `{f}`: {self.field_help.get(f, f)}"
                for f in self.reply_keys()
            )
        lines = [f"- `{f}`: {self.field_help.get(f, f)}" for f in self.reply_fields]
        lines.append("- `action`: the action object (its name and its parameters)")
        return "\n".join(lines)

    def example_fields(self) -> dict[str, Any]:
        """The reply fields of the example reply."""
        return self._example or {f: "..." for f in self.reply_fields}

    def describe_actions(self, action_set: Any) -> str:
        """The actions as the family's protocol describes them."""
        return self.base.describe_actions(action_set)

    def example_actions(self, action_set: Any) -> list[dict[str, Any]]:
        """The actions of the example replies: the family protocol's."""
        return self.base.example_actions(action_set)

    def example_text(self, action_set: Any, n: int = 3) -> str:
        """Example replies, one per line, for the first ``n`` example actions of the
        family's protocol.
        """
        ex = self.example_actions(action_set)[:n]
        return "\n".join(self.format_reply(a, self.example_fields(), action_set) for a in ex)

    def observation_parts(self, obs: Any, space: Any, env: Any = None) -> list:
        """The family's parts without the hidden keys, plus the scheme's extra texts
        (after the texts, before the images).
        """
        if isinstance(obs, Mapping) and self.hidden:
            obs = {k: v for k, v in obs.items() if k not in self.hidden}
        parts = self.base.observation_parts(obs, space, env)
        if self._extra is None:
            return parts
        texts = [p for p in parts if p[0] == "text"]
        images = [p for p in parts if p[0] != "text"]
        return texts + [("text", t, "") for t in self._extra(obs, env) if t] + images

    def parse(self, text: Any, action_set: Any) -> ParsedReply:
        """Read a reply with the family protocol's parser."""
        return self.base.parse(text, action_set)


class Scheme:
    """A named prompting scheme (subclasses set the class attributes).

    Attributes:
        name: the scheme's name (``--scheme NAME``).
        families: the families where the scheme's paper defines it (empty: every family).
        defaults: the config keys and their defaults.
        prompt_names: the names of the prompt texts ``--prompts FILE`` may replace.
        texts: the default prompt texts (our words).
        own_memory: what the scheme remembers by itself besides the face's memory texts
            (empty: nothing); a user's *without memory* switches it off too.

    The agent sets :attr:`memory_on` (False: the user's *without memory*) before it asks
    for the :meth:`protocol`; the protocol then asks for no ``memory`` field (the agent
    drops it, :meth:`~urban_gym.wrappers.protocols.PromptProtocol.without_fields`) and a
    scheme with its own memory keeps none.
    """

    name = "base"
    families: tuple[str, ...] = ()
    defaults: Mapping[str, Any] = {}
    texts: Mapping[str, str] = {}
    own_memory: str = ""

    def __init__(
        self, config: Mapping[str, Any] | None = None, prompts: Mapping[str, str] | None = None
    ) -> None:
        config = dict(config or {})
        unknown = sorted(set(config) - set(self.defaults))
        if unknown:
            raise InputError(
                f"scheme {self.name!r}: unknown config keys {unknown}; valid: "
                f"{sorted(self.defaults)}"
            )
        for k, v in config.items():
            want = type(self.defaults[k])
            if self.defaults[k] is not None and not _fits(v, want):
                raise InputError(
                    f"scheme {self.name!r}: config {k}={v!r} must be a {want.__name__}"
                )
        self.config: dict[str, Any] = {**self.defaults, **config}
        prompts = dict(prompts or {})
        bad = sorted(set(prompts) - set(self.texts))
        if bad:
            raise InputError(
                f"scheme {self.name!r}: unknown prompt names {bad}; valid: {sorted(self.texts)}"
            )
        self.prompts: dict[str, str] = {**self.texts, **prompts}
        self.prompts_replaced = sorted(prompts)
        self.family: str | None = None
        self.memory_on = True

    @property
    def prompts_sha256(self) -> str:
        """The digest of the prompt texts in use (recorded in the run manifest)."""
        blob = json.dumps(self.prompts, sort_keys=True, ensure_ascii=False).encode()
        return hashlib.sha256(blob).hexdigest()

    def describe(self) -> dict[str, Any]:
        """What the manifest records: name, config, replaced prompt names, digest."""
        return {
            "name": self.name,
            "config": dict(self.config),
            "prompts_replaced": list(self.prompts_replaced),
            "prompts_sha256": self.prompts_sha256,
        }

    # ------------------------------------------------------------------ the stack
    def check_family(self, family: str | None) -> None:
        """:class:`UrbanGymError` when the scheme is not defined on ``family``."""
        if self.families and family not in self.families:
            raise InputError(
                f"scheme {self.name!r} is defined on {', '.join(self.families)} only, not on "
                f"{family!r}"
            )

    def stack_options(self, family: str | None) -> dict[str, Any]:
        """The scheme's defaults for the face on ``family``: any of ``location_map``,
        ``map_observation``, ``memory``, ``memory_budget`` (absent or None: the family's).
        They are defaults only: a switch the user gives explicitly wins over them
        (:mod:`urban_gym.baselines.lmm.face`).
        """
        return {}

    def protocol(self, family: str | None) -> PromptProtocol:
        """The prompt protocol of the scheme on ``family`` (default: the family's)."""
        return protocol_for(family)

    def history(self, family: str | None) -> tuple[int | str, bool | int] | None:
        """``(past turns, keep their images)`` by default; None: the family's. Past turns:
        a number or ``"all"`` (the whole conversation); images: True, False or k (those of
        the last k past turns). An explicit ``history`` / ``history_images`` of the agent
        wins.
        """
        return None

    # ------------------------------------------------------------------ the loop
    def reset(self, agent: Any, stack: Any, task: Any, seed: int | None) -> None:
        """A new episode of ``task`` has started (the agent's stack is reset)."""

    def act(self, agent: Any, stack: Any) -> str:
        """The reply text for the current step (default: one action request)."""
        return agent.ask_action(stack)

    def episode_notes(self) -> dict[str, Any]:
        """What the scheme adds to the step notes of the trace (e.g. extra calls)."""
        return {}

    def text(self, name: str, **values: Any) -> str:
        """Prompt text ``name`` with its ``{placeholders}`` filled (missing ones kept)."""
        return _fill(self.prompts[name], values)


def lmm_interface(stack: Any) -> Any:
    """The :class:`~urban_gym.wrappers.lmm_interface.LMMInterface` of a stack."""
    from urban_gym.wrappers.lmm_interface import LMMInterface
    from urban_gym.wrappers.stacks import find_wrapper

    lm = find_wrapper(stack, LMMInterface)
    if lm is None:
        raise ValueError("the stack has no LMMInterface")
    return lm


def _fits(v: Any, want: type) -> bool:
    if want is bool:
        return isinstance(v, bool)
    if want is float:
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    if want is int:
        return isinstance(v, int) and not isinstance(v, bool)
    return isinstance(v, want)


class _Keep(dict):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def _fill(text: str, values: Mapping[str, Any]) -> str:
    try:
        return text.format_map(_Keep(values))
    except (ValueError, IndexError):  # braces that are not placeholders (JSON examples)
        out = text
        for k, v in values.items():
            out = out.replace("{" + k + "}", str(v))
        return out


def read_mapping(path: str | Path, what: str) -> dict[str, Any]:
    """A YAML or JSON file holding a mapping (a scheme config, prompt texts);
    :class:`UrbanGymError` naming the file when it is missing or not a mapping.
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{what} file {str(p)!r} cannot be read: {exc}") from exc
    try:
        import yaml

        data = yaml.safe_load(text)
    except Exception as exc:  # yaml.YAMLError and friends
        raise InputError(f"{what} file {str(p)!r} is not YAML/JSON: {exc}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict) or not all(isinstance(k, str) for k in data):
        raise InputError(f"{what} file {str(p)!r} must hold a mapping of names to values")
    return data
