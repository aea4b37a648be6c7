"""Client of the NER service, with retries and the design's failure behaviour.

By default a service that is down, times out, answers 5xx or sends malformed JSON stops the caller with
:class:`NERUnavailableError` naming the fix; with ``fail_soft=True`` the texts get empty entity lists and the
reason is logged once per call (the design's ``--ner-fail-soft``).

Texts go in requests within the service's bounds (:data:`~hepwb.limits.NER_MAX_TEXTS` texts and
:data:`~hepwb.limits.NER_MAX_REQUEST_CHARS` characters; a longer text in pieces cut at white space), and a
request answered HTTP 413 is sent again in halves. ``$HEPWB_NER_TOKEN`` (or ``token=``) is sent as
``Authorization: Bearer <token>``, as a service off loopback requires.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from hepwb import defaults, limits
from hepwb.exceptions import HepwbError
from hepwb.ner.handler import TOKEN_ENV, check_token_text
from hepwb.runtime.jsonpost import RetriesExhausted, post_json
from hepwb.runtime.urls import check_http_url, redact
from hepwb.text.plaintext import plain
from hepwb.types import JSONObject

__all__ = ["NERClient", "NERUnavailableError", "check_url", "redact"]

log = logging.getLogger("hepwb.ner")

_MODELS: dict[str, str] = {}
"""``{service URL: model name}`` as ``GET /health`` reported it, once per process."""


class NERUnavailableError(HepwbError, ConnectionError):
    """The NER service could not give entities (down, timed out, an error or a malformed reply)."""


class _TooLarge(Exception):
    """The service answered HTTP 413: the request is over one of its bounds."""


_NER_FIX = "give the service's base URL, e.g. http://127.0.0.1:8000 (`hepwb ner-serve` prints it)"


def check_url(url: str, what: str = "the NER service URL") -> str:
    """``url`` when it is an ``http(s)://host[:port][/path]`` URL (:func:`hepwb.runtime.urls.check_http_url`).

    Example:
        >>> check_url("http://[::1")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        hepwb.exceptions.ConfigError: the NER service URL 'http://[::1' is malformed (Invalid port: ':1'); ...
    """
    return check_http_url(url, what, fix=_NER_FIX)


@dataclass
class NERClient:
    """Calls ``POST {url}/ner``.

    Args:
        url: Base URL of the service (``hepwb ner-serve`` prints it).
        timeout: Seconds per request.
        attempts: Tries for connection errors and 5xx replies (exponential back-off).
        fail_soft: Empty entities (logged) instead of an error when the service fails.
        token: Sent as ``Authorization: Bearer <token>`` (default ``$HEPWB_NER_TOKEN``; none when unset).
    """

    url: str
    timeout: float = defaults.NER_TIMEOUT_S
    attempts: int = defaults.HTTP_ATTEMPTS
    fail_soft: bool = False
    failed_soft: int = 0
    _model: str = ""
    token: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        """Refuse a malformed URL, or a token no HTTP header carries, here in one line, not at a request."""
        check_url(self.url)
        what = "the NER token"
        if self.token is None:
            self.token = os.environ.get(TOKEN_ENV) or None
            what = TOKEN_ENV
        if self.token is not None:  # a header hepwb cannot send is one line now, not a "malformed reply"
            check_token_text(self.token, what)

    @property
    def _shown(self) -> str:
        """The URL for a message: without user and password (:func:`redact`)."""
        return redact(self.url)

    @property
    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    @property
    def model(self) -> str:
        """The service's model name (``""`` when it cannot be reached).

        Asked of ``GET /health`` once per service URL and process: stage keys ask for it per cell.
        """
        if not self._model:
            import httpx

            if self.url not in _MODELS:
                try:
                    reply = httpx.get(
                        self.url.rstrip("/") + "/health", headers=self._headers, timeout=self.timeout
                    ).json()
                    _MODELS[self.url] = str(reply["model"])
                except (httpx.HTTPError, ValueError, KeyError, TypeError):
                    return ""
            self._model = _MODELS[self.url]
        return self._model

    def batch(self, texts: list[str]) -> list[list[str]]:
        """Entities of every text (:meth:`entities` under the ``EntitySource`` name)."""
        return self.entities(texts)

    def entities(self, texts: list[str]) -> list[list[str]]:
        """The distinct entities of every text, sorted (empty lists when failing soft).

        The texts go in requests within the service's bounds (see the module docstring).
        """
        found: list[set[str]] = [set() for _ in texts]
        try:
            for part in _requests(texts):
                self._tag(part, found)
        except NERUnavailableError as exc:
            return self._fail(texts, str(exc))
        except (ValueError, KeyError, TypeError) as exc:
            return self._fail(texts, f"malformed reply from {self._shown}/ner: {exc}")
        return [sorted(f) for f in found]

    def _tag(self, part: list[tuple[int, str]], found: list[set[str]]) -> None:
        """Add the entities of ``part`` (``(text index, text or piece)``) to ``found``; halves on HTTP 413."""
        texts = [t for _, t in part]
        try:
            reply = self._post({"texts": texts})
        except _TooLarge as exc:
            if len(part) > 1:
                half = len(part) // 2
                self._tag(part[:half], found)
                self._tag(part[half:], found)
                return
            index, text = part[0]
            if len(text) < 2:
                raise NERUnavailableError(str(exc)) from None
            for piece in _halves(text):
                self._tag([(index, piece)], found)
            return
        rows = reply["entities"]
        if not isinstance(rows, list) or len(rows) != len(texts):
            n = len(rows) if isinstance(rows, list) else "no"
            msg = f"reply has {n} entity lists for {len(texts)} texts"
            raise ValueError(msg)
        for (index, _), row in zip(part, rows, strict=True):
            found[index].update(str(e["entity"]) for e in row)
        self._model = str(reply.get("model", "")) or self._model

    def _fail(self, texts: list[str], why: str) -> list[list[str]]:
        if not self.fail_soft:
            msg = (
                f"NER service failed: {why}. Start it with `hepwb ner-serve`, "
                "or index without entities with --ner-fail-soft"
            )
            raise NERUnavailableError(msg)
        self.failed_soft += len(texts)
        log.warning("NER failed soft for %d text(s): %s; they are indexed with no entities", len(texts), why)
        return [[] for _ in texts]

    def _post(self, body: JSONObject) -> Any:
        import httpx

        start = time.monotonic()
        try:
            r = post_json(self.url.rstrip("/") + "/ner", body, timeout=self.timeout, attempts=self.attempts,
                          headers=self._headers, max_wait=2.0)  # fmt: skip
        except httpx.TimeoutException:
            msg = (
                f"{self._shown}/ner did not answer within {self.timeout:g} s in {self.attempts} tries "
                f"({time.monotonic() - start:.0f} s in all)"
            )
            raise NERUnavailableError(msg) from None
        except httpx.TransportError as exc:
            msg = f"cannot reach {self._shown}/ner ({exc})"
            raise NERUnavailableError(msg) from None
        except RetriesExhausted as exc:
            msg = f"{self._shown}/ner answered HTTP {exc.status} {self.attempts} times"
            raise NERUnavailableError(msg) from None
        if r.status_code == 413:
            msg = (
                f"{self._shown}/ner refused even one character as too large (HTTP 413): {plain(r.text[:200])}"
            )
            raise _TooLarge(msg)
        if r.status_code == 401:
            msg = (
                f"{self._shown}/ner needs the service's token (HTTP 401): set HEPWB_NER_TOKEN to the token "
                "`hepwb ner-serve` was started with"
            )
            raise NERUnavailableError(msg)
        if r.status_code != 200:
            msg = f"{self._shown}/ner answered HTTP {r.status_code}: {plain(r.text[:200])}"
            raise NERUnavailableError(msg)
        return r.json()


def _pieces(text: str, most: int) -> Iterator[str]:
    """``text`` in pieces of at most ``most`` characters, each cut at its last white space if any."""
    while len(text) > most:
        cut = max(text.rfind(" ", 0, most), text.rfind("\n", 0, most))
        cut = cut + 1 if cut > most // 2 else most
        yield text[:cut]
        text = text[cut:]
    yield text


def _halves(text: str) -> tuple[str, str]:
    """``text`` cut in two near its middle, at white space when there is some nearby."""
    middle = len(text) // 2
    cut = max(text.rfind(" ", 0, middle), text.rfind("\n", 0, middle))
    cut = cut + 1 if cut > middle // 2 else middle
    return text[:cut], text[cut:]


def _requests(texts: list[str]) -> Iterator[list[tuple[int, str]]]:
    """The requests: lists of ``(text index, text or piece)`` within the service's bounds.

    Each holds at most :data:`~hepwb.limits.NER_MAX_TEXTS` texts and
    :data:`~hepwb.limits.NER_MAX_REQUEST_CHARS` characters (a longer text goes in pieces).

    Example:
        >>> [[(i, len(t)) for i, t in part] for part in _requests(["a" * 600_000, "b" * 500_000, "c"])]
        [[(0, 600000)], [(1, 500000), (2, 1)]]
    """
    part: list[tuple[int, str]] = []
    chars = 0
    for index, text in enumerate(texts):
        for piece in _pieces(text, limits.NER_MAX_REQUEST_CHARS):
            if part and (
                len(part) >= limits.NER_MAX_TEXTS or chars + len(piece) > limits.NER_MAX_REQUEST_CHARS
            ):
                yield part
                part, chars = [], 0
            part.append((index, piece))
            chars += len(piece)
    if part:
        yield part
