"""Atomic publication of artefacts made of several files (adapted models, cross-encoders).

A folder is never written in place. :func:`publish_folder` has it written beside its final place, in a
hidden sibling ``.<name>.tmp-<pid>``; lists every file with its size and SHA-256 in ``hepwb-manifest.json``
(written last, after every file is flushed to disk); checks the listing; and renames the folder into place.
An older folder of the same name is renamed aside first and deleted after, so a reader finds the old
complete folder, or (for the instant between two renames) none, or the new complete one - never a mix.

Loaders call :func:`check_published`: a folder whose manifest is missing, damaged or does not match its files
(a file gone, truncated or changed, or one added that it does not list: the manifest names the complete set)
is refused with one line naming the folder and the command that rebuilds it. A process killed after the
manifest was written but between the two renames leaves a complete hidden folder: :func:`recover` moves it
into place.

Example:
    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> def write(tmp):
    ...     _ = (tmp / "a.txt").write_text("one")
    ...     (tmp / "sub").mkdir()
    ...     _ = (tmp / "sub" / "b.txt").write_text("two")
    >>> final = publish_folder(root / "model", write, {"rebuild": "make model"})
    >>> sorted(read_manifest(final)["files"]), check_published(final) is None
    (['a.txt', 'sub/b.txt'], True)
    >>> _ = (final / "a.txt").write_text("on")  # truncated after publication
    >>> print(check_published(final))  # doctest: +ELLIPSIS
    folder .../model is incomplete or damaged (a.txt has 2 bytes, its manifest says 3): rebuild it with ...
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import shutil
import stat
from collections.abc import Callable
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

from hepwb import limits
from hepwb.exceptions import HepwbError
from hepwb.files.io import write_json
from hepwb.files.parsers import parse_json
from hepwb.files.readers import ReadError

__all__ = [
    "MANIFEST",
    "IncompleteArtefactError",
    "check_published",
    "clean_stale",
    "pid_alive",
    "publish_folder",
    "published_problem",
    "read_manifest",
    "recover",
]

MANIFEST = "hepwb-manifest.json"
"""The file that marks a published folder complete: every other file with its size and SHA-256."""
FORMAT = "hepwb-manifest/1"


class IncompleteArtefactError(HepwbError, ValueError):
    """An artefact hepwb wrote is incomplete or damaged; the message names it and the fix (a command)."""


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists (on this machine)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def _siblings(final: Path, kind: str) -> list[tuple[Path, int]]:
    """The hidden siblings ``.<name>.<kind>-<pid>`` of ``final`` with their pids."""
    out: list[tuple[Path, int]] = []
    prefix = f".{final.name}.{kind}-"
    if not final.parent.is_dir():
        return out
    for p in final.parent.iterdir():
        if p.name.startswith(prefix) and p.name[len(prefix) :].isdigit():
            out.append((p, int(p.name[len(prefix) :])))
    return out


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def _fsync_dir(folder: Path) -> None:
    with contextlib.suppress(OSError):  # not every file system lets a folder be opened or synced
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _hash_and_sync(path: Path) -> str:
    """SHA-256 of ``path``, flushed to disk on the way (its writer may not have)."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
        os.fsync(fh.fileno())
    return h.hexdigest()


def _listing(folder: Path) -> dict[str, dict[str, Any]]:
    """Every regular file under ``folder`` (relative POSIX path → bytes and SHA-256), folders synced."""
    files: dict[str, dict[str, Any]] = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames.sort()
        for name in sorted(filenames):
            path = Path(dirpath) / name
            rel = path.relative_to(folder).as_posix()
            if rel == MANIFEST:
                continue
            if not stat.S_ISREG(path.lstat().st_mode):
                msg = f"{path} is not a regular file: a published folder holds files and folders only"
                raise IncompleteArtefactError(msg)
            files[rel] = {"bytes": path.stat().st_size, "sha256": _hash_and_sync(path)}
        _fsync_dir(Path(dirpath))
    return files


def clean_stale(final: Path) -> None:
    """Remove the hidden siblings of ``final`` left by processes that are gone (killed mid-publication)."""
    for kind in ("tmp", "old"):
        for path, pid in _siblings(final, kind):
            if not pid_alive(pid) or (pid == os.getpid() and kind == "old"):
                _remove(path)


def publish_folder(
    final: str | Path, write: Callable[[Path], None], manifest: dict[str, Any] | None = None
) -> Path:
    """Have ``write`` fill a folder beside ``final``, list it in its manifest and rename it into place.

    Args:
        final: Where the folder is published; an older folder there is replaced (atomically for readers).
        write: Writes every file of the artefact into the folder it is given (an empty, hidden sibling).
        manifest: What the manifest records besides the files: ``rebuild`` (the command that makes the
            artefact again, named by :func:`check_published`), ``kind``, ``name``...

    Returns:
        ``final``.

    Raises:
        IncompleteArtefactError: ``write`` left something that is not a regular file or folder.
    """
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    clean_stale(final)
    tmp = final.parent / f".{final.name}.tmp-{os.getpid()}"
    _remove(tmp)
    tmp.mkdir()
    try:
        write(tmp)
        body = {
            "format": FORMAT,
            **(manifest or {}),
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
            "files": _listing(tmp),
        }
        write_json(tmp / MANIFEST, body)  # last: its presence says every file above is complete
        _fsync_dir(tmp)
        problem = check_published(tmp, str(body.get("rebuild", "")) or None, verify=False)
        if problem:  # pragma: no cover - a writer still writing in another thread
            raise IncompleteArtefactError(problem)
        _swap(tmp, final)
    except BaseException:
        _remove(tmp)
        raise
    return final


def _swap(tmp: Path, final: Path) -> None:
    """Rename ``tmp`` to ``final``: an older ``final`` is renamed aside first and deleted after."""
    old = final.parent / f".{final.name}.old-{os.getpid()}"
    for _ in range(10):  # another process may publish the same name meanwhile: the last one wins
        if final.exists() or final.is_symlink():
            _remove(old)
            final.rename(old)
        try:
            tmp.rename(final)
            break
        except OSError as exc:
            if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR, errno.EISDIR):
                raise
    else:  # pragma: no cover - ten publishers of one name at once
        msg = f"could not publish {final}: other processes kept replacing it; try again"
        raise IncompleteArtefactError(msg)
    _fsync_dir(final.parent)
    _remove(old)


def read_manifest(folder: str | Path) -> dict[str, Any]:
    """The manifest of a published folder (its JSON object).

    Raises:
        IncompleteArtefactError: No manifest, or one that is not a hepwb manifest.
    """
    path = Path(folder) / MANIFEST
    try:
        st = path.lstat()
        if not stat.S_ISREG(st.st_mode):
            msg = f"{path} is not a regular file"
            raise IncompleteArtefactError(msg)
        with path.open("rb") as fh:
            raw = fh.read(limits.MAX_MANIFEST_BYTES + 1)
        if len(raw) > limits.MAX_MANIFEST_BYTES:
            msg = f"{path} is larger than {limits.MAX_MANIFEST_BYTES} bytes"
            raise IncompleteArtefactError(msg)
        body = parse_json(raw.decode("utf-8"), MANIFEST, fix="publish the folder again")
    except FileNotFoundError:
        msg = f"no {MANIFEST}"
        raise IncompleteArtefactError(msg) from None
    except (OSError, ValueError, RecursionError) as exc:
        if isinstance(exc, IncompleteArtefactError):
            raise
        why = str(exc).removeprefix(f"{MANIFEST}: ").split("; ")[0] if isinstance(exc, ReadError) else ""
        msg = f"{MANIFEST} does not parse ({why or type(exc).__name__})"
        raise IncompleteArtefactError(msg) from None
    files = body.get("files") if isinstance(body, dict) else None
    if (
        not isinstance(body, dict)
        or body.get("format") != FORMAT
        or not isinstance(files, dict)
        or len(files) > limits.MAX_MANIFEST_FILES
        or not all(
            isinstance(v, dict)
            and type(v.get("bytes")) is int
            and isinstance(v.get("sha256"), str)
            and len(v["sha256"]) == 64
            for v in files.values()
        )
    ):
        msg = f"{MANIFEST} is not a {FORMAT} listing of files with their bytes and sha256"
        raise IncompleteArtefactError(msg)
    return body


@lru_cache(maxsize=256)
def _sha256_of(path: str, size: int, mtime_ns: int, inode: int) -> str:
    """SHA-256 of ``path`` (cached per size, modification time and inode: a model is hashed once)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _file_problem(folder: Path, rel: str, entry: dict[str, Any], verify: bool) -> str | None:
    parts = rel.split("/")
    if rel.startswith("/") or any(p in ("", ".", "..") for p in parts):
        return f"its manifest names {rel!r}, outside the folder"
    path = folder.joinpath(*parts)
    try:
        st = path.lstat()
    except OSError:
        return f"{rel} is missing"
    if not stat.S_ISREG(st.st_mode):
        return f"{rel} is not a regular file"
    if st.st_size != entry["bytes"]:
        return f"{rel} has {st.st_size} bytes, its manifest says {entry['bytes']}"
    if verify and _sha256_of(str(path), st.st_size, st.st_mtime_ns, st.st_ino) != entry["sha256"]:
        return f"{rel} does not match its SHA-256 in the manifest"
    return None


def published_problem(folder: str | Path, *, verify: bool = True) -> str | None:
    """Why ``folder`` is not a complete published folder (a short clause), or ``None`` when it is."""
    folder = Path(folder)
    if not folder.is_dir():
        return "no such folder"
    try:
        body = read_manifest(folder)
    except IncompleteArtefactError as exc:
        return str(exc)
    for rel, entry in body["files"].items():
        problem = _file_problem(folder, str(rel), entry, verify)
        if problem:
            return problem
    return _unlisted(folder, body["files"])


def _unlisted(folder: Path, files: dict[str, Any]) -> str | None:
    """The first entry under ``folder`` that its manifest does not list, or ``None``.

    A file, link or special file added after publication is refused: a tokenizer would read an
    ``added_tokens.json`` put there, sentence-transformers a ``sentence_bert_config.json``.
    """
    seen = 0
    for dirpath, dirnames, filenames in os.walk(folder):  # links to folders are listed, not followed
        dirnames.sort()
        here = Path(dirpath)
        for name in sorted([*filenames, *(d for d in dirnames if (here / d).is_symlink())]):
            rel = (here / name).relative_to(folder).as_posix()
            if rel != MANIFEST and rel not in files:
                return f"{rel} is not listed in its manifest (added after publication)"
            seen += 1
            if seen > limits.MAX_MANIFEST_FILES:
                return f"it holds more than the {limits.MAX_MANIFEST_FILES:,} files a manifest lists"
    return None


def check_published(
    folder: str | Path, rebuild: str | None = None, *, what: str = "folder", verify: bool = True
) -> str | None:
    """Why ``folder`` must not be loaded, in one line naming it and the fix; ``None`` when it is complete.

    Args:
        folder: A folder written by :func:`publish_folder`.
        rebuild: The command that makes it again, when its manifest does not say (or cannot be read).
        what: What the folder is, for the message (``adapted model``, ``cross-encoder``...).
        verify: Also compare every file's SHA-256 with the manifest (once per file and modification).
    """
    problem = published_problem(folder, verify=verify)
    if problem is None:
        return None
    with contextlib.suppress(IncompleteArtefactError):
        rebuild = str(read_manifest(folder).get("rebuild") or "") or rebuild
    fix = f"rebuild it with `{rebuild}`" if rebuild else "make it again"
    return f"{what} {folder} is incomplete or damaged ({problem}): {fix}"


def recover(final: str | Path) -> bool:
    """Move into place a complete folder whose publisher was killed between its two renames.

    Returns:
        Whether ``final`` was recovered (it was missing and a dead publisher's complete folder was found).
    """
    final = Path(final)
    if final.exists():
        return False
    for path, pid in sorted(_siblings(final, "tmp"), key=lambda t: t[0].stat().st_mtime, reverse=True):
        if not pid_alive(pid) and published_problem(path) is None:
            try:
                path.rename(final)
            except OSError:  # another reader recovered it first
                return final.exists()
            _fsync_dir(final.parent)
            return True
    return False
