"""One bounded YAML loader for every YAML text hepwb reads.

Sweep files, tier configs, entity dictionaries, ``.ragmd`` front matter and ``KEY=VALUE`` options all go
through :func:`load_yaml`: safe constructors only; a size cap (:data:`~hepwb.limits.MAX_YAML_BYTES`);
no aliases (``*name``: the "billion laughs" expansion cannot happen); a bound on nodes and nesting;
duplicate mapping keys an error. Every message names the source and line and quotes the *source
text* there, cut short — never a parsed (possibly huge) value.

Example:
    >>> load_yaml("grid: {k: [1, 2]}", source="s.yaml")
    {'grid': {'k': [1, 2]}}
    >>> load_yaml("[1e3, 1.5e-3, 1_000, yes, '7', 0.5]", source="s.yaml")  # numbers as JSON writes them
    [1000.0, 0.0015, 1000, True, '7', 0.5]
    >>> load_yaml("[1:30, 012, 0x10, 0o7, 0b1, 1:30.5, -.5, .inf]", source="s.yaml")  # decimal numbers only
    ['1:30', 12, '0x10', '0o7', '0b1', '1:30.5', -0.5, inf]
    >>> load_yaml("a: 1\\na: 2", source="s.yaml")
    Traceback (most recent call last):
    ...
    hepwb.files.yamlio.YamlError: s.yaml, line 2: duplicate key 'a' (first on line 1) in `a: 2`; keep one
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from hepwb import limits
from hepwb.exceptions import ConfigError
from hepwb.files.readers import ReadError, read_text

__all__ = ["YamlError", "load_yaml", "read_yaml_text"]

_EXCERPT = 60


class YamlError(ConfigError):
    """A YAML text that hepwb refuses to read; the message names the source, the line and the fix."""


def _excerpt(text: str, line: int) -> tuple[int, str]:
    """``line`` (or, where it is blank, the last non-blank line before it) and its text, cut short."""
    lines = text.split("\n", line + 1)[: line + 1]
    while lines and not lines[-1].strip():
        lines.pop()
    src = lines[-1].strip() if lines else ""
    return max(len(lines) - 1, 0), src if len(src) <= _EXCERPT else src[: _EXCERPT - 1] + "…"


_PLAIN_TAGS = {None, "!"}  # no tag written, or a quoted scalar's non-specific tag

_EXPONENT_FLOAT = re.compile(r"^[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)[eE][-+]?[0-9]+$")
"""A JSON number with an exponent (``1e3``, ``1.5e3``): YAML 1.1 reads it as a string (no dot or sign)."""

_DECIMAL_INT = re.compile(r"^[-+]?[0-9][0-9_]*$")
"""A whole number as people write it (``12``, ``-3``, ``20_000``): decimal, whatever its leading zeros."""

_DECIMAL_FLOAT = re.compile(
    r"^(?:[-+]?[0-9][0-9_]*\.[0-9_]*(?:[eE][-+]?[0-9]+)?|[-+]?\.[0-9][0-9_]*(?:[eE][-+]?[0-9]+)?"
    r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
)
"""YAML 1.1's floats without its base-60 form (``1:30.5``)."""

_OWN_TAGS = {"tag:yaml.org,2002:timestamp", "tag:yaml.org,2002:int", "tag:yaml.org,2002:float"}
"""Implicit types this loader resolves its own way (timestamps not at all)."""


class _Loader(yaml.SafeLoader):
    """SafeLoader reading JSON-like values only: no aliases, tags, timestamps or duplicate keys, bounded."""

    source = "YAML"
    text = ""
    # a date-like value (``created: 2001-13-45``) stays a string: no implicit timestamps; numbers are
    # decimal only (below): YAML 1.1's base-60 (``1:30`` = 90), octal (``012`` = 10), hex and binary are not
    yaml_implicit_resolvers = {  # noqa: RUF012 (PyYAML's class attribute, read per class)
        first: [(tag, regexp) for tag, regexp in resolvers if tag not in _OWN_TAGS]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.nodes = 0
        self.depth = 0

    def _refuse(self, mark: Any, what: str, fix: str) -> None:
        line, src = _excerpt(self.text, mark.line if mark is not None else 0)
        msg = f"{self.source}, line {line + 1}: {what} in `{src}`; {fix}"
        raise YamlError(msg)

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()  # type: ignore[no-untyped-call]
        if isinstance(event, yaml.AliasEvent):
            what = f"a YAML alias (*{event.anchor})"
            self._refuse(event.start_mark, what, "hepwb does not expand aliases: write the value out")
        tag = getattr(event, "tag", None)
        if tag not in _PLAIN_TAGS:
            shown = str(tag).replace("tag:yaml.org,2002:", "!!")
            self._refuse(
                event.start_mark, f"the YAML tag {shown}", "hepwb reads plain values only: remove the tag"
            )
        self.nodes += 1
        if self.nodes > limits.MAX_YAML_NODES:
            self._refuse(event.start_mark, f"more than {limits.MAX_YAML_NODES:,} values", "split it")
        self.depth += 1
        if self.depth > limits.MAX_YAML_DEPTH:
            self._refuse(
                event.start_mark, f"nesting deeper than {limits.MAX_YAML_DEPTH} levels", "flatten it"
            )
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def construct_yaml_int(self, node: Any) -> Any:
        digits = sum(ch.isdigit() for ch in str(node.value))
        if digits > limits.MAX_INT_DIGITS:
            self._refuse(
                node.start_mark, f"an integer of {digits:,} digits", f"at most {limits.MAX_INT_DIGITS}"
            )
        return int(str(node.value).replace("_", ""), 10)  # decimal: ``012`` is twelve, never octal ten

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, int] = {}
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)
                try:
                    first = seen.get(key)
                except TypeError:  # an unhashable key: the base class says so
                    break
                if first is not None:
                    self._refuse(
                        key_node.start_mark,
                        f"duplicate key {key!r:.40} (first on line {first + 1})",
                        "keep one",
                    )
                seen[key] = key_node.start_mark.line
        return super().construct_mapping(node, deep=deep)


_Loader.add_constructor("tag:yaml.org,2002:int", _Loader.construct_yaml_int)
_Loader.add_implicit_resolver("tag:yaml.org,2002:int", _DECIMAL_INT, list("-+0123456789"))
_Loader.add_implicit_resolver("tag:yaml.org,2002:float", _DECIMAL_FLOAT, list("-+.0123456789"))
_Loader.add_implicit_resolver("tag:yaml.org,2002:float", _EXPONENT_FLOAT, list("-+.0123456789"))


def load_yaml(text: str, *, source: str) -> Any:
    """Parse ``text`` (from ``source``, named in every message) with the bounds of the module docstring.

    Args:
        text: The YAML text.
        source: What it is, e.g. ``"sweep file sweeps/x.yaml"``.

    Raises:
        YamlError: Too large, an alias, too many values, too deep, a duplicate key, or not YAML.
    """
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > limits.MAX_YAML_BYTES:
        msg = (
            f"{source}: {size:,} bytes of YAML, more than the {limits.MAX_YAML_BYTES:,} hepwb reads; "
            "is it the right file?"
        )
        raise YamlError(msg)
    loader = None
    try:
        loader = _Loader(text)  # the reader checks the characters here already
        loader.source, loader.text = source, text
        return loader.get_single_data()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, src = _excerpt(text, mark.line if mark is not None else 0)
        problem = " ".join(str(exc.problem or exc.context or "not valid YAML").split())
        at = f"line {line + 1}: not valid YAML ({problem}) in `{src}`"
        msg = f"{source}, {at}; fix that line"
        raise YamlError(msg) from None
    except yaml.YAMLError as exc:  # e.g. a control character the YAML reader refuses
        msg = f"{source}: not valid YAML ({' '.join(str(exc).split())[:120]}); fix or re-save the file"
        raise YamlError(msg) from None
    except RecursionError:
        msg = f"{source}: nested too deeply to read"
        raise YamlError(msg) from None
    finally:
        if loader is not None:
            loader.dispose()


def read_yaml_text(path: str | Path, what: str, hint: str = "check the path") -> str:
    """The text of YAML file ``path`` (a ``what``: "tier config" …) through the bounded reader.

    A FIFO, device or socket is refused before it is opened, and at most
    :data:`~hepwb.limits.MAX_YAML_BYTES` are read (:func:`hepwb.files.readers.read_text`).

    Raises:
        YamlError: Missing, a folder or special file, not UTF-8, or too large.
    """
    try:
        return read_text(path, what, max_bytes=limits.MAX_YAML_BYTES, fix=hint)
    except ReadError as exc:
        raise YamlError(str(exc)) from None
