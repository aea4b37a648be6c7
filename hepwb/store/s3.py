"""The S3 side of the artefact store: an s3fs file system whose every request ends, LanceDB's S3 options.

Connections time out after :data:`CONNECT_S` seconds and reads after the read timeout given, with a bounded
number of tries: an unreachable store is named within seconds (:func:`hepwb.store.objects.store_problem`),
never a hang. Credentials are left to the S3 clients, which read them from the standard places.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

__all__ = ["CONNECT_S", "FAILURES", "s3_filesystem", "s3_storage_options"]

CONNECT_S = 5
"""Seconds to wait for the store to accept a connection (then two tries in all)."""


def s3_storage_options(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """LanceDB's (object_store's) options for the S3 endpoint of the environment: endpoint, region, http.

    Credentials are left to object_store, which reads the same ``AWS_*`` variables itself.

    Example:
        >>> s3_storage_options({"AWS_ENDPOINT_URL": "http://127.0.0.1:8333"})
        {'aws_endpoint': 'http://127.0.0.1:8333', 'allow_http': 'true'}
    """
    env = os.environ if environ is None else environ
    out: dict[str, str] = {}
    endpoint = env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL")
    if endpoint:
        out["aws_endpoint"] = endpoint
        if endpoint.startswith("http://"):
            out["allow_http"] = "true"
    region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")
    if region:
        out["aws_region"] = region
    return out


def _client_failures() -> tuple[type[BaseException], ...]:
    """What the S3 client raises when the store cannot be used: OS errors and botocore's own errors.

    botocore's ``EndpointConnectionError`` and its kin are no ``OSError``.
    """
    try:
        from botocore.exceptions import BotoCoreError
    except ImportError:  # the file store alone
        return (OSError, ValueError)
    return (OSError, ValueError, BotoCoreError)


FAILURES = _client_failures()
"""What the S3 client (or the local file system) raises when the store cannot be used."""


def s3_filesystem(read_s: float, *, attempts: int, retries: int) -> Any:
    """An s3fs file system whose every request ends: ``attempts`` botocore tries, ``retries`` s3fs rounds.

    The user's fsspec configuration (``fsspec.config.conf["s3"]``) wins over these values.
    """
    import fsspec

    conf = dict(fsspec.config.conf.get("s3", {}))
    config_kwargs = {
        "connect_timeout": CONNECT_S,
        "read_timeout": read_s,
        "retries": {"max_attempts": attempts, "mode": "standard"},
        **conf.pop("config_kwargs", {}),
    }
    fs = fsspec.filesystem(
        "s3", config_kwargs=config_kwargs, use_listings_cache=False, skip_instance_cache=True, **conf
    )
    fs.retries = retries  # s3fs's rounds of retries (a class attribute, 5 by default), this object's own
    return fs
