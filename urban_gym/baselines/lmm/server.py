"""``urban-gym serve-scripted``: a chat-completions server on loopback that answers with
an oracle's actions -- the test double for the whole language-model path.

It is a real HTTP server (stdlib ``http.server``, one thread per request) speaking the
OpenAI chat-completions API: ``POST /v1/chat/completions``, ``GET /v1/models``. Its answers
are the oracle's next action written as a reply in the family's prompt protocol, as plain
JSON or wrapped in prose and/or code fences (``wrap``) to exercise the client's parser.

**Design: an env in lockstep.** An oracle needs privileged state, which a chat request does
not carry. The server therefore holds its *own* instance of the environment, reset with the
same id, keyword arguments, seed and options as the client's, and steps it with each action
it sends. Environments are deterministic by seed, so as long as the client carries out the
replies it receives, both instances stay in the same state. An episode is started
explicitly with ``POST /v1/scripted/episode`` (``{"env_id", "seed", "options",
"env_kwargs"}``) or, when the server was started with a seed, implicitly by the first
request; after an episode ends, the next request starts the next seed. A request repeated
verbatim (a client retry after a lost answer) gets the same answer without stepping again.

**Policies and episodes in parallel.** ``policy`` (:mod:`.policies`) says what the replies
are: the oracle's actions, the oracle with wrong but valid actions mixed in
(``noisy-oracle:P``), random valid actions, or recorded replies (``replay:FILE``). A
request carrying the header :data:`~.calls.EPISODE_HEADER` (the harness's language-model
agent sends it) names its episode: the server starts it on the first request and keeps one
env per named episode, so several episodes may run at once against one server. Calls that
are not actions -- self-positioning, a final answer, a reflection (:mod:`.calls`) -- are
answered from the episode's ground truth (:class:`~.session.Session`).

``faults`` makes the first chat requests fail with the given HTTP status codes (e.g.
``[429, 500]``) to exercise the client's retries.

``responders`` answer requests that are not steps of an episode -- a judge's verdict
(:func:`urban_gym.baselines.lmm.judge.judge_responder`), a failure label
(:func:`urban_gym.eval.labeler.label_responder`): each is called with the request's
messages and returns the reply text, or None to pass; the first that answers wins, and
the episode is not touched.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast

import gymnasium as gym

from urban_gym.baselines.lmm.calls import EPISODE_HEADER, call_kind, read_episode_header
from urban_gym.baselines.lmm.policies import ScriptedPolicy, parse_policy
from urban_gym.baselines.lmm.session import Session, revise_answer

WRAPS = ("json", "fence", "prose", "mixed")

_PROSE = (
    ("I looked at the scene and the task. My reply:\n", "\nThat is my decision."),
    ("Here is what I will do next.\n\n", ""),
    ("", "\n\n(I hope this helps.)"),
)


def wrap_reply(text: str, style: str, step: int) -> str:
    """``text`` (a JSON reply) as plain JSON, fenced, in prose, or -- ``mixed`` -- cycling
    through plain, fenced, prose, and prose around a fence by ``step``.
    """
    if style == "mixed":
        style = ("json", "fence", "prose", "prose+fence")[step % 4]
    if style == "json":
        return text
    if style == "fence":
        return f"```json\n{text}\n```"
    a, b = _PROSE[step % len(_PROSE)]
    if style == "prose":
        return f"{a}{text}{b}"
    if style == "prose+fence":
        return f"{a}```\n{text}\n```{b}"
    raise ValueError(f"wrap={style!r} is not one of {', '.join(WRAPS)}")


class ScriptedServer:
    """The scripted chat-completions server (see the module docstring).

    Args:
        env_id: id for ``gym.make`` (or give ``env_factory``).
        env_kwargs: keyword arguments for ``gym.make``.
        env_factory: ``(env_id, env_kwargs) -> env``; default ``gym.make``.
        oracle_factory: ``env -> oracle`` with ``reset(env)``/``act(env)``; default
            :func:`urban_gym.baselines.oracles.make_oracle`.
        seed: when set, the first request starts an episode with this seed.
        options: reset options of the episodes started implicitly.
        wrap: ``json``, ``fence``, ``prose`` or ``mixed``.
        faults: HTTP status codes for the first chat requests.
        host: the address to listen on.
        port: where to listen (0: a free port).
        model_name: the model name the answers carry.
        responders: answer non-episode requests (see the module docstring).
        schedule: ``(seed, options)`` of the episodes to script, in order: each is started
            by the first request after the previous one ended (e.g. a harness run's keys:
            ``(seed, {"task_id": ...})``); once it is spent, episodes start as without a
            schedule (the previous seed + 1, with ``options``).
        policy: what the replies are (:mod:`.policies`): ``oracle``, ``noisy-oracle:P``,
            ``random`` or ``replay:FILE``, or a :class:`~.policies.ScriptedPolicy`.
        policy_seed: the base seed of the policy's per-episode random choices.
        record_requests: keep every chat request answered, in order, in
            :attr:`recorded`: ``{"messages", "kind", "episode"}`` (``kind`` None for an
            action request, ``episode`` the episode header or None) -- what a model was
            sent, for tests that check it.
    """

    def __init__(
        self,
        env_id: str | None = None,
        env_kwargs: dict[str, Any] | None = None,
        env_factory: Callable[[str | None, dict[str, Any]], gym.Env] | None = None,
        oracle_factory: Callable[[gym.Env], Any] | None = None,
        seed: int | None = None,
        options: dict[str, Any] | None = None,
        wrap: str = "json",
        faults: Sequence[int] = (),
        host: str = "127.0.0.1",
        port: int = 0,
        model_name: str = "urban-gym-scripted",
        responders: Sequence[Callable[[list], str | None]] = (),
        schedule: Sequence[tuple[int | None, dict[str, Any] | None]] = (),
        policy: str | ScriptedPolicy = "oracle",
        policy_seed: int = 0,
        record_requests: bool = False,
    ) -> None:
        if wrap not in WRAPS:
            raise ValueError(f"wrap={wrap!r} is not one of {', '.join(WRAPS)}")
        self.env_id = env_id
        self.env_kwargs = dict(env_kwargs or {})
        # the default needs env_id (the docstring's "or give env_factory")
        self.env_factory = env_factory or (lambda i, kw: gym.make(cast(str, i), **kw))
        self.oracle_factory = oracle_factory
        self.seed = seed
        self.options = options
        self.wrap = wrap
        self.faults = list(faults)
        self.host, self.port = host, int(port)
        self.model_name = model_name
        self.responders = list(responders)
        self.schedule = list(schedule)
        self.policy = (
            policy if isinstance(policy, ScriptedPolicy) else parse_policy(policy, policy_seed)
        )
        self.answered = 0  # requests answered by a responder
        self.calls: dict[str, int] = {}  # non-action calls answered, by kind
        self.session: Session | None = None  # the episode of requests without a header
        self.sessions: dict[str, Session] = {}  # episodes named by the header
        self._pool: list[gym.Env] = []  # envs of finished named episodes, for reuse
        self.started = False
        self.requests = 0
        self.log: list[dict[str, Any]] = []
        self.record_requests = bool(record_requests)
        self.recorded: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ compatibility
    @property
    def env(self) -> gym.Env | None:
        """The env of the unnamed episode (requests without the episode header)."""
        return self.session.env if self.session is not None else None

    @property
    def steps(self) -> int:
        """Steps scripted in the unnamed episode so far."""
        return self.session.steps if self.session is not None else 0

    @property
    def episode_over(self) -> bool:
        """Whether the unnamed episode has ended (or none has started)."""
        return self.session is None or self.session.over

    # ------------------------------------------------------------------ lifecycle
    @property
    def url(self) -> str:
        """The base URL clients use (``http://127.0.0.1:PORT/v1``)."""
        return f"http://{self.host}:{self.port}/v1"

    def start(self) -> ScriptedServer:
        """Listen in a daemon thread; returns self (``url`` then holds the real port)."""
        handler = _make_handler(self)
        self._httpd = ThreadingHTTPServer((self.host, self.port), handler)
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(0.05,), name="scripted-server", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop listening and close the envs."""
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        envs = [s.env for s in [self.session, *self.sessions.values()] if s is not None]
        for env in {id(e): e for e in [*envs, *self._pool] if e is not None}.values():
            env.close()
        self.session, self.sessions, self._pool = None, {}, []

    def __enter__(self) -> ScriptedServer:
        return self if self._httpd is not None else self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def serve_forever(self) -> None:
        """Block until interrupted (for the CLI)."""
        try:
            while self._thread is not None and self._thread.is_alive():
                time.sleep(0.2)
        except KeyboardInterrupt:
            pass
        finally:
            self.stop()

    # ------------------------------------------------------------------ episodes
    def start_episode(
        self,
        seed: int | None = None,
        options: dict[str, Any] | None = None,
        env_id: str | None = None,
        env_kwargs: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Reset the server's env (a new one when ``env_id``/``env_kwargs`` change) and
        the oracle; returns a summary ``{"env_id", "seed", "task"}``.
        """
        with self._lock:
            return self._start_episode(seed, options, env_id, env_kwargs)

    def _start_episode(self, seed, options, env_id, env_kwargs) -> dict[str, Any]:
        changed = (env_id is not None and env_id != self.env_id) or (
            env_kwargs is not None and dict(env_kwargs) != self.env_kwargs
        )
        if env_id is not None:
            self.env_id = env_id
        if env_kwargs is not None:
            self.env_kwargs = dict(env_kwargs)
        if changed:
            for e in self._pool:
                e.close()
            self._pool = []
        if self.session is None or changed:
            if self.session is not None:
                self.session.env.close()
            self.session = Session(self._new_env(), self.policy, self.oracle_factory)
        self.seed, self.options = seed, options
        summary = self.session.start(seed, options)
        self.started = True
        return {"env_id": self.env_id, **summary}

    def _new_env(self) -> gym.Env:
        if self._pool:
            return self._pool.pop()
        return self.env_factory(self.env_id, self.env_kwargs)

    def _named_session(self, header: str, named: tuple[int | None, str]) -> Session:
        """The session of the episode a header names, started on its first request."""
        s = self.sessions.get(header)
        if s is None:
            seed, task_id = named
            s = Session(self._new_env(), self.policy, self.oracle_factory)
            s.start(seed, {"task_id": task_id})
            self.sessions[header] = s
            if len(self.sessions) > 10_000:  # the oldest finished summaries go
                for k in [k for k, v in self.sessions.items() if v.over][:1000]:
                    del self.sessions[k]
        return s

    # ------------------------------------------------------------------ chat
    def complete(
        self, body: dict[str, Any], headers: dict[str, str] | None = None
    ) -> tuple[int, dict[str, Any]]:
        """Answer one chat-completions request body: ``(status, response body)``."""
        with self._lock:
            self.requests += 1
            if self.faults:
                status = int(self.faults.pop(0))
                return status, _error(f"scripted fault {status}", "server_error")
            messages = body.get("messages")
            if not isinstance(messages, list) or not messages:
                return 400, _error("'messages' must be a non-empty list", "invalid_request_error")
            for respond in self.responders:
                text = respond(messages)
                if text is not None:
                    self.answered += 1
                    return 200, _completion(text, self.model_name, messages, self.answered)
            header = _header(headers, EPISODE_HEADER)
            named = read_episode_header(header)
            kind = call_kind(messages)
            if self.record_requests:
                self.recorded.append({"messages": messages, "kind": kind, "episode": header})
            if kind == "prompt_revision":  # about a prompt, not an episode
                self.answered += 1
                self.calls[kind] = self.calls.get(kind, 0) + 1
                return 200, _completion(
                    revise_answer(messages, self.calls[kind]), self.model_name, messages, 0
                )
            if named is not None:
                assert header is not None  # named: read from the header
                session: Session | None = self._named_session(header, named)
            else:
                session = self._unnamed_session(messages, kind)
            if session is None:
                return 409, _error(
                    "no episode: POST /v1/scripted/episode first", "invalid_request_error"
                )
            if kind is not None:
                self.answered += 1
                self.calls[kind] = self.calls.get(kind, 0) + 1
                return 200, _completion(
                    session.answer_call(kind), self.model_name, messages, self.answered
                )
            return 200, self._action_answer(session, messages, named is not None)

    def _unnamed_session(self, messages: list, kind: str | None) -> Session | None:
        """The episode of requests without a header: the next one is started when the
        current one is over (not for a retry or a non-action call); None when there is
        nothing to start.
        """
        s = self.session
        if s is not None and (not s.over or kind is not None):
            return s
        if s is not None and s.last is not None and s.last[0] == _key(messages):
            return s  # a retry of the last answer of the episode
        if self.schedule:
            seed, options = self.schedule.pop(0)
        elif self.started:
            seed, options = _next(self.seed), self.options
        elif self.seed is not None or self.env_id is not None:
            seed, options = self.seed, self.options
        else:
            return None
        self._start_episode(seed, options, None, None)
        return self.session

    def _action_answer(self, s: Session, messages: list, named: bool) -> dict[str, Any]:
        key = _key(messages)
        if s.last is not None and s.last[0] == key:
            return s.last[1]  # a retry of the request just answered
        if s.over:  # a named episode asked for a step after its end
            return _completion(
                json.dumps({"thought": "the episode is over", "action": {"name": "stop"}}),
                self.model_name,
                messages,
                s.steps,
            )
        text = wrap_reply(s.next_reply(), self.wrap, s.steps - 1)
        self.log.append({"step": s.steps, "valid": bool(s.info.get("action_valid", True))})
        del self.log[:-1000]  # the last 1,000 scripted actions
        if s.over and named:
            self._pool.append(s.env)  # the env goes back to the pool; the summary stays
        resp = _completion(text, self.model_name, messages, s.steps)
        s.last = (key, resp)
        return resp


def _key(messages: list) -> str:
    return hashlib.sha256(json.dumps(messages, sort_keys=True, default=str).encode()).hexdigest()


def _header(headers: dict[str, str] | None, name: str) -> str | None:
    for k, v in (headers or {}).items():
        if k.lower() == name.lower():
            return v
    return None


def _next(seed: int | None) -> int | None:
    return None if seed is None else seed + 1


def _error(message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind}}


def _completion(text: str, model: str, messages: list, step: int) -> dict[str, Any]:
    prompt_chars = len(json.dumps(messages, default=str))
    prompt_tokens, completion_tokens = prompt_chars // 4, max(1, len(text) // 4)
    return {
        "id": f"scripted-{step}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
        ],
        # estimates (characters / 4): the scripted server has no tokenizer
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


#: The largest request body the scripted server reads (bytes; images included).
MAX_REQUEST_BYTES = 256 * 2**20


def _read_body(h: BaseHTTPRequestHandler) -> dict[str, Any] | None:
    """The JSON object of a request's body, or None (not JSON, cut off, nested too deep,
    or a ``Content-Length`` outside 0..:data:`MAX_REQUEST_BYTES`: the connection closes).
    """
    try:
        n = int(h.headers.get("Content-Length") or 0)
        if not 0 <= n <= MAX_REQUEST_BYTES:  # a negative length would read forever
            h.close_connection = True
            return None
        data = json.loads(h.rfile.read(n) or b"{}")
    except (ValueError, OSError, RecursionError):  # not JSON, cut off, nested too deep
        return None
    return data if isinstance(data, dict) else None


def _make_handler(server: ScriptedServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # headers and body go out in two writes: without TCP_NODELAY every answer on a
        # kept-alive connection waits for the client's delayed ACK (about 40 ms)
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def _send(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None):
            data = json.dumps(body).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def _body(self) -> dict[str, Any] | None:
            return _read_body(self)

        def do_GET(self) -> None:
            path = self.path.rstrip("/")
            if path in ("/v1/models", "/models"):
                self._send(
                    200,
                    {
                        "object": "list",
                        "data": [
                            {"id": server.model_name, "object": "model", "owned_by": "urban_gym"}
                        ],
                    },
                )
            elif path in ("/health", "/v1/health"):
                self._send(200, {"status": "ok", "env_id": server.env_id, "steps": server.steps})
            else:
                self._send(404, _error(f"no route {self.path}", "not_found"))

        def do_POST(self) -> None:
            path = self.path.rstrip("/")
            body = self._body()
            if body is None:
                msg = "the body is not a JSON object (or its Content-Length is not 0..256 MiB)"
                self._send(400, _error(msg, "invalid_request_error"))
                return
            if path in ("/v1/chat/completions", "/chat/completions"):
                try:
                    status, resp = server.complete(body, dict(self.headers.items()))
                except Exception as exc:  # the oracle or env failed: a 500, logged
                    status, resp = 500, _error(f"{type(exc).__name__}: {exc}", "server_error")
                headers = {"Retry-After": "0"} if status == 429 else None
                self._send(status, resp, headers)
            elif path in ("/v1/scripted/episode", "/scripted/episode"):
                try:
                    summary = server.start_episode(
                        seed=body.get("seed"),
                        options=body.get("options"),
                        env_id=body.get("env_id"),
                        env_kwargs=body.get("env_kwargs"),
                    )
                except Exception as exc:
                    self._send(400, _error(f"{type(exc).__name__}: {exc}", "invalid_request_error"))
                    return
                self._send(200, summary)
            else:
                self._send(404, _error(f"no route {self.path}", "not_found"))

    return Handler


def oracle_from_path(path: str) -> Callable[[gym.Env], Any]:
    """An oracle factory from ``"module:Class"`` (the class is called without arguments)."""
    import importlib

    from urban_gym.errors import InputError

    mod, _, cls = path.partition(":")
    if not mod or not cls:
        raise InputError(f"oracle {path!r} must be 'module:Class'")
    try:
        klass = getattr(importlib.import_module(mod), cls)
    except (ImportError, AttributeError) as exc:
        raise InputError(f"oracle {path!r} cannot be imported: {exc}") from exc
    return lambda env: klass()
