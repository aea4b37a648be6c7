"""Checks of single sweep values: each returns ``None`` or a problem that says how to fix it.

Cheap by design (no model is loaded, no document converted): a sweep is validated completely before
any work starts, and an unchanged sweep is re-validated on every rerun.

Example:
    >>> check_value("chunk_size", {"chunk_size": 0})
    'a chunk size is a whole number of tokens from 16 to 32768, e.g. 512'
    >>> check_value("chunk_overlap", {"chunk_overlap": 125}).startswith("chunk_overlap is a fraction")
    True
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any, TypeGuard

from hepwb.exceptions import HepwbError
from hepwb.models.tokenizers import model_problem
from hepwb.types import JSONObject

__all__ = ["check_value", "named"]

from hepwb.limits import MIN_CHUNK_SIZE as _MIN_CHUNK


def _is_int(v: Any) -> TypeGuard[int]:
    return isinstance(v, int) and not isinstance(v, bool)


def _check_chunker(values: JSONObject, name_only: bool) -> str | None:
    from hepwb.chunking import CHUNKERS, get_chunker

    name, options = named(values.get("chunker"))
    if not isinstance(name, str):
        return f"a chunker is a name or a mapping with a 'name'; choose one of {CHUNKERS.names()}"
    if name_only:
        try:
            CHUNKERS.get(name)
        except HepwbError as exc:
            return str(exc)
        return None
    try:
        get_chunker(
            name,
            chunk_size=values["chunk_size"],
            chunk_overlap=values["chunk_overlap"],
            tokenizer=str(values.get("tokenizer")),
            **options,
        )
    except HepwbError as exc:
        return str(exc)
    return None


def _check_retriever(values: JSONObject) -> str | None:
    from hepwb.retrieval import RETRIEVERS

    name, options = named(values.get("retriever"))
    if not isinstance(name, str):
        return f"a retriever is a name or a mapping with a 'name'; choose one of {RETRIEVERS.names()}"
    try:
        cls = RETRIEVERS.get(name)
    except HepwbError as exc:
        return str(exc)
    params = inspect.signature(cls).parameters
    bad = sorted(set(options) - (set(params) - {"table", "embedder"}))
    if bad:
        valid = sorted(set(params) - {"table", "embedder"})
        return f"retriever {name!r} has no option(s) {bad}; its options are {valid}"
    check = getattr(cls, "check_options", None)
    if check is not None:
        try:
            check(**options)
        except HepwbError as exc:
            return str(exc)
    return None


def _check_corpus(values: JSONObject, check_inputs: bool) -> str | None:
    from hepwb.acquisition.folder import corpus_files, resolve_corpus

    if not check_inputs:
        return None
    try:
        folder = resolve_corpus(values.get("corpus"))
        corpus_files(folder)
    except HepwbError as exc:
        return str(exc)
    values["corpus"] = str(folder.resolve())
    return None


def _check_questions(values: JSONObject, check_inputs: bool) -> str | None:
    from hepwb.pipeline.experiment import questions_path

    if not check_inputs:
        return None
    try:
        values["questions"] = str(questions_path(values.get("questions")).resolve())
    except HepwbError as exc:
        return str(exc)
    return None


def check_value(
    dim: str, values: JSONObject, *, check_inputs: bool = False, name_only: bool = False
) -> str | None:
    """The problem with ``values[dim]`` in the cell ``values`` (which it may normalise), or ``None``.

    ``name_only``: for the chunker, check its name only (its size or overlap is already reported).
    """
    v = values.get(dim)
    if dim == "chunk_size":
        from hepwb.limits import MAX_CHUNK_SIZE

        if not (_is_int(v) and _MIN_CHUNK <= v <= MAX_CHUNK_SIZE):
            return f"a chunk size is a whole number of tokens from {_MIN_CHUNK} to {MAX_CHUNK_SIZE}, e.g. 512"
        return None
    if dim == "chunk_overlap":
        if isinstance(v, bool) or not isinstance(v, int | float) or not 0 <= v < 1:
            return (
                "chunk_overlap is a fraction of the chunk size, 0 <= x < 1 (HEPilot): "
                "write 0.5 for 125 of 250 tokens, 0 for none"
            )
        values[dim] = float(v)
        return None
    if dim == "k":
        from hepwb.limits import MAX_K

        if not (_is_int(v) and 1 <= v <= MAX_K):
            return (
                f"k is the number of chunks retrieved per question, a whole number from 1 to {MAX_K}, e.g. 10"
            )
        return None
    if dim == "max_docs":
        return (
            None
            if v is None or (_is_int(v) and v >= 1)
            else "max_docs is a whole number >= 1, or null for all"
        )
    if dim == "min_coverage":
        if isinstance(v, bool) or not isinstance(v, int | float) or not 0 < v <= 1:
            return "min_coverage is the share of a quote a chunk must hold, 0 < x <= 1 (0.5: half, 1: whole)"
        return None
    if dim in ("prefer_latex", "ragas_llm"):
        return None if isinstance(v, bool) else f"{dim} is true or false"
    if dim == "tokenizer":
        if not isinstance(v, str) or not v:
            return "a tokenizer is 'words', 'cl100k' or a model name such as 'all-MiniLM-L6-v2'"
        return None if v in ("words", "cl100k", "cl100k_base") else model_problem(v)
    if dim == "embedding_model":
        if not isinstance(v, str) or not v:
            return "an embedding model is a sentence-transformers name or folder, e.g. 'all-MiniLM-L6-v2'"
        return model_problem(v)
    if dim == "chunker":
        return _check_chunker(values, name_only)
    if dim == "retriever":
        return _check_retriever(values)
    if dim == "corpus":
        if v is not None and not isinstance(v, str | Path):
            return "corpus is a folder of PDF/markdown files, or null for the default"
        return _check_corpus(values, check_inputs)
    if dim == "questions":
        if v is not None and not isinstance(v, str | Path):
            return "questions is a hepqa-style JSONL/CSV file, or null for the default"
        return _check_questions(values, check_inputs)
    return None


def named(value: Any) -> tuple[Any, JSONObject]:
    """``"bm25"`` → ("bm25", {}); ``{"name": "hybrid_linear", "weight": 0.5}`` → (name, options)."""
    if isinstance(value, dict):
        opts = dict(value)
        return opts.pop("name", None), opts
    return value, {}
