"""The evidence-matching rule of ``../shared/eval/check_quotes.py``, in one place.

``key`` keeps only ``[a-z0-9]`` of the NFKC-normalised, lowercased text, so extraction differences in
spacing, hyphenation, ligatures and punctuation do not matter. Accents are folded first (NFKD,
combining marks dropped), so ``Müller`` and the extraction artefact ``M¨uller`` both key as
``muller``; on text without accented letters the key is exactly check_quotes' key.
``piece_coverage`` is the tolerant rule: the share of a quote key's consecutive 16-character
pieces found in order in a text key.

Example:
    >>> key("Eﬃciency of the π⁰ → γγ decay: 8.5 %")
    'efficiencyofthe0decay85'
    >>> piece_coverage(key("beam-spin asymmetry"), key("The beam spin asymmetry is large"))
    1.0
"""

from __future__ import annotations

import re
import unicodedata

from hepwb import defaults

__all__ = ["NON_KEY", "key", "piece_coverage"]

NON_KEY = re.compile(r"[^a-z0-9]")


def key(s: str) -> str:
    """Return the matching key of ``s``: accents folded, NFKC, lowercase, only ``[a-z0-9]`` kept.

    Example:
        >>> key("Müller"), key("M¨uller"), key("ˇCerenkov"), key("Čerenkov")
        ('muller', 'muller', 'cerenkov', 'cerenkov')
    """
    s = unicodedata.normalize("NFKC", s)
    if not s.isascii():
        s = "".join(ch for ch in unicodedata.normalize("NFKD", s) if not unicodedata.combining(ch))
    return NON_KEY.sub("", s.lower())


def piece_coverage(quote_key: str, text_key: str, piece: int = defaults.QUOTE_PIECE_CHARS) -> float:
    """Share of ``quote_key``'s consecutive ``piece``-character pieces found in order in ``text_key``.

    1.0 when the quote key is contained outright (``check_quotes.coverage``).
    """
    if quote_key in text_key:
        return 1.0
    pieces = [quote_key[i : i + piece] for i in range(0, len(quote_key), piece)]
    pos = found = 0
    for p in pieces:
        at = text_key.find(p, pos)
        if at >= 0:
            found += 1
            pos = at + len(p)
    return found / len(pieces) if pieces else 0.0
