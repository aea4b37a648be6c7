r"""Bounded parsers of the text :mod:`hepwb.files.readers` reads: JSON, JSONL and CSV.

JSON is parsed with its nesting depth and integer digits bounded (repeated keys refused); JSONL line by
line; CSV strictly, with a bound on a field's length. A UTF-8 byte-order mark opening a file (Excel's
"CSV UTF-8", Windows Notepad) is dropped. Every failure is a :class:`~hepwb.files.readers.ReadError`
naming the file, the line where there is one, and the fix.

Example:
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "a.json").write_text('{"k": [1, 2]}')
    >>> read_json_file(folder / "a.json", "settings file")
    {'k': [1, 2]}
    >>> _ = (folder / "deep.json").write_text("[" * 500 + "]" * 500)
    >>> read_json_file(folder / "deep.json", "settings file", fix="rewrite it")
    Traceback (most recent call last):
    ...
    hepwb.files.readers.ReadError: settings file .../deep.json: nested deeper than 100 levels; rewrite it
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hepwb import limits
from hepwb.files.readers import ReadError, read_text

__all__ = ["iter_jsonl", "json_hooks", "parse_json", "read_csv", "read_json_file"]


def json_hooks(source: str, fix: str, *, strict: bool = False) -> dict[str, Any]:
    """``json.loads`` hooks bounding integer digits and refusing repeated keys (errors name ``source``).

    For JSON text that is part of a larger file (a ``.ragmd`` block): :func:`parse_json` uses the same.
    ``strict``: also refuse what RFC 8259 does not allow, ``NaN``/``Infinity`` and a number beyond a float
    (``1e999`` would read as infinity).
    """
    hooks = {"parse_int": _bounded_int(source), "object_pairs_hook": _unique_keys(source, fix)}
    if strict:
        hooks |= {"parse_constant": _no_constant(source, fix), "parse_float": _finite_float(source, fix)}
    return hooks


def _no_constant(source: str, fix: str) -> Any:
    def parse(name: str) -> float:
        msg = f"{source}: {name} is not a JSON number (RFC 8259); {fix}"
        raise ReadError(msg)

    return parse


def _finite_float(source: str, fix: str) -> Any:
    def parse(text: str) -> float:
        value = float(text)
        if math.isinf(value):
            shown = text if len(text) <= 30 else text[:29] + "…"
            msg = f"{source}: the number {shown} is beyond the range of a float; {fix}"
            raise ReadError(msg)
        return value

    return parse


def _bounded_int(source: str) -> Any:
    def parse(digits: str) -> int:
        if len(digits.lstrip("-")) > limits.MAX_INT_DIGITS:
            n, cap = len(digits), limits.MAX_INT_DIGITS
            msg = f"{source}: an integer of {n:,} digits (at most {cap}); fix the value"
            raise ReadError(msg)
        return int(digits)

    return parse


def _unique_keys(source: str, fix: str) -> Any:
    """An ``object_pairs_hook`` building a dict, refusing a key that appears twice in one object."""

    def build(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out = dict(pairs)
        if len(out) == len(pairs):
            return out
        seen: set[str] = set()
        for k, _ in pairs:
            if k in seen:
                shown = k if len(k) <= 60 else k[:59] + "…"
                msg = f"{source}: key {shown!r} appears twice in one object (JSON keeps only the last); {fix}"
                raise ReadError(msg)
            seen.add(k)
        return out  # pragma: no cover  (a shorter dict has a repeated key)

    return build


def _depth_problem(value: Any, max_depth: int) -> bool:
    """Whether ``value`` nests containers deeper than ``max_depth`` (iteratively: no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > max_depth:
                return True
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def parse_json(
    text: str,
    source: str,
    *,
    fix: str = "fix the file",
    max_depth: int = limits.MAX_JSON_DEPTH,
    strict: bool = False,
) -> Any:
    """Parse JSON ``text`` from ``source`` with its nesting depth and integer digits bounded.

    Raises:
        ReadError: Not JSON (line named), nested deeper than ``max_depth``, an integer of more than
            :data:`~hepwb.limits.MAX_INT_DIGITS` digits, a key twice in one object (named; JSON would keep
            the last silently). NaN and Infinity are read, as Python writes them, unless ``strict``
            (:func:`json_hooks`).
    """
    try:
        value = json.loads(text, **json_hooks(source, fix, strict=strict))
    except ReadError:
        raise
    except json.JSONDecodeError as exc:
        where = f"{source}, line {exc.lineno}" if "\n" in text else source
        msg = f"{where}: invalid JSON ({exc.msg} column {exc.colno}); {fix}"
        raise ReadError(msg) from None
    except RecursionError:
        msg = f"{source}: nested deeper than {max_depth} levels; {fix}"
        raise ReadError(msg) from None
    except ValueError as exc:  # an integer past Python's own digit limit
        msg = f"{source}: {exc}; {fix}"
        raise ReadError(msg) from None
    if _depth_problem(value, max_depth):
        msg = f"{source}: nested deeper than {max_depth} levels; {fix}"
        raise ReadError(msg)
    return value


def _file_text(path: str | Path, what: str, *, max_bytes: int, fix: str) -> str:
    r"""The UTF-8 text of ``path`` (:func:`~.readers.read_text`) without an opening byte-order mark.

    Example:
        >>> import tempfile, pathlib
        >>> f = pathlib.Path(tempfile.mkdtemp()) / "q.csv"
        >>> _ = f.write_bytes(b"\xef\xbb\xbfqid,question\n")
        >>> _file_text(f, "question file", max_bytes=100, fix="")
        'qid,question\n'
    """
    return read_text(path, what, max_bytes=max_bytes, fix=fix).removeprefix("\ufeff")


def read_json_file(
    path: str | Path,
    what: str,
    *,
    fix: str = "fix or replace the file",
    max_bytes: int = limits.MAX_JSON_BYTES,
) -> Any:
    """The JSON value of the file ``path`` (a ``what``), read and parsed with every bound of this module.

    Raises:
        ReadError: Naming the file, the line and ``fix``.
    """
    return parse_json(_file_text(path, what, max_bytes=max_bytes, fix=fix), f"{what} {path}", fix=fix)


def iter_jsonl(
    path: str | Path,
    what: str,
    *,
    fix: str = "each line must be one JSON object",
    max_bytes: int = limits.MAX_JSON_BYTES,
) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` of every non-blank line of the JSONL file ``path``, each bounded as JSON.

    Lines end at ``\\n`` only (a ``\\r`` before it is JSON whitespace): U+2028, U+2029 and U+0085 are
    characters of a line, as a JSON string may hold them unescaped.

    Raises:
        ReadError: Naming the file and line.
    """
    text = _file_text(path, what, max_bytes=max_bytes, fix=fix)
    for lineno, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            yield lineno, parse_json(line, f"{path} line {lineno}", fix=fix)


def _open_quote_line(text: str, first: int) -> int:
    """The line of CSV ``text`` where the quote still open at its end opened, reading from line ``first``.

    Lines are counted as :mod:`csv` counts them (``\\n``, ``\\r\\n`` or ``\\r`` ends one); a quote opens a
    field only at the field's start, and ``""`` inside a quoted field is a quote, not its end.

    Example:
        >>> _open_quote_line('a,b\\n1,"say ""hi""\\n2,y\\n', 2)
        2
    """
    opened, state = first, "start"  # state: "start" of a field, "field", "quoted", "closed" (after a quote)
    lines = itertools.islice(io.StringIO(text, newline=""), first - 1, None)
    for lineno, line in enumerate(lines, start=first):
        for ch in line:
            if state == "quoted":
                state = "closed" if ch == '"' else state
            elif state == "closed" and ch == '"':
                state = "quoted"
            elif ch in ",\r\n":
                state = "start"
            elif state == "start" and ch == '"':
                state, opened = "quoted", lineno
            else:
                state = "field"
    return opened


def read_csv(
    path: str | Path,
    what: str,
    *,
    fix: str = "save it as comma-separated UTF-8 text",
    max_bytes: int = limits.MAX_JSON_BYTES,
    max_field: int = limits.MAX_CSV_FIELD_CHARS,
) -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    """The header and ``(line number, row)`` pairs of the CSV file ``path`` (fields of ``max_field`` at most).

    Read strictly (``csv`` with ``strict=True``): a quote left open does not swallow the rows after it.

    Raises:
        ReadError: Naming the file and line (a field too long, a quote opened and never closed, text after
            a closing quote, a NUL byte, a column named twice in the header …).
    """
    text = _file_text(path, what, max_bytes=max_bytes, fix=fix)
    old = csv.field_size_limit()
    csv.field_size_limit(max_field)
    reader = csv.DictReader(io.StringIO(text, newline=""), strict=True)
    done = 0  # the last line of the last record read whole
    rows: list[tuple[int, dict[str, str]]] = []
    try:
        header = list(reader.fieldnames or [])
        done = reader.line_num
        for row in reader:
            rows.append((reader.line_num, dict(row)))
            done = reader.line_num
    except csv.Error as exc:
        if "unexpected end of data" in str(exc):
            opened = _open_quote_line(text, done + 1)
            msg = (
                f"{what} {path}: a quote opened on line {opened} is not closed (the rows after it would be "
                'read into that field); close it, and write a quote inside a field as ""'
            )
        else:
            msg = f"{what} {path} line {reader.line_num}: not valid CSV ({exc}); {fix}"
        raise ReadError(msg) from None
    finally:
        csv.field_size_limit(old)
    twice = sorted({c for c in header if header.count(c) > 1})
    if twice:
        msg = (
            f"{what} {path}: column {twice[0]!r} appears twice in the header (one would be lost); "
            "give each column once"
        )
        raise ReadError(msg)
    return header, rows
