"""Checks of the language-model client's settings, made before the first request: a bad
setting is an :class:`~urban_gym.errors.InputError` that names its command-line option and
value (``--temperature nan``, ``--timeout -1``, ``--max-retries -1``, NaN in
``--extra-body``, a base URL with port 99999), never a run of recorded errors.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import httpx

from urban_gym.errors import InputError

#: The command-line option of each client setting, for error messages.
OPTION_NAMES = {
    "base_url": "--base-url",
    "model": "--model",
    "temperature": "--temperature",
    "max_tokens": "--max-tokens",
    "extra_body": "--extra-body",
    "timeout_s": "--timeout",
    "max_retries": "--max-retries",
    "deadline_s": "--request-deadline",
}
#: The longest time setting accepted (seconds): a week.
MAX_SECONDS = 7 * 86400.0


def _bad(name: str, value: Any, why: str) -> InputError:
    option = OPTION_NAMES.get(name)
    shown = f"{option} {value!r} ({name})" if option else f"{name}={value!r}"
    return InputError(f"{shown}: {why}")


def _number(c: Any, name: str, low: float, high: float, integer: bool = False) -> None:
    v = getattr(c, name)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise _bad(name, v, "must be a number")
    if integer and not isinstance(v, int):
        raise _bad(name, v, "must be a whole number")
    if not low <= v <= high:  # NaN fails too
        raise _bad(name, v, f"must be a number from {low:g} to {high:g}")


def check_config(c: Any) -> None:
    """Raise :class:`~urban_gym.errors.InputError` naming the first bad setting of ``c``
    (its command-line option and value): a URL that is not ``http(s)://host[:port]``, an
    empty model, a time that is not a finite positive number of seconds up to a week,
    negative or absurd counts, a temperature that is not finite, an ``extra_body`` that is
    not strict JSON (NaN, Infinity).
    """
    check_base_url(c.base_url)
    if not isinstance(c.model, str) or not c.model.strip():
        raise _bad("model", c.model, "must be a model name")
    if c.api_key is not None and not isinstance(c.api_key, str):
        raise _bad("api_key", type(c.api_key).__name__, "must be a string")
    for name in ("timeout_s", "connect_timeout_s", "deadline_s"):
        _number(c, name, 1e-3, MAX_SECONDS)
    _number(c, "max_retries", 0, 100, integer=True)
    _number(c, "backoff_s", 0, MAX_SECONDS)
    _number(c, "backoff_factor", 1, 100)
    _number(c, "max_backoff_s", 0, MAX_SECONDS)
    _number(c, "jitter", 0, 1)
    _number(c, "max_response_bytes", 1, 2**40, integer=True)
    if c.temperature is not None:
        _number(c, "temperature", 0, 100)
    if c.max_tokens is not None:
        _number(c, "max_tokens", 1, 2**31, integer=True)
    if not isinstance(c.extra_body, Mapping):
        raise _bad("extra_body", c.extra_body, "must be a JSON object")
    try:
        json.dumps(c.extra_body, allow_nan=False)
    except (ValueError, TypeError, RecursionError) as exc:
        raise _bad("extra_body", _shown(c.extra_body), f"is not strict JSON ({exc})") from None


def check_base_url(url: Any) -> str:
    """``url`` if it is ``http(s)://host[:port][/path]`` with a port from 1 to 65535; else
    :class:`~urban_gym.errors.InputError` naming it (credentials in it are hidden).
    """
    from urban_gym.redact import redact_url

    if not isinstance(url, str):
        raise _bad("base_url", url, "must be a URL")
    shown = redact_url(url)
    try:
        u = httpx.URL(url)
        port = u.port
    except (httpx.InvalidURL, ValueError, TypeError) as exc:
        raise _bad("base_url", shown, f"is not a URL ({exc})") from None
    if u.scheme not in ("http", "https") or not u.host:
        raise _bad("base_url", shown, "must be http://host[:port]/... or https://...")
    if port is not None and not 1 <= port <= 65535:
        raise _bad("base_url", shown, "has a port outside 1..65535")
    return url


__all__ = ["MAX_SECONDS", "OPTION_NAMES", "check_base_url", "check_config"]


def _shown(value: Any, limit: int = 80) -> str:
    try:
        text = json.dumps(dict(value))
    except (ValueError, TypeError, RecursionError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
