"""An OpenAI-compatible chat-completions client (OpenAI, vLLM, Ollama, SGLang, LM Studio).

The client knows HTTP and nothing of environments. It posts ``messages`` to
``{base_url}/chat/completions``, retries with exponential backoff on HTTP 429 and 5xx
answers, on connection errors and timeouts, and on a body that does not decode (e.g.
``Content-Encoding: gzip`` over bytes that are not gzip), honouring ``Retry-After`` up to
the backoff cap, and adds up the token usage the server reports. When the retries are
spent, or the server answers a request error (4xx other than 429), or a 200 answer is not
a chat completion (not JSON, ``choices``/``message``/``content``/``usage`` of the wrong
shape, a body over ``max_response_bytes``), it raises :class:`ModelError` with a message
that names the problem -- whatever the server sends, nothing else leaves
:meth:`ChatClient.chat` -- and the agent loop ends the episode with termination
``model_error``.

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
import json
import os
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from urban_gym.baselines.lmm.checks import check_config
from urban_gym.errors import ModelError

RETRY_STATUS = frozenset({408, 429, 500, 502, 503, 504, 520, 522, 524, 529})


@dataclass(frozen=True)
class ClientConfig:
    """Settings of :class:`ChatClient` (times in seconds).

    ``max_retries`` is the number of retries after the first attempt; the wait before retry
    ``k`` (1-based) is ``backoff_s * backoff_factor ** (k - 1)``, at most ``max_backoff_s``,
    plus up to ``jitter`` of itself at random. ``temperature``/``max_tokens`` None are not
    sent; ``extra_body`` is merged into every request (e.g. vLLM sampling options).
    ``max_response_bytes`` caps the size of an answer's body after decompression (bytes;
    a larger one is a :class:`ModelError`, not retried). ``deadline_s`` bounds one
    :meth:`ChatClient.chat` call as a whole -- every attempt, every wait between them and
    every byte of every answer (``timeout_s`` bounds each read): a server that drips a byte a
    second, streams forever or asks for a day's ``Retry-After`` ends in a
    :class:`ModelError` naming the deadline.

    Every setting is checked when the config is made (:func:`check_config`): a bad one is an
    :class:`~urban_gym.errors.InputError` naming its option and value.
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
    max_response_bytes: int = 32 * 2**20
    extra_body: Mapping[str, Any] = field(default_factory=dict)
    deadline_s: float = 600.0

    def __post_init__(self) -> None:
        check_config(self)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> ClientConfig:
        """Settings from the environment variables (see the module docstring), then
        ``overrides`` (None values ignored).
        """
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
    the successful attempt, ``attempts`` made, ``finish_reason``, the ``raw`` body, and
    whether it came from the response cache (``cached``: no tokens counted).
    """

    text: str
    model: str
    usage: dict[str, int]
    latency_s: float
    attempts: int
    finish_reason: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)
    cached: bool = False


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
        base = httpx.URL(self.config.base_url)
        #: the base URL's query (e.g. ``?key=...``), sent with every request after the path
        self._params = base.params
        self._http = httpx.Client(
            base_url=str(base.copy_with(query=None, fragment=None)).rstrip("/") + "/",
            headers=headers,
            timeout=timeout,
            transport=transport,
            trust_env=False,
        )
        from urban_gym.redact import redact_url, url_secrets

        #: the client's credentials, replaced in every message and answer it passes on
        self.secrets = [s for s in (self.config.api_key, *url_secrets(self.config.base_url)) if s]
        #: the base URL as messages show it (credentials replaced)
        self.shown_url = redact_url(self.config.base_url, self.secrets)
        self._sleep = sleep
        self._rng = random.Random(seed)
        self.usage: dict[str, int] = {
            "prompt_tokens": 0,
            "completion_tokens": 0,
            "total_tokens": 0,
            "requests": 0,
            "retries": 0,
            "failures": 0,
        }
        self.waits: list[float] = []
        self.cache: Any = None  # a ResponseCache (see chat)

    def __enter__(self) -> ChatClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the HTTP connections."""
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

    def chat(
        self,
        messages: Sequence[Mapping[str, Any]],
        headers: Mapping[str, str] | None = None,
        **params: Any,
    ) -> ChatResponse:
        """One chat completion for ``messages`` (OpenAI format). ``params`` are added to
        the request body (e.g. ``temperature``); ``headers`` to the HTTP request. With a
        :attr:`cache` (:class:`~.cache.ResponseCache`) a request seen before is answered
        from it, without HTTP and without counting tokens. Raises :class:`ModelError` and
        nothing else for anything the server does (see :meth:`_read` for the checks of a
        200 answer).
        """
        c = self.config
        body: dict[str, Any] = {"model": c.model, "messages": list(messages)}
        if c.temperature is not None:
            body["temperature"] = c.temperature
        if c.max_tokens is not None:
            body["max_tokens"] = c.max_tokens
        body.update(c.extra_body)
        body.update(params)
        key, hit = self._cached(body)
        if hit is not None:
            return hit
        last_error, status = "", None
        attempts = 0
        deadline = time.monotonic() + c.deadline_s
        for attempt in range(c.max_retries + 1):
            if attempt:
                self.usage["retries"] += 1
            attempts = attempt + 1
            self.usage["requests"] += 1
            t0 = time.perf_counter()
            retry_after = None
            try:
                status, retry_after, payload = self._post(body, headers, deadline)
            except (httpx.TransportError, httpx.DecodingError) as exc:
                # connect errors, timeouts, broken streams, a body that does not decode
                # (e.g. Content-Encoding: gzip over garbage): retried
                status = None
                last_error = self._clean(_transport_text(exc))
            except _Deadline as exc:
                self.usage["failures"] += 1
                raise ModelError(f"{self.shown_url}: {exc}", exc.status, attempts) from None
            except _BodyTooLarge as exc:
                self.usage["failures"] += 1
                raise ModelError(f"{self.shown_url}: {exc}", exc.status, attempts) from None
            except httpx.HTTPError as exc:  # e.g. too many redirects: not retried
                self.usage["failures"] += 1
                raise ModelError(
                    f"{self.shown_url}: request failed ({self._clean(_transport_text(exc))})",
                    None,
                    attempts,
                ) from None
            else:
                if status == 200:
                    resp = self._read(payload, time.perf_counter() - t0, attempts)
                    self._remember(key, resp)
                    return resp
                last_error = f"HTTP {status}: {self._clean(_error_text(payload))}"
                if status not in RETRY_STATUS:
                    self.usage["failures"] += 1
                    raise ModelError(
                        f"{self.shown_url}: request rejected ({last_error})", status, attempts
                    )
            if attempt < c.max_retries:
                wait = self.backoff(attempt + 1, retry_after)
                if time.monotonic() + wait >= deadline:
                    self.usage["failures"] += 1
                    raise ModelError(
                        f"{self.shown_url}: no completion within the request deadline of "
                        f"{c.deadline_s:g} s (--request-deadline; the next retry would wait "
                        f"{wait:.3g} s; last: {last_error})",
                        status,
                        attempts,
                    )
                self.waits.append(wait)
                self._sleep(wait)
        self.usage["failures"] += 1
        raise ModelError(
            f"{self.shown_url}: no completion after {attempts} attempts ({last_error})",
            status,
            attempts,
        )

    def _cached(self, body: dict[str, Any]) -> tuple[str | None, ChatResponse | None]:
        """``(cache key, cached response or None)`` of ``body`` (no key without a cache)."""
        c = self.config
        if self.cache is None:
            return None, None
        from urban_gym.baselines.lmm.cache import request_key

        key = request_key(body)
        hit = self.cache.get(key)
        if hit is None:
            return key, None
        resp = ChatResponse(
            text=hit["text"],
            model=str(hit.get("model", c.model)),
            usage={},
            latency_s=0.0,
            attempts=0,
            finish_reason=hit.get("finish_reason"),
            cached=True,
        )
        return key, resp

    def _remember(self, key: str | None, resp: ChatResponse) -> None:
        if key is not None and self.cache is not None:
            entry = {
                "text": resp.text,
                "model": resp.model,
                "usage": resp.usage,
                "finish_reason": resp.finish_reason,
            }
            self.cache.put(key, entry)

    def _clean(self, text: str) -> str:
        """``text`` without the client's credentials (:mod:`urban_gym.redact`)."""
        from urban_gym.redact import redact_text

        return redact_text(text, self.secrets)

    def _post(
        self,
        body: dict[str, Any],
        headers: Mapping[str, str] | None = None,
        deadline: float | None = None,
    ) -> tuple[int, str | None, bytes]:
        """POST ``body``; ``(status, Retry-After header, body bytes)``. A 200 body is read
        up to ``max_response_bytes`` (decoded), an error body up to 64 KiB; the client's
        credentials in the body are replaced. Past ``deadline`` (``time.monotonic()``)
        raises :class:`_Deadline`.
        """
        from urban_gym.redact import redact_bytes

        c = self.config
        limit = c.max_response_bytes
        extra = dict(headers) if headers else None
        if deadline is None:
            deadline = time.monotonic() + c.deadline_s
        left = deadline - time.monotonic()
        if left <= 0:
            raise _Deadline(f"no completion within the request deadline of {c.deadline_s:g} s")
        timeout = httpx.Timeout(min(c.timeout_s, left), connect=min(c.connect_timeout_s, left))
        stream = self._http.stream(
            "POST",
            "chat/completions",
            json=body,
            headers=extra,
            timeout=timeout,
            params=self._params or None,
        )
        with stream as resp:
            status = resp.status_code
            cap = limit if status == 200 else _ERROR_BODY_BYTES
            declared = resp.headers.get("content-length", "")
            if status == 200 and declared.isdigit() and int(declared) > limit:
                raise _BodyTooLarge(
                    f"the answer's body is {declared} bytes, more than max_response_bytes={limit}",
                    status,
                )
            chunks: list[bytes] = []
            size = 0
            for chunk in resp.iter_bytes():
                if time.monotonic() > deadline:
                    raise _Deadline(
                        f"the answer was still arriving at the request deadline of "
                        f"{c.deadline_s:g} s (--request-deadline; {size} bytes read)",
                        status,
                    )
                chunks.append(chunk)
                size += len(chunk)
                if size > cap:
                    if status == 200:
                        raise _BodyTooLarge(
                            f"the answer's body is more than max_response_bytes={limit} bytes",
                            status,
                        )
                    break  # an error text needs no more
            data = redact_bytes(b"".join(chunks)[:cap], self.secrets)
            return status, resp.headers.get("retry-after"), data

    def _read(self, payload: bytes, latency: float, attempts: int) -> ChatResponse:
        """The completion in a 200 answer's ``payload``. Raises :class:`ModelError`
        (not retried) naming what is wrong when the body is not JSON, not a chat
        completion (``choices`` missing, empty or not a list; ``message`` missing or
        null; ``content`` neither a string, null nor a list of parts; a text part whose
        ``text`` is not a string), or reports ``usage`` that is not an object of token
        counts (non-negative integers below 2**53; absent or null counts are 0).
        """
        try:
            data = json.loads(payload)
            text, usage, model, finish = _completion_fields(data, self.config.model)
        except Exception as exc:  # anything a body can do: named, never leaked
            self.usage["failures"] += 1
            raise ModelError(
                f"{self.shown_url}: the answer is not a chat completion "
                f"({_problem(exc)}): {_snippet(payload)}",
                200,
                attempts,
            ) from None
        for k, v in usage.items():
            self.usage[k] += v
        return ChatResponse(
            text=text,
            model=model,
            usage=usage,
            latency_s=latency,
            attempts=attempts,
            finish_reason=finish,
            raw=data,
        )


class _BodyTooLarge(Exception):
    def __init__(self, message: str, status: int | None) -> None:
        super().__init__(message)
        self.status = status


class _Deadline(_BodyTooLarge):
    """The request deadline passed (not retried)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message, status)


class _Malformed(ValueError):
    """A 200 answer that is JSON but not a chat completion (the message says why)."""


#: Largest count accepted in ``usage`` (larger ones are not token counts).
MAX_TOKEN_COUNT = 2**53
_ERROR_BODY_BYTES = 64 * 1024
_USAGE_KEYS = ("prompt_tokens", "completion_tokens", "total_tokens")


def _completion_fields(
    data: Any, default_model: str
) -> tuple[str, dict[str, int], str, str | None]:
    """``(text, usage, model, finish_reason)`` of a chat-completion body, or
    :class:`_Malformed`.
    """
    if not isinstance(data, dict):
        raise _Malformed(f"the body is {_kind(data)}, not a JSON object")
    choices = data.get("choices")
    if choices is None:
        err = data.get("error")
        if err is not None:
            raise _Malformed(f"the body is an error: {_short(err)}")
        raise _Malformed("'choices' is missing")
    if not isinstance(choices, list):
        raise _Malformed(f"'choices' is {_kind(choices)}, not a list")
    if not choices:
        raise _Malformed("'choices' is empty")
    choice = choices[0]
    if not isinstance(choice, dict):
        raise _Malformed(f"choices[0] is {_kind(choice)}, not an object")
    message = choice.get("message")
    if not isinstance(message, dict):
        what = "missing" if "message" not in choice else _kind(message)
        raise _Malformed(f"choices[0].message is {what}, not an object")
    text = _content_text(message.get("content"))
    usage = _usage(data.get("usage"))
    model = data.get("model")
    finish = choice.get("finish_reason")
    return (
        text,
        usage,
        model if isinstance(model, str) and model else default_model,
        finish if isinstance(finish, str) else None,
    )


def _content_text(content: Any) -> str:
    if content is None:  # e.g. a refusal or a tool call: an empty reply
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise _Malformed(
            f"choices[0].message.content is {_kind(content)}, not a string or a list of parts"
        )
    texts = []
    for i, part in enumerate(content):
        if not isinstance(part, dict) or "text" not in part:
            continue  # not a text part (an image, a refusal...)
        t = part["text"]
        if not isinstance(t, str):
            raise _Malformed(
                f"choices[0].message.content[{i}].text is {_kind(t)} ({_short(t)}), not a string"
            )
        texts.append(t)
    return "".join(texts)


def _usage(raw: Any) -> dict[str, int]:
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise _Malformed(f"'usage' is {_kind(raw)} ({_short(raw)}), not an object")
    usage = {}
    for k in _USAGE_KEYS:
        v = raw.get(k)
        if v is None:
            usage[k] = 0
        elif isinstance(v, int) and not isinstance(v, bool) and 0 <= v < MAX_TOKEN_COUNT:
            usage[k] = v
        elif isinstance(v, float) and v.is_integer() and 0 <= v < MAX_TOKEN_COUNT:
            usage[k] = int(v)
        else:
            raise _Malformed(f"usage.{k} is {_short(v)}, not a token count")
    if not usage["total_tokens"]:
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
    return usage


def _kind(v: Any) -> str:
    """What a JSON value is, with its article: ``an object``, ``a list``, ``null`` ..."""
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}
    if v is None:
        return "null"
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return "a number"
    return names.get(type(v), f"a {type(v).__name__}")


def _short(v: Any, limit: int = 60) -> str:
    """A short, safe rendering of a JSON value for an error message."""
    if isinstance(v, int) and not isinstance(v, bool) and v.bit_length() > 200:
        return f"an integer of about {int(v.bit_length() * 0.30103) + 1} digits"
    try:
        r = json.dumps(v, ensure_ascii=True)[: limit + 1]
    except Exception:  # nesting too deep, ...
        r = _kind(v)
    return r if len(r) <= limit else r[: limit - 3] + "..."


def _problem(exc: BaseException) -> str:
    if isinstance(exc, _Malformed):
        return str(exc)
    if isinstance(exc, UnicodeDecodeError):
        return f"the body is not UTF-8 text ({exc.reason} at byte {exc.start})"
    if isinstance(exc, json.JSONDecodeError):
        return f"the body is not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
    if isinstance(exc, RecursionError):
        return "the body's JSON is nested too deep to read"
    return f"the body could not be read ({type(exc).__name__}: {str(exc)[:200]})"


def _snippet(payload: bytes, limit: int = 200) -> str:
    text = payload[: 4 * limit].decode("utf-8", "replace")
    return repr(text[:limit]) + (f" ... ({len(payload)} bytes)" if len(payload) > limit else "")


def _transport_text(exc: BaseException) -> str:
    if isinstance(exc, httpx.DecodingError):
        return f"the answer's body could not be decoded (DecodingError: {str(exc)[:200]})"
    return f"{type(exc).__name__}: {str(exc)[:200]}"


def _error_text(payload: bytes) -> str:
    """The ``error.message`` of an error body, else the start of the body as text."""
    try:
        data = json.loads(payload)
        err = data.get("error") if isinstance(data, dict) else None
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return err["message"][:200]
    except Exception:  # not JSON, nested too deep, ...
        pass
    return payload[:800].decode("utf-8", "replace")[:200]
