"""HEP-aware text normalisation for lexical search and entity matching.

Physics notation reaches the index in many spellings: ``J/\\psi``, ``J/ψ`` and ``J/psi``;
``B^0_s``, ``B_s^0`` and ``B0s``; ``\\sqrt{s} = 13\\,TeV`` and ``√s = 13 TeV``. A plain tokenizer
splits them into letters and numbers that match almost anything. :func:`normalize` maps all of
them to one spelling (Greek and LaTeX symbols to their names, sub/superscripts joined to their
symbol, arrows to ``to``) keeping a map back to the original characters; :func:`search_terms` adds
compound terms (``jpsi``, ``13tev``, ``sqrts``) to the plain words, giving the text that the
``bm25`` retriever's full-text index reads. Queries go through the same function.

Example:
    >>> search_terms("the $J/\\\\psi$ yield at $\\\\sqrt{s} = 13$ TeV")
    'the j psi yield at sqrts 13 tev jpsi 13tev'
    >>> search_terms("B_s^0 → μ⁺μ⁻")
    'bs0 b bs b0 to mu mu'
"""

from __future__ import annotations

import functools
import re
import unicodedata

__all__ = ["normalize", "search_terms"]

GREEK = {
    "α": "alpha", "β": "beta", "γ": "gamma", "δ": "delta", "ε": "epsilon", "ϵ": "epsilon",
    "ζ": "zeta", "η": "eta", "θ": "theta", "ϑ": "theta", "ι": "iota", "κ": "kappa",
    "λ": "lambda", "μ": "mu", "ν": "nu", "ξ": "xi", "π": "pi", "ρ": "rho", "σ": "sigma",
    "ς": "sigma", "τ": "tau", "υ": "upsilon", "φ": "phi", "ϕ": "phi", "χ": "chi", "ψ": "psi",
    "ω": "omega", "Γ": "gamma", "Δ": "delta", "Θ": "theta", "Λ": "lambda", "Ξ": "xi",
    "Π": "pi", "Σ": "sigma", "Υ": "upsilon", "Φ": "phi", "Ψ": "psi", "Ω": "omega",
}  # fmt: skip
"""Greek letters (after NFKC, so the micro sign is ``μ``) and their names."""

SYMBOLS = {"→": " to ", "⟶": " to ", "↦": " to ", "√": "sqrt", "±": " pm ", "ℓ": "ell", "−": "-"}
"""Other symbols physicists write, and their words."""

_MACRO_WORDS = {**{v: v for v in GREEK.values()}, "varepsilon": "epsilon", "varphi": "phi",
                "vartheta": "theta", "ell": "ell", "sqrt": "sqrt", "to": " to ", "rightarrow": " to ",
                "longrightarrow": " to ", "pm": " pm ", "mp": " mp "}  # fmt: skip
"""LaTeX macros read as words; every other macro (``\\mathrm``, ``\\left`` …) is dropped."""

_MARKUP = frozenset("^_{}$\\")
_SPECIAL = re.compile(r"\\[A-Za-z]+|[\^_{}$\\]|[^\x00-\x7f]")
_ASCII = str.maketrans(
    {chr(i): (chr(i).lower() if chr(i).isalnum() or chr(i) == "." else " ") for i in range(128)}
)
_WORD = re.compile(r"[a-z0-9]+")
_SLASH = re.compile(r"(?<![a-z0-9])(j|psi) (psi|2s|3770|3686)(?![a-z0-9])")  # J/psi, psi(2S)
_UNIT = re.compile(
    r"(?<![a-z0-9.])(\d+(?:\.\d+)?) ?"
    r"(tev|gev|mev|kev|ev|fb|pb|nb|ab|mb|ns|ps|fs|cm|mm|nm|hz|khz|mhz|ghz)(?![a-z0-9])"
)
_SQRTS = re.compile(r"sqrt ?\(? ?s(nn)?(?![a-z0-9])")
_STOP = re.compile(r"\.(?:(?!\d)|(?<!\d\.))")  # a full stop not between digits (one literal: fast to scan)
_SCRIPTED = re.compile(r"\b[a-z](?=[a-z]{0,2}[0-9])[a-z0-9]{2,3}\b")  # a symbol with joined scripts: bs0, b0s


def normalize(text: str) -> tuple[str, list[int]]:
    """Return ``text`` normalised for matching, and each output character's source offset.

    Lowercase NFKC text in which Greek letters and LaTeX symbol macros are spelled out, other
    macros and the markup characters ``^ _ { } $ \\`` are removed (so ``B^0_s`` reads ``b0s``), and
    every other non-alphanumeric character is a space.

    Example:
        >>> norm, src = normalize("J/ψ and $\\\\mu^+$")
        >>> norm
        'j psi and mu '
        >>> "J/ψ and $\\\\mu^+$"[src[norm.index("psi")]]
        'ψ'
    """
    src: list[int] = []
    return _normalized(text, src), src


def _normalized(text: str, src: list[int] | None) -> str:
    """:func:`normalize`'s text; each output character's source offset appended to ``src`` when given."""
    out: list[str] = []
    pos = 0
    for m in _SPECIAL.finditer(text):
        start = m.start()
        if start > pos:  # a plain ASCII run: one translate, offsets one to one
            out.append(text[pos:start].translate(_ASCII))
            if src is not None:
                src.extend(range(pos, start))
        tok = m.group()
        if len(tok) > 1:  # a LaTeX macro
            word = _MACRO_WORDS.get(tok[1:], "")
            out.append(word)
            if src is not None:
                src.extend([start] * len(word))
        elif tok not in _MARKUP:
            for c in unicodedata.normalize("NFKC", tok):
                for d in GREEK.get(c) or SYMBOLS.get(c) or c:
                    if d in _MARKUP:
                        continue
                    d = d.lower()
                    out.append(d if d.isascii() and (d.isalnum() or d == ".") else " ")
                    if src is not None:
                        src.append(start)
        pos = m.end()
    out.append(text[pos:].translate(_ASCII))
    if src is not None:
        src.extend(range(pos, len(text)))
    # a full stop is kept only inside numbers (8.5), so "8.5 TeV" stays one value (one character for one)
    return _STOP.sub(" ", "".join(out))


@functools.lru_cache(maxsize=8192)
def search_terms(text: str) -> str:
    """The terms the HEP full-text index stores for ``text`` (and queries are turned into).

    Every word of :func:`normalize`, plus compounds: ``j psi`` → ``jpsi``, ``13 tev`` → ``13tev``,
    ``sqrt s`` → ``sqrts``, and for a symbol with joined scripts such as ``bs0`` its parts
    ``b``, ``bs``, ``b0`` so that ``B_s`` and ``B^0_s`` share a term.

    Remembered for the last 8,192 texts (about 25 MB of chunks): chunk sets of neighbouring sizes share most
    chunks (short sections and captions are whole chunks at either size; 800 of 959 between 456 and 464
    tokens on the shipped papers), and a question is asked of every chunk set.
    """
    norm = _normalized(text, None)
    norm = _SQRTS.sub(lambda m: " sqrts" + (m.group(1) or "") + " ", norm)
    words = _SCRIPTED.sub(_with_parts, " ".join(norm.replace(".", " ").split()))
    compounds = [a + b for a, b in (*_SLASH.findall(norm), *_UNIT.findall(norm))]
    return " ".join([words, *compounds]) if words else " ".join(compounds)


def _with_parts(m: re.Match[str]) -> str:
    """A short word holding a digit is a symbol with joined scripts: it is followed by its parts."""
    word = m.group()
    return " ".join([word, word[0], *(word[0] + s for s in dict.fromkeys(word[1:]))])
