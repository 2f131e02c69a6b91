"""A loopback chat-completions server that answers each request with a prepared raw
answer: any status, headers and body bytes -- the faults a real server or proxy can send
(a malformed completion, garbage under ``Content-Encoding: gzip``, a huge body, a body
without a length). Real HTTP (stdlib ``http.server``), port 0, one thread per request.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Answer:
    """One raw HTTP answer. ``length=False`` sends no Content-Length and closes the
    connection after the body (the client reads to the end of the stream). ``drip_s``
    sends the body a byte at a time, that many seconds apart; ``forever`` sends the body
    again and again until the client hangs up (with ``length=False``)."""

    body: bytes
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    length: bool = True
    drip_s: float = 0.0
    forever: bool = False


#: The usage of :func:`completion_body` unless told otherwise.
DEFAULT_USAGE = {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}


def completion_body(text: str = '{"action": "turn", "angle": 90}', **top: Any) -> dict[str, Any]:
    """A well-formed chat completion (as a dict) with ``text`` and :data:`DEFAULT_USAGE`;
    ``top`` replaces top-level keys (``usage=5``, ``choices=[]`` ...)."""
    body: dict[str, Any] = {
        "id": "fault-1",
        "object": "chat.completion",
        "model": "fault-model",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        ],
        "usage": dict(DEFAULT_USAGE),
    }
    body.update(top)
    return body


def json_answer(value: Any, status: int = 200) -> Answer:
    """``value`` as a JSON body (``allow_nan``: ``float("inf")`` is sent as Infinity)."""
    return Answer(json.dumps(value).encode("utf-8"), status, {"Content-Type": "application/json"})


class FaultServer:
    """Answers chat requests from a queue of :class:`Answer` (then ``default``).

    Attributes: ``url`` (base URL for the client), ``requests`` (chat requests answered).
    """

    def __init__(self, answers: Iterable[Answer] = (), default: Answer | None = None) -> None:
        self.answers = list(answers)
        self.default = default or json_answer(completion_body())
        self.requests = 0
        #: the raw request (headers and body) of every chat request, in order
        self.seen: list[bytes] = []
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        assert self._httpd is not None, "start() first"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def next_answer(self) -> Answer:
        with self._lock:
            self.requests += 1
            return self.answers.pop(0) if self.answers else self.default

    def start(self) -> FaultServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # one answer is two writes: no 40 ms ACK wait

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with server._lock:
                    server.seen.append(f"{self.path}\n{self.headers}".encode() + body)
                a = server.next_answer()
                self.send_response(a.status)
                for k, v in a.headers.items():
                    self.send_header(k, v)
                if a.length:
                    self.send_header("Content-Length", str(len(a.body)))
                else:
                    self.send_header("Connection", "close")
                    self.close_connection = True
                self.end_headers()
                try:
                    while True:
                        if a.drip_s:
                            for i in range(len(a.body)):
                                self.wfile.write(a.body[i : i + 1])
                                self.wfile.flush()
                                time.sleep(a.drip_s)
                        else:
                            self.wfile.write(a.body)
                        if not a.forever or server._httpd is None:
                            break
                except (BrokenPipeError, ConnectionResetError, ValueError, OSError):
                    pass  # the client stopped reading (a body over its limit, a deadline)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> FaultServer:
        return self if self._httpd is not None else self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
