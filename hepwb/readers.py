r"""One bounded reader for every file a user or an earlier run gives hepwb: JSON, JSONL, CSV and text.

Every read goes through :func:`read_bytes`: regular files only (a FIFO, device or socket is refused
before it is opened, a symlink is followed and its target checked), the size capped while reading (a
file that grows past the cap is cut off, not read to the end), and every failure a :class:`ReadError`
(a :class:`~hepwb.exceptions.ConfigError`, so also a ``ValueError``) naming the file, the line where
there is one, and the fix. JSON is parsed with its nesting depth and integer digits bounded; JSONL line
by line; CSV with a bound on a field's length. YAML has its own bounded loader (:mod:`hepwb.yamlio`),
which reads files through :func:`read_text` too.

Example:
    >>> import tempfile, pathlib, os
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "a.json").write_text('{"k": [1, 2]}')
    >>> read_json_file(folder / "a.json", "settings file")
    {'k': [1, 2]}
    >>> _ = (folder / "deep.json").write_text("[" * 500 + "]" * 500)
    >>> read_json_file(folder / "deep.json", "settings file", fix="rewrite it")
    Traceback (most recent call last):
    ...
    hepwb.readers.ReadError: settings file .../deep.json: nested deeper than 100 levels; rewrite it
    >>> os.mkfifo(folder / "pipe")
    >>> read_bytes(folder / "pipe", "sweep file")
    Traceback (most recent call last):
    ...
    hepwb.readers.ReadError: sweep file .../pipe is a FIFO, not a regular file; give the path of a file
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import math
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from hepwb import limits
from hepwb.exceptions import ConfigError

__all__ = [
    "FileTooLargeError",
    "ReadError",
    "check_file",
    "count_lines",
    "iter_jsonl",
    "iter_lines",
    "json_hooks",
    "parse_json",
    "read_bytes",
    "read_csv",
    "read_json_file",
    "read_text",
]

_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class ReadError(ConfigError):
    """A file hepwb refuses to read: the message names the file (and line), what is wrong and the fix."""


class FileTooLargeError(ReadError):
    """A file larger than the cap of what it is (a :class:`ReadError`; callers may skip such files)."""


def check_file(
    path: str | Path,
    what: str,
    *,
    max_bytes: int = limits.MAX_JSON_BYTES,
    fix: str = "give the path of a file",
) -> int:
    """The size of the regular file ``path`` (a ``what``), checked without opening it.

    Raises:
        ReadError: Missing, a folder, a FIFO/device/socket, unreadable, or larger than ``max_bytes``.
    """
    p = Path(path)
    try:
        st = p.stat()  # follows a symlink: the target is what would be read
    except FileNotFoundError:
        msg = f"{what} {p} does not exist; {fix}"
        raise ReadError(msg) from None
    except OSError as exc:
        msg = f"cannot read {what} {p}: {exc.strerror or exc}; {fix}"
        raise ReadError(msg) from None
    if stat.S_ISDIR(st.st_mode):
        msg = f"{what} {p} is a folder; give a file ({fix})"
        raise ReadError(msg)
    if not stat.S_ISREG(st.st_mode):
        kind = next((name for test, name in _KINDS if test(st.st_mode)), "a special file")
        msg = f"{what} {p} is {kind}, not a regular file; {fix}"
        raise ReadError(msg)
    if st.st_size > max_bytes:
        raise _too_large(p, what, st.st_size, max_bytes)
    return int(st.st_size)


def _too_large(p: Path, what: str, size: int, max_bytes: int) -> ReadError:
    return FileTooLargeError(
        f"{what} {p}: {size:,} bytes ({size / 1e6:.1f} MB), more than the {max_bytes:,} a {what} "
        "may hold; is it the right file? (split it if it is)"
    )


def read_bytes(
    path: str | Path,
    what: str,
    *,
    max_bytes: int = limits.MAX_JSON_BYTES,
    fix: str = "give the path of a file",
) -> bytes:
    """The bytes of the regular file ``path`` (a ``what``: "sweep file" …), at most ``max_bytes`` of them.

    Raises:
        ReadError: Missing, a folder, a FIFO/device/socket, unreadable, or larger than ``max_bytes``.
    """
    p = Path(path)
    check_file(p, what, max_bytes=max_bytes, fix=fix)
    try:
        with p.open("rb") as fh:
            data = _read_capped(fh, max_bytes + 1)
    except OSError as exc:
        msg = f"cannot read {what} {p}: {exc.strerror or exc}; {fix}"
        raise ReadError(msg) from None
    if len(data) > max_bytes:  # it grew while being read
        raise _too_large(p, what, len(data), max_bytes)
    return data


def _read_capped(fh: BinaryIO, limit: int, block: int = 1 << 20) -> bytes:
    """At most ``limit`` bytes of ``fh``, a block at a time (``read(limit)`` would allocate ``limit``)."""
    parts: list[bytes] = []
    got = 0
    while got < limit:
        part = fh.read(min(block, limit - got))
        if not part:
            break
        parts.append(part)
        got += len(part)
    return b"".join(parts)


def read_text(
    path: str | Path,
    what: str,
    *,
    max_bytes: int = limits.MAX_JSON_BYTES,
    fix: str = "give the path of a file",
) -> str:
    """The UTF-8 text of ``path`` through :func:`read_bytes`; a byte that is not UTF-8 is named with its line.

    Raises:
        ReadError: As :func:`read_bytes`, or the text is not UTF-8.
    """
    raw = read_bytes(path, what, max_bytes=max_bytes, fix=fix)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        if raw[:2] in (b"\xff\xfe", b"\xfe\xff"):
            msg = f"{what} {path} is UTF-16 text; save it as UTF-8 (e.g. iconv -f utf-16 -t utf-8)"
            raise ReadError(msg) from None
        line = raw[: exc.start].count(b"\n") + 1
        msg = (
            f"{what} {path} line {line}: byte {raw[exc.start]:#04x} is not UTF-8; save the file as UTF-8 "
            "(e.g. iconv -f latin1 -t utf-8)"
        )
        raise ReadError(msg) from None


def count_lines(
    path: str | Path,
    what: str,
    *,
    max_lines: int,
    max_bytes: int = limits.MAX_RUN_FILE_BYTES,
    fix: str = "give the path of a file",
) -> int:
    """The number of lines of ``path``, counted a block at a time in constant memory (at most ``max_lines``).

    Call it before parsing a file that could be huge (a run file of 10^7 lines): it is refused in one line
    before any of it is kept. A last line without a newline counts.

    Example:
        >>> import tempfile, pathlib
        >>> f = pathlib.Path(tempfile.mkdtemp()) / "run.txt"
        >>> _ = f.write_text("a\\nb\\nc")
        >>> count_lines(f, "run file", max_lines=3)
        3
        >>> count_lines(f, "run file", max_lines=2, fix="keep the top 100 hits")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        hepwb.readers.ReadError: run file .../run.txt has more than 2 lines (...); keep the top 100 hits

    Raises:
        ReadError: As :func:`check_file`, or more than ``max_lines`` lines.
    """
    p = Path(path)
    check_file(p, what, max_bytes=max_bytes, fix=fix)
    n = got = 0
    last = b"\n"
    try:
        with p.open("rb") as fh:
            while block := fh.read(1 << 20):
                got += len(block)
                if got > max_bytes:  # it grew while being read
                    raise _too_large(p, what, got, max_bytes)
                n += block.count(b"\n")
                last = block[-1:]
                if n > max_lines:
                    break
    except OSError as exc:
        msg = f"cannot read {what} {p}: {exc.strerror or exc}; {fix}"
        raise ReadError(msg) from None
    n += last != b"\n"
    if n > max_lines:
        raise _too_many(p, what, max_lines, fix)
    return n


def _too_many(p: Path, what: str, max_lines: int, fix: str) -> ReadError:
    return ReadError(
        f"{what} {p} has more than {max_lines:,} lines (hepwb reads at most {max_lines:,}); {fix}"
    )


def iter_lines(
    path: str | Path,
    what: str,
    *,
    max_lines: int,
    max_line_chars: int,
    max_bytes: int = limits.MAX_RUN_FILE_BYTES,
    fix: str = "give the path of a file",
) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of every line of the UTF-8 file ``path``, read one line at a time.

    The newline is removed (and a byte-order mark before the first line). Memory holds one line: a line
    longer than ``max_line_chars``, more than ``max_lines`` lines or more than ``max_bytes`` bytes stop the
    reading with a :class:`ReadError` naming the file and line.

    Raises:
        ReadError: As :func:`check_file`; a line not UTF-8, too long, or too many lines or bytes.
    """
    p = Path(path)
    check_file(p, what, max_bytes=max_bytes, fix=fix)
    limit = 4 * max_line_chars + 2  # bytes: a UTF-8 character takes at most 4
    got = 0
    try:
        fh = p.open("rb")
    except OSError as exc:
        msg = f"cannot read {what} {p}: {exc.strerror or exc}; {fix}"
        raise ReadError(msg) from None
    with fh:
        lineno = 0
        while raw := fh.readline(limit):
            lineno += 1
            got += len(raw)
            if got > max_bytes:
                raise _too_large(p, what, got, max_bytes)
            if lineno > max_lines:
                raise _too_many(p, what, max_lines, fix)
            cut = len(raw) == limit and not raw.endswith(b"\n")
            text = "" if cut else _line_text(raw, p, what, lineno)
            if cut or len(text) > max_line_chars:
                msg = f"{what} {p} line {lineno}: longer than {max_line_chars:,} characters; {fix}"
                raise ReadError(msg)
            yield lineno, text


def _line_text(raw: bytes, p: Path, what: str, lineno: int) -> str:
    """One line of a file as text, without its newline (a UTF-8 byte-order mark on line 1 dropped)."""
    if lineno == 1 and raw[:2] in (b"\xff\xfe", b"\xfe\xff"):
        msg = f"{what} {p} is UTF-16 text; save it as UTF-8 (e.g. iconv -f utf-16 -t utf-8)"
        raise ReadError(msg)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        msg = (
            f"{what} {p} line {lineno}: byte {raw[exc.start]:#04x} is not UTF-8; save the file as UTF-8 "
            "(e.g. iconv -f latin1 -t utf-8)"
        )
        raise ReadError(msg) from None
    if lineno == 1:
        text = text.removeprefix("\ufeff")
    return text.removesuffix("\n").removesuffix("\r")


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
    return parse_json(read_text(path, what, max_bytes=max_bytes, fix=fix), f"{what} {path}", fix=fix)


def iter_jsonl(
    path: str | Path,
    what: str,
    *,
    fix: str = "each line must be one JSON object",
    max_bytes: int = limits.MAX_JSON_BYTES,
) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` of every non-blank line of the JSONL file ``path``, each bounded as JSON.

    Raises:
        ReadError: Naming the file and line.
    """
    text = read_text(path, what, max_bytes=max_bytes, fix=fix)
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
    text = read_text(path, what, max_bytes=max_bytes, fix=fix)
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
