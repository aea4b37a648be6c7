"""POST a JSON body with retries: the transport shared by the LLM client and the NER client.

Connection errors, timeouts, 429 and 5xx are retried with exponential back-off (tenacity); the last
failure is raised as it is (``httpx.TimeoutException``, ``httpx.TransportError``) or as
:class:`RetriesExhausted` for a status that never turned good. Callers turn these into their own errors.
"""

from __future__ import annotations

from typing import Any

from hepwb import defaults

__all__ = ["RetriesExhausted", "post_json"]


class RetriesExhausted(Exception):
    """Every attempt answered 429 or 5xx; ``status`` is the last one, the message adds the body's start."""

    def __init__(self, status: int, text: str) -> None:
        super().__init__(f"{status} {text[:200]}")
        self.status = status


def post_json(
    url: str,
    body: Any,
    *,
    timeout: float,
    attempts: int,
    headers: dict[str, str] | None = None,
    max_wait: float = defaults.HTTP_MAX_WAIT_S,
) -> Any:
    """The ``httpx.Response`` of ``POST url`` with ``body`` as JSON, after at most ``attempts`` tries."""
    import httpx
    from tenacity import retry, retry_if_exception_type, stop_after_attempt, wait_exponential

    @retry(
        retry=retry_if_exception_type((httpx.TransportError, RetriesExhausted)),
        stop=stop_after_attempt(attempts),
        wait=wait_exponential(multiplier=0.2, max=max_wait),
        reraise=True,
    )
    def post() -> httpx.Response:
        resp = httpx.post(url, json=body, headers=headers or {}, timeout=timeout)
        if resp.status_code == 429 or resp.status_code >= 500:
            raise RetriesExhausted(resp.status_code, resp.text)
        return resp

    return post()
