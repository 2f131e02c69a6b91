"""The play server's gate: which requests reach the page and its API at all.

A request passes when

* its ``Host`` is a loopback name with the server's port (``127.0.0.1``, ``localhost`` or
  ``[::1]``), so that a DNS-rebinding page (``Host: evil.example``) is refused;
* its ``Origin``, when it has one, is such a loopback origin, so that a web page on another
  site cannot post to the API (a cross-site ``no-cors`` POST carries its own ``Origin``);
* for the page and the API, it carries the run's token: the command prints the page's URL
  with ``?token=...`` (as Jupyter does); ``GET /?token=...`` sets the token cookie
  (HttpOnly, SameSite=Strict) and redirects to ``/``, and every later request of the page
  carries the cookie. A script may send the token in the ``X-Urban-Gym-Token`` header;
* its declared body is at most :data:`MAX_BODY` bytes.

Refusals are JSON ``{"error": message}`` with 403 (host, origin, token), 413 (size) or
400 (a ``Content-Length`` that is not a number). The static files (the page's script and
style, the same for everyone) need no token.
"""

from __future__ import annotations

import secrets
from typing import Any
from urllib.parse import parse_qs

from starlette.datastructures import Headers
from starlette.responses import JSONResponse, RedirectResponse

#: The largest request body the play server reads (bytes): a command is a few hundred.
MAX_BODY = 64 * 1024
#: The header a script may send the run's token in (the page uses the cookie).
TOKEN_HEADER = "x-urban-gym-token"
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def loopback_hosts(port: int) -> frozenset[str]:
    """The ``Host`` values of a loopback server on ``port``."""
    return frozenset(f"{name}:{port}" for name in LOOPBACK_NAMES)


class Gate:
    """ASGI middleware that lets through only the requests the module docstring allows.

    Args:
        app: the app behind the gate.
        port: the server's port (``Host`` and ``Origin`` must name it).
        token: the run's token.
        cookie: the name of the token cookie.
        max_body: the largest ``Content-Length`` accepted (bytes).
    """

    def __init__(self, app: Any, port: int, token: str, cookie: str, max_body: int = MAX_BODY):
        self.app = app
        self.hosts = loopback_hosts(port)
        self.origins = frozenset(f"http://{h}" for h in self.hosts)
        self.token = token
        self.cookie = cookie
        self.max_body = int(max_body)

    def has_token(self, value: str | None) -> bool:
        """Whether ``value`` is the run's token (compared in constant time)."""
        return bool(value) and secrets.compare_digest(str(value), self.token)

    def refusal(self, scope: dict[str, Any]) -> tuple[str, int] | None:
        """Why the request of ``scope`` is refused (message, status), or None."""
        h = Headers(scope=scope)
        host = h.get("host", "")
        if host.lower() not in self.hosts:
            return (
                f"Host {host!r} is not this server: open it as http://127.0.0.1, "
                "localhost or [::1] with its port",
                403,
            )
        origin = h.get("origin")
        if origin is not None and origin.lower() not in self.origins:
            return f"Origin {origin!r} may not use this server (loopback pages only)", 403
        length = h.get("content-length")
        if length is not None:
            if not length.strip().isdigit():
                return f"Content-Length {length!r} is not a byte count", 400
            if int(length) > self.max_body:
                return f"the body ({length} bytes) is larger than {self.max_body} bytes", 413
        path = scope.get("path", "")
        if path.startswith("/static/"):
            return None
        cookies = _cookies(h.get("cookie", ""))
        if self.has_token(cookies.get(self.cookie)) or self.has_token(h.get(TOKEN_HEADER)):
            return None
        if path == "/" and self.has_token(_query_token(scope)):
            return None
        return (
            "no token: open the URL that `urban-gym play` printed (it ends in ?token=...)",
            403,
        )

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """Refuse (JSON error), move a ``?token=`` into the cookie, or pass the request on."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refused = self.refusal(scope)
        if refused is not None:
            msg, status = refused
            await JSONResponse({"error": msg}, status_code=status)(scope, receive, send)
            return
        if scope.get("path") == "/" and _query_token(scope) is not None:
            # the token moves from the address bar into the cookie
            resp = RedirectResponse("/", status_code=303)
            resp.set_cookie(self.cookie, self.token, httponly=True, samesite="strict", path="/")
            await resp(scope, receive, send)
            return
        await self.app(scope, receive, send)


def _query_token(scope: dict[str, Any]) -> str | None:
    qs = scope.get("query_string", b"").decode("latin-1")
    values = parse_qs(qs).get("token")
    return values[0] if values else None


def _cookies(header: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in header.split(";"):
        name, sep, value = part.strip().partition("=")
        if sep:
            out.setdefault(name, value)
    return out


__all__ = ["MAX_BODY", "TOKEN_HEADER", "Gate", "loopback_hosts"]
