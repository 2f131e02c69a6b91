"""Issue 39 item 2: the play server under attack from other web pages, on a real loopback
socket. A page on another site (a cross-site POST, or DNS rebinding with ``Host:
evil.example``) must not claim tasks or read anything; the page needs the run's token from
the printed URL; sessions, bodies and parse depth are capped; ``/api/config`` shows no
absolute path."""

from __future__ import annotations

import httpx
import pytest

from urban_gym.play.app import PlayServer
from urban_gym.play.run import PlayRun
from urban_gym.play.session import PlaySettings

PG = "UrbanGym/PoseGraph360-Procedural-v0"
TASKS = ["localization-easy-000", "localization-medium-000", "object_count-easy-000"]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    out = tmp_path_factory.mktemp("attacks") / "human"
    run = PlayRun(PG, out, task_ids=TASKS, settings=PlaySettings(max_sessions=2))
    with PlayServer(run) as srv:
        yield srv, run


def test_a_cross_site_page_claims_nothing(served):
    srv, run = served
    evil = {"Origin": "http://evil.example"}
    for path in ("api/session", "api/act", "api/next", "api/leave"):
        r = httpx.post(srv.url + path, headers=evil, content=b"{}")
        assert r.status_code == 403 and "Origin 'http://evil.example'" in r.json()["error"]
    # even a request that somehow holds the token is refused from another origin
    r = httpx.post(srv.url + "api/session", headers={**evil, **srv.headers})
    assert r.status_code == 403
    assert run.progress()["playing"] == 0 and not run.sessions


def test_dns_rebinding_is_refused(served):
    srv, run = served
    for path in ("", "api/config", "api/stats", "static/play.js"):
        r = httpx.get(srv.url + path, headers={"Host": "evil.example"})
        assert r.status_code == 403 and "Host 'evil.example'" in r.json()["error"], path
    r = httpx.post(srv.url + "api/session", headers={"Host": f"evil.example:{srv.port}"})
    assert r.status_code == 403
    # the wrong port on a loopback name is another server too
    r = httpx.get(srv.url + "api/config", headers={"Host": f"localhost:{srv.port + 1}"})
    assert r.status_code == 403
    assert run.progress()["playing"] == 0 and not run.sessions


def test_the_page_needs_the_printed_token(served):
    srv, run = served
    assert "?token=" in srv.page_url
    for path in ("", "api/config"):
        r = httpx.get(srv.url + path)
        assert r.status_code == 403 and "open the URL" in r.json()["error"]
    r = httpx.post(srv.url + "api/session")
    assert r.status_code == 403 and not run.sessions
    r = httpx.get(srv.url + "?token=not-the-token")
    assert r.status_code == 403
    with httpx.Client(timeout=60, follow_redirects=True) as page:
        r = page.get(srv.page_url)  # the token goes into a cookie; the address loses it
        assert r.status_code == 200 and str(r.url) == srv.url and "play.js" in r.text
        assert page.get(srv.url + "static/play.js").status_code == 200
        for name in ("localhost", "[::1]"):  # every loopback name of this port is let in
            host = {"Host": f"{name}:{srv.port}"}
            assert page.get(srv.url + "api/config", headers=host).status_code == 200


def test_config_shows_no_absolute_path(served):
    srv, run = served
    text = httpx.get(srv.url + "api/config", headers=srv.headers).text
    assert str(run.path.parent) not in text and run.path.name in text


def test_bad_bodies_get_the_json_error(served):
    srv, _ = served
    with httpx.Client(base_url=srv.url, headers=srv.headers, timeout=60) as c:
        assert c.post("/api/session").status_code == 200
        cases = {
            b"[" * 30_000 + b"]" * 30_000: "nested too deep",  # 100k deep: over the cap
            b'{"control": "answer", "params": {"text": ' + b"9" * 5_000 + b"}}": "not JSON",
            b"\xff\xfe": "not JSON",
        }
        for body, words in cases.items():
            r = c.post("/api/act", content=body)
            assert r.status_code in (400, 413), body[:40]
            assert words in r.json()["error"], body[:40]
        r = c.post("/api/act", content=b" " * 300_000)  # declared too large: not read
        assert r.status_code == 413 and "larger than 65536 bytes" in r.json()["error"]

        def chunks():  # no Content-Length: cut off while reading
            for _ in range(100):
                yield b" " * 10_000

        r = c.post("/api/act", content=chunks())
        assert r.status_code == 413 and "larger than 65536 bytes" in r.json()["error"]


def test_sessions_are_capped(served):
    srv, run = served
    states = []
    for _ in range(3):
        with httpx.Client(base_url=srv.url, headers=srv.headers, timeout=60) as c:
            states.append(c.post("/api/session"))
    assert run.live_sessions() <= 2
    assert states[-1].status_code == 429 and "--max-sessions" in states[-1].json()["error"]
