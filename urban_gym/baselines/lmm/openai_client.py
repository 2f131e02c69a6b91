"""The official ``openai`` Python client behind the interface of
:class:`~urban_gym.baselines.lmm.client.ChatClient` (``client="openai"`` of the ``lmm``
agent, ``--client openai``): the same requests, the same :class:`~.client.ChatResponse`
and token counters, with the official client's own retries and backoff. A test checks
that both clients record the same episodes against ``serve-scripted``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from urban_gym.baselines.lmm.client import ChatResponse, ClientConfig, ModelError


class OpenAIChatClient:
    """:class:`~.client.ChatClient`'s interface on ``openai.OpenAI``.

    Args:
        config: the settings (base URL, model, key, sampling, timeout, retries).
        seed: unused (the official client draws its own jitter); kept for the interface.
    """

    def __init__(self, config: ClientConfig | None = None, seed: int | None = None) -> None:
        import openai

        self.config = config or ClientConfig.from_env()
        self._openai = openai
        self._client = openai.OpenAI(
            base_url=self.config.base_url,
            api_key=self.config.api_key or "none",
            timeout=self.config.timeout_s,
            max_retries=self.config.max_retries,
        )
        self.usage: dict[str, int] = {
            "prompt_tokens": 0,
            "completion_tokens": 0,
            "total_tokens": 0,
            "requests": 0,
            "retries": 0,
            "failures": 0,
        }
        self.cache: Any = None

    def chat(
        self,
        messages: Sequence[Mapping[str, Any]],
        headers: Mapping[str, str] | None = None,
        **params: Any,
    ) -> ChatResponse:
        """One chat completion (see :meth:`~.client.ChatClient.chat`); the official
        client's errors become :class:`~.client.ModelError`.
        """
        c = self.config
        body: dict[str, Any] = {"model": c.model, "messages": list(messages)}
        if c.temperature is not None:
            body["temperature"] = c.temperature
        if c.max_tokens is not None:
            body["max_tokens"] = c.max_tokens
        body.update(c.extra_body)
        body.update(params)
        standard = {"model", "messages", "temperature", "max_tokens"}
        extra = {k: v for k, v in body.items() if k not in standard}
        kwargs = {k: v for k, v in body.items() if k in standard}
        self.usage["requests"] += 1
        t0 = time.perf_counter()
        try:
            raw = self._client.chat.completions.with_raw_response.create(
                **kwargs, extra_body=extra or None, extra_headers=dict(headers or {}) or None
            )
        except self._openai.OpenAIError as exc:
            self.usage["failures"] += 1
            status = getattr(exc, "status_code", None)
            from urban_gym.redact import redact_text, url_secrets

            secrets = [c.api_key, *url_secrets(c.base_url)]
            text = redact_text(f"{c.base_url}: {type(exc).__name__}: {exc}", secrets)
            raise ModelError(text, status) from None
        retries = int(getattr(raw, "retries_taken", 0) or 0)
        self.usage["requests"] += retries
        self.usage["retries"] += retries
        completion = raw.parse()
        choice = completion.choices[0]
        usage = {}
        if completion.usage is not None:
            usage = {
                "prompt_tokens": int(completion.usage.prompt_tokens or 0),
                "completion_tokens": int(completion.usage.completion_tokens or 0),
                "total_tokens": int(completion.usage.total_tokens or 0),
            }
        for k, v in usage.items():
            self.usage[k] += v
        return ChatResponse(
            text=choice.message.content or "",
            model=completion.model or c.model,
            usage=usage,
            latency_s=time.perf_counter() - t0,
            attempts=retries + 1,
            finish_reason=choice.finish_reason,
            raw=completion.model_dump(),
        )

    def close(self) -> None:
        """Close the official client's connections."""
        self._client.close()
