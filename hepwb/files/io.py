"""Small, safe file helpers: atomic writes and JSON.

Example:
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "a" / "x.json"
    >>> write_json(p, {"b": 1}); read_json(p)
    {'b': 1}
    >>> oct(p.stat().st_mode & 0o777) == oct(0o666 & ~_umask())
    True
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson

from hepwb.files.parsers import read_json_file
from hepwb.files.readers import ReadError

__all__ = [
    "UNREADABLE",
    "atomic_write_bytes",
    "atomic_write_text",
    "discard_folder",
    "json_text",
    "read_json",
    "read_json_object",
    "write_json",
    "write_private_text",
]

UNREADABLE = (OSError, ValueError, KeyError, TypeError)
"""What reading a damaged cached file raises (JSON, Arrow and Unicode decoding errors are ``ValueError``)."""


def _umask() -> int:
    """The process umask (from /proc on Linux: setting it to read it would race with other threads)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except OSError:
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` via a temporary file and :func:`os.replace` (no partial file).

    The file gets the mode an ordinary ``open()`` would give (``0o666`` less the umask), so a group
    sharing a project folder can read the results; ``mkstemp``'s private ``0o600`` is not kept.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        Path(tmp).chmod(0o666 & ~_umask())
        Path(tmp).replace(path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        if exc.filename is None:  # a failed write() names no file: name the one being written
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        raise
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write UTF-8 ``text`` atomically."""
    atomic_write_bytes(path, text.encode("utf-8"))


def write_private_text(path: str | Path, text: str) -> None:
    """Write UTF-8 ``text`` plainly (no temporary file, no fsync), creating its folder.

    Only for a file inside a private folder that is published whole by a rename once complete (a chunk
    set's tree): the folder, not each file, is what makes the result atomic, and one ``os.sync`` before
    the rename replaces thousands of per-file fsyncs.
    """
    write_private_bytes(path, text.encode("utf-8"))


def write_private_bytes(path: str | Path, data: bytes) -> None:
    """:func:`write_private_text` for bytes (the same rule: only inside a private folder published whole)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def write_private_files(folder: str | Path, files: Iterable[tuple[str, bytes]]) -> None:
    """:func:`write_private_bytes` for many ``(name, data)`` files of one folder, made once.

    Each file is one ``open``/``write``/``close``: half the time of ``Path.write_bytes`` for a chunk set's
    thousands of files.

    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp()) / "chunks"
    >>> write_private_files(folder, [("a.md", b"A"), ("b.md", b"B")])
    >>> sorted(p.name for p in folder.iterdir()), (folder / "b.md").read_bytes()
    (['a.md', 'b.md'], b'B')
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    base = str(folder)
    for name, data in files:
        fd = os.open(f"{base}{os.sep}{name}", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
        try:
            view = memoryview(data)
            while view:  # os.write may write less than asked
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)


def json_text(obj: Any) -> str:
    """``obj`` as the JSON text hepwb writes: indented, sorted keys, UTF-8 characters kept, a final newline.

    >>> json_text({"b": 1, "a": "é"})
    '{\\n  "a": "é",\\n  "b": 1\\n}\\n'
    """
    return json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def json_bytes(obj: Any) -> bytes:
    """:func:`json_text` as UTF-8 bytes, written by orjson (a C encoder; ``json`` with ``indent`` is not).

    The same bytes as :func:`json_text` for JSON made of strings, integers, booleans, ``None``, lists and
    dicts with string keys (a HEPilot chunk's metadata); floats below 1e-4 are spelled without an exponent.

    >>> obj = {"b": [1, True, None], "a": "é", "c": {}}
    >>> json_bytes(obj) == json_text(obj).encode("utf-8")
    True
    """
    return orjson.dumps(obj, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"


def write_json(path: str | Path, obj: Any) -> None:
    """Write ``obj`` as indented UTF-8 JSON with sorted keys, atomically."""
    atomic_write_text(path, json_text(obj))


def read_json(path: str | Path, what: str = "file", fix: str = "fix or delete it") -> Any:
    """Read a JSON file through the bounded reader (:func:`hepwb.files.parsers.read_json_file`).

    Raises:
        ReadError: A special file, too large, not UTF-8, not JSON, too deep (a ``ValueError`` too, so
            callers that rebuild a damaged cache on ``UNREADABLE`` still do).
    """
    return read_json_file(path, what, fix=fix)


def read_json_object(path: str | Path, what: str = "file", fix: str = "fix or delete it") -> dict[str, Any]:
    """:func:`read_json` of a file that must hold a JSON object (a manifest, a marker, a cache record).

    Example:
        >>> import tempfile
        >>> p = Path(tempfile.mkdtemp()) / "chunkset.json"
        >>> _ = p.write_text("[]")
        >>> read_json_object(p, "chunk set manifest", fix="it is built again")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        hepwb.files.readers.ReadError: chunk set manifest .../chunkset.json holds a list, not a JSON ...

    Raises:
        ReadError: As :func:`read_json`, or the value is not an object (a ``ValueError``: callers that
            rebuild a damaged cache on ``UNREADABLE`` rebuild this one too).
    """
    value = read_json(path, what, fix)
    if not isinstance(value, dict):
        kind = {list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
            type(value), "a number"
        )
        msg = f"{what} {path} holds {kind}, not a JSON object; {fix}"
        raise ReadError(msg)
    return value


def discard_folder(folder: Path, why: str = "stale") -> None:
    """Remove ``folder`` so it vanishes at once: renamed to a hidden sibling first, then deleted.

    A reader never sees a half-deleted folder under the real name, and a kill during the deletion leaves
    only the hidden ``.<name>.<why>-<pid>`` sibling behind.
    """
    import shutil

    gone = folder.parent / f".{folder.name}.{why}-{os.getpid()}"
    folder.replace(gone)
    shutil.rmtree(gone, ignore_errors=True)


def folder_bytes(folder: str | Path) -> int:
    """Bytes of every file under ``folder`` (0 when it does not exist).

    Example:
        >>> import tempfile
        >>> d = Path(tempfile.mkdtemp())
        >>> _ = (d / "a").write_bytes(b"12345")
        >>> folder_bytes(d), folder_bytes(d / "missing")
        (5, 0)
    """
    root = Path(folder)
    if not root.is_dir():
        return 0
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
