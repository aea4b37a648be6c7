"""Repair accents that PDF text extraction leaves as separate spacing characters (``M¨uller``).

TeX-era PDFs draw an accented letter as the letter plus a spacing accent glyph, and pymupdf
returns the accent beside the letter (``M¨uller``, ``ˇCerenkov``, ``Ram´on``). Each spacing accent
next to a letter becomes the matching combining mark and the pair is composed (NFC): ``Müller``,
``Čerenkov``, ``Ramón``. A dotless ``ı`` under an accent becomes ``i`` first (``´ı`` -> ``í``).
The accent is taken to belong to the letter after it, as the extraction order gives it. The grave
accent comes out as the ASCII backtick, which is also TeX's opening quote and code's delimiter, so a
backtick is composed only inside a word, before a vowel (``Universit`a``, ``Li`ege``).

Example:
    >>> repair_diacritics("M¨uller, ˇCerenkov, Ram´on, Garc´ıa, Fran¸cois")
    'Müller, Čerenkov, Ramón, García, François'
    >>> repair_diacritics("Universit`a di Padova, Li`ege, ``quoted'', `code`")
    "Università di Padova, Liège, ``quoted'', `code`"
    >>> repair_diacritics("a plain ´ quote")
    'a plain ´ quote'
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["SPACING_ACCENTS", "repair_diacritics"]

#: Spacing accent -> combining mark.
SPACING_ACCENTS = {
    "\u00a8": "\u0308",  # ¨ diaeresis
    "\u00b4": "\u0301",  # ´ acute
    "\u02c6": "\u0302",  # ˆ circumflex
    "\u02dc": "\u0303",  # ˜ tilde
    "\u02c7": "\u030c",  # ˇ caron
    "\u02d8": "\u0306",  # ˘ breve
    "\u02d9": "\u0307",  # ˙ dot above
    "\u02da": "\u030a",  # ˚ ring
    "\u02dd": "\u030b",  # ˝ double acute
    "\u00af": "\u0304",  # ¯ macron
    "\u02cb": "\u0300",  # ˋ modifier grave
}
_CEDILLA = "\u00b8"
_BEFORE = re.compile("([" + "".join(SPACING_ACCENTS) + "])([A-Za-zı])")
_AFTER_CEDILLA = re.compile(f"([CcSsTt]){_CEDILLA}|{_CEDILLA}([CcSsTt])")
_BACKTICK_GRAVE = re.compile(r"(?<=[A-Za-z])`([aeiouAEIOU])(?=[A-Za-z]|\b)")


def _compose(letter: str, mark: str) -> str:
    base = "i" if letter == "ı" else letter
    return unicodedata.normalize("NFC", base + mark)


def repair_diacritics(text: str) -> str:
    """Compose spacing accents with their letter (NFC); other text is unchanged."""
    if "`" in text:
        text = _BACKTICK_GRAVE.sub(lambda m: _compose(m.group(1), "\u0300"), text)
    if not any(ch in text for ch in SPACING_ACCENTS) and _CEDILLA not in text:
        return text
    text = _BEFORE.sub(lambda m: _compose(m.group(2), SPACING_ACCENTS[m.group(1)]), text)
    return _AFTER_CEDILLA.sub(lambda m: _compose(m.group(1) or m.group(2), "\u0327"), text)
