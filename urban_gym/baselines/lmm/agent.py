"""The language-model agent.

The three parts of a language-model agent are kept apart as in BALROG: the client
(:mod:`.client`) knows HTTP; the prompt builder (:mod:`.prompt`) knows which messages to
send -- the system prompt and the user message of the current observation, which the env's
language-model face writes (:class:`~urban_gym.wrappers.lmm_interface.LMMInterface` with
the family's prompt protocol, :mod:`urban_gym.wrappers.protocols`), plus the episode's past
turns -- and :class:`LMMAgent` knows the loop: messages -> completion -> reply text, which
the face parses into the env's action.

:class:`LMMAgent` follows the harness's agent protocol
(:class:`urban_gym.baselines.agents.Agent`), so every episode of it runs in the one
episode loop, :func:`urban_gym.eval.trace.run_episode` -- in ``urban-gym eval``, the demo
and ``examples/lmm_agent.py`` alike -- and is recorded by it: when the client gives up
(:class:`~urban_gym.errors.ModelError`: server down, 500s after all retries) the episode
ends with termination ``model_error`` and its record says why.

.. code-block:: python

    agent = LMMAgent(base_url="http://localhost:8000/v1", model="my-model")
    face = agent.wrap(gym.make(env_id, **lmm_env_kwargs(env_id)))
    record, trace = run_episode(face, agent, seed=0)
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import gymnasium as gym

from urban_gym.baselines.lmm.client import ChatClient, ClientConfig
from urban_gym.baselines.lmm.face import FaceRequest, FaceSettings, describe_face, resolve_face
from urban_gym.baselines.lmm.prompt import PromptBuilder, check_history, check_history_images
from urban_gym.errors import AgentGaveUp, InputError, ModelError
from urban_gym.tasks.families import family_name

#: The client settings :class:`LMMAgent` takes (fields of :class:`ClientConfig`
#: except the API key, which comes from the environment and is never recorded).
CLIENT_OPTIONS: tuple[str, ...] = (
    "base_url",
    "model",
    "temperature",
    "max_tokens",
    "extra_body",
    "timeout_s",
    "max_retries",
    "deadline_s",
)


class LMMAgent:
    """A multimodal language model behind an OpenAI-compatible endpoint, acting on the
    language-model face of an env (see the module docstring).

    Args:
        base_url: the OpenAI-compatible endpoint (None: the environment / default).
        model: the model name.
        temperature: sampling temperature (None: the default).
        max_tokens: max output tokens per reply.
        extra_body: JSON merged into every request.
        timeout_s: seconds per request.
        max_retries: retries per request.
        deadline_s: seconds one request may take in all, retries and waits included. (These are :class:`ClientConfig` settings; the
            API key is read from ``URBAN_GYM_LMM_API_KEY`` / ``OPENAI_API_KEY`` and never
            appears in :meth:`config`.)
        image_budget_bytes: bytes of images per request (downscaled in steps to fit).
        max_image_side: cap on an image's longer side (pixels) before encoding.
        image_downscale_step: the factor per downscaling step (0.85 = 15% steps).
        include_images: False for a text-only model.
        map: an extra map image (True: an agent-centred :class:`MapObservation`; a
            mapping: its arguments); False: *without map*, no map image at all (the
            location map included); None: the scheme's or family's default.
        location: show the map of the current location each step (None: the scheme's or
            family's default; False: the *without location* setting -- no location map,
            any other map without the agent's arrow).
        memory: ``auto`` (the scheme's or family's), a memory name
            (:func:`urban_gym.wrappers.stacks.memory_names`) or ``none`` (*without
            memory*).
        memory_budget: characters per memory text (None: the scheme's, else 2,000).
        history: past turns the model sees, a number or ``"all"`` (the whole conversation;
            None: the scheme's, else the family's).
        history_images: whether past turns keep their images: True, False or k (those of
            the last k past turns; None: the scheme's, else the family's).
        action_schema: show the JSON schema of the action object in the system prompt
            (None: as the prompt protocol does).
        protocol: prompt protocol name (None: the family's; not with a scheme, whose
            texts are its protocol).
        seed: client seed for the retry jitter.
        scheme: a named scheme (:mod:`urban_gym.baselines.lmm.schemes`): its prompts, and
            defaults for the settings above. Every setting given explicitly here wins over
            the scheme's default, which wins over the family's
            (:mod:`urban_gym.baselines.lmm.face`).
        scheme_config: the scheme's config (a mapping or a YAML/JSON file).
        prompts: prompt texts replacing the scheme's (a mapping or a YAML/JSON file).
        cache: a folder of cached responses (:class:`~.cache.ResponseCache`).
        client: ``httpx`` (the project's :class:`ChatClient`), ``openai`` (the
            official client, :class:`~.openai_client.OpenAIChatClient`), or a client
            object made already (a :class:`ChatClient`, or any object with its ``chat``,
            ``usage``, ``config`` and ``close``: the settings above are then its own).
        prompt_builder: which past turns the model sees (default: ``history`` and
            ``history_images`` as :meth:`face_settings` decides them).
        preset: the record of the model-settings preset the options came from
            (:func:`urban_gym.eval.presets.lmm_preset`), kept in :meth:`config`.
    """

    kind = "lmm"

    def __init__(
        self,
        base_url: str | None = None,
        model: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        extra_body: Mapping[str, Any] | None = None,
        timeout_s: float | None = None,
        max_retries: int | None = None,
        deadline_s: float | None = None,
        image_budget_bytes: int = 4_000_000,
        max_image_side: int | None = None,
        image_downscale_step: float = 0.75,
        include_images: bool = True,
        map: bool | Mapping[str, Any] | None = None,
        location: bool | None = None,
        memory: str = "auto",
        memory_budget: int | None = None,
        history: int | str | None = None,
        history_images: bool | int | None = None,
        action_schema: bool | None = None,
        protocol: str | None = None,
        seed: int | None = 0,
        scheme: str | None = None,
        scheme_config: Any = None,
        prompts: Any = None,
        cache: str | None = None,
        client: Any = "httpx",
        prompt_builder: PromptBuilder | None = None,
        preset: Mapping[str, Any] | None = None,
    ) -> None:
        from urban_gym.wrappers.stacks import memory_names

        choices = ("auto", *memory_names(), "none")
        if memory not in choices:
            raise InputError(f"memory={memory!r} is not one of {', '.join(choices)}")
        given = client if not isinstance(client, str) else None
        if given is not None:
            client = "given"
        self.client_config = getattr(given, "config", None) or ClientConfig.from_env(
            base_url=base_url,
            model=model,
            temperature=temperature,
            max_tokens=max_tokens,
            extra_body=dict(extra_body) if extra_body is not None else None,
            timeout_s=timeout_s,
            max_retries=max_retries,
            deadline_s=deadline_s,
        )
        self.image_budget_bytes = int(image_budget_bytes)
        self.max_image_side = max_image_side
        self.image_downscale_step = float(image_downscale_step)
        self.include_images = bool(include_images)
        self.map: bool | dict[str, Any] | None = (
            dict(map) if isinstance(map, Mapping) else None if map is None else bool(map)
        )
        self.location = None if location is None else bool(location)
        self.memory = memory
        self.memory_budget = None if memory_budget is None else int(memory_budget)
        try:
            self.history = None if history is None else check_history(history)
            self.history_images = (
                None if history_images is None else check_history_images(history_images)
            )
        except ValueError as exc:
            raise InputError(str(exc)) from None
        self.action_schema = None if action_schema is None else bool(action_schema)
        self.request = FaceRequest(
            location=self.location,
            map=self.map,
            memory=memory,
            memory_budget=self.memory_budget,
            history=self.history,
            history_images=self.history_images,
            action_schema=self.action_schema,
        )
        self.protocol = protocol
        self.scheme = None
        self.prompts_file = str(prompts) if isinstance(prompts, (str, Path)) else None
        if scheme is not None:
            from urban_gym.baselines.lmm.schemes import load_scheme

            if protocol is not None:
                raise InputError(
                    f"protocol={protocol!r} and scheme={scheme!r}: a scheme writes its own "
                    "prompts; give one of the two"
                )
            self.scheme = load_scheme(scheme, scheme_config, prompts)
        elif prompts is not None or scheme_config is not None:
            raise InputError("prompts and scheme_config need a scheme (--scheme NAME)")
        self.cache_dir = cache
        if client not in ("httpx", "openai", "given"):
            raise InputError(f"client={client!r} is not one of httpx, openai or a client")
        if client != "httpx" and cache is not None:
            raise InputError("the response cache works with client='httpx' only")
        self.client_kind = client
        if given is not None:
            self.client: Any = given
        elif client == "openai":
            from urban_gym.baselines.lmm.openai_client import OpenAIChatClient

            self.client = OpenAIChatClient(self.client_config, seed=seed)
        else:
            self.client = ChatClient(self.client_config, seed=seed)
        if cache is not None:
            from urban_gym.baselines.lmm.cache import ResponseCache

            self.client.cache = ResponseCache(cache)
        self.prompt_builder = prompt_builder
        self._builder_given = prompt_builder is not None
        self.face: FaceSettings | None = None  # the settings wrap() built the face with
        self.preset = dict(preset) if preset else None
        self.replies: list[dict[str, Any]] = []
        self.headers: dict[str, str] = {}
        self.nonce = uuid.uuid4().hex[:12]  # names this agent's episodes on the server
        self.stack: gym.Env | None = None
        self._wrapped: gym.Env | None = None  # the face wrap() built last
        self.tap: OutcomeTap | None = None
        self._last: dict[str, Any] = {}
        self._calls: list[dict[str, Any]] = []

    def face_settings(self, env: gym.Env) -> FaceSettings:
        """The settings of the face on ``env``: this agent's explicit ones, else the
        scheme's defaults, else the family's (:func:`~.face.resolve_face`).
        """
        if self.scheme is not None:
            self.scheme.check_family(family_name(env))
        return resolve_face(env, self.request, self.scheme)

    def _build(self, env: gym.Env, settings: FaceSettings) -> gym.Env:
        from urban_gym.wrappers.protocols import PromptProtocol, protocol_for
        from urban_gym.wrappers.stacks import make_lmm_env

        fam = family_name(env)
        protocol: str | PromptProtocol | None = self.protocol
        if self.scheme is not None:
            self.scheme.memory_on = not settings.without_memory
            protocol = self.scheme.protocol(fam)
        if settings.memory is None:  # nothing shows a memory back: do not ask for one
            protocol = protocol_for(protocol if protocol is not None else fam)
            if "memory" in protocol.reply_fields:
                protocol = protocol.without_fields("memory")
        return make_lmm_env(
            env,
            protocol=protocol,
            **settings.stack_options(),
            lmm_kwargs={
                "image_budget_bytes": self.image_budget_bytes,
                "max_image_side": self.max_image_side,
                "image_downscale_step": self.image_downscale_step,
                "include_images": self.include_images,
                "include_schema": settings.action_schema,
            },
        )

    def wrap(self, env: gym.Env) -> gym.Env:
        """The language-model face of ``env`` (:func:`urban_gym.wrappers.make_lmm_env`)
        with the settings of :meth:`face_settings`, the scheme's prompts when one is set.
        """
        self.face = self.face_settings(env)
        self.tap = OutcomeTap(env)
        self._wrapped = self.stack = self._build(self.tap, self.face)
        return self.stack

    def describe_face(self, env: gym.Env) -> dict[str, Any]:
        """What the model sees on ``env`` (the core env :meth:`wrap` takes): images, maps
        and whether they show the agent's arrow, memory, history window, reply format, and
        where each setting came from (:func:`~.face.describe_face`; the run's manifest
        records it under ``agent.config.face``).
        """
        settings = self.face_settings(env)
        stack = self._build(env, settings)
        return describe_face(stack, settings, self.include_images)

    def reset(self, env: gym.Env, task: Any, seed: int | None = None) -> None:
        """A new episode on ``env`` (the face :meth:`wrap` built): the prompt builder (the
        one given, else the face's history window), no past turns, the episode header,
        the scheme's state.
        """
        self.stack = env
        if not self._builder_given:
            face = self.face if env is self._wrapped and self.face is not None else None
            if face is None:  # a face not of wrap(): the settings for its env
                face = resolve_face(env, self.request, self.scheme)
            self.prompt_builder = PromptBuilder(face.history, face.history_images)
        assert self.prompt_builder is not None
        self.prompt_builder.reset()
        self.replies = []
        tap = self.tap if self.tap is not None and self.stack is self._wrapped else None
        env_seed = tap.seed if tap is not None else seed  # a face not of wrap(): the seed given
        self.headers = self.episode_header(env_seed, getattr(task, "id", None))
        self._last, self._calls = {}, []
        if self.scheme is not None:
            self.scheme.reset(self, env, task, seed)

    def episode_header(self, seed: int | None, task_id: str | None) -> dict[str, str]:
        """The header naming one of this agent's episodes (:mod:`.calls`)."""
        from urban_gym.baselines.lmm.calls import episode_header

        return episode_header(seed, task_id, self.nonce)

    @property
    def last_outcome(self) -> dict[str, Any] | None:
        """The previous episode's end (``task_id``, ``seed``, ``termination``,
        ``is_success``, ``steps``, ``instruction``, ``trajectory``), or None.
        """
        return self.tap.previous if self.tap is not None else None

    def act(self, obs: Any, info: dict[str, Any]) -> str:
        """The model's reply text (raises
        :class:`~urban_gym.errors.AgentGaveUp` with ``model_error`` when the client
        gives up).
        """
        assert self.stack is not None, "wrap(env) and reset() first"
        self._calls = []
        try:
            if self.scheme is not None:
                text = self.scheme.act(self, self.stack)
            else:
                text = self.ask_action(self.stack)
        except ModelError as exc:
            self._last = {}
            raise AgentGaveUp("model_error", str(exc)) from exc
        return text

    def ask_action(self, stack: gym.Env) -> str:
        """One action request for the stack's current observation: the prompt builder's
        messages, the client's completion, its text (the reply's tokens and latency are
        added to this step's notes).
        """
        assert self.prompt_builder is not None, "reset(env, task) first"
        messages = self.prompt_builder.build(stack)
        resp = self.client.chat(messages, headers=self.headers or None)
        self.prompt_builder.record(resp.text)
        last = {
            "usage": resp.usage,
            "latency_s": round(resp.latency_s, 4),
            "attempts": resp.attempts,
        }
        self.replies.append(last)
        self._add_notes(last)
        return resp.text

    def ask(
        self,
        messages: list[dict[str, Any]],
        kind: str,
        headers: Mapping[str, str] | None = None,
        model: str | None = None,
    ) -> str:
        """A request that is not an action (:mod:`.calls`: self-positioning, a final
        answer, a reflection): its reply text; the call is noted in this step's notes.
        """
        params = {"model": model} if model else {}
        resp = self.client.chat(messages, headers=headers or self.headers, **params)
        self._calls.append({"kind": kind, "usage": resp.usage})
        self._add_notes({"usage": resp.usage, "latency_s": round(resp.latency_s, 4), "attempts": 0})
        return resp.text

    def _add_notes(self, notes: Mapping[str, Any]) -> None:
        if not self._last:
            self._last = {"usage": {}, "latency_s": 0.0, "attempts": 0}
        usage = self._last.setdefault("usage", {})
        for k, v in (notes.get("usage") or {}).items():
            usage[k] = usage.get(k, 0) + v
        self._last["latency_s"] = round(
            float(self._last.get("latency_s", 0.0)) + float(notes.get("latency_s", 0.0)), 4
        )
        self._last["attempts"] = int(self._last.get("attempts", 0)) + int(notes.get("attempts", 0))

    def step_info(self) -> dict[str, Any]:
        """The last step's tokens (``usage``, every request of the step), ``latency_s``,
        ``attempts``, and the scheme's extra ``calls``.
        """
        out = dict(self._last)
        if self._calls:
            out["calls"] = list(self._calls)
        if self.scheme is not None:
            notes = self.scheme.episode_notes()
            if notes:
                out["scheme"] = notes
        self._last = {}
        return out

    def usage(self) -> dict[str, int]:
        """The client's token counters so far."""
        from urban_gym.baselines.agents import USAGE_KEYS

        return {k: int(self.client.usage.get(k, 0)) for k in USAGE_KEYS}

    def config(self) -> dict[str, Any]:
        """Model, endpoint (credentials and query removed), sampling, images, the face
        settings as given (None: not given), scheme -- never the API key. What the model
        sees with them on an env is :meth:`describe_face`.
        """
        c = self.client_config
        out = {
            "kind": self.kind,
            "model": c.model,
            "base_url": public_url(c.base_url),
            "temperature": c.temperature,
            "max_tokens": c.max_tokens,
            "extra_body": dict(c.extra_body),
            "timeout_s": c.timeout_s,
            "max_retries": c.max_retries,
            "image_budget_bytes": self.image_budget_bytes,
            "max_image_side": self.max_image_side,
            "image_downscale_step": self.image_downscale_step,
            "include_images": self.include_images,
            "map": self.map,
            "location": self.location,
            "memory": self.memory,
            "memory_budget": self.memory_budget,
            "history": self.history,
            "history_images": self.history_images,
            "action_schema": self.action_schema,
            "protocol": self.protocol,
        }
        if self.scheme is not None:
            out["scheme"] = {**self.scheme.describe(), "prompts_file": self.prompts_file}
        if self.preset is not None:
            out["preset"] = dict(self.preset)
        if self.cache_dir is not None:
            out["cache"] = str(self.cache_dir)
        if self.client_kind != "httpx":
            out["client"] = self.client_kind
        return out

    def close(self) -> None:
        """Close the client."""
        self.client.close()


class OutcomeTap(gym.Wrapper):
    """Notes how each episode ended, for schemes that learn across attempts (Reflexion).

    ``seed``/``task_id`` are those of the current episode; ``previous`` is the end of the
    one before (``task_id``, ``seed``, ``termination``, ``is_success``, ``steps``,
    ``instruction``, ``trajectory``: the actions taken, abridged) or None.
    """

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.seed: int | None = None
        self.current: dict[str, Any] | None = None
        self.previous: dict[str, Any] | None = None
        self._actions: list[str] = []

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Reset; the finished episode becomes ``previous``."""
        if self.current is not None and "termination" in self.current:
            self.previous = self.current
        obs, info = self.env.reset(seed=seed, options=options)
        task = getattr(self.env.unwrapped, "task", None)
        self.seed = seed
        self.current = {
            "task_id": getattr(task, "id", None),
            "seed": seed,
            "instruction": str(getattr(task, "instruction", "") or ""),
        }
        self._actions = []
        return obs, info

    def step(self, action: Any):
        """Step; note the action's name and, at the end, the outcome."""
        obs, reward, terminated, truncated, info = self.env.step(action)
        name = action.get("action") if isinstance(action, Mapping) else None
        self._actions.append(str(name) if name is not None else "(unreadable)")
        if (terminated or truncated) and self.current is not None:
            acts = self._actions
            shown = acts if len(acts) <= 60 else [*acts[:30], "...", *acts[-30:]]
            self.current.update(
                termination=info.get("termination"),
                is_success=bool(info.get("is_success", False)),
                steps=len(acts),
                trajectory=", ".join(shown),
            )
        return obs, reward, terminated, truncated, info


def public_url(url: str) -> str:
    """``url`` without user:password and without a query string or fragment (where keys
    hide), e.g. ``https://u:k@host/v1?key=x`` -> ``https://host/v1``.
    """
    from urllib.parse import urlsplit, urlunsplit

    try:
        parts = urlsplit(str(url))
    except ValueError:
        return "<unparsable url>"
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))
