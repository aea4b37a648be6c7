r"""One bounded reader for every file a user or an earlier run gives hepwb (parsed by :mod:`.parsers`).

Every read goes through :func:`read_bytes`: regular files only (a FIFO, device or socket is refused
before it is opened, a symlink is followed and its target checked), the size capped while reading (a
file that grows past the cap is cut off, not read to the end), and every failure a :class:`ReadError`
(a :class:`~hepwb.exceptions.ConfigError`, so also a ``ValueError``) naming the file, the line where
there is one, and the fix. JSON, JSONL and CSV are parsed by :mod:`hepwb.files.parsers`; YAML has its own
bounded loader (:mod:`hepwb.files.yamlio`); both read files through :func:`read_text`.

Example:
    >>> import tempfile, pathlib, os
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "a.txt").write_text("one line")
    >>> read_text(folder / "a.txt", "note")
    'one line'
    >>> os.mkfifo(folder / "pipe")
    >>> read_bytes(folder / "pipe", "sweep file")
    Traceback (most recent call last):
    ...
    hepwb.files.readers.ReadError: sweep file .../pipe is a FIFO, not a regular file; give the path of a file
"""

from __future__ import annotations

import stat
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from hepwb import limits
from hepwb.exceptions import ConfigError

__all__ = [
    "FileTooLargeError",
    "ReadError",
    "check_file",
    "count_lines",
    "iter_lines",
    "read_bytes",
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
        hepwb.files.readers.ReadError: run file .../run.txt has more than 2 lines (...); keep the top 100 hits

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
