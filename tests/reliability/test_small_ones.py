"""Issue 39 item 12, the small ones: ``load_city(123)`` is a CityLoadError naming the
value, and the scripted server answers a negative ``Content-Length`` at once instead of
waiting for a body that never ends."""

from __future__ import annotations

import socket
import time

import pytest

from urban_gym.baselines.lmm.server import ScriptedServer
from urban_gym.errors import CityLoadError
from urban_gym.world import load_city


@pytest.mark.parametrize("spec", [123, 4.5, None, ["helsinki"]])
def test_load_city_of_a_non_path_names_it(spec):
    with pytest.raises(CityLoadError) as e:
        load_city(spec)  # type: ignore[arg-type]
    assert f"city {spec!r} is a {type(spec).__name__}" in str(e.value)


@pytest.mark.parametrize("length", ["-5", "-1", str(2**40)])
def test_scripted_server_refuses_a_length_it_cannot_read(length):
    server = ScriptedServer(env_id="UrbanGym/PoseGraph360-Procedural-v0", port=0)
    server.start()
    try:
        host, port = server.url.split("//")[1].split("/")[0].split(":")
        with socket.create_connection((host, int(port)), timeout=10) as s:
            t0 = time.monotonic()
            head = (
                f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: {length}\r\n\r\n"
            )
            s.sendall(head.encode())
            answer = s.recv(4096).decode("latin-1")
        assert answer.startswith("HTTP/1.1 400") and time.monotonic() - t0 < 5
        assert "Content-Length" in answer
    finally:
        server.stop()
