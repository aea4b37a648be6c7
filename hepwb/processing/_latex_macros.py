"""Fallback definitions of common HEP macros (units, particles, kinematics) that live in class files.

Collaboration papers use macros such as ``\\TeV``, ``\\ttbar`` or ``\\fbinv`` from style files that are
not shipped with the source; pandoc silently drops unknown macros, losing "13 TeV". :func:`prelude`
returns ``\\providecommand`` lines for those the project does not define itself (pandoc ignores a
later ``\\newcommand`` of a name already defined, so names the project defines are left out).

Example:
    >>> "\\\\TeV" in prelude("at 13\\\\TeV"), "\\\\TeV" in prelude("\\\\newcommand{\\\\TeV}{TeV} 13\\\\TeV")
    (True, False)
"""

from __future__ import annotations

import re

__all__ = ["HEP_MACROS", "prelude"]

_U = r"\,{}\xspace"
_M = r"\ensuremath{{{}}}\xspace"

HEP_MACROS: dict[str, str] = {
    **{u: _U.format(u) for u in ("eV", "keV", "MeV", "GeV", "TeV", "PeV")},
    **{f"{p}binv": _M.format(rf"\,\mathrm{{{p}b}}^{{-1}}") for p in ("f", "p", "n", "a")},
    "ttbar": _M.format(r"\mathrm{t}\overline{\mathrm{t}}"),
    "bbbar": _M.format(r"\mathrm{b}\overline{\mathrm{b}}"),
    **{f"PQ{q}": _M.format(rf"\mathrm{{{q}}}") for q in "tbcsudq"},
    **{f"PAQ{q}": _M.format(rf"\overline{{\mathrm{{{q}}}}}") for q in "tbcsudq"},
    "PW": _M.format(r"\mathrm{W}"),
    "PZ": _M.format(r"\mathrm{Z}"),
    "PH": _M.format(r"\mathrm{H}"),
    "Pg": _M.format(r"\gamma"),
    "PGg": _M.format(r"\gamma"),
    "Pe": _M.format(r"\mathrm{e}"),
    "Pepm": _M.format(r"\mathrm{e}^{\pm}"),
    "Pemp": _M.format(r"\mathrm{e}^{\mp}"),
    "PGm": _M.format(r"\mu"),
    "PGmpm": _M.format(r"\mu^{\pm}"),
    "PGmmp": _M.format(r"\mu^{\mp}"),
    "PGt": _M.format(r"\tau"),
    "PGn": _M.format(r"\nu"),
    "pt": _M.format(r"p_{\mathrm{T}}"),
    "ptmiss": _M.format(r"p_{\mathrm{T}}^{\text{miss}}"),
    "MET": _M.format(r"E_{\mathrm{T}}^{\text{miss}}"),
    "HT": _M.format(r"H_{\mathrm{T}}"),
    "sqrts": _M.format(r"\sqrt{s}"),
    "etal": r"et al.\xspace",
    "ie": r"i.e.\xspace",
    "eg": r"e.g.\xspace",
    "etc": r"etc.\xspace",
    "vs": r"vs.\xspace",
    "cf": r"cf.\xspace",
}

_DEFINED = re.compile(
    r"\\(?:(?:re|provide)?newcommand|providecommand|DeclareRobustCommand|DeclareMathOperator|newcommandx)"
    r"\*?\s*\{?\s*\\([A-Za-z@]+)|\\(?:[egx]?def|let)\s*\\([A-Za-z@]+)"
)


def prelude(text: str) -> str:
    """``\\providecommand`` lines for the :data:`HEP_MACROS` that ``text`` uses but does not define."""
    defined = {a or b for a, b in _DEFINED.findall(text)}
    used = set(re.findall(r"\\([A-Za-z]+)", text))
    lines = [
        f"\\providecommand{{\\{name}}}{{{body}}}"
        for name, body in HEP_MACROS.items()
        if name in used and name not in defined
    ]
    return "\n".join(lines) + "\n" if lines else ""
