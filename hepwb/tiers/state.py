"""``tiers.json``: the state of a tier folder (chunking, embedding model, NER model and sources).

The first ``init_lt`` (:meth:`~hepwb.tiers.core.TierStore.init_lt`) writes it once its papers are ready;
later ingests record each new source and the NER model used. Both tiers share the chunking and the
embedding model it records. It is read and checked at every use: a damaged file is one line naming it
and the fix, never a traceback.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hepwb import defaults, limits
from hepwb.acquisition.folder import resolve_corpus
from hepwb.exceptions import ConfigError
from hepwb.files.io import read_json, write_json
from hepwb.files.readers import ReadError
from hepwb.types import JSONObject

__all__ = ["STATE_FILE", "ingest_settings", "read_state", "remember_source", "state_problem", "update_state"]

STATE_FILE = "tiers.json"
"""The state's file name in a tier folder."""

_REBUILD = "rebuild the tiers with `hepwb tiers init CORPUS`"


def state_problem(meta: JSONObject) -> str | None:
    """What is wrong with the fields of ``tiers.json`` (``None``: nothing); written by ``init_lt`` only.

    Example:
        >>> state_problem({"chunking": {"name": "hepilot", "chunk_size": 512, "chunk_overlap": 0.1},
        ...                "embedding_model": "all-MiniLM-L6-v2"}) is None
        True
        >>> state_problem({"chunking": "hepilot"})
        "'chunking' is missing or not an object"
    """
    chunking = meta.get("chunking")
    if not isinstance(chunking, dict):
        return "'chunking' is missing or not an object"
    if not isinstance(chunking.get("name"), str) or not chunking["name"]:
        return "'chunking.name' is not a chunker name"
    for key, bound in (("chunk_size", limits.CHUNK_SIZE), ("chunk_overlap", limits.CHUNK_OVERLAP)):
        problem = bound.problem(chunking.get(key))
        if problem:
            return f"'chunking.{key}': {problem}"
    if not isinstance(meta.get("embedding_model"), str) or not meta["embedding_model"]:
        return "'embedding_model' is missing or not a model name"
    sources = meta.get("sources", [])
    if not isinstance(sources, list) or not all(isinstance(src, dict | str) for src in sources):
        return "'sources' is not a list of sources"
    return None


def read_state(path: Path) -> JSONObject:
    """The state in ``path``, checked (empty when there is none yet).

    Raises:
        ReadError: The file cannot be read (its message names the fix).
        ConfigError: It is no JSON, or its fields are not those ``init_lt`` writes.
    """
    if not path.exists():
        return {}
    try:
        meta = read_json(path, "tier state", fix=f"it is damaged: {_REBUILD}")
    except ReadError as exc:
        if _REBUILD in str(exc):
            raise
        msg = f"{exc}; the file is damaged: {_REBUILD}"
        raise ConfigError(msg) from None
    problem = "not a JSON object" if not isinstance(meta, dict) else state_problem(meta)
    if problem:
        msg = f"tier state {path} is damaged ({problem}); {_REBUILD}"
        raise ConfigError(msg)
    return dict(meta)


def ingest_settings(
    meta: JSONObject,
    root: Path,
    *,
    chunker: str | None,
    chunk_size: int | None,
    chunk_overlap: float | None,
    embedding_model: str | None,
) -> tuple[JSONObject, str]:
    """The chunking and embedding model of an ingest into the tiers ``root`` whose state is ``meta``.

    What is given, else what the state records, else the defaults; once the state records them, a
    different choice is an error (both tiers share them).

    Raises:
        ConfigError: The given chunking or model differs from the recorded ones.
    """
    given = {"name": chunker, "chunk_size": chunk_size, "chunk_overlap": chunk_overlap}
    fixed = meta.get("chunking") or {
        "name": defaults.CHUNKER,
        "chunk_size": defaults.CHUNK_SIZE,
        "chunk_overlap": defaults.CHUNK_OVERLAP,
    }
    wanted = {k: fixed[k] if v is None else v for k, v in given.items()}
    model = embedding_model or str(meta.get("embedding_model") or defaults.EMBEDDING_MODEL)
    if meta and (meta["chunking"] != wanted or meta["embedding_model"] != model):
        msg = (
            f"the tiers in {root} use {meta['chunking']} and {meta['embedding_model']}; "
            "ingest with those, or open another tier folder (Tiers.open(name) / --name)"
        )
        raise ConfigError(msg)
    return wanted, model


def remember_source(
    path: Path, corpus: str | Path | None, only: list[str] | None, max_docs: int | None
) -> None:
    """Record in ``path`` where papers came from (the tier-aware evaluation converts them again, cached)."""
    meta = read_state(path)
    src = {"corpus": str(resolve_corpus(corpus).resolve()), "only": only, "max_docs": max_docs}
    if src not in meta["sources"]:
        meta["sources"] = [*meta["sources"], src]
        write_json(path, meta)


def update_state(path: Path, **fields: Any) -> None:
    """Write ``fields`` into the state in ``path`` when it exists and they differ from what it records."""
    meta = read_state(path)
    if meta and any(meta.get(k) != v for k, v in fields.items()):
        write_json(path, {**meta, **fields})
