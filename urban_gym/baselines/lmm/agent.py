"""The language-model agent and its episode loop.

The three parts are kept apart as in BALROG: the client (:mod:`.client`) knows HTTP, the
prompt builder (:mod:`.prompt`) knows which messages to send, and :class:`LMMAgent` knows
the loop: messages -> completion -> reply text -> ``env.step(reply)``.

:func:`run_episode` drives one episode of a language-model stack
(:func:`urban_gym.wrappers.make_lmm_env`) and returns its episode record. When the client
gives up (:class:`~.client.ModelError`: server down, 500s after all retries) the episode
ends with termination ``model_error`` and the record is still written; so it is when
anything else interrupts the loop (see :func:`run_episode`).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import gymnasium as gym

from urban_gym.baselines.lmm.client import ChatClient, ClientConfig, ModelError
from urban_gym.baselines.lmm.prompt import PromptBuilder, prompt_builder_for
from urban_gym.tasks.families import family_name
from urban_gym.wrappers.episode_metrics import EpisodeMetrics
from urban_gym.wrappers.stacks import find_wrapper


class LMMAgent:
    """Asks the model for one reply per step.

    Args:
        client: the chat-completions client.
        prompt_builder: which messages to send (default: the family's, chosen at reset).
    """

    def __init__(self, client: ChatClient, prompt_builder: PromptBuilder | None = None) -> None:
        self.client = client
        self.prompt_builder = prompt_builder
        self._builder_given = prompt_builder is not None
        self.replies: list[dict[str, Any]] = []
        self.headers: dict[str, str] = {}

    def reset(self, env: gym.Env) -> None:
        """A new episode on ``env``: the family's prompt builder (unless one was given),
        no past turns.
        """
        if not self._builder_given:
            self.prompt_builder = prompt_builder_for(family_name(env))
        assert self.prompt_builder is not None
        self.prompt_builder.reset()
        self.replies = []

    def act(self, env: gym.Env) -> str:
        """The model's reply text for the env's current observation (may raise
        :class:`ModelError`).
        """
        assert self.prompt_builder is not None, "call reset(env) first"
        messages = self.prompt_builder.build(env)
        resp = self.client.chat(messages, headers=self.headers or None)
        self.prompt_builder.record(resp.text)
        self.replies.append(
            {"usage": resp.usage, "latency_s": round(resp.latency_s, 4), "attempts": resp.attempts}
        )
        return resp.text


def run_episode(
    env: gym.Env,
    agent: LMMAgent,
    seed: int | None = None,
    options: dict[str, Any] | None = None,
    max_steps: int = 10_000,
    on_step: Callable[[Any, dict[str, Any]], None] | None = None,
    record_fields: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Run one episode of a language-model stack and return its episode record.

    ``on_step(obs, info)`` is called after the reset and after every step (e.g. to collect
    GIF frames). ``max_steps`` is a safety net for envs without a step limit (ends as
    ``step_limit``). The record -- the line written to the record file as well as the
    returned dict -- holds ``model`` (the configured model name), ``usage`` (this
    episode's ``prompt_tokens``, ``completion_tokens``, ``total_tokens``, ``requests``,
    ``retries``, ``failures``), ``model_latency_s`` (seconds spent waiting for
    completions) and ``record_fields``; each step's record holds ``model_usage`` (the
    tokens, latency in seconds and attempts of the reply it carried out).

    How the episode ends: the env ends it; the client gives up (:class:`ModelError`:
    ``model_error`` with the reason in ``error``); anything else raised in the loop
    (by the agent, ``on_step`` or the env) writes the record as ``agent_error`` /
    ``env_error`` (``interrupted`` for Ctrl-C) and is raised again.
    """
    metrics = find_wrapper(env, EpisodeMetrics)
    if metrics is None:
        raise ValueError("run_episode needs an EpisodeMetrics wrapper in the stack (make_lmm_env)")
    usage0 = dict(agent.client.usage)
    latency = 0.0

    def annotate() -> None:
        usage = {k: agent.client.usage[k] - usage0.get(k, 0) for k in agent.client.usage}
        metrics.annotate(
            model=agent.client.config.model,
            usage=usage,
            model_latency_s=round(latency, 4),
            **dict(record_fields or {}),
        )

    obs, info = env.reset(seed=seed, options=options)
    annotate()
    record: dict[str, Any] | None = None
    try:
        agent.reset(env)
        if on_step is not None:
            on_step(obs, info)
        for _ in range(max_steps):
            try:
                reply = agent.act(env)
            except ModelError as exc:
                annotate()
                record = metrics.abort("model_error", str(exc))
                break
            last = agent.replies[-1] if agent.replies else {}
            latency += float(last.get("latency_s", 0.0))
            annotate()
            metrics.note_step(model_usage=last)
            obs, _, terminated, truncated, info = env.step(reply)
            if terminated or truncated:
                record = info["episode"]
            if on_step is not None:
                on_step(obs, info)
            if record is not None:
                break
        if record is None:
            annotate()
            record = metrics.abort("step_limit", f"run_episode stopped after {max_steps} steps")
    except BaseException as exc:
        if metrics.episode_open:  # an env error was already written by EpisodeMetrics
            annotate()
            reason = "agent_error" if isinstance(exc, Exception) else "interrupted"
            metrics.abort(reason, f"{type(exc).__name__}: {exc}")
        raise
    return record


#: The client settings :class:`LMMHarnessAgent` takes (fields of :class:`ClientConfig`
#: except the API key, which comes from the environment and is never recorded).
CLIENT_OPTIONS: tuple[str, ...] = (
    "base_url",
    "model",
    "temperature",
    "max_tokens",
    "extra_body",
    "timeout_s",
    "max_retries",
)


class LMMHarnessAgent:
    """The language-model agent in the evaluation harness's protocol
    (:class:`urban_gym.baselines.agents.Agent`): :class:`LMMAgent` (client, prompt
    builder, loop) acting on the language-model face of the core env.

    Args:
        base_url: the OpenAI-compatible endpoint (None: the environment / default).
        model: the model name.
        temperature: sampling temperature (None: the default).
        max_tokens: max output tokens per reply.
        extra_body: JSON merged into every request.
        timeout_s: seconds per request.
        max_retries: retries per request. (These are :class:`ClientConfig` settings; the
            API key is read from ``URBAN_GYM_LMM_API_KEY`` / ``OPENAI_API_KEY`` and never
            appears in :meth:`config`.)
        image_budget_bytes: bytes of images per request (downscaled in steps to fit).
        max_image_side: cap on an image's longer side (pixels) before encoding.
        image_downscale_step: the factor per downscaling step (0.85 = 15% steps).
        include_images: False for a text-only model.
        map: add an agent-centred map image (:class:`MapObservation`).
        location: show the map of the current location each step (None: the family's
            default, ``location_map`` of its language-model defaults; False: the
            "without location" ablation).
        memory: ``auto`` (the family's), a memory name
            (:func:`urban_gym.wrappers.stacks.memory_names`) or ``none``.
        memory_budget: characters per memory text.
        history: past turns the model sees (None: the family's default).
        protocol: prompt protocol name (None: the family's).
        seed: client seed for the retry jitter.
        scheme: a named scheme (:mod:`urban_gym.baselines.lmm.schemes`); it sets the
            memory, map, history and protocol itself.
        scheme_config: the scheme's config (a mapping or a YAML/JSON file).
        prompts: prompt texts replacing the scheme's (a mapping or a YAML/JSON file).
        cache: a folder of cached responses (:class:`~.cache.ResponseCache`).
        client: ``httpx`` (the project's :class:`ChatClient`) or ``openai`` (the
            official client, :class:`~.openai_client.OpenAIChatClient`).
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
        image_budget_bytes: int = 4_000_000,
        max_image_side: int | None = None,
        image_downscale_step: float = 0.75,
        include_images: bool = True,
        map: bool = False,
        location: bool | None = None,
        memory: str = "auto",
        memory_budget: int = 2000,
        history: int | None = None,
        protocol: str | None = None,
        seed: int | None = 0,
        scheme: str | None = None,
        scheme_config: Any = None,
        prompts: Any = None,
        cache: str | None = None,
        client: str = "httpx",
    ) -> None:
        from urban_gym.errors import InputError
        from urban_gym.wrappers.stacks import memory_names

        choices = ("auto", *memory_names(), "none")
        if memory not in choices:
            raise InputError(f"memory={memory!r} is not one of {', '.join(choices)}")
        self.client_config = ClientConfig.from_env(
            base_url=base_url,
            model=model,
            temperature=temperature,
            max_tokens=max_tokens,
            extra_body=dict(extra_body) if extra_body is not None else None,
            timeout_s=timeout_s,
            max_retries=max_retries,
        )
        self.image_budget_bytes = int(image_budget_bytes)
        self.max_image_side = max_image_side
        self.image_downscale_step = float(image_downscale_step)
        self.include_images = bool(include_images)
        self.map = bool(map)
        self.location = None if location is None else bool(location)
        self.memory = memory
        self.memory_budget = int(memory_budget)
        self.history = history
        self.protocol = protocol
        self.scheme = None
        self.prompts_file = str(prompts) if isinstance(prompts, (str, Path)) else None
        if scheme is not None:
            from urban_gym.baselines.lmm.schemes import load_scheme

            self.scheme = load_scheme(scheme, scheme_config, prompts)
        elif prompts is not None or scheme_config is not None:
            raise InputError("prompts and scheme_config need a scheme (--scheme NAME)")
        self.cache_dir = cache
        if client not in ("httpx", "openai"):
            raise InputError(f"client={client!r} is not one of httpx, openai")
        if client == "openai" and cache is not None:
            raise InputError("the response cache works with client='httpx' only")
        self.client_kind = client
        if client == "openai":
            from urban_gym.baselines.lmm.openai_client import OpenAIChatClient

            self.client: Any = OpenAIChatClient(self.client_config, seed=seed)
        else:
            self.client = ChatClient(self.client_config, seed=seed)
        if cache is not None:
            from urban_gym.baselines.lmm.cache import ResponseCache

            self.client.cache = ResponseCache(cache)
        self.agent = LMMAgent(self.client)
        self.nonce = uuid.uuid4().hex[:12]  # names this agent's episodes on the server
        self.stack: gym.Env | None = None
        self.tap: OutcomeTap | None = None
        self._last: dict[str, Any] = {}
        self._calls: list[dict[str, Any]] = []

    def wrap(self, env: gym.Env) -> gym.Env:
        """The language-model face of ``env`` (:func:`urban_gym.wrappers.make_lmm_env`),
        the scheme's when one is set.
        """
        from urban_gym.wrappers.stacks import make_lmm_env

        self.tap = OutcomeTap(env)
        opts: dict[str, Any] = {
            "protocol": self.protocol,
            "map_observation": self.map,
            "memory": None if self.memory == "none" else self.memory,
            "memory_budget": self.memory_budget,
            "location_map": self.location,
        }
        if self.scheme is not None:
            fam = family_name(env)
            self.scheme.check_family(fam)
            opts.update(self.scheme.stack_options(fam))
            opts["protocol"] = self.scheme.protocol(fam)
        self.stack = make_lmm_env(
            self.tap,
            **opts,
            lmm_kwargs={
                "image_budget_bytes": self.image_budget_bytes,
                "max_image_side": self.max_image_side,
                "image_downscale_step": self.image_downscale_step,
                "include_images": self.include_images,
            },
        )
        return self.stack

    def reset(self, env: gym.Env, task: Any, seed: int | None = None) -> None:
        """A new episode: the prompt builder, the episode header, the scheme's state."""
        self.stack = env
        history = self.history
        fam_builder = prompt_builder_for(family_name(env))
        images = fam_builder.history_images
        if self.scheme is not None:
            h = self.scheme.history(family_name(env))
            if h is not None:
                history, images = h
        if history is not None:
            self.agent.prompt_builder = PromptBuilder(history, images)
            self.agent._builder_given = True
        self.agent.reset(env)
        tap = self.tap
        env_seed = tap.seed if tap is not None else None
        self.agent.headers = self.episode_header(env_seed, getattr(task, "id", None))
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
        :class:`~urban_gym.baselines.agents.AgentGaveUp` with ``model_error`` when the
        client gives up).
        """
        from urban_gym.baselines.agents import AgentGaveUp

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
        """One action request for the stack's current observation (the reply's tokens
        and latency are added to this step's notes).
        """
        text = self.agent.act(stack)
        last = dict(self.agent.replies[-1]) if self.agent.replies else {}
        self._add_notes(last)
        return text

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
        resp = self.client.chat(messages, headers=headers or self.agent.headers, **params)
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
        """Model, endpoint (credentials and query removed), sampling, images, map,
        memory, scheme -- never the API key.
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
            "protocol": self.protocol,
        }
        if self.scheme is not None:
            out["scheme"] = {**self.scheme.describe(), "prompts_file": self.prompts_file}
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
