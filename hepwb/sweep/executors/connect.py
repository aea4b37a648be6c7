"""Connecting to a running Dask scheduler: its address checked, and its TLS credentials.

A facility's scheduler usually speaks TLS (coffea-casa's ``tls://localhost:8786``). The client's
credentials come from Dask's configuration (``distributed.comm.tls.ca-file``, ``.client.cert``,
``.client.key``; coffea-casa sets them) or from files given to the command
(``--tls-ca-file/--tls-cert/--tls-key``), which win.

Example:
    >>> scheduler_security(None, None, None) is None
    True
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hepwb.deps import extra
from hepwb.exceptions import ConfigError

__all__ = ["check_scheduler_address", "scheduler_security"]

_FORM = "give tcp://host:port, e.g. tcp://127.0.0.1:8786 (a running `dask scheduler`), or drop --scheduler"


def scheduler_security(ca_file: str | Path | None, cert: str | Path | None, key: str | Path | None) -> Any:
    """A :class:`distributed.security.Security` of the TLS files given, or ``None`` when none is given.

    ``cert`` may hold the key too (``key`` then omitted). Every file is checked readable first: one line
    naming the option otherwise.
    """
    given = {"--tls-ca-file": ca_file, "--tls-cert": cert, "--tls-key": key}
    if not any(given.values()):
        return None
    if not ca_file or not cert:
        msg = (
            "TLS to the scheduler needs --tls-ca-file and --tls-cert (and --tls-key unless the cert holds it)"
        )
        raise ConfigError(msg)
    for flag, value in given.items():
        if value and not Path(value).is_file():
            msg = f"{flag} {str(value)[:200]!r} is not a readable file; give the PEM file the facility issued"
            raise ConfigError(msg)
    with extra("sweep", "--scheduler with TLS"):
        from distributed.security import Security

    try:
        security = Security(
            tls_ca_file=str(ca_file),
            tls_client_cert=str(cert),
            tls_client_key=str(key) if key else None,
            require_encryption=True,
        )
        security.get_connection_args("client")  # reads the files: a bad PEM is refused here
    except (OSError, ValueError) as exc:
        msg = f"the TLS files given (--tls-ca-file, --tls-cert, --tls-key) cannot be used: {exc}"
        raise ConfigError(msg) from None
    return security


def check_scheduler_address(address: str, security: Any = None) -> str:
    """``address`` when hepwb can connect to it as a Dask scheduler, else one :class:`ConfigError` line.

    Accepted: ``[tcp://]host:port`` and ``ws://host:port``; ``tls://`` and ``wss://`` when TLS credentials are
    given (``security``) or in Dask's configuration (``distributed.comm.tls.*``). ``inproc://`` (inside one
    process only), other protocols, a missing host and a port outside 1-65535 are refused before any
    ``Client`` exists (a failed one can deadlock the next).

    Example:
        >>> check_scheduler_address("tcp://127.0.0.1:8786")
        'tcp://127.0.0.1:8786'
        >>> check_scheduler_address("inproc://x")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        hepwb.exceptions.ConfigError: cannot connect to the Dask scheduler at 'inproc://x': inproc:// ...
    """
    with extra("sweep", "--scheduler"):
        from distributed.comm.addressing import parse_address, parse_host_port

    head = f"cannot connect to the Dask scheduler at {address[:200]!r}"
    try:
        scheme, location = parse_address(address)
    except (ValueError, TypeError) as exc:
        msg = f"{head} ({exc}); {_FORM}"
        raise ConfigError(msg) from None
    if scheme == "inproc":
        msg = f"{head}: inproc:// addresses exist only inside one Python process; {_FORM}"
        raise ConfigError(msg)
    if scheme not in ("tcp", "tls", "ws", "wss"):
        msg = f"{head}: protocol {scheme}:// is not supported here; {_FORM}"
        raise ConfigError(msg)
    try:
        host, port = parse_host_port(location)
    except (ValueError, TypeError) as exc:
        msg = f"{head} ({exc}); {_FORM}"
        raise ConfigError(msg) from None
    if not host or not 1 <= int(port) <= 65535:
        msg = f"{head}: it needs a host and a port in 1-65535; {_FORM}"
        raise ConfigError(msg)
    if scheme in ("tls", "wss") and security is None and not _client_tls_configured():
        msg = (
            f"{head}: {scheme}:// needs client TLS credentials: --tls-ca-file, --tls-cert and --tls-key, or "
            "Dask's configuration (distributed.comm.tls.ca-file, .client.cert and .client.key, e.g. "
            "DASK_DISTRIBUTED__COMM__TLS__CA_FILE=ca.pem); none are given (or their files cannot be "
            f"read): set them, or {_FORM}"
        )
        raise ConfigError(msg)
    return address


def _client_tls_configured() -> bool:
    """Whether Dask's configuration gives a client an SSL context (its TLS files readable)."""
    from distributed.security import Security

    try:
        return Security().get_connection_args("client").get("ssl_context") is not None
    except (OSError, ValueError, TypeError):  # a configured file missing or unreadable
        return False
