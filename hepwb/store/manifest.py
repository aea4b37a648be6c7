"""An artefact's manifest, checked: its own prefix in the store, its files inside its own folder, each hashed.

A manifest is data written by whoever can write to the store: nothing it names is placed or read until
every entry is checked (:func:`checked_files`), and a manifest that names anything else is refused whole,
in one line naming it and how to have the artefact built again.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from hepwb.exceptions import ConfigError, HepwbError
from hepwb.paths import Layout
from hepwb.text.names import is_plain_name

__all__ = [
    "REBUILD",
    "StoreError",
    "artefact_home",
    "check_part",
    "check_rel",
    "checked_files",
    "manifest_rel",
]


class StoreError(HepwbError, OSError):
    """The artefact store cannot be reached or answered an error; the message names the store and the fix."""


_BASE = re.compile(r"objects/(?P<kind>[^/]+)/(?P<key>[^/]+)/[0-9a-f]{12}")
"""Where :meth:`ArtefactStore.publish` puts an artefact's files: its kind, its key, one attempt."""
_SHA256 = re.compile(r"[0-9a-f]{64}")


def artefact_home(kind: str, key: str) -> str:
    """The one folder (relative to the folder fetched into) every file of artefact ``kind``/``key`` lies in.

    A project's artefacts: a failed conversion's record (exactly ``.failed/<key>.json``), a converted
    document, a chunk set, a table, vectors and a run each in their own folder of the project layout; a
    corpus copy or a question file is fetched into a folder of its own (``""``: any path inside it).

    Example:
        >>> artefact_home("document", "abc")
        'data/interim/documents/abc'
        >>> artefact_home("failure", "abc")
        'data/interim/documents/.failed/abc.json'
    """
    layout = Layout(Path())
    homes = {
        "failure": layout.interim / ".failed" / f"{key}.json",
        "document": layout.interim / key,
        "chunkset": layout.chunksets,
        "table": layout.lancedb,
        "windows": layout.lancedb,
        "embeddings": layout.data / "processed" / "embeddings",
        "run": layout.runs,
    }
    return homes[kind].as_posix() if kind in homes else ""


REBUILD = "delete that manifest to have the artefact built again (or ask whoever writes to the store)"


def manifest_rel(kind: str, key: str) -> str:
    """The manifest's path in the store: ``manifests/<kind>/<key>.json`` (both plain names)."""
    return f"manifests/{check_part(kind, 'kind')}/{check_part(key, 'key')}.json"


def check_part(value: str, what: str) -> str:
    """``value`` when it is a plain name (an artefact's kind or key); else :class:`ConfigError`."""
    if not is_plain_name(value):
        msg = f"artefact {what} {value[:80]!r} is not a plain name (letters, digits, '.', '_', '+', '-')"
        raise ConfigError(msg)
    return value


def check_rel(rel: str) -> str:
    """``rel`` when it is a relative path with no empty, ``.`` or ``..`` part; else :class:`ConfigError`."""
    parts = rel.split("/")
    if rel.startswith("/") or any(p in ("", ".", "..") for p in parts):
        msg = f"artefact file {rel[:200]!r} is not a relative path inside the project"
        raise ConfigError(msg)
    return rel


def checked_files(kind: str, key: str, body: dict[str, Any], where: str) -> dict[str, dict[str, Any]]:
    """The files of the manifest ``body`` (at the URL ``where``), each checked before anything is fetched.

    Its ``base`` must be this artefact's own prefix in the store, and every file a relative path inside
    the artefact's folder (:func:`artefact_home`) with its bytes and SHA-256: a manifest naming anything
    else (a project file, a path outside the store) places nothing and is refused in one line.
    """
    base = _BASE.fullmatch(str(body["base"]))
    if base is None or (base["kind"], base["key"]) != (kind, key):
        msg = f"the manifest {where} points outside its artefact ({str(body['base'])[:120]!r}): {REBUILD}"
        raise StoreError(msg)
    home = artefact_home(kind, key)
    files: dict[str, dict[str, Any]] = {}
    for rel, entry in body["files"].items():
        # a failure's home is its one file; every other home is a folder, never a file itself
        inside = rel == home if kind == "failure" else (home == "" or rel.startswith(home + "/"))
        try:
            check_rel(rel)
        except ConfigError:
            inside = False
        if not inside:
            msg = (
                f"the manifest {where} lists {str(rel)[:120]!r}, outside the folder a {kind} artefact lives "
                f"in ({home or 'its own'}): nothing of it was fetched; {REBUILD}"
            )
            raise StoreError(msg)
        ok = (
            isinstance(entry, dict)
            and isinstance(entry.get("bytes"), int)
            and isinstance(entry.get("sha256"), str)
            and _SHA256.fullmatch(entry["sha256"]) is not None
        )
        if not ok:
            msg = f"the manifest {where} gives no size and SHA-256 for {str(rel)[:120]!r}: {REBUILD}"
            raise StoreError(msg)
        files[rel] = entry
    return files
