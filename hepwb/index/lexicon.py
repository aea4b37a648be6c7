"""Acronyms the corpus defines ("deeply virtual Compton scattering (DVCS)"), for query expansion.

Built from the documents of a chunk set when its LanceDB table is built, saved beside it as
``_lexicon/<chunkset_id>.json`` (``{"dvcs": "deeply virtual compton scattering", …}``), and read by
the ``bm25`` retriever with ``acronyms=True``: a question naming either form also searches the other.

Example:
    >>> long_form("we measured deeply virtual Compton scattering", "DVCS")
    'deeply virtual Compton scattering'
    >>> long_form("managed across the Worldwide LHC Computing Grid", "WLCG")
    'Worldwide LHC Computing Grid'
    >>> long_form("a quantity called", "XYZ") is None
    True
    >>> expand_acronyms("What did HERMES find for DVCS?", {"dvcs": "deeply virtual compton scattering"})
    'What did HERMES find for DVCS? deeply virtual compton scattering'
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from hepwb.files.io import read_json_object, write_json

__all__ = [
    "ACRONYM",
    "acronyms_of",
    "corpus_lexicon",
    "expand_acronyms",
    "load_lexicon",
    "long_form",
    "save_lexicon",
]

ACRONYM = re.compile(r"((?:[A-Za-z][\w\-]*\s+){1,8}?[A-Za-z][\w\-]*)\s+\(([A-Z][A-Za-z0-9]{1,9})\)")
"""Words followed by a parenthesised acronym."""
_MINOR = {"of", "the", "and", "for", "in", "on", "to", "a", "an", "with", "at", "by"}


def long_form(words: str, short: str) -> str | None:
    """The words before ``(short)`` that spell the acronym ``short`` (minor words skipped), if any."""
    letters = [c for c in short if c.isupper()] or list(short.upper())
    toks = re.split(r"(\s+|-)", words)
    content = [i for i, t in enumerate(toks) if t.strip(" -") and t.lower() not in _MINOR]
    if len(content) < len(letters):
        return None
    first = content[-len(letters)]
    if all(toks[i][0].upper() == c for i, c in zip(content[-len(letters) :], letters, strict=True)):
        return "".join(toks[first:]).strip()
    return None


def acronyms_of(texts: Iterable[str]) -> dict[str, str]:
    """``{acronym (lowercase): its long form (lowercase)}`` defined in ``texts`` (the most frequent form).

    Each text's definitions are found once per process (by its SHA-256): every chunk set of a corpus
    shares its papers, and a new chunk size does not read them for acronyms again.
    """
    seen: dict[str, Counter[str]] = {}
    for text in texts:
        for short, forms in _defined(text).items():
            seen.setdefault(short, Counter()).update(forms)
    return {short: forms.most_common(1)[0][0] for short, forms in sorted(seen.items())}


_DEFINED: dict[str, dict[str, Counter[str]]] = {}
_DEFINED_MAX = 4096  # texts remembered (a paper's definitions are a few hundred bytes)


def _defined(text: str) -> dict[str, Counter[str]]:
    """The acronyms ``text`` defines with how often each long form is used (remembered by content)."""
    key = _digest(text)
    found = _DEFINED.get(key)
    if found is None:
        found = {}
        for m in ACRONYM.finditer(text):
            long = long_form(m.group(1), m.group(2))
            if long:
                found.setdefault(m.group(2).lower(), Counter())[" ".join(long.lower().split())] += 1
        if len(_DEFINED) >= _DEFINED_MAX:
            _DEFINED.clear()
        _DEFINED[key] = found
    return found


def corpus_lexicon(db_path: str | Path, texts: Callable[[], Iterable[str]]) -> dict[str, str]:
    """:func:`acronyms_of` the corpus, kept beside the tables by content (``_lexicon/corpus-<key>.json``).

    ``texts`` gives the papers' texts each time it is called (one at a time: a large corpus is never in
    memory at once). Every chunk set of a corpus has the same lexicon: it is found in the papers once, and
    a new chunk size (in a new process too) reads it back.
    """
    key = hashlib.sha256("\0".join(sorted(_digest(t) for t in texts())).encode()).hexdigest()[:16]
    path = Path(db_path) / "_lexicon" / f"corpus-{key}.json"
    if path.is_file():
        try:
            return {str(k): str(v) for k, v in read_json_object(path, "lexicon").items()}
        except ValueError:  # damaged: found again and written anew
            pass
    lexicon = acronyms_of(texts())
    write_json(path, lexicon)
    return lexicon


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def expand_acronyms(query: str, lexicon: Mapping[str, str]) -> str:
    """``query`` with the other form of every acronym or long form it names appended."""
    low = query.lower()
    extra = []
    for short, long in lexicon.items():
        if re.search(rf"\b{re.escape(short)}\b", low) and long not in low:
            extra.append(long)
        elif long in low and not re.search(rf"\b{re.escape(short)}\b", low):
            extra.append(short)
    return f"{query} {' '.join(extra)}" if extra else query


def save_lexicon(db_path: str | Path, chunkset_id: str, lexicon: Mapping[str, str]) -> None:
    """Write the lexicon of a chunk set beside its tables."""
    write_json(Path(db_path) / "_lexicon" / f"{chunkset_id}.json", dict(lexicon))


def load_lexicon(db_path: str | Path, chunkset_id: str) -> dict[str, str]:
    """The lexicon of a chunk set (empty when none was built)."""
    path = Path(db_path) / "_lexicon" / f"{chunkset_id}.json"
    return dict(read_json_object(path, "lexicon")) if path.is_file() else {}
