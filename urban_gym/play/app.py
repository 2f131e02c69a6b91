"""The play page's web server: a Starlette app on loopback, served by uvicorn.

=========================  ==================================================================
route                      what it does
=========================  ==================================================================
``GET /``                  the page (``static/index.html``; ``static/play.js`` draws it)
``GET /api/config``        the env id, family, controls and widgets of the page
``POST /api/session``      this browser's session (created, with its cookie, on the first
                           call), its first task started; returns the page state
``POST /api/act``          ``{"control": id, "params": {...}}``: one step; returns the new
                           state with ``server_ms`` (request in -> new frame ready)
``POST /api/next``         the next task, after an episode is recorded
``POST /api/heartbeat``    the page is alive (every few seconds)
``POST /api/leave``        the page is going away (``navigator.sendBeacon`` on pagehide)
``GET /api/stats``         server latency per control (milliseconds), episodes recorded
=========================  ==================================================================

Errors are JSON ``{"error": message}``: 400 for a command the page cannot have meant, a body
that is not a JSON object (too deep, a number too long) or a missing session, 409 for a step
while the last one runs, 429 when :attr:`PlaySettings.max_sessions` pages already play. In
front of every route, :class:`~urban_gym.play.gate.Gate` refuses other hosts, other origins,
requests without the run's token and bodies over :data:`~urban_gym.play.gate.MAX_BODY` bytes. The session cookie (HttpOnly,
SameSite=Strict) is named after the port, so two servers on one machine keep their
sessions apart. Nothing here is imported by ``import urban_gym``.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import signal
import socket
import statistics
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from urban_gym.errors import InputError, UrbanGymError
from urban_gym.play.controls import ControlError, family_controls
from urban_gym.play.gate import MAX_BODY, Gate
from urban_gym.play.run import PlayRun
from urban_gym.play.session import PlaySession, SessionBusy

STATIC = Path(__file__).parent / "static"
#: Loopback only: the page is for the people at this machine (tunnel it to share it).
HOST = "127.0.0.1"


def _error(message: str, status: int) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


class _Endpoints:
    """The routes of :func:`create_app` (one method each)."""

    def __init__(self, run: PlayRun, cookie: str) -> None:
        self.run = run
        self.cookie = cookie
        self.config = {
            "env_id": run.env_id,
            "family": run.family,
            "controls": family_controls(run.family).to_dict(),
            "run_dir": run.path.name,  # the folder's name: no absolute path leaves
        }

    def session_of(self, request: Request) -> PlaySession | None:
        s = self.run.session(request.cookies.get(self.cookie))
        if s is not None:
            s.touch()
        return s

    async def index(self, request: Request) -> Response:
        return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-store"})

    async def get_config(self, request: Request) -> Response:
        return JSONResponse(self.config)

    async def open_session(self, request: Request) -> Response:
        s = self.session_of(request)
        new = s is None
        if s is None:
            if self.run.live_sessions() >= self.run.settings.max_sessions:
                n = self.run.settings.max_sessions
                return _error(f"{n} pages already play on this server (--max-sessions)", 429)
            s = await run_in_threadpool(self.run.new_session)
        state = s.state()
        if s.phase == "new":
            state = await run_in_threadpool(s.start_next)
        resp = JSONResponse(state)
        if new:
            resp.set_cookie(self.cookie, s.token, httponly=True, samesite="strict", path="/")
        return resp

    async def act(self, request: Request) -> Response:
        s = self.session_of(request)
        if s is None:
            return _error("no session: reload the page", 400)
        body = await read_json(request)
        if isinstance(body, Response):
            return body
        if not isinstance(body, dict) or not isinstance(body.get("params", {}), dict):
            return _error('the body must be {"control": id, "params": {...}}', 400)
        try:
            state = await run_in_threadpool(s.command, body.get("control"), body.get("params"))
        except SessionBusy as exc:
            return _error(str(exc), 409)
        except ControlError as exc:
            return _error(str(exc), 400)
        return JSONResponse(state)

    async def next_task(self, request: Request) -> Response:
        s = self.session_of(request)
        if s is None:
            return _error("no session: reload the page", 400)
        return JSONResponse(await run_in_threadpool(s.start_next))

    async def heartbeat(self, request: Request) -> Response:
        s = self.session_of(request)
        if s is None:
            return _error("no session: reload the page", 400)
        return JSONResponse({"phase": s.phase, "progress": self.run.progress()})

    async def leave(self, request: Request) -> Response:
        s = self.run.session(request.cookies.get(self.cookie))
        if s is not None:
            s.leave()
        return Response(status_code=204)

    async def stats(self, request: Request) -> Response:
        body = {"latency_ms": latency_summary(self.run), "progress": self.run.progress()}
        return JSONResponse(body)


async def read_json(request: Request, limit: int = MAX_BODY) -> Any:
    """The request's JSON body, or the JSON error response for a body over ``limit``
    bytes or one that does not parse (not JSON, nested too deep, a number too long).
    """
    data = bytearray()
    async for chunk in request.stream():
        data += chunk
        if len(data) > limit:
            return _error(f"the body is larger than {limit} bytes", 413)
    try:
        return json.loads(bytes(data))
    except RecursionError:
        return _error("the body is nested too deep", 400)
    except (ValueError, UnicodeDecodeError) as exc:  # JSONDecodeError; int digit limit
        return _error(f"the body is not JSON ({str(exc)[:120]})", 400)


def create_app(
    run: PlayRun,
    cookie: str = "urban_gym_play",
    token: str | None = None,
    port: int | None = None,
) -> Starlette:
    """The Starlette app of ``run`` (see the module docstring); ``cookie`` names the
    session cookie. With ``token`` and ``port`` the app sits behind the
    :class:`~urban_gym.play.gate.Gate` (loopback hosts and origins on ``port``, the token;
    :class:`PlayServer` always gives both). The app's lifespan closes ``run`` when the
    server stops (running episodes are recorded as abandoned).
    """
    e = _Endpoints(run, cookie)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette):
        yield
        await run_in_threadpool(run.close)

    routes = [
        Route("/", e.index),
        Route("/api/config", e.get_config),
        Route("/api/session", e.open_session, methods=["POST"]),
        Route("/api/act", e.act, methods=["POST"]),
        Route("/api/next", e.next_task, methods=["POST"]),
        Route("/api/heartbeat", e.heartbeat, methods=["POST"]),
        Route("/api/leave", e.leave, methods=["POST"]),
        Route("/api/stats", e.stats),
        Mount("/static", app=StaticFiles(directory=STATIC), name="static"),
    ]
    middleware = []
    if token is not None and port is not None:
        middleware.append(Middleware(Gate, port=port, token=token, cookie=cookie + "_token"))
    return Starlette(routes=routes, lifespan=lifespan, middleware=middleware)


def latency_summary(run: PlayRun) -> dict[str, dict[str, float]]:
    """Per control: ``n``, ``median`` and ``p95`` of the server's milliseconds from a
    command's request to its new frame, and ``all`` over every control.
    """
    per = run.latencies()
    per["all"] = [v for vs in per.values() for v in vs]
    out = {}
    for k, vs in per.items():
        if vs:
            s = sorted(vs)
            p95 = s[min(len(s) - 1, int(round(0.95 * (len(s) - 1))))]
            out[k] = {"n": len(s), "median": round(statistics.median(s), 2), "p95": round(p95, 2)}
    return out


def bind(port: int = 0) -> socket.socket:
    """A listening TCP socket on :data:`HOST` (``port`` 0: any free port)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((HOST, int(port)))
    except OSError as exc:
        sock.close()
        raise UrbanGymError(f"cannot listen on {HOST}:{port} ({exc})") from None
    sock.listen(64)
    return sock


class PlayServer:
    """``run``'s page served by uvicorn on loopback.

    :meth:`serve` runs in the calling thread until Ctrl-C (the command);
    :meth:`start` / :meth:`stop` run it in a background thread (tests, benchmarks; also a
    context manager). Stopping closes the run: running episodes are recorded as abandoned.

    ``url`` is the server's root; ``page_url`` is the address a person opens (it carries
    the run's ``token``, which the page keeps in a cookie); a script sends the token in
    ``headers`` (``X-Urban-Gym-Token``).
    """

    def __init__(self, run: PlayRun, port: int = 0) -> None:
        import uvicorn

        self.run = run
        self.sock = bind(port)
        self.port = int(self.sock.getsockname()[1])
        self.url = f"http://{HOST}:{self.port}/"
        self.token = secrets.token_urlsafe(24)
        self.page_url = f"{self.url}?token={self.token}"
        self.headers = {"X-Urban-Gym-Token": self.token}
        cookie = f"urban_gym_play_{self.port}"
        app = create_app(run, cookie=cookie, token=self.token, port=self.port)
        config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
        self.server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    def serve(self) -> None:
        """Serve until the process is interrupted (Ctrl-C or SIGTERM)."""
        self.server.run(sockets=[self.sock])

    def start(self, timeout: float = 30.0) -> PlayServer:
        """Serve in a background thread; returns once the server accepts requests."""
        self._thread = threading.Thread(target=self.serve, name="play-server", daemon=True)
        self._thread.start()
        t0 = time.monotonic()
        while not self.server.started:
            if not self._thread.is_alive() or time.monotonic() - t0 > timeout:
                raise UrbanGymError(f"the play server on {self.url} did not start")
            time.sleep(0.02)
        return self

    def stop(self, timeout: float = 60.0) -> None:
        """Stop the background server (its lifespan closes the run)."""
        self.server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout)

    def __enter__(self) -> PlayServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def serve(
    env_id: str,
    out: str,
    port: int = 0,
    open_browser: bool = False,
    command: Sequence[str] | None = None,
    **run_kwargs: Any,
) -> int:
    """``urban-gym play``: build the run, print the URL, serve until Ctrl-C."""
    run = PlayRun(env_id, out, command=command, **run_kwargs)
    server = PlayServer(run, port)
    left = len(run.keys) - run.done_before
    print(
        f"urban-gym play: {env_id}, {len(run.keys)} episodes, {run.done_before} recorded "
        f"before, {left} to play; records in {run.path}",
        flush=True,
    )
    print(
        f"open {server.page_url} in a browser (Ctrl-C stops; running episodes are recorded "
        "as abandoned)",
        flush=True,
    )
    if open_browser:
        import webbrowser

        webbrowser.open(server.page_url)
    # uvicorn shuts down on SIGINT/SIGTERM (the lifespan records running episodes as
    # abandoned), then raises the signal again: end quietly with status 0 on either
    old_term = signal.signal(signal.SIGTERM, _interrupt)
    try:
        server.serve()
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, old_term)
        if not server.server.started:  # the lifespan never ran: close here
            run.close()
    done = run.progress()["recorded"]
    print(f"{run.path}: {done}/{len(run.keys)} episodes recorded", file=sys.stderr)
    print(f"  report: urban-gym report {run.path}", file=sys.stderr)
    return 0


def serve_args(
    args: Any, env_kwargs: dict[str, Any], task_ids: list[str] | None, command: Any
) -> int:
    """``urban-gym play`` from its parsed arguments (``args``: the command's namespace)."""
    from urban_gym.play.session import PlaySettings

    for name in ("idle_timeout", "heartbeat_timeout", "leave_grace"):
        v = getattr(args, name)
        if not 0 < v < 1e9:  # NaN and inf fail too
            raise InputError(f"--{name.replace('_', '-')}={v!r} must be > 0 s (and finite)")
    if not 1 <= args.max_sessions <= 1000:
        raise InputError(f"--max-sessions={args.max_sessions!r} must be between 1 and 1000")
    return serve(
        args.env_id,
        args.out or "play_out/" + args.env_id.replace("/", "_"),
        port=args.port,
        open_browser=args.open,
        command=command,
        env_kwargs=env_kwargs,
        task_ids=task_ids,
        seeds=args.seeds,
        seed=args.seed,
        seeding=args.seeding,
        track_visibility=not args.no_visibility,
        settings=PlaySettings(
            idle_timeout_s=args.idle_timeout,
            heartbeat_timeout_s=args.heartbeat_timeout,
            leave_grace_s=args.leave_grace,
            max_sessions=args.max_sessions,
        ),
        force=args.force,
    )


__all__ = ["HOST", "PlayServer", "bind", "create_app", "latency_summary", "serve", "serve_args"]
