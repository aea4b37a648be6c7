"""The one check of every service URL a user gives hepwb (NER, arXiv, INSPIRE, a Dask Gateway).

A URL is refused before anything connects when it is not ``http(s)://host[:port][/path]``: spaces or
control characters, a malformed host (an IPv6 bracket left open, a host label over 63 characters), a port
outside 1-65535, another scheme (``file://`` is never fetched), or more than :data:`MAX_URL_CHARS`
characters. Messages show the URL without its user and password (:func:`redact`).

Example:
    >>> check_http_url("https://export.arxiv.org/api/query", "--arxiv-url", fix="give the API's URL")
    'https://export.arxiv.org/api/query'
    >>> check_http_url("file:///etc/passwd", "--arxiv-url", fix="give the API's URL")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    hepwb.exceptions.ConfigError: --arxiv-url 'file:///etc/passwd' is not an http:// or https:// URL with...
"""

from __future__ import annotations

import re

from hepwb import limits
from hepwb.exceptions import ConfigError
from hepwb.text.plaintext import plain

__all__ = ["MAX_URL_CHARS", "check_http_url", "redact"]

MAX_URL_CHARS = limits.MAX_URL_CHARS
"""The longest URL accepted (:data:`hepwb.limits.MAX_URL_CHARS`)."""

_USERINFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://)[^/?#]*@")


def redact(url: str) -> str:
    """``url`` for a message: any ``user:password@`` replaced by ``***@``, at most 200 characters.

    Example:
        >>> redact("http://user:pw@127.0.0.1:8000/x")
        'http://***@127.0.0.1:8000/x'
    """
    return _USERINFO.sub(r"\1***@", url)[:200]


def check_http_url(url: str, what: str, *, fix: str) -> str:
    """``url`` when it is an ``http(s)://host[:port][/path]`` URL; else a :class:`ConfigError` naming it.

    Args:
        url: The URL as given.
        what: The option or variable it came from, e.g. ``"--arxiv-url (HEPWB_ARXIV_API_URL)"``.
        fix: What to give instead, e.g. an example URL.

    Example:
        >>> check_http_url("http://[::1", "--ner-url", fix="e.g. http://127.0.0.1:8000")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        hepwb.exceptions.ConfigError: --ner-url 'http://[::1' is malformed (Invalid port: ':1'); e.g. ...
        >>> check_http_url("http://me:s3cret@" + "a" * 70 + ".org", "--gateway-address", fix="fix it")
        ... # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        hepwb.exceptions.ConfigError: --gateway-address 'http://***@aaaa...org' is malformed (...); fix it
    """
    import httpx

    shown = redact(url)
    if len(url) > MAX_URL_CHARS:
        msg = f"{what} {plain(shown)!r}… has {len(url):,} characters, more than {MAX_URL_CHARS:,}; {fix}"
        raise ConfigError(msg)
    if any(ch.isspace() or ord(ch) < 32 or 127 <= ord(ch) < 160 for ch in url):
        msg = f"{what} {plain(shown)!r} holds a space or control character; {fix}"
        raise ConfigError(msg)
    try:
        parsed = httpx.URL(url)
        host = parsed.host
        if host and not host.startswith("["):
            host.encode("idna")  # a label over 63 characters or an empty one: no host name
    except (httpx.InvalidURL, ValueError, TypeError) as exc:  # UnicodeError is a ValueError
        why = " ".join(str(exc).split())
        m = _USERINFO.match(url)
        if m:  # the parser's message may quote the user and password too
            why = why.replace(url[len(m.group(1)) : m.end() - 1], "***")
        msg = f"{what} {shown!r} is malformed ({plain(why)[:200]}); {fix}"
        raise ConfigError(msg) from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        msg = f"{what} {shown!r} is not an http:// or https:// URL with a host; {fix}"
        raise ConfigError(msg)
    if parsed.port is not None and not 0 < parsed.port <= 65535:
        msg = f"{what} {shown!r} has port {parsed.port}, outside 1-65535; {fix}"
        raise ConfigError(msg)
    return url
