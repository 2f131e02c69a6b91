"""Whatever a server answers, ``ChatClient.chat`` raises ``ModelError``
(naming the problem) or returns a completion -- never another exception -- and
``run_episode`` writes a record ending in ``model_error`` with the reason. Every fault is
answered by a real loopback HTTP server (:mod:`tests.reliability.fault_server`)."""

from __future__ import annotations

import gzip
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.reliability.fault_server import Answer, FaultServer, completion_body, json_answer
from tests.wrappers.recording_env import episode
from urban_gym.baselines.lmm import ChatClient, ClientConfig, LMMAgent, ModelError

MESSAGES = [{"role": "user", "content": "where to?"}]


def client(url: str, **kw) -> ChatClient:
    cfg = ClientConfig(base_url=url, model="m", backoff_s=0.001, jitter=0.0, timeout_s=5.0, **kw)
    return ChatClient(cfg)


def message_with(content) -> dict:
    return completion_body(
        choices=[{"index": 0, "message": {"role": "assistant", "content": content}}]
    )


# (answer, the words the ModelError must contain); none of these is retried
MALFORMED = {
    "usage is a number": (json_answer(completion_body(usage=5)), "'usage' is a number (5)"),
    "prompt_tokens is text": (
        json_answer(completion_body(usage={"prompt_tokens": "abc"})),
        'usage.prompt_tokens is "abc", not a token count',
    ),
    "prompt_tokens is 1e999": (
        Answer(
            json.dumps(completion_body(usage={"prompt_tokens": "X"}))
            .replace('"X"', "1e999")
            .encode()
        ),
        "usage.prompt_tokens is Infinity, not a token count",
    ),
    "prompt_tokens has 400 digits": (
        Answer(json.dumps(completion_body(usage={"prompt_tokens": 10**400})).encode()),
        "usage.prompt_tokens is an integer of about 401 digits",
    ),
    "completion_tokens negative": (
        json_answer(completion_body(usage={"completion_tokens": -3})),
        "usage.completion_tokens is -3",
    ),
    "a text part's text is a number": (
        json_answer(message_with([{"type": "text", "text": "ok "}, {"type": "text", "text": 7}])),
        "choices[0].message.content[1].text is a number (7), not a string",
    ),
    "content is an object": (
        json_answer(message_with({"text": "hi"})),
        "choices[0].message.content is an object, not a string or a list of parts",
    ),
    "choices missing": (json_answer({"id": "x", "usage": {}}), "'choices' is missing"),
    "choices not a list": (json_answer(completion_body(choices="abc")), "'choices' is a string"),
    "choices empty": (json_answer(completion_body(choices=[])), "'choices' is empty"),
    "choice not an object": (json_answer(completion_body(choices=[3])), "choices[0] is a number"),
    "message null": (
        json_answer(completion_body(choices=[{"index": 0, "message": None}])),
        "choices[0].message is null, not an object",
    ),
    "message missing": (
        json_answer(completion_body(choices=[{"index": 0, "text": "legacy"}])),
        "choices[0].message is missing",
    ),
    "an error object with status 200": (
        json_answer({"error": {"message": "model overloaded"}}),
        'the body is an error: {"message": "model overloaded"}',
    ),
    "body is a list": (json_answer([1, 2]), "the body is a list, not a JSON object"),
    "not JSON": (Answer(b"<html>502 Bad Gateway</html>"), "the body is not JSON"),
    "empty body": (Answer(b""), "the body is not JSON"),
    "not UTF-8": (Answer(b'{"choices": "\x80\x81"}'), "the body is not UTF-8"),
    "nested 100,000 deep": (Answer(b"[" * 100_000), "nested too deep"),
}


@pytest.mark.parametrize("name", list(MALFORMED))
def test_a_malformed_200_answer_is_a_model_error_naming_the_problem(name):
    answer, words = MALFORMED[name]
    with FaultServer([answer]) as s:
        c = client(s.url, max_retries=2)
        with pytest.raises(ModelError) as e:
            c.chat(MESSAGES)
        assert words in str(e.value), str(e.value)
        assert "is not a chat completion" in str(e.value)
        assert e.value.status == 200 and e.value.attempts == 1 and s.requests == 1
        assert c.usage["failures"] == 1 and c.usage["total_tokens"] == 0
        # the client still works: the next (default, well-formed) answer is read
        resp = c.chat(MESSAGES)
        assert resp.usage == {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}


def test_broken_gzip_is_retried_then_a_model_error():
    garbage = Answer(b"this is not gzip", headers={"Content-Encoding": "gzip"})
    with FaultServer([garbage] * 3) as s:
        c = client(s.url, max_retries=2)
        with pytest.raises(ModelError, match="no completion after 3 attempts") as e:
            c.chat(MESSAGES)
        assert "the answer's body could not be decoded" in str(e.value)
        assert s.requests == 3 and c.usage["retries"] == 2
    # one broken answer, then a good gzip one: the retry succeeds
    good = gzip.compress(json.dumps(completion_body("fine")).encode())
    with FaultServer([garbage, Answer(good, headers={"Content-Encoding": "gzip"})]) as s:
        resp = client(s.url, max_retries=2).chat(MESSAGES)
        assert resp.text == "fine" and resp.attempts == 2


@pytest.mark.parametrize("length", [True, False], ids=["declared", "streamed"])
def test_a_body_over_the_size_limit_is_a_model_error(length):
    padding = "x" * 300_000  # a valid completion of about 300 kB
    huge = Answer(json.dumps(completion_body(padding)).encode(), length=length)
    with FaultServer([huge]) as s:
        c = client(s.url, max_retries=2, max_response_bytes=100_000)
        with pytest.raises(ModelError, match="more than max_response_bytes=100000") as e:
            c.chat(MESSAGES)
        assert e.value.attempts == 1 and s.requests == 1
    # the same answer within the limit is read
    with FaultServer([huge]) as s:
        assert client(s.url, max_response_bytes=1_000_000).chat(MESSAGES).text == padding


def test_valid_variants_are_read():
    parts = [{"type": "text", "text": "a"}, {"type": "image_url"}, {"type": "text", "text": "b"}]
    answers = [
        json_answer(message_with(parts)),
        json_answer(completion_body("t", usage={"prompt_tokens": 4.0, "completion_tokens": None})),
        json_answer(completion_body("n", usage=None)),
        json_answer(message_with(None)),
    ]
    with FaultServer(answers) as s:
        c = client(s.url)
        assert c.chat(MESSAGES).text == "ab"  # parts without text (an image) are skipped
        r = c.chat(MESSAGES)
        assert r.text == "t"
        assert r.usage == {"prompt_tokens": 4, "completion_tokens": 0, "total_tokens": 4}
        assert c.chat(MESSAGES).usage["total_tokens"] == 0
        assert c.chat(MESSAGES).text == ""  # content null (a refusal, a tool call)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
SLOTS = ("usage", "choices", "choice", "message", "content", "part", "text", "model", "body")


def _body_with(slot: str, value):
    body = completion_body()
    if slot == "body":
        return value
    if slot in ("usage", "choices", "model"):
        body[slot] = value
    elif slot == "choice":
        body["choices"] = [value]
    elif slot == "message":
        body["choices"][0]["message"] = value
    elif slot == "content":
        body["choices"][0]["message"]["content"] = value
    elif slot == "part":
        body["choices"][0]["message"]["content"] = [value]
    else:
        body["choices"][0]["message"]["content"] = [{"type": "text", "text": value}]
    return body


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(slot=st.sampled_from(SLOTS), value=json_values)
def test_any_json_in_any_slot_is_a_completion_or_a_model_error(fault_server, slot, value):
    fault_server.answers.append(json_answer(_body_with(slot, value)))
    c = fault_server.client
    try:
        resp = c.chat(MESSAGES)
    except ModelError as exc:
        assert "is not a chat completion" in str(exc)
    else:
        assert isinstance(resp.text, str) and isinstance(resp.model, str)
        assert all(isinstance(v, int) and v >= 0 for v in resp.usage.values())


@pytest.fixture(scope="module")
def fault_server():
    with FaultServer() as s:
        s.client = client(s.url, max_retries=0)
        yield s


def test_run_episode_records_model_error_with_the_reason():
    turn = json_answer(completion_body('{"action": "turn", "angle": 90}'))
    with FaultServer([turn, turn, json_answer(completion_body(usage=5))]) as s:
        agent = LMMAgent(client=client(s.url, max_retries=1))
        rec, steps = episode(agent, seed=2)
    assert rec["termination"] == "model_error" and rec["steps"] == 2 and not rec["is_success"]
    assert "'usage' is a number (5)" in rec["error"]
    assert rec["tokens"]["requests"] == 3 and agent.client.usage["failures"] == 1
    assert rec["tokens"]["total_tokens"] == 10  # two good answers of 5 tokens
    assert agent.config()["model"] == "m"
