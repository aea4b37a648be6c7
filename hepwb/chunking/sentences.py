"""Sentence spans with NLTK's Punkt algorithm, given a list of scientific abbreviations.

Punkt needs no downloaded model when its parameters are supplied, so this works offline. A text is split
once per process; inside :func:`remembered` the splits are also kept in a file (one per paper, beside the
converted documents), so a fresh process chunking at a new size neither imports NLTK nor splits again.

Example:
    >>> sentence_spans("See Fig. 3 of Ref. 2. It shows e.g. the asymmetry. Done.")
    [(0, 21), (22, 50), (51, 56)]
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from hepwb import defaults
from hepwb.files.io import UNREADABLE, atomic_write_text, read_json_object

__all__ = ["remembered", "sentence_spans"]

Spans = tuple[tuple[int, int], ...]

_ABBREVIATIONS = (
    "fig",
    "figs",
    "eq",
    "eqs",
    "ref",
    "refs",
    "sec",
    "secs",
    "tab",
    "tabs",
    "app",
    "ch",
    "chap",
    "vol",
    "no",
    "nos",
    "p",
    "pp",
    "ed",
    "eds",
    "al",
    "e.g",
    "i.e",
    "cf",
    "vs",
    "etc",
    "approx",
    "resp",
    "viz",
    "dr",
    "prof",
    "inc",
    "ltd",
    "jr",
    "sr",
    "st",
    "dept",
    "univ",
    "lab",
    "nucl",
    "phys",
    "rev",
    "lett",
    "proc",
    "conf",
    "int",
    "j",
    "mon",
    "not",
    "astron",
    "astrophys",
    "sci",
    "nat",
    "comput",
    "instrum",
    "meth",
    "methods",
    "eur",
    "gen",
    "rel",
    "jhep",
    "prd",
    "prl",
    "nim",
    "a.u",
    "b.c",
    "c.m",
    "i.i.d",
    "r.h.s",
    "l.h.s",
    "w.r.t",
)


@lru_cache(maxsize=1)
def _tokenizer() -> Any:
    from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer

    params = PunktParameters()
    params.abbrev_types = set(_ABBREVIATIONS)
    return PunktSentenceTokenizer(params)


_KNOWN: dict[str, Spans] = {}
"""Splits made or read by this process, by the text's SHA-256 (at most
:data:`~hepwb.defaults.SENTENCE_CACHE_TEXTS`: the paragraphs a new chunk size cuts are those an earlier
size cut)."""
_RECORDING = threading.local()
"""Per thread, the splits made inside each open :func:`remembered` block (innermost last)."""
_LOADED: set[Path] = set()
"""The files whose splits this process has read into :data:`_KNOWN` (each is read once)."""


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Return ``[start, end)`` spans of the sentences of ``text`` (whitespace between them excluded)."""
    if not text.strip():
        return []
    key = _key(text)
    spans = _KNOWN.get(key)
    if spans is None:
        spans = tuple((int(a), int(b)) for a, b in _tokenizer().span_tokenize(text))
        _remember(key, spans)
        for made in getattr(_RECORDING, "stack", ()):
            made[key] = spans
    return list(spans)


def _key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _remember(key: str, spans: Spans) -> None:
    if len(_KNOWN) >= defaults.SENTENCE_CACHE_TEXTS:
        _KNOWN.clear()
        _LOADED.clear()  # what was read from them is forgotten too: read again when next needed
    _KNOWN[key] = spans


@lru_cache(maxsize=1)
def _splitter() -> str:
    """What a kept split depends on besides its text: the abbreviations and NLTK's version."""
    try:
        nltk = version("nltk")
    except PackageNotFoundError:  # no NLTK: nothing kept can be trusted, nothing new can be made
        nltk = "absent"
    return hashlib.sha256(json.dumps([nltk, _ABBREVIATIONS]).encode()).hexdigest()[:16]


@contextmanager
def remembered(path: Path, texts: Iterable[str] = ()) -> Iterator[None]:
    """Reuse the splits kept in ``path`` and keep there those made inside the block.

    When the block splits a new text, each of ``texts`` (a paper's paragraphs) is split too and kept: a
    paper's first split then serves every later chunk size, however small. ``path`` is a cache (JSON): one
    that cannot be read, or was made by another splitter, is made again; it is replaced whole (never
    half-written), and only when the block split a new text, merged with what it holds then (another
    process's splits are kept). A process reads each file once.

    Example:
        >>> import tempfile
        >>> kept = Path(tempfile.mkdtemp()) / "paper.json"
        >>> with remembered(kept):
        ...     sentence_spans("A first one. A second one.")
        [(0, 12), (13, 26)]
        >>> json.loads(kept.read_text())["splits"]
        [[[0, 12], [13, 26]]]
    """
    if path not in _LOADED:
        for key, spans in _read(path).items():
            _remember(key, spans)
        _LOADED.add(path)
    made: dict[str, Spans] = {}
    stack = _RECORDING.__dict__.setdefault("stack", [])
    stack.append(made)
    try:
        yield
        if made:
            for text in texts:
                sentence_spans(text)
    finally:
        stack.remove(made)
    if made:
        both = {**_read(path), **made}
        body = {
            "splitter": _splitter(),
            "texts": list(both),
            "splits": [list(map(list, v)) for v in both.values()],
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps(body, separators=(",", ":")))


def _read(path: Path) -> dict[str, Spans]:
    try:
        body = read_json_object(path, "sentence splits", fix="they are made again")
        if body["splitter"] != _splitter():
            return {}
        return {
            str(k): tuple((int(a), int(b)) for a, b in v)
            for k, v in zip(body["texts"], body["splits"], strict=True)
        }
    except UNREADABLE:  # absent, damaged or not this cache's file: split again
        return {}
