"""Sentence spans with NLTK's Punkt algorithm, given a list of scientific abbreviations.

Punkt needs no downloaded model when its parameters are supplied, so this works offline.

Example:
    >>> sentence_spans("See Fig. 3 of Ref. 2. It shows e.g. the asymmetry. Done.")
    [(0, 21), (22, 50), (51, 56)]
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from hepwb import defaults

__all__ = ["sentence_spans"]

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


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Return ``[start, end)`` spans of the sentences of ``text`` (whitespace between them excluded).

    Each text is split once per process (:data:`~hepwb.defaults.SENTENCE_CACHE_TEXTS`): the paragraphs a
    new chunk size cuts are those an earlier size cut.
    """
    if not text.strip():
        return []
    return list(_spans(text))


@lru_cache(maxsize=defaults.SENTENCE_CACHE_TEXTS)
def _spans(text: str) -> tuple[tuple[int, int], ...]:
    return tuple((int(a), int(b)) for a, b in _tokenizer().span_tokenize(text))
