"""The artefact store a command uses: ``--store``, else ``$HEPWB_STORE``, else ``hepwb-store.json``.

No store (the default) keeps every artefact on local disk under the project folder, as on a laptop. A store
is an object-store URL, ``s3://BUCKET/PREFIX`` (any S3-compatible service), or ``file:///PATH`` (a folder
every worker mounts). Credentials never go into the URL or the project file: they come from the standard
places (``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``, ``AWS_PROFILE`` and ``~/.aws``, fsspec's
configuration), and the endpoint of a non-AWS service from ``AWS_ENDPOINT_URL``.

Example:
    >>> check_store_url("s3://my-bucket/hepwb/")
    's3://my-bucket/hepwb'
    >>> check_store_url("s3://KEY:SECRET@bucket/x")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    hepwb.exceptions.ConfigError: store URL 's3://***@bucket/x' holds credentials: ...
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit

from hepwb import limits
from hepwb.exceptions import ConfigError
from hepwb.files.parsers import read_json_file
from hepwb.paths import find_project_root
from hepwb.text.plaintext import not_text, plain

__all__ = ["SCHEMES", "STORE_FILE", "check_store_url", "resolve_store"]

STORE_FILE = "hepwb-store.json"
"""The project file naming its store once: ``{"url": "s3://bucket/prefix"}`` at the project root."""
SCHEMES = ("s3", "file")
_LOCAL = ("", "local", "none")


def check_store_url(url: str) -> str:
    """``url`` normalised (no trailing ``/``), or one line saying what is wrong with it and what to write."""
    text = str(url).strip()
    form = "write s3://BUCKET/PREFIX (or file:///PATH); credentials come from the environment"
    if problem := not_text(text):
        msg = f"store URL {plain(text[:200])!r} {problem}; {form}"
        raise ConfigError(msg)
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 - raises ValueError on a bad port or IPv6 host
    except ValueError as exc:
        msg = f"store URL {text[:200]!r} is no URL ({exc}); {form}"
        raise ConfigError(msg) from None
    shown = text[:200]
    if parts.username or parts.password or "@" in parts.netloc:
        shown = f"{parts.scheme}://***@{parts.netloc.rsplit('@', 1)[-1]}{parts.path}"[:200]
        msg = f"store URL {shown!r} holds credentials: {form} (AWS_ACCESS_KEY_ID, AWS_PROFILE, ...)"
        raise ConfigError(msg)
    if parts.query or parts.fragment:
        msg = f"store URL {shown!r} has a query or fragment: {form}"
        raise ConfigError(msg)
    if parts.scheme not in SCHEMES:
        msg = (
            f"store URL {shown!r}: scheme {parts.scheme or '(none)'!r} is not one of {list(SCHEMES)}; {form}"
        )
        raise ConfigError(msg)
    if parts.scheme == "s3" and not parts.netloc:
        msg = f"store URL {shown!r} names no bucket; {form}"
        raise ConfigError(msg)
    if parts.scheme == "file" and (parts.netloc or not parts.path.startswith("/")):
        msg = f"store URL {shown!r}: a file store is file:///ABSOLUTE/PATH"
        raise ConfigError(msg)
    if any(seg in (".", "..") for seg in parts.path.split("/")):
        msg = f"store URL {shown!r} has a '.' or '..' segment; {form}"
        raise ConfigError(msg)
    return text.rstrip("/")


def resolve_store(override: str | None = None, root: str | Path | None = None) -> str | None:
    """The store URL in force (``None``: artefacts on local disk).

    Args:
        override: ``--store`` (``local`` forces local disk whatever the project says).
        root: The project folder holding :data:`STORE_FILE` (default: this project).
    """
    for value in (override, os.environ.get("HEPWB_STORE")):
        if value is not None:
            return None if value.strip().lower() in _LOCAL else check_store_url(value)
    path = Path(root if root is not None else find_project_root()) / STORE_FILE
    if not (path.exists() or path.is_symlink()):  # a broken link is refused by the reader, not skipped
        return None
    fix = f'write {{"url": "s3://BUCKET/PREFIX"}} in it, or delete {path}'
    data = read_json_file(path, "store setting", fix=fix, max_bytes=limits.MAX_STORE_SETTING_BYTES)
    if not isinstance(data, dict) or set(data) - {"url"} or not isinstance(data.get("url"), str):
        msg = f'{path} must hold only {{"url": "s3://BUCKET/PREFIX"}}; {fix}'
        raise ConfigError(msg)
    value = data["url"]
    return None if value.strip().lower() in _LOCAL else check_store_url(value)
