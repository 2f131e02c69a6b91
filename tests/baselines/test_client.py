"""The chat-completions client against real loopback servers."""

from __future__ import annotations

import socket

import pytest

from tests.wrappers.recording_env import RecordingEnv, RecordingOracle
from urban_gym.baselines.lmm.client import ChatClient, ClientConfig, ModelError
from urban_gym.baselines.lmm.server import ScriptedServer

MESSAGES = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]


def server(**kw) -> ScriptedServer:
    s = ScriptedServer(
        env_id="recording",
        env_factory=lambda i, k: RecordingEnv(**k),
        oracle_factory=lambda env: RecordingOracle(),
        seed=0,
        **kw,
    )
    return s.start()


def client(url: str, **kw) -> ChatClient:
    cfg = ClientConfig(base_url=url, model="m", backoff_s=0.01, jitter=0.0, **kw)
    return ChatClient(cfg)


def test_config_from_environment_variables():
    env = {
        "URBAN_GYM_LMM_BASE_URL": "http://h:1/v1",
        "URBAN_GYM_LMM_MODEL": "qwen",
        "OPENAI_API_KEY": "k1",
    }
    c = ClientConfig.from_env(env, timeout_s=5)
    assert (c.base_url, c.model, c.api_key, c.timeout_s) == ("http://h:1/v1", "qwen", "k1", 5)
    assert (
        ClientConfig.from_env({"URBAN_GYM_LMM_API_KEY": "k2", "OPENAI_API_KEY": "k1"}).api_key
        == "k2"
    )
    with pytest.raises(TypeError, match="unknown client settings"):
        ClientConfig.from_env({}, tmeout=3)


def test_retries_with_backoff_on_429_and_500_then_succeeds():
    with server(faults=[429, 500]) as s:
        c = client(s.url, max_retries=3)
        resp = c.chat(MESSAGES)
        assert resp.attempts == 3 and '"action"' in resp.text
        assert c.waits == pytest.approx([0.01, 0.02])  # exponential: 0.01 * 2**k
        assert c.usage["requests"] == 3 and c.usage["retries"] == 2
        assert resp.usage["total_tokens"] > 0
        assert c.usage["total_tokens"] == resp.usage["total_tokens"]
        assert s.requests == 3


def test_gives_up_after_the_retries():
    with server(faults=[500] * 5) as s:
        c = client(s.url, max_retries=2)
        with pytest.raises(ModelError, match="no completion after 3 attempts.*HTTP 500") as e:
            c.chat(MESSAGES)
        assert e.value.status == 500 and e.value.attempts == 3 and s.requests == 3


def test_request_errors_are_not_retried():
    with server() as s:
        c = client(s.url, max_retries=3)
        with pytest.raises(ModelError, match="HTTP 400") as e:
            c.chat([])
        assert e.value.attempts == 1 and s.requests == 1


def test_server_down_is_a_model_error_after_retries():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    c = client(f"http://127.0.0.1:{port}/v1", max_retries=2, connect_timeout_s=1.0)
    with pytest.raises(ModelError, match="ConnectError") as e:
        c.chat(MESSAGES)
    assert e.value.status is None and e.value.attempts == 3 and len(c.waits) == 2
