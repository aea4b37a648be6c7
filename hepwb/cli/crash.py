r"""What the command line keeps of a crash, and the arguments it refuses before any work.

A bug's traceback is saved in a file users are asked to attach to a report, so it must always be written
(an argument that is no UTF-8 text included) and must never hold a secret: :func:`redacted` replaces the
value of every option naming a token, key, password or secret, and the password of a URL. The file is
readable by its owner only.

Python keeps a command-line byte that is no UTF-8 as a lone surrogate (``'\udcff'``); no database, file
or terminal can take it, so :func:`not_utf8` names such an argument and the CLI refuses the line.

Example:
    >>> redacted(["hepwb", "ner-serve", "--token", "s3cret", "--url=https://me:pw@host/x", "--key=abc"])
    ['hepwb', 'ner-serve', '--token', '***', '--url=https://***@host/x', '--key=***']
    >>> print(not_utf8(["tiers", "mark", "ev\udcff"]))
    ev\xff
    >>> not_utf8(["tiers", "mark", "evé"]) is None
    True
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence
from pathlib import Path

from hepwb import __version__
from hepwb.paths import Layout
from hepwb.text.plaintext import plain

__all__ = ["not_utf8", "redacted", "save_traceback"]

_SECRET_OPTION = re.compile(r"^--?[\w-]*(token|key|password|passwd|secret|credential)[\w-]*$", re.IGNORECASE)
"""An option whose value is (or may be) a secret: ``--token``, ``--api-key``, ``--password`` …"""

_USERINFO = re.compile(r"(?<=://)[^/@\s]+@")
"""The ``user:password@`` part of a URL."""


def redacted(argv: Sequence[str]) -> list[str]:
    """``argv`` with the values of secret options and the user information of URLs replaced by ``***``."""
    out: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next:
            out.append("***")
            hide_next = False
            continue
        name, eq, _ = arg.partition("=")
        if _SECRET_OPTION.match(name):
            if eq:
                out.append(f"{name}=***")
                continue
            hide_next = True
        out.append(_USERINFO.sub("***@", arg))
    return out


def not_utf8(args: Sequence[str]) -> str | None:
    r"""The first argument holding bytes that are no UTF-8 (shown with ``\xNN`` escapes), else ``None``."""
    for arg in args:
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            how = "surrogateescape" if _escaped_bytes(arg) else "backslashreplace"
            shown = plain(arg.encode("utf-8", how).decode("utf-8", "backslashreplace"))
            return shown if len(shown) <= 60 else shown[:59] + "…"
    return None


def _escaped_bytes(arg: str) -> bool:
    """Whether every lone surrogate of ``arg`` stands for one byte (Python's ``surrogateescape``)."""
    return all("\udc80" <= ch <= "\udcff" for ch in arg if "\ud800" <= ch <= "\udfff")


def save_traceback(exc: BaseException, command: str) -> Path | None:
    """Write ``exc``'s traceback to ``reports/tracebacks/<time>-<command>.txt`` (else the temporary folder).

    The command line is recorded with its secrets redacted (:func:`redacted`); bytes that are no UTF-8 are
    written as ``\\xNN``; the file is readable by its owner only. Never raises.

    Returns:
        The file, or ``None`` when neither folder could be written.
    """
    name = re.sub(r"[^A-Za-z0-9_-]+", "-", command.removeprefix("hepwb").strip()) or "hepwb"
    stamp = time.strftime("%Y%m%d-%H%M%S")
    try:
        shown = " ".join(redacted(sys.argv))
        text = (
            f"hepwb {__version__}, Python {sys.version.split()[0]}\n"
            f"command: {shown}\n\n{''.join(traceback.format_exception(exc))}"
        )
    except Exception as inner:  # a traceback that cannot be formatted: say so, keep the rest
        text = f"hepwb {__version__}\n(the traceback could not be formatted: {type(inner).__name__})\n"
    data = text.encode("utf-8", "backslashreplace")
    folders: list[Path] = []
    with contextlib.suppress(Exception):  # no project here: the temporary folder alone
        folders.append(Layout.default().reports / "tracebacks")
    with contextlib.suppress(Exception):
        folders.append(Path(tempfile.gettempdir()) / "hepwb-tracebacks")
    for folder in folders:
        with contextlib.suppress(Exception):
            folder.mkdir(parents=True, exist_ok=True)
            for path in (folder / f"{stamp}-{name}.txt", folder / f"{stamp}-{name}-{os.getpid()}.txt"):
                if _write_new(path, data):
                    return path
    return None


def _write_new(path: Path, data: bytes) -> bool:
    """Create ``path`` (owner-only) holding ``data``; ``False`` when it exists or cannot be written whole."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError:
        return False
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
    except OSError:
        with contextlib.suppress(OSError):
            path.unlink()
        return False
    return True
