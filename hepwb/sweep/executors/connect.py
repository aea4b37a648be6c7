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

import contextlib
import socket
import ssl
import struct
import sys
import time
from pathlib import Path
from typing import Any

from hepwb import limits
from hepwb.exceptions import ConfigError
from hepwb.runtime.deps import extra

__all__ = ["check_scheduler_address", "probe_scheduler", "scheduler_security"]

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


def probe_scheduler(address: str, security: Any = None, timeout_s: float = limits.SCHEDULER_WAIT_S) -> None:
    """Refuse ``address`` (checked by :func:`check_scheduler_address`) unless a Dask scheduler answers there.

    A Dask scheduler greets each connection with a short handshake (a framed msgpack mapping naming its
    Python and pickle protocol). This reads it here, with the whole exchange bounded by ``timeout_s``
    and the greeting by :data:`~hepwb.limits.SCHEDULER_HANDSHAKE_BYTES`, before any ``Client`` exists: Dask's
    own client waits for a greeting without end (a web server on the port hung the sweep) and allocates
    whatever length a peer announces (64 bytes of ``0xff`` asked for 3 EiB). ``tcp://`` and ``tls://`` are
    probed; ``ws://`` speaks HTTP first and fails on its own.

    Raises:
        ConfigError: Nothing listens there (or it does not answer in time), or what answers is no Dask
            scheduler; one line naming the address.
    """
    with extra("sweep", "--scheduler"):
        from distributed.comm.addressing import parse_address, parse_host_port

    scheme, location = parse_address(address)
    if scheme not in ("tcp", "tls"):
        return
    host, port = parse_host_port(location)
    head = f"{address[:200]!r}"
    deadline = time.monotonic() + timeout_s
    try:
        sock = socket.create_connection((host, int(port)), timeout=timeout_s)
    except OSError as exc:
        msg = (
            f"cannot connect to the Dask scheduler at {address[:200]} ({exc.strerror or exc}); start one "
            "with `dask scheduler` and workers with `dask worker ADDRESS`, or drop --scheduler"
        )
        raise ConfigError(msg) from None
    try:
        if scheme == "tls":
            sock = _tls(sock, host, security, deadline)
        greeting = _greeting(sock, deadline)
        with contextlib.suppress(OSError):  # answer it, so the scheduler logs no broken handshake
            sock.sendall(_frame({"compression": None, "python": tuple(sys.version_info[:3]),
                                 "pickle-protocol": 5}))  # fmt: skip
    except ssl.SSLError as exc:
        msg = (
            f"TLS with the Dask scheduler at {head} failed ({exc.reason or exc}); check --tls-ca-file, "
            "--tls-cert and --tls-key (or Dask's distributed.comm.tls settings)"
        )
        raise ConfigError(msg) from None
    except (OSError, ValueError) as exc:
        why = "it sent nothing in time" if isinstance(exc, TimeoutError) else str(exc) or type(exc).__name__
        msg = (
            f"{head} answers but is not a Dask scheduler ({why}); give the address `dask scheduler` "
            "printed (tcp://HOST:8786 by default), or drop --scheduler"
        )
        raise ConfigError(msg) from None
    finally:
        sock.close()
    if not isinstance(greeting, dict) or "pickle-protocol" not in greeting:
        msg = (
            f"{head} answers but is not a Dask scheduler (its greeting is no Dask handshake); give the "
            "address `dask scheduler` printed, or drop --scheduler"
        )
        raise ConfigError(msg)


def _tls(sock: socket.socket, host: str, security: Any, deadline: float) -> socket.socket:
    """``sock`` in the client TLS of ``security`` (else Dask's configuration), its handshake bounded."""
    from distributed.security import Security

    context = (security or Security()).get_connection_args("client").get("ssl_context")
    if context is None:
        msg = "no client TLS credentials"
        raise ValueError(msg)
    sock.settimeout(max(deadline - time.monotonic(), 0.001))
    wrapped: socket.socket = context.wrap_socket(
        sock, server_hostname=host if context.check_hostname else None
    )
    return wrapped


def _recv(sock: socket.socket, n: int, deadline: float) -> bytes:
    """Exactly ``n`` bytes from ``sock`` before ``deadline`` (``TimeoutError`` after it)."""
    data = bytearray()
    while len(data) < n:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        sock.settimeout(left)
        chunk = sock.recv(n - len(data))
        if not chunk:
            msg = f"it closed the connection after {len(data)} bytes"
            raise ValueError(msg)
        data += chunk
    return bytes(data)


def _greeting(sock: socket.socket, deadline: float) -> Any:
    """The handshake a Dask scheduler sends first: a bounded frame of msgpack, decoded (never unpickled)."""
    import msgpack

    (size,) = struct.unpack("Q", _recv(sock, 8, deadline))
    if not 16 <= size <= limits.SCHEDULER_HANDSHAKE_BYTES:
        msg = f"it announced a first message of {size:,} bytes; a Dask handshake is a few dozen"
        raise ValueError(msg)
    body = _recv(sock, size, deadline)
    (count,) = struct.unpack_from("Q", body)
    if not 1 <= count <= 16 or size < 8 * (1 + count):
        msg = f"its first message announces {count:,} frames"
        raise ValueError(msg)
    lengths = struct.unpack_from(f"{count}Q", body, 8)
    if 8 * (1 + count) + sum(lengths) != size:
        msg = "its first message's frame lengths do not add up"
        raise ValueError(msg)
    try:  # msgpack alone (never Dask's loads, which unpickles): at most the capped bytes read above
        return msgpack.unpackb(body[size - lengths[-1] :], raw=False, strict_map_key=False)
    except Exception as exc:
        msg = f"its first message is no msgpack ({type(exc).__name__})"
        raise ValueError(msg) from None


def _frame(message: Any) -> bytes:
    """``message`` as Dask frames it on the wire: total length, frame count, frame lengths, msgpack."""
    import msgpack

    payload: bytes = msgpack.packb(message, use_bin_type=True)
    body = struct.pack("QQ", 1, len(payload)) + payload
    return struct.pack("Q", len(body)) + body
