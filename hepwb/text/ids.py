"""Deterministic identifiers and hashes.

HEPilot wants UUID v4 identifiers; hepwb derives them from SHA-256 digests of content so that a
re-run produces the same IDs (a UUID with the version-4 and variant bits set validates as v4).

Example:
    >>> u = content_uuid("P01", "chunk", 0)
    >>> u == content_uuid("P01", "chunk", 0), u[14]
    (True, '4')
"""

from __future__ import annotations

import hashlib
import json
import uuid
from functools import lru_cache
from pathlib import Path
from typing import Any

from hepwb.types import JSONObject

__all__ = [
    "ListHash",
    "canonical_json",
    "code_fingerprint",
    "config_hash",
    "content_uuid",
    "file_sha256",
    "short_hash",
    "text_sha256",
]


def content_uuid(*parts: object) -> str:
    """Return a UUID (version-4 layout) derived from the SHA-256 of ``parts``.

    Args:
        *parts: Values whose ``str()`` forms identify the object; joined with a separator.

    Returns:
        The canonical lowercase UUID string.
    """
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode("utf-8")).digest()
    return str(uuid.UUID(bytes=digest[:16], version=4))


def canonical_json(obj: Any) -> str:
    """Serialise ``obj`` as canonical JSON: sorted keys, no insignificant whitespace, UTF-8.

    Example:
        >>> canonical_json({"b": 1, "a": [1, 2]})
        '{"a":[1,2],"b":1}'
    """
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def config_hash(config: JSONObject) -> str:
    """SHA-256 of the canonical JSON of ``config`` without its ``config_hash`` key (HEPilot rule).

    Example:
        >>> config_hash({"a": 1}) == config_hash({"a": 1, "config_hash": "x"})
        True
    """
    payload = {k: v for k, v in config.items() if k != "config_hash"}
    return hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()


def text_sha256(text: str) -> str:
    """Hex SHA-256 of a UTF-8 string."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def short_hash(obj: Any, n: int = 12) -> str:
    """First ``n`` hex digits of the SHA-256 of the canonical JSON of ``obj``.

    Example:
        >>> len(short_hash({"chunk_size": 512}))
        12
    """
    return hashlib.sha256(canonical_json(obj).encode("utf-8")).hexdigest()[:n]


class ListHash:
    """:func:`short_hash` of a list, fed one item at a time (the list itself is never built).

    Example:
        >>> h = ListHash()
        >>> for item in ({"k": 1}, {"k": 2}):
        ...     h.add(item)
        >>> h.short(10) == short_hash([{"k": 1}, {"k": 2}], 10)
        True
    """

    def __init__(self) -> None:
        self._h = hashlib.sha256(b"[")
        self._items = 0

    def add(self, obj: Any) -> None:
        """Append ``obj`` to the hashed list."""
        self.add_json(canonical_json(obj))

    def add_json(self, text: str) -> None:
        """Append an item given as its canonical JSON (:func:`canonical_json`)."""
        self._h.update((b"," if self._items else b"") + text.encode("utf-8"))
        self._items += 1

    def short(self, n: int = 12) -> str:
        """First ``n`` hex digits of the hash of the list so far."""
        h = self._h.copy()
        h.update(b"]")
        return h.hexdigest()[:n]


def file_sha256(path: str | Path, block: int = 1 << 20) -> str:
    """Hex SHA-256 of a file, read in blocks."""
    h = hashlib.sha256()
    with Path(path).open("rb") as fh:
        while chunk := fh.read(block):
            h.update(chunk)
    return h.hexdigest()


@lru_cache(maxsize=16)
def code_fingerprint(package: str) -> str:
    """Hash of hepwb's version and the source files of sub-package (or module) ``package`` (a cache key part).

    Cached artefacts keyed by it are rebuilt automatically when that stage's code changes.

    Example:
        >>> len(code_fingerprint("chunking"))
        12
    """
    import importlib

    mod = importlib.import_module(f"hepwb.{package}")
    h = hashlib.sha256(importlib.import_module("hepwb").__version__.encode())
    here = Path(str(mod.__file__))
    files = sorted(here.parent.glob("*.py")) if hasattr(mod, "__path__") else [here]  # package or module
    for f in files:
        h.update(f.read_bytes())
    return h.hexdigest()[:12]
