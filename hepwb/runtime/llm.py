"""A minimal client for OpenAI-compatible chat endpoints (vLLM, llama.cpp, Ollama, OpenAI …).

Configured by arguments or the environment: ``HEPWB_LLM_URL`` (base URL, e.g.
``http://127.0.0.1:8000/v1``), ``HEPWB_LLM_MODEL`` and optionally ``HEPWB_LLM_API_KEY``. Requests
are retried (connection errors, 429 and 5xx) with exponential back-off; temperature 0 and a fixed
seed keep answers as reproducible as the server allows.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from hepwb import defaults
from hepwb.exceptions import ConfigError, RetrieverUnavailableError
from hepwb.runtime.jsonpost import RetriesExhausted, post_json
from hepwb.runtime.urls import check_http_url

__all__ = ["LLMEndpoint"]


@dataclass(frozen=True)
class LLMEndpoint:
    """An OpenAI-compatible ``/chat/completions`` endpoint.

    Example:
        >>> LLMEndpoint("http://127.0.0.1:8000/v1/", "qwen").completions_url
        'http://127.0.0.1:8000/v1/chat/completions'
    """

    url: str
    model: str
    api_key: str = ""
    timeout: float = defaults.LLM_TIMEOUT_S
    attempts: int = defaults.HTTP_ATTEMPTS

    @property
    def completions_url(self) -> str:
        """The chat-completions URL."""
        return self.url.rstrip("/") + "/chat/completions"

    @classmethod
    def from_env(cls, url: str | None = None, model: str | None = None) -> LLMEndpoint:
        """The endpoint from arguments or ``HEPWB_LLM_*``; unavailable when no URL/model is set."""
        url = url or os.environ.get("HEPWB_LLM_URL")
        model = model or os.environ.get("HEPWB_LLM_MODEL")
        if not url or not model:
            msg = (
                "no LLM endpoint configured: set HEPWB_LLM_URL (an OpenAI-compatible base URL such as "
                "http://127.0.0.1:8000/v1) and HEPWB_LLM_MODEL, or pass llm_url=/llm_model="
            )
            raise RetrieverUnavailableError(msg)
        try:  # a malformed URL is named here, not when the first request fails
            check_http_url(
                url, "HEPWB_LLM_URL (llm_url)", fix="give a base URL such as http://127.0.0.1:8000/v1"
            )
        except ConfigError as exc:
            raise RetrieverUnavailableError(str(exc)) from None
        return cls(url, model, os.environ.get("HEPWB_LLM_API_KEY", ""))

    def chat(self, prompt: str, *, system: str = "", max_tokens: int = defaults.LLM_MAX_TOKENS) -> str:
        """The assistant's reply to ``prompt`` (temperature 0)."""
        import httpx

        messages = [{"role": "system", "content": system}] if system else []
        messages.append({"role": "user", "content": prompt})
        body = {
            "model": self.model,
            "messages": messages,
            "temperature": 0,
            "seed": 0,
            "max_tokens": max_tokens,
        }
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

        try:
            resp = post_json(
                self.completions_url, body, timeout=self.timeout, attempts=self.attempts, headers=headers
            )
        except (httpx.TransportError, RetriesExhausted) as exc:
            msg = f"LLM endpoint {self.completions_url} failed after {self.attempts} attempts: {exc}"
            raise RetrieverUnavailableError(msg) from exc
        if resp.status_code != 200:
            msg = f"LLM endpoint {self.completions_url} answered {resp.status_code}: {resp.text[:300]}"
            raise RetrieverUnavailableError(msg)
        try:
            return str(resp.json()["choices"][0]["message"]["content"] or "")
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            msg = f"LLM endpoint {self.completions_url} sent no chat completion: {resp.text[:300]}"
            raise RetrieverUnavailableError(msg) from exc
