"""Client of the NER service, with retries and the design's failure behaviour.

By default a service that is down, times out, answers 5xx or sends malformed JSON stops the caller with
:class:`NERUnavailableError` naming the fix; with ``fail_soft=True`` the texts get empty entity lists and the
reason is logged once per call (the design's ``--ner-fail-soft``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from hepwb.exceptions import ConfigError, HepwbError
from hepwb.jsonpost import RetriesExhausted, post_json
from hepwb.types import JSONObject

__all__ = ["NERClient", "NERUnavailableError", "check_url"]

log = logging.getLogger("hepwb.ner")

_MODELS: dict[str, str] = {}
"""``{service URL: model name}`` as ``GET /health`` reported it, once per process."""


class NERUnavailableError(HepwbError, ConnectionError):
    """The NER service could not give entities (down, timed out, an error or a malformed reply)."""


def check_url(url: str, what: str = "the NER service URL") -> str:
    """``url`` when it is an ``http(s)://host[:port][/path]`` URL, else a :class:`ConfigError` naming it.

    Example:
        >>> check_url("http://127.0.0.1:8000")
        'http://127.0.0.1:8000'
        >>> check_url("http://[::1")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        hepwb.exceptions.ConfigError: the NER service URL 'http://[::1' is malformed (Invalid port: ':1'); ...
    """
    import httpx

    fix = "give the service's base URL, e.g. http://127.0.0.1:8000 (`hepwb ner-serve` prints it)"
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, ValueError, TypeError) as exc:
        msg = f"{what} {url[:200]!r} is malformed ({' '.join(str(exc).split())[:200]}); {fix}"
        raise ConfigError(msg) from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        msg = f"{what} {url[:200]!r} is not an http:// or https:// URL with a host; {fix}"
        raise ConfigError(msg)
    return url


@dataclass
class NERClient:
    """Calls ``POST {url}/ner``.

    Args:
        url: Base URL of the service (``hepwb ner-serve`` prints it).
        timeout: Seconds per request.
        attempts: Tries for connection errors and 5xx replies (exponential back-off).
        fail_soft: Empty entities (logged) instead of an error when the service fails.
    """

    url: str
    timeout: float = 10.0
    attempts: int = 3
    fail_soft: bool = False
    failed_soft: int = 0
    _model: str = ""

    def __post_init__(self) -> None:
        """Refuse a malformed URL here, in one line, rather than at the first request."""
        check_url(self.url)

    @property
    def model(self) -> str:
        """The service's model name (``""`` when it cannot be reached).

        Asked of ``GET /health`` once per service URL and process: stage keys ask for it per cell.
        """
        if not self._model:
            import httpx

            if self.url not in _MODELS:
                try:
                    reply = httpx.get(self.url.rstrip("/") + "/health", timeout=self.timeout).json()
                    _MODELS[self.url] = str(reply["model"])
                except (httpx.HTTPError, ValueError, KeyError, TypeError):
                    return ""
            self._model = _MODELS[self.url]
        return self._model

    def batch(self, texts: list[str]) -> list[list[str]]:
        """Entities of every text (:meth:`entities` under the ``EntitySource`` name)."""
        return self.entities(texts)

    def entities(self, texts: list[str]) -> list[list[str]]:
        """The distinct entities of every text, sorted (empty lists when failing soft)."""
        try:
            reply = self._post({"texts": texts})
            found = reply["entities"]
            if not isinstance(found, list) or len(found) != len(texts):
                n = len(found) if isinstance(found, list) else "no"
                msg = f"reply has {n} entity lists for {len(texts)} texts"
                raise ValueError(msg)
            out = [sorted({str(e["entity"]) for e in row}) for row in found]
            self._model = str(reply.get("model", "")) or self._model
        except NERUnavailableError as exc:
            return self._fail(texts, str(exc))
        except (ValueError, KeyError, TypeError) as exc:
            return self._fail(texts, f"malformed reply from {self.url}/ner: {exc}")
        return out

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

        try:
            r = post_json(self.url.rstrip("/") + "/ner", body, timeout=self.timeout, attempts=self.attempts,
                          max_wait=2.0)  # fmt: skip
        except httpx.TimeoutException:
            msg = f"{self.url}/ner timed out after {self.timeout:g} s"
            raise NERUnavailableError(msg) from None
        except httpx.TransportError as exc:
            msg = f"cannot reach {self.url}/ner ({exc})"
            raise NERUnavailableError(msg) from None
        except RetriesExhausted as exc:
            msg = f"{self.url}/ner answered HTTP {exc.status} {self.attempts} times"
            raise NERUnavailableError(msg) from None
        if r.status_code != 200:
            msg = f"{self.url}/ner answered HTTP {r.status_code}: {r.text[:200]}"
            raise NERUnavailableError(msg)
        return r.json()
