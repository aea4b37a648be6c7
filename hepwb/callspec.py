"""Names with options, as a user writes them: ``bm25``, ``dense(read=max, top_m=2)`` or a mapping.

One parser for ``--retriever``, sweep files, notebook parameters and the options that name another
retriever (``rerank(base=hybrid(method=linear, weight=0.1), top_n=20)``): commas inside parentheses
belong to the inner call; values are YAML scalars read by the bounded loader.
"""

from __future__ import annotations

import re
from typing import Any

from hepwb.exceptions import ConfigError
from hepwb.types import JSONObject
from hepwb.yamlio import load_yaml

__all__ = ["named"]


def named(value: Any) -> tuple[Any, JSONObject]:
    """A name with options: ``"bm25"``, ``{"name": "hybrid", "weight": 0.5}`` or ``"hybrid(weight=0.5)"``.

    The call form is what ``--retriever``, a sweep file and a notebook parameter may also say; its values
    are YAML scalars read by the bounded loader.

    Example:
        >>> named({"name": "hybrid_linear", "weight": 0.5})
        ('hybrid_linear', {'weight': 0.5})
        >>> named("dense(read=max, top_m=2)")
        ('dense', {'read': 'max', 'top_m': 2})
        >>> named("rerank(base=hybrid(method=linear, weight=0.1), top_n=20)")
        ('rerank', {'base': 'hybrid(method=linear, weight=0.1)', 'top_n': 20})
        >>> named("dense(read max)")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        hepwb.exceptions.ConfigError: 'dense(read max)': write NAME(KEY=VALUE, ...), e.g. dense(read=max, ...)
        >>> named("hybrid(weight=0.1, weight=0.9)")
        Traceback (most recent call last):
        ...
        hepwb.exceptions.ConfigError: 'hybrid(weight=0.1, weight=0.9)': option weight is given twice; keep one
    """
    if isinstance(value, dict):
        opts = dict(value)
        return opts.pop("name", None), opts
    if isinstance(value, str) and ("(" in value or ")" in value):
        return _call(value)
    return value, {}


_CALL = re.compile(r"\s*([A-Za-z_][\w.-]*)\s*\((.*)\)\s*", re.DOTALL)


def _call(text: str) -> tuple[str, JSONObject]:
    """``"dense(read=max)"`` → ``("dense", {"read": "max"})``, or one message with the syntax."""
    usage = f"{text[:80]!r}: write NAME(KEY=VALUE, ...), e.g. dense(read=max, top_m=2)"
    m = _CALL.fullmatch(text)
    if m is None:
        raise ConfigError(usage)
    opts: JSONObject = {}
    for item in (part.strip() for part in _top_level(m.group(2))):
        key, sep, value = item.partition("=")
        if not item:
            continue
        if not sep or not key.strip().isidentifier():
            raise ConfigError(usage)
        key = key.strip()
        if key in opts:
            msg = f"{text[:80]!r}: option {key} is given twice; keep one"
            raise ConfigError(msg)
        opts[key] = load_yaml(value.strip(), source=f"option {key} of {m.group(1)}")
    return m.group(1), opts


def _top_level(text: str) -> list[str]:
    """``text`` split at the commas outside parentheses."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    return [*parts, text[start:]]
