"""A polite, robust HTTP client for discovery APIs and downloads.

* **Politeness**: a descriptive ``User-Agent`` and a minimum interval between requests to the same
  host (arXiv asks for 3 s between API calls; :data:`hepwb.defaults.ACQUIRE_MIN_INTERVAL_S`).
* **Retries** (tenacity): connection errors, resets, truncated bodies, 429 and 5xx are retried with
  exponential back-off with jitter; a ``Retry-After`` header (seconds or HTTP date) is honoured
  (capped by ``max_wait_s``). Rate-limit headers (``X-RateLimit-*``) are remembered as
  :attr:`PoliteClient.rate_limit` in HEPilot's ``rate_limit_status`` shape, and when the server says
  none are left (``X-RateLimit-Remaining: 0``) the next request to that host waits for
  ``X-RateLimit-Reset`` (also capped by ``max_wait_s``).
* **Downloads**: streamed into ``<name>.part`` and renamed only after the size and the optional
  expected SHA-256 check out (no partial file ever sits under its final name); an existing ``.part``
  is resumed with an HTTP ``Range`` request, and files over 1 GiB are fetched in 16 MiB ranges.
  SHA-256 and SHA-512 are computed while writing.

Example:
    >>> retry_after_seconds("7"), retry_after_seconds("soon")
    (7.0, None)
"""

from __future__ import annotations

import email.utils
import hashlib
import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlparse

from hepwb import defaults
from hepwb.exceptions import ProcessingError
from hepwb.types import JSONObject

__all__ = [
    "BLOCK",
    "USER_AGENT",
    "Download",
    "PoliteClient",
    "file_hashes",
    "retry_after_seconds",
]

USER_AGENT = "hepwb/0.1 (HEP RAG research workbench; https://github.com/hepwb)"
BLOCK = 16 * 1024 * 1024
LARGE = 1024**3
_log = logging.getLogger(__name__)
T = TypeVar("T")


class RetryableHTTPError(Exception):
    """A response worth retrying (429, 5xx, truncated body)."""

    def __init__(self, message: str, wait_s: float | None = None) -> None:
        super().__init__(message)
        self.wait_s = wait_s


def retry_after_seconds(value: str | None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta seconds or HTTP date)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


@dataclass(frozen=True)
class Download:
    """A verified file on disk."""

    path: Path
    size: int
    sha256: str
    sha512: str
    attempts: int
    resumed: bool = False


class PoliteClient:
    """``httpx`` with politeness, retries and verified downloads (see the module docstring).

    Args:
        min_interval_s: Minimum seconds between two requests to the same host.
        attempts: Tries per request before giving up.
        max_wait_s: Longest single wait (back-off or ``Retry-After``).
        timeout_s: Longest pause of a reply (seconds); connecting takes at most
            :data:`~hepwb.defaults.ACQUIRE_CONNECT_TIMEOUT_S`.
        user_agent: ``User-Agent`` header.
        headers: Extra headers (e.g. ``Authorization`` from a credential; never logged).
    """

    def __init__(
        self,
        min_interval_s: float = defaults.ACQUIRE_MIN_INTERVAL_S,
        attempts: int = defaults.ACQUIRE_ATTEMPTS,
        max_wait_s: float = defaults.ACQUIRE_MAX_WAIT_S,
        timeout_s: float = defaults.ACQUIRE_READ_TIMEOUT_S,
        user_agent: str = USER_AGENT,
        headers: dict[str, str] | None = None,
    ) -> None:
        import httpx

        self.min_interval_s = min_interval_s
        self.attempts = attempts
        self.max_wait_s = max_wait_s
        self._client = httpx.Client(
            headers={"User-Agent": user_agent, **(headers or {})},
            # a host that does not answer is known in seconds; a slow one may pause up to timeout_s
            timeout=httpx.Timeout(timeout_s, connect=min(timeout_s, defaults.ACQUIRE_CONNECT_TIMEOUT_S)),
            follow_redirects=True,
        )
        self._last: dict[str, float] = {}
        self._exhausted_until: dict[str, float] = {}  # host → epoch seconds of X-RateLimit-Reset
        self.rate_limit: JSONObject | None = None
        self.requests = 0

    def close(self) -> None:
        """Close the connection pool."""
        self._client.close()

    def __enter__(self) -> PoliteClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- politeness ------------------------------------------------------------------------------
    def _pace(self, url: str) -> None:
        host = urlparse(url).netloc
        wait = self._last.get(host, -1e9) + self.min_interval_s - time.monotonic()
        reset_in = self._exhausted_until.pop(host, 0.0) - time.time()
        if reset_in > wait:
            wait = min(reset_in, self.max_wait_s)
            _log.warning("%s has no requests left (X-RateLimit-Remaining: 0); waiting %.1f s", host, wait)
        if wait > 0:
            time.sleep(wait)
        self._last[host] = time.monotonic()

    def _note_rate_limit(self, url: str, headers: Any) -> None:
        limit, remaining = headers.get("x-ratelimit-limit"), headers.get("x-ratelimit-remaining")
        if limit is None or remaining is None:
            return
        reset = headers.get("x-ratelimit-reset")
        try:
            reset_at = datetime.fromtimestamp(float(reset), UTC) if reset else datetime.now(UTC)
            if int(remaining) <= 0 and reset:
                self._exhausted_until[urlparse(url).netloc] = float(reset)
            self.rate_limit = {
                "limit": int(limit),
                "remaining": int(remaining),
                "reset_timestamp": reset_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
            }
        except (TypeError, ValueError):
            _log.warning("ignoring malformed rate-limit headers %s/%s/%s", limit, remaining, reset)

    def _backoff(self, attempt: int, hint: float | None) -> float:
        base = min(self.max_wait_s, 0.5 * 2 ** (attempt - 1))
        wait = hint if hint is not None else base * (0.5 + random.random() / 2)
        return min(self.max_wait_s, wait)

    def _retrying(self, what: str, url: str, call: Callable[[int], T]) -> T:
        """Run ``call(attempt)`` with tenacity: retries on transport errors and retryable responses."""
        import httpx
        from tenacity import RetryCallState, RetryError, Retrying, retry_if_exception_type, stop_after_attempt

        def wait(state: RetryCallState) -> float:
            exc = state.outcome.exception() if state.outcome else None
            hint = exc.wait_s if isinstance(exc, RetryableHTTPError) else None  # Retry-After
            return self._backoff(state.attempt_number, hint)

        def tell(state: RetryCallState) -> None:
            exc = state.outcome.exception() if state.outcome else None
            pause = state.next_action.sleep if state.next_action else 0.0
            _log.warning("%s %s failed (%s); retry %d in %.1f s", what, url, exc, state.attempt_number, pause)

        retrying = Retrying(
            stop=stop_after_attempt(self.attempts),
            wait=wait,
            retry=retry_if_exception_type((httpx.TransportError, RetryableHTTPError)),
            before_sleep=tell,
            sleep=lambda s: time.sleep(s),  # looked up at call time (tests may replace time.sleep)
        )
        try:
            for attempt in retrying:
                with attempt:
                    self._pace(url)
                    self.requests += 1
                    return call(attempt.retry_state.attempt_number)
        except RetryError as err:
            last = err.last_attempt.exception()
            msg = f"{what} {url} failed after {self.attempts} attempts: {last}"
            raise ProcessingError(msg, code="HTTP_RETRIES_EXHAUSTED") from last
        msg = "unreachable: tenacity either returns, raises or gives up"  # pragma: no cover
        raise AssertionError(msg)  # pragma: no cover

    @staticmethod
    def _check(resp: Any) -> None:
        if resp.status_code == 429 or resp.status_code >= 500:
            wait = retry_after_seconds(resp.headers.get("retry-after"))
            msg = f"HTTP {resp.status_code}"
            raise RetryableHTTPError(msg, wait)

    # -- requests --------------------------------------------------------------------------------
    def get(
        self, url: str, params: JSONObject | None = None, *, accept_status: tuple[int, ...] = (200,)
    ) -> Any:
        """GET ``url`` (retrying); returns the response with a status in ``accept_status``."""

        def call(_attempt: int) -> Any:
            resp = self._client.get(url, params=params)
            self._note_rate_limit(url, resp.headers)
            self._check(resp)
            expected = resp.headers.get("content-length")
            if (
                expected is not None
                and resp.headers.get("content-encoding") is None
                and int(expected) != len(resp.content)
            ):
                msg = f"truncated body: {len(resp.content)} of {expected} bytes"
                raise RetryableHTTPError(msg)
            return resp

        resp = self._retrying("GET", url, call)
        if resp.status_code not in accept_status:
            msg = f"GET {resp.url} answered HTTP {resp.status_code}: {resp.text[:200]!r}"
            raise ProcessingError(msg, code=f"HTTP_{resp.status_code}")
        return resp

    def download(
        self,
        url: str,
        dest: str | Path,
        *,
        expected_sha256: str | None = None,
        expected_sha512: str | None = None,
    ) -> Download:
        """Download ``url`` to ``dest`` atomically, resuming a partial ``.part`` file (module docstring)."""
        dest = Path(dest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        part = dest.with_name(dest.name + ".part")
        resumed = part.is_file() and part.stat().st_size > 0
        attempts = 0

        def call(attempt: int) -> int:
            nonlocal attempts
            attempts = attempt
            return self._fetch_into(url, part)

        total = self._retrying("download", url, call)
        size = part.stat().st_size
        if size != total:
            part.unlink(missing_ok=True)
            msg = f"download {url}: {size} bytes on disk, server announced {total}"
            raise ProcessingError(msg, code="SIZE_MISMATCH")
        sha256, sha512 = file_hashes(part)
        if expected_sha256 and sha256.lower() != expected_sha256.lower():
            part.unlink(missing_ok=True)
            msg = f"download {url}: SHA-256 {sha256} is not the expected {expected_sha256}; file discarded"
            raise ProcessingError(msg, code="HASH_MISMATCH")
        if expected_sha512 and sha512.lower() != expected_sha512.lower():
            part.unlink(missing_ok=True)
            msg = f"download {url}: SHA-512 {sha512[:32]}… is not the expected one; file discarded"
            raise ProcessingError(msg, code="HASH_MISMATCH")
        part.replace(dest)
        return Download(dest, size, sha256, sha512, attempts, resumed)

    def _fetch_into(self, url: str, part: Path) -> int:
        """Append the missing bytes of ``url`` to ``part``; returns the full size."""
        have = part.stat().st_size if part.is_file() else 0
        headers = {"Range": f"bytes={have}-"} if have else {}
        with self._client.stream("GET", url, headers=headers) as resp:
            if resp.status_code == 416 and have:  # already complete
                return have
            self._check(resp)
            if resp.status_code not in (200, 206):
                msg = f"download {url} answered HTTP {resp.status_code}"
                raise ProcessingError(msg, code=f"HTTP_{resp.status_code}")
            if resp.status_code == 200:
                have = 0  # the server ignored Range: start over
            length = resp.headers.get("content-length")
            total = have + int(length) if length is not None else None
            if total is not None and total > LARGE and resp.status_code == 200:
                resp.close()
                return self._fetch_ranges(url, part, total)
            with part.open("ab" if have else "wb") as fh:
                for block in resp.iter_bytes():  # as received, so a broken transfer keeps its bytes
                    fh.write(block)
            got = part.stat().st_size
        if total is not None and got < total:
            msg = f"connection ended after {got} of {total} bytes"
            raise RetryableHTTPError(msg)
        return got if total is None else total

    def _fetch_ranges(self, url: str, part: Path, total: int) -> int:
        """Fetch a large file in :data:`BLOCK`-sized Range requests (appending to ``part``)."""
        with part.open("ab") as fh:
            while (have := part.stat().st_size) < total:
                end = min(have + BLOCK, total) - 1
                resp = self._client.get(url, headers={"Range": f"bytes={have}-{end}"})
                self._check(resp)
                if resp.status_code != 206:
                    msg = f"server does not honour Range requests for {url} (HTTP {resp.status_code})"
                    raise ProcessingError(msg, code="NO_RANGE_SUPPORT")
                fh.write(resp.content)
                fh.flush()
        return total


def file_hashes(path: Path) -> tuple[str, str]:
    """Hex SHA-256 and SHA-512 of a file, read once in 1 MiB blocks."""
    h256, h512 = hashlib.sha256(), hashlib.sha512()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h256.update(block)
            h512.update(block)
    return h256.hexdigest(), h512.hexdigest()
