"""Dask clusters from a Dask Gateway, as analysis facilities provide them (coffea-casa, Fermilab EAF).

A facility's notebook image usually configures the gateway in Dask's own configuration (``gateway.address``,
``gateway.proxy-address``, ``gateway.auth.type`` and ``gateway.auth.kwargs``, e.g. in
``/etc/dask/gateway.yaml`` or ``DASK_GATEWAY__ADDRESS``); the `dask-gateway` client reads it, and an option
given here wins::

    hepwb sweep sweeps/grid.yaml --cluster gateway                     # the facility's configuration
    hepwb sweep sweeps/grid.yaml --cluster gateway --worker-cores 2 --worker-memory 4 --adapt-max 20
    hepwb sweep grid.yaml --cluster gateway --gateway-address https://gw.example.org --gateway-auth jupyterhub

The cluster is the sweep's own: it is shut down when the sweep ends, fails or is interrupted. Its workers
get hepwb's offline and telemetry variables through the cluster option ``environment`` when the gateway
offers one; worker cores, memory and image go to the options of those names when it offers them (a
gateway that offers none of them is named, with the options it has).

Example:
    >>> gateway_environment({"HF_HUB_OFFLINE": "1", "HOME": "/home/me"})["HF_HUB_OFFLINE"]
    '1'
"""

from __future__ import annotations

import logging
import os
import socket
import ssl
import threading
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from hepwb import limits
from hepwb.exceptions import ConfigError
from hepwb.runtime.deps import extra
from hepwb.runtime.env import OFFLINE_VARIABLES, online_requested
from hepwb.runtime.urls import check_http_url, redact
from hepwb.text.plaintext import plain
from hepwb.types import JSONObject

__all__ = [
    "AUTH_TYPES",
    "check_gateway_options",
    "gateway_address",
    "gateway_environment",
    "make_gateway_cluster",
]

_log = logging.getLogger("hepwb.sweep")

AUTH_TYPES = ("basic", "kerberos", "jupyterhub")
"""Authentication methods of the dask-gateway client (``--gateway-auth``)."""
_ENV = (
    *OFFLINE_VARIABLES,
    "HEPWB_ONLINE",
    "HEPWB_DEVICE",
    "RAGAS_DO_NOT_TRACK",
    "ORT_DISABLE_TELEMETRY",
    "HF_HUB_DISABLE_TELEMETRY",
    "TOKENIZERS_PARALLELISM",
)


def gateway_environment(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The variables a gateway worker gets: hepwb's offline and telemetry settings of this process.

    Nothing else of this process's environment goes (no credentials, no ``HOME``, no ``HEPWB_HOME``).
    """
    env = dict(os.environ if environ is None else environ)
    out = {k: env[k] for k in _ENV if k in env}
    if not online_requested():
        out.update({k: out.get(k, "1") for k in OFFLINE_VARIABLES})
    out.setdefault("RAGAS_DO_NOT_TRACK", "true")
    out.setdefault("TOKENIZERS_PARALLELISM", "false")
    return out


def gateway_address(address: str | None) -> str:
    """``address``, else Dask's ``gateway.address``; one line naming both when neither is set.

    Example:
        >>> gateway_address("http://127.0.0.1:8000")
        'http://127.0.0.1:8000'
    """
    with extra("facility", "--cluster gateway"):
        import dask
        import dask_gateway  # noqa: F401 - its configuration defaults (gateway.*) load with it

    found = address or dask.config.get("gateway.address", None)
    if not found:
        msg = (
            "--cluster gateway needs the gateway's address: pass --gateway-address https://HOST[:PORT], or "
            "set gateway.address in Dask's configuration (DASK_GATEWAY__ADDRESS; facility images set it)"
        )
        raise ConfigError(msg)
    check_http_url(
        str(found), "gateway address (--gateway-address or gateway.address)", fix="give https://HOST[:PORT]"
    )
    return str(found)


def _bounded(call: Callable[[], Any], seconds: float, url: str, what: str) -> Any:
    """``call()``, or one line when it has not returned within ``seconds``.

    The dask-gateway client has no timeout of its own: a gateway that answers its health check and then
    stalls would hang the sweep. The call runs in a daemon thread; its error, if any, is raised here.
    """
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:  # handed to the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=run, name="hepwb-gateway-call", daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        msg = f"the Dask Gateway at {redact(url)}: no {what} within {seconds:g} s; check it or retry later"
        raise ConfigError(msg)
    if "error" in box:
        raise box["error"]
    return box["value"]


def _reachable(address: str) -> None:
    """Refuse in one line a gateway that does not answer HTTP within :data:`~hepwb.limits.GATEWAY_WAIT_S`.

    Its port must accept a connection and reply (any status) to ``GET /api/health``: a port that accepts
    and never answers hung the dask-gateway client, which has no timeout of its own. The TLS handshake of
    this look is unverified (it only asks whether something answers); the client verifies its own.
    """
    shown = redact(address)  # never its user and password
    parts = urlsplit(address)
    host, port = str(parts.hostname), parts.port or (443 if parts.scheme == "https" else 80)
    wait = limits.GATEWAY_WAIT_S
    try:
        with socket.create_connection((host, port), timeout=wait) as raw:
            conn: socket.socket = raw
            if parts.scheme == "https":
                ctx = ssl.create_default_context()
                ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
                conn = ctx.wrap_socket(raw, server_hostname=host)
            conn.sendall(f"GET /api/health HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
            answered = bool(conn.recv(1))
    except TimeoutError:
        msg = (
            f"the Dask Gateway at {shown} accepts connections but does not answer HTTP within {wait:g} s; "
            "check --gateway-address (or gateway.address in Dask's configuration)"
        )
        raise ConfigError(msg) from None
    except OSError as exc:
        msg = (
            f"cannot reach the Dask Gateway at {shown} ({exc.strerror or type(exc).__name__}); check "
            "--gateway-address (or gateway.address in Dask's configuration) and that you are on the facility"
        )
        raise ConfigError(msg) from None
    if not answered:
        msg = f"the Dask Gateway at {shown} closes connections without answering; check --gateway-address"
        raise ConfigError(msg)


def _set_options(options: Any, wanted: JSONObject) -> None:
    """Set ``wanted`` on the gateway's cluster options; a name it does not offer is one line."""
    offered = set(options)
    for name, value in wanted.items():
        if value is None:
            continue
        if name == "environment" and name not in offered:
            _log.info("the gateway offers no 'environment' option: its workers keep their own environment")
            continue
        if name not in offered:
            flag = {"worker_cores": "--worker-cores", "worker_memory": "--worker-memory"}.get(
                name, f"--{name}"
            )
            msg = (
                f"{flag}: this Dask Gateway offers no cluster option {name!r}; it offers {sorted(offered)} "
                f"(drop {flag}, or ask the facility)"
            )
            raise ConfigError(msg)
        try:
            options[name] = {**dict(options[name] or {}), **value} if name == "environment" else value
        except (TypeError, ValueError) as exc:
            msg = f"cluster option {name}={value!r} is refused by the gateway: {exc}"
            raise ConfigError(msg) from None


def _disarm(gateway: Any) -> None:
    """Keep a closed ``dask_gateway.Gateway`` from closing again when collected.

    dask-gateway 2026.3's ``Gateway.__del__`` calls ``close()`` once more, which asks distributed for the
    stopped event loop and raises (an "exception ignored" at garbage collection). Marking it asynchronous
    makes ``__del__`` skip that second close; the gateway is closed already.
    """
    gateway._asynchronous = True  # the only switch its __del__ reads


def _close_disarms(cluster: Any) -> None:
    """Have ``cluster.close()`` disarm its gateway client once closed (see :func:`_disarm`)."""
    close = cluster.close

    def close_once(shutdown: bool | None = None) -> None:
        if cluster.gateway.asynchronous:
            return  # closed already
        try:
            close(shutdown=shutdown)
        finally:
            _disarm(cluster.gateway)  # the cluster's own __del__ and atexit hook read the same switch

    cluster.close = close_once


def check_gateway_options(
    address: str | None,
    auth: str | None,
    *,
    adapt_min: int | None = None,
    adapt_max: int | None = None,
    image: str | None = None,
) -> str:
    """The gateway's URL when the options can be asked for; else a :class:`ConfigError`, one line.

    Checked before anything is planned or contacted (the CLI calls it even when every cell is done already):
    the address, the authentication type, adaptive bounds in order, an image reference without spaces or
    control codes.
    """
    url = gateway_address(address)
    if auth is not None and auth not in AUTH_TYPES:
        msg = f"--gateway-auth {auth!r} is not one of {list(AUTH_TYPES)}"
        raise ConfigError(msg)
    if adapt_min is not None and adapt_max is not None and adapt_min > adapt_max:
        msg = f"--adapt-min {adapt_min} is above --adapt-max {adapt_max}"
        raise ConfigError(msg)
    if image is not None and (
        not image.strip() or len(image) > limits.MAX_IMAGE_CHARS or plain(image) != image or " " in image
    ):
        msg = "--image must be a container image (registry/name:tag, no spaces or control codes)"
        raise ConfigError(msg)
    return url


def make_gateway_cluster(
    *,
    address: str | None = None,
    proxy_address: str | None = None,
    auth: str | None = None,
    worker_cores: int | None = None,
    worker_memory: float | None = None,
    image: str | None = None,
    workers: int | None = None,
    adapt_min: int | None = None,
    adapt_max: int | None = None,
) -> Any:
    """A new cluster of the Dask Gateway at ``address`` (default: Dask's ``gateway.*`` configuration).

    Args:
        address: The gateway's URL (``gateway.address``).
        proxy_address: Its scheduler proxy, when not the address's port (``gateway.proxy-address``).
        auth: ``basic``, ``kerberos`` or ``jupyterhub`` (``gateway.auth.type``; its keyword arguments come
            from ``gateway.auth.kwargs``, never from the command line).
        worker_cores: Cores per worker (the cluster option ``worker_cores``).
        worker_memory: GiB per worker (the cluster option ``worker_memory``).
        image: The workers' container image (the cluster option ``image``), on Kubernetes-backed gateways.
        workers: A fixed number of workers (default 2 when no adaptive bound is given).
        adapt_min: Adaptive scaling's lower bound (with ``adapt_max``: the gateway adds and removes workers).
        adapt_max: Adaptive scaling's upper bound.

    Returns:
        A started ``dask_gateway.GatewayCluster`` (shut down by its ``close()``).

    Raises:
        ConfigError: No address, an unreachable gateway, refused credentials or options (one line each).
    """
    url = check_gateway_options(address, auth, adapt_min=adapt_min, adapt_max=adapt_max, image=image)
    _reachable(url)
    cluster = _start(
        url,
        {"address": url, "proxy_address": proxy_address, "auth": auth},
        {
            "worker_cores": worker_cores,
            "worker_memory": worker_memory,
            "image": image,
            "environment": gateway_environment(),
        },
    )
    try:
        if adapt_min is not None or adapt_max is not None:
            cluster.adapt(minimum=adapt_min or 0, maximum=adapt_max if adapt_max is not None else adapt_min)
        else:
            cluster.scale(workers or 2)
    except BaseException:
        cluster.close()
        raise
    _log.info("Dask Gateway %s: cluster %s", url, cluster.name)
    return cluster


def _start(url: str, kwargs: JSONObject, wanted: JSONObject) -> Any:
    """A started cluster of the gateway at ``url`` (``kwargs``: address, proxy, auth), options ``wanted``.

    The gateway's cluster options are read first (bounded by :data:`~hepwb.limits.GATEWAY_WAIT_S`), then
    the cluster is started (bounded by :data:`~hepwb.limits.GATEWAY_START_S`); its ``close()`` disarms its
    client (:func:`_close_disarms`).

    Raises:
        ConfigError: The gateway does not answer in time, offers no such option, or refuses the
            credentials or the cluster (one line each).
    """
    with extra("facility", "--cluster gateway"):
        from aiohttp import ClientError
        from dask_gateway import Gateway, GatewayCluster
        from dask_gateway.client import GatewayClusterError, GatewayServerError

    try:
        gw = Gateway(**kwargs)
        try:
            options = _bounded(gw.cluster_options, limits.GATEWAY_WAIT_S, url, "cluster options")
        finally:
            gw.close()
            _disarm(gw)
        _set_options(options, wanted)
        cluster = _bounded(
            lambda: GatewayCluster(**kwargs, cluster_options=options, shutdown_on_close=True),
            limits.GATEWAY_START_S,
            url,
            "started cluster",
        )
        _close_disarms(cluster)
    except (ClientError, GatewayClusterError, GatewayServerError, OSError, ValueError, TypeError) as exc:
        if isinstance(exc, ConfigError):
            raise
        text = " ".join(str(exc).split())[:300] or type(exc).__name__
        msg = (
            f"the Dask Gateway at {redact(url)} refused the cluster ({text}); check --gateway-auth and "
            "credentials"
        )
        raise ConfigError(msg) from None
    return cluster
