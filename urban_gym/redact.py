"""Credentials out of everything urban_gym writes: records, manifests, traces, logs.

A credential is the client's own API key (``URBAN_GYM_LMM_API_KEY``, ``OPENAI_API_KEY``,
or the key a client was given), the ``user:password`` of a URL, or the value of a
``?key=``-style query parameter (:data:`SECRET_PARAMS`). :func:`redact_text` replaces each
with :data:`REDACTED`; :func:`redact_url` does it for one URL; :func:`redact_argv` for a
command line before it is recorded.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

#: What a credential is replaced with.
REDACTED = "[REDACTED]"
#: Query parameters whose values are credentials (lower case).
SECRET_PARAMS = (
    "key",
    "api_key",
    "apikey",
    "api-key",
    "access_token",
    "token",
    "auth",
    "password",
    "secret",
    "sig",
    "signature",
    "x-goog-api-key",
)
#: The environment variables that hold API keys.
KEY_VARIABLES = ("URBAN_GYM_LMM_API_KEY", "OPENAI_API_KEY")
#: Literal secrets shorter than this are not searched for (they would hit ordinary text).
MIN_SECRET = 6

_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<info>[^/\s@?#\"']+)@")
_PARAM = re.compile(
    r"(?P<head>[?&;](?:" + "|".join(re.escape(p) for p in SECRET_PARAMS) + r")=)"
    r"(?P<value>[^&#\s\"']+)",
    re.IGNORECASE,
)


def known_secrets(environ: Mapping[str, str] | None = None) -> list[str]:
    """The API keys in the environment (see :data:`KEY_VARIABLES`)."""
    env = os.environ if environ is None else environ
    return [env[k] for k in KEY_VARIABLES if env.get(k)]


def redact_text(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` with URL credentials, secret query values and each of ``secrets`` (at
    least :data:`MIN_SECRET` characters long) replaced by :data:`REDACTED`.
    """
    out = str(text)
    for s in sorted({s for s in secrets if s and len(s) >= MIN_SECRET}, key=len, reverse=True):
        out = out.replace(s, REDACTED)
    out = _USERINFO.sub(lambda m: f"{m['scheme']}{REDACTED}@", out)
    return _PARAM.sub(lambda m: f"{m['head']}{REDACTED}", out)


def redact_url(url: str, secrets: Iterable[str | None] = ()) -> str:
    """``url`` with its credentials replaced (see :func:`redact_text`)."""
    return redact_text(url, secrets)


def redact_bytes(data: bytes, secrets: Iterable[str | None]) -> bytes:
    """``data`` with each of ``secrets`` (UTF-8) replaced by :data:`REDACTED`."""
    for s in secrets:
        if s and len(s) >= MIN_SECRET:
            data = data.replace(s.encode("utf-8"), REDACTED.encode("ascii"))
    return data


def redact_argv(argv: Sequence[str] | None, secrets: Iterable[str | None] = ()) -> list[str] | None:
    """A command line as it may be recorded: every argument passed through
    :func:`redact_text` with ``secrets`` and the environment's API keys.
    """
    if argv is None:
        return None
    found = [*secrets, *known_secrets()]
    return [redact_text(a, found) for a in argv]


def redact_value(value: Any, secrets: Iterable[str | None] = ()) -> Any:
    """A JSON-like value with every string in it redacted (see :func:`redact_text`)."""
    found = list(secrets)
    if isinstance(value, str):
        return redact_text(value, found)
    if isinstance(value, Mapping):
        return {k: redact_value(v, found) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_value(v, found) for v in value]
    return value


def url_secrets(url: str) -> list[str]:
    """The literal credentials inside ``url``: its user, password and secret query values."""
    out: list[str] = []
    m = _USERINFO.search(url)
    if m:
        out.extend(p for p in m["info"].split(":", 1) if p)
    out.extend(m["value"] for m in _PARAM.finditer(url))
    return out


__all__ = [
    "KEY_VARIABLES",
    "REDACTED",
    "SECRET_PARAMS",
    "known_secrets",
    "redact_argv",
    "redact_bytes",
    "redact_text",
    "redact_url",
    "redact_value",
    "url_secrets",
]
