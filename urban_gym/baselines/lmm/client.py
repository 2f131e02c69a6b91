"""An OpenAI-compatible chat-completions client (OpenAI, vLLM, Ollama, SGLang, LM Studio).

The client knows HTTP and nothing of environments. It posts ``messages`` to
``{base_url}/chat/completions``, retries with exponential backoff on HTTP 429 and 5xx
answers and on connection errors and timeouts (honouring ``Retry-After`` up to the
backoff cap), and adds up the token usage the server reports. When the retries are spent,
or the server answers a request error (4xx other than 429, or a body that is not a chat
completion), it raises :class:`ModelError`; the agent loop then ends the episode with
termination ``model_error``.

Configuration comes from arguments or the environment:

=========================  ======================================  =========================
setting                    environment variables (first set wins)  default
=========================  ======================================  =========================
base URL                   ``URBAN_GYM_LMM_BASE_URL``,             ``https://api.openai.com/v1``
                           ``OPENAI_BASE_URL``
model                      ``URBAN_GYM_LMM_MODEL``                 ``gpt-4o-mini``
API key                    ``URBAN_GYM_LMM_API_KEY``,              none (no header sent)
                           ``OPENAI_API_KEY``
=========================  ======================================  =========================
"""

from __future__ import annotations

import dataclasses
import os
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

RETRY_STATUS = frozenset({408, 429, 500, 502, 503, 504, 520, 522, 524, 529})


class ModelError(RuntimeError):
    """The model could not be reached or gave no usable completion.

    Attributes: ``status`` (last HTTP status, None for connection errors) and ``attempts``.
    """

    def __init__(self, message: str, status: int | None = None, attempts: int = 0) -> None:
        super().__init__(message)
        self.status = status
        self.attempts = attempts


@dataclass(frozen=True)
class ClientConfig:
    """Settings of :class:`ChatClient` (times in seconds).

    ``max_retries`` is the number of retries after the first attempt; the wait before retry
    ``k`` (1-based) is ``backoff_s * backoff_factor ** (k - 1)``, at most ``max_backoff_s``,
    plus up to ``jitter`` of itself at random. ``temperature``/``max_tokens`` None are not
    sent; ``extra_body`` is merged into every request (e.g. vLLM sampling options).
    """

    base_url: str = "https://api.openai.com/v1"
    model: str = "gpt-4o-mini"
    api_key: str | None = None
    timeout_s: float = 120.0
    connect_timeout_s: float = 10.0
    max_retries: int = 4
    backoff_s: float = 1.0
    backoff_factor: float = 2.0
    max_backoff_s: float = 30.0
    jitter: float = 0.1
    temperature: float | None = 0.0
    max_tokens: int | None = 1024
    extra_body: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> ClientConfig:
        """Settings from the environment variables (see the module docstring), then
        ``overrides`` (None values ignored)."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        base = env.get("URBAN_GYM_LMM_BASE_URL") or env.get("OPENAI_BASE_URL")
        if base:
            values["base_url"] = base
        if env.get("URBAN_GYM_LMM_MODEL"):
            values["model"] = env["URBAN_GYM_LMM_MODEL"]
        key = env.get("URBAN_GYM_LMM_API_KEY") or env.get("OPENAI_API_KEY")
        if key:
            values["api_key"] = key
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(overrides) - names)
        if unknown:
            raise TypeError(f"unknown client settings {unknown}; valid: {sorted(names)}")
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)


@dataclass
class ChatResponse:
    """One completion: the reply ``text``, token ``usage`` as reported, ``latency_s`` of
    the successful attempt, ``attempts`` made, ``finish_reason`` and the ``raw`` body."""

    text: str
    model: str
    usage: dict[str, int]
    latency_s: float
    attempts: int
    finish_reason: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)


class ChatClient:
    """POSTs chat completions with retries; totals in :attr:`usage`.

    Args:
        config: settings (default: :meth:`ClientConfig.from_env`).
        transport: an ``httpx`` transport (tests); default: real HTTP.
        sleep: the function used to wait between retries (tests may record the waits).
    """

    def __init__(
        self,
        config: ClientConfig | None = None,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        seed: int | None = None,
    ) -> None:
        self.config = config or ClientConfig.from_env()
        headers = {"Content-Type": "application/json"}
        if self.config.api_key:
            headers["Authorization"] = f"Bearer {self.config.api_key}"
        timeout = httpx.Timeout(self.config.timeout_s, connect=self.config.connect_timeout_s)
        self._http = httpx.Client(
            base_url=self.config.base_url.rstrip("/") + "/",
            headers=headers,
            timeout=timeout,
            transport=transport,
            trust_env=False,
        )
        self._sleep = sleep
        self._rng = random.Random(seed)
        self.usage: dict[str, int] = {
            "prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0,
            "requests": 0, "retries": 0, "failures": 0,
        }  # fmt: skip
        self.waits: list[float] = []

    def __enter__(self) -> ChatClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def backoff(self, retry: int, retry_after: str | None = None) -> float:
        """Seconds to wait before retry number ``retry`` (1-based)."""
        c = self.config
        wait = min(c.max_backoff_s, c.backoff_s * c.backoff_factor ** (retry - 1))
        if retry_after:
            try:
                wait = min(c.max_backoff_s, max(wait, float(retry_after)))
            except ValueError:
                pass
        if c.jitter:
            wait += wait * c.jitter * self._rng.random()
        return wait

    def chat(self, messages: Sequence[Mapping[str, Any]], **params: Any) -> ChatResponse:
        """One chat completion for ``messages`` (OpenAI format). ``params`` are added to
        the request body (e.g. ``temperature``). Raises :class:`ModelError`."""
        c = self.config
        body: dict[str, Any] = {"model": c.model, "messages": list(messages)}
        if c.temperature is not None:
            body["temperature"] = c.temperature
        if c.max_tokens is not None:
            body["max_tokens"] = c.max_tokens
        body.update(c.extra_body)
        body.update(params)
        last_error, status = "", None
        attempts = 0
        for attempt in range(c.max_retries + 1):
            if attempt:
                self.usage["retries"] += 1
            attempts = attempt + 1
            self.usage["requests"] += 1
            t0 = time.perf_counter()
            retry_after = None
            try:
                resp = self._http.post("chat/completions", json=body)
            except httpx.TransportError as exc:  # connect errors, timeouts, broken streams
                last_error, status = f"{type(exc).__name__}: {exc}", None
            else:
                status = resp.status_code
                if status == 200:
                    return self._read(resp, time.perf_counter() - t0, attempts)
                last_error = f"HTTP {status}: {_error_text(resp)}"
                if status not in RETRY_STATUS:
                    self.usage["failures"] += 1
                    raise ModelError(
                        f"{c.base_url}: request rejected ({last_error})", status, attempts
                    )
                retry_after = resp.headers.get("retry-after")
            if attempt < c.max_retries:
                wait = self.backoff(attempt + 1, retry_after)
                self.waits.append(wait)
                self._sleep(wait)
        self.usage["failures"] += 1
        raise ModelError(
            f"{c.base_url}: no completion after {attempts} attempts ({last_error})",
            status,
            attempts,
        )

    def _read(self, resp: httpx.Response, latency: float, attempts: int) -> ChatResponse:
        try:
            data = resp.json()
            choice = data["choices"][0]
            message = choice.get("message") or {}
            content = message.get("content")
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
            self.usage["failures"] += 1
            raise ModelError(
                f"{self.config.base_url}: the answer is not a chat completion ({exc!r}): "
                + resp.text[:200],
                resp.status_code,
                attempts,
            ) from exc
        if isinstance(content, list):  # content parts
            content = "".join(p.get("text", "") for p in content if isinstance(p, Mapping))
        text = content if isinstance(content, str) else ""
        raw_usage = data.get("usage") or {}
        usage = {
            k: int(raw_usage.get(k) or 0)
            for k in ("prompt_tokens", "completion_tokens", "total_tokens")
        }
        if not usage["total_tokens"]:
            usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        for k, v in usage.items():
            self.usage[k] += v
        return ChatResponse(
            text=text,
            model=str(data.get("model", self.config.model)),
            usage=usage,
            latency_s=latency,
            attempts=attempts,
            finish_reason=choice.get("finish_reason"),
            raw=data,
        )


def _error_text(resp: httpx.Response) -> str:
    try:
        data = resp.json()
        err = data.get("error") if isinstance(data, dict) else None
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])[:200]
    except ValueError:
        pass
    return resp.text[:200]
