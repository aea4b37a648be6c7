"""Names with options, as a user writes them: ``bm25``, ``dense(read=max, top_m=2)`` or a mapping.

One parser for ``--retriever``, sweep files, notebook parameters and the options that name another
retriever (``rerank(base=hybrid(method=linear, weight=0.1), top_n=20)``): commas inside parentheses
belong to the inner call; values are YAML scalars read by the bounded loader. :class:`Spec` is the same
as a Python object (``Rerank(base=Hybrid(), top_n=20)``), and :func:`call_string` its one written form.
"""

from __future__ import annotations

import json
import re
from typing import Any, ClassVar

from hepwb.exceptions import ConfigError
from hepwb.files.yamlio import load_yaml
from hepwb.types import JSONObject

__all__ = ["Spec", "call_string", "named"]


class Spec:
    """A registered component (a retriever, a chunker) named with its options, as a Python object.

    A spec is what a name string says, as an object: ``str(spec)`` is the call string that
    ``--retriever``, sweep files and notebook parameters take, and everything that takes a name takes a
    spec too (:func:`named` reads both). Options that are specs themselves (``base=Hybrid()``) become
    their call strings. Subclasses set :attr:`name` and check their options in :meth:`check`.

    Example:
        >>> class Demo(Spec):
        ...     name = "demo"
        >>> s = Demo(top_n=20, base=Demo(weight=0.5))
        >>> str(s), s
        ('demo(base=demo(weight=0.5), top_n=20)', Demo(base='demo(weight=0.5)', top_n=20))
        >>> named(s)
        ('demo', {'base': 'demo(weight=0.5)', 'top_n': 20})
    """

    name: ClassVar[str] = ""
    """The registered name."""

    def __init__(self, **options: Any) -> None:
        self.options: JSONObject = {
            k: str(v) if isinstance(v, Spec) else v for k, v in sorted(options.items())
        }
        self.check()

    def check(self) -> None:
        """Raise :class:`~hepwb.exceptions.ConfigError` for an unknown or bad option (subclasses)."""

    def __str__(self) -> str:
        return call_string(self.name, self.options)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in sorted(self.options.items()))
        return f"{type(self).__name__}({args})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Spec) and str(other) == str(self)

    def __hash__(self) -> int:
        return hash(str(self))


_PLAIN = re.compile(r"[\w.+:/-]+|[\w.+-]+\(.*\)", re.DOTALL)  # written bare: words, numbers, inner calls


def call_string(name: str, options: JSONObject) -> str:
    """``NAME`` or ``NAME(KEY=VALUE, ...)`` with sorted keys: the one written form of a name with options.

    Values that a YAML scalar would not read back as themselves are written as JSON strings.

    Example:
        >>> call_string("bm25", {"fields": "context", "prf": True})
        'bm25(fields=context, prf=True)'
        >>> call_string("rerank", {"base": "hybrid(weight=0.1)", "model": "a, b"})
        'rerank(base=hybrid(weight=0.1), model="a, b")'
        >>> named(call_string("rerank", {"model": "a, b"}))
        ('rerank', {'model': 'a, b'})
    """
    if not options:
        return name
    parts = []
    for key, value in sorted(options.items()):
        text = str(value)
        if isinstance(value, str) and not _PLAIN.fullmatch(value):
            text = json.dumps(value)
        parts.append(f"{key}={text}")
    return f"{name}({', '.join(parts)})"


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
    if isinstance(value, Spec):
        return value.name, dict(value.options)
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
    """``text`` split at the commas outside parentheses and double-quoted strings."""
    parts, depth, start, quoted, escaped = [], 0, 0, False, False
    for i, ch in enumerate(text):
        if quoted:
            escaped, quoted = (not escaped and ch == "\\"), quoted and (escaped or ch != '"')
            continue
        quoted = ch == '"'
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    return [*parts, text[start:]]
