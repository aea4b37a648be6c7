"""One rule for every name a user gives that becomes a file or folder name.

Tier names, fusion fits, adapted models, LanceDB tables, sweep names and document labels: a plain name
(letters, digits, ``.``, ``_``, ``+``, ``-``; starting with a letter or digit; at most 128 characters).
No path separators, no leading dot, no ``..``: such a name can never leave the folder it is put in, and
:func:`under` checks the resolved path too.

Example:
    >>> [is_plain_name(x) for x in ("P01", "hep-ex_0106068", "../../x", ".hidden", "a/b", "")]
    [True, True, False, False, False, False]
    >>> check_name("../../x", "tier")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    hepwb.exceptions.ConfigError: tier name '../../x' is not a plain name: use letters, digits, ...
"""

from __future__ import annotations

import re
from pathlib import Path

from hepwb import limits
from hepwb.exceptions import ConfigError

__all__ = ["MAX_NAME", "check_name", "is_plain_name", "under"]

MAX_NAME = limits.MAX_NAME
"""The longest name (characters; :data:`hepwb.limits.MAX_NAME`)."""

_PLAIN = re.compile(rf"[A-Za-z0-9][A-Za-z0-9._+-]{{0,{MAX_NAME - 1}}}")


def is_plain_name(name: object) -> bool:
    """Whether ``name`` is a plain name (see the module docstring)."""
    return isinstance(name, str) and bool(_PLAIN.fullmatch(name)) and ".." not in name


def check_name(name: object, what: str, example: str = "default") -> str:
    """``name`` if it is a plain name, else a :class:`ConfigError` naming ``what`` and the rule."""
    if not is_plain_name(name):
        shown = repr(name) if not isinstance(name, str) or len(name) <= 60 else repr(name[:59] + "…")
        msg = (
            f"{what} name {shown} is not a plain name: use letters, digits, '.', '_', '+' or '-', starting "
            f"with a letter or digit, at most {MAX_NAME} characters (e.g. {example!r})"
        )
        raise ConfigError(msg)
    return str(name)


def under(folder: str | Path, name: str, what: str, suffix: str = "") -> Path:
    """``folder/<name><suffix>`` for a plain ``name``, checked to resolve inside ``folder``."""
    check_name(name, what)
    base = Path(folder).resolve()
    path = (base / f"{name}{suffix}").resolve()
    if not path.is_relative_to(base):  # a symlinked folder, say
        msg = f"{what} name {name!r} resolves to {path}, outside {base}; choose another name"
        raise ConfigError(msg)
    return path
