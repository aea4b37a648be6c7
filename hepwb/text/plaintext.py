r"""Corpus text made safe to print: every terminal control sequence and control character removed.

A paper's text is untrusted: an OSC sequence (``ESC ] 52 ; c ; … BEL``) writes the clipboard of the
terminal that prints it, ``ESC ] 8 ; ; URL BEL`` makes a hyperlink, a CSI sequence moves the cursor or
repaints the screen, and a carriage return overwrites the line before it. :func:`plain` removes them
all, keeping newlines and tabs; every terminal print of corpus text (``hepwb search``, ``hepwb tiers
search``, citations, snippets) and every HTML snippet (notebook widgets, report tables) goes through it.

Example:
    >>> plain("a\x1b]52;c;SGVsbG8=\x07b \x1b]8;;http://x\x07link\x1b]8;;\x07 \x1b[31mred\x1b[0m\r\n")
    'ab link red\n'
"""

from __future__ import annotations

import html
import re

from hepwb import limits

__all__ = ["escape_html", "not_text", "plain", "sequence_around"]

_SEQUENCES = re.compile(
    # OSC, DCS, SOS, PM and APC strings (7- and 8-bit introducers) up to BEL or ST
    r"(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)"
    # CSI: ESC [ (or 8-bit CSI) parameters, intermediates and a final byte
    r"|(?:\x1b\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]"
    # any other escape sequence: ESC, intermediates, a final byte
    r"|\x1b[\x20-\x2f]*[\x30-\x7e]"
)
_CONTROLS = re.compile(
    # C0 and C1 controls but newline and tab (an unterminated sequence loses its introducer here), DEL,
    # and the bidirectional overrides and isolates that reorder what a terminal or page shows
    r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]"
)
_SURROGATES = re.compile(r"[\ud800-\udfff]")
"""Lone surrogates (a byte that is no UTF-8, ``"\\ud800"`` in JSON): no terminal or page can take one."""


def plain(text: str) -> str:
    r"""``text`` without terminal control sequences or control characters (``\n`` and ``\t`` kept).

    Escape sequences (OSC, CSI, DCS, any other ``ESC …``) go whole; a lone control character goes alone,
    so the printable text around it stays; ``\r\n`` becomes ``\n`` and a lone ``\r``, vertical tab or form
    feed a space; a lone surrogate (no Unicode text: printing it would fail) becomes ``\ufffd``.

    Example:
        >>> plain("x\x1b]8;;http://x\x1b\\y\x1b]8;;\x1b\\\x07z\x00\x9b2J")
        'xyz'
        >>> plain("one\rtwo\x0bthree"), plain("Evil \ud800 title") == "Evil \ufffd title"
        ('one two three', True)
    """
    if text.isprintable():  # the common case: nothing to remove
        return text
    text = text.replace("\r\n", "\n")
    text = _SEQUENCES.sub("", text)
    text = re.sub(r"[\r\x0b\x0c]", " ", text)
    return _SURROGATES.sub("\ufffd", _CONTROLS.sub("", text))


def not_text(value: str, *, control: bool = True) -> str:
    r"""What makes ``value`` unusable as text (``""``: nothing): a lone surrogate, NUL, other controls.

    A lone surrogate (a byte that is no UTF-8 on the command line, ``"\ud800"`` in JSON) is no Unicode
    text: no file, database or terminal can take it. NUL is refused always; where ``control`` (a name: an
    actor, a label) every other control character too (C0, DEL, C1: an escape sequence starts with one)
    and the bidirectional overrides that reorder what a terminal shows.

    Example:
        >>> not_text("ev\udcff"), not_text("ev\x1b]8;;http://x\x07il"), not_text("a\nb", control=False)
        ('holds a lone surrogate (U+DCFF)', 'holds the control character U+001B', '')
        >>> not_text("a\nb"), not_text("Zoë Müller")
        ('holds the control character U+000A', '')
    """
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"holds a lone surrogate (U+{ord(value[exc.start]):04X})"
    for ch in value:
        if ch == "\0" or (control and (ch in "\n\t" or _CONTROLS.match(ch))):
            return f"holds the control character U+{ord(ch):04X}"
    return ""


def sequence_around(text: str, pos: int, reach: int = limits.MAX_SEQUENCE_REACH) -> tuple[int, int] | None:
    r"""The span of the escape sequence of ``text`` holding position ``pos`` inside it, else ``None``.

    A snippet cut at ``pos`` moves its edge to the sequence's, so no part of its payload is shown.

    Example:
        >>> text = "ab]8;;http://xlink"
        >>> sequence_around(text, 8), sequence_around(text, 1)
        ((2, 16), None)
    """
    start = text.rfind("\x1b", max(0, pos - reach), pos)
    if start < 0:
        return None
    m = _SEQUENCES.match(text, start)
    return (start, m.end()) if m and m.end() > pos else None


def escape_html(text: str) -> str:
    r"""``text`` for an HTML page: :func:`plain`, then :func:`html.escape` (quotes included).

    Example:
        >>> escape_html("<b>\x1b]52;c;SGVsbG8=\x07x</b>")
        '&lt;b&gt;x&lt;/b&gt;'
    """
    return html.escape(plain(text))
