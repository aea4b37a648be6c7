"""An artefact store in object storage: artefacts published whole (manifest last), read back verified.

An artefact is a set of files (a converted document, a chunk set, a LanceDB table with its markers, a run
folder) named by its kind and its content key. :meth:`ArtefactStore.publish` uploads the files under a
prefix of their own, ``objects/<kind>/<key>/<attempt>/``, keeping their project-relative paths, then writes
the manifest ``manifests/<kind>/<key>.json`` (every file's path, bytes and SHA-256) **last**, with a
conditional write (``If-None-Match: *``): of two processes publishing one key at once, exactly one manifest
is written and the other's files are removed. Nothing is ever overwritten, so a reader that finds a manifest
finds every file it lists; :meth:`ArtefactStore.fetch` checks each file's SHA-256 as it downloads and places
the artefact's own completion marker (``document.json``, ``chunkset.json``, ``metrics.json``...) last, so a
local reader never sees half an artefact either. A table's prefix is an ordinary LanceDB folder: LanceDB
opens it in place (:meth:`ArtefactStore.lancedb_uri`).

Connections time out after a few seconds (:data:`~hepwb.store.s3.CONNECT_S`): an unreachable store is one line
(:func:`store_problem`), never a hang. Credentials are read by the S3 client from the standard places and are
never written into a manifest, an artefact or a log line.

Example:
    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> store = ArtefactStore(f"file://{root}/store")
    >>> _ = (root / "a.txt").write_text("one")
    >>> store.publish("demo", "k1", {"x/a.txt": root / "a.txt"})
    True
    >>> sorted(store.fetch("demo", "k1", root / "copy")["files"]), (root / "copy/x/a.txt").read_text()
    (['x/a.txt'], 'one')
    >>> store.publish("demo", "k1", {"x/a.txt": root / "a.txt"})  # published already: nothing is written
    False
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from hepwb import limits
from hepwb.exceptions import HepwbError
from hepwb.runtime.deps import extra
from hepwb.store.manifest import (
    REBUILD,
    StoreError,
    artefact_home,
    check_part,
    check_rel,
    checked_files,
    manifest_rel,
)
from hepwb.store.s3 import FAILURES, s3_filesystem
from hepwb.store.url import check_store_url
from hepwb.text.names import is_plain_name

__all__ = ["FORMAT", "ArtefactStore", "StoreError", "artefact_home", "store_problem"]

FORMAT = "hepwb-store/1"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class ArtefactStore:
    """Artefacts under one store URL (``s3://bucket/prefix`` or ``file:///path``); see the module doc.

    ``fs``: the file system of another object of the same URL, to share its connections (each object
    counts its own bytes, :attr:`sent` and :attr:`received`).
    """

    def __init__(self, url: str, fs: Any = None) -> None:
        self.url = check_store_url(url)
        parts = urlsplit(self.url)
        self.protocol = parts.scheme
        self.root = (parts.netloc + parts.path) if self.protocol == "s3" else parts.path
        self.sent = 0
        """Bytes uploaded by this object (files and manifests)."""
        self.received = 0
        """Bytes downloaded by this object."""
        self._fs: Any = fs  # another store object's file system (its connections) when given

    def __repr__(self) -> str:
        return f"ArtefactStore({self.url!r})"

    @property
    def fs(self) -> Any:
        """The fsspec file system (s3fs with short connection timeouts, or the local one)."""
        if self._fs is None:
            with extra("facility", f"the artefact store {self.url}"):
                import fsspec

                if self.protocol == "s3":
                    import s3fs  # noqa: F401 - named by the message when missing
            if self.protocol == "s3":
                self._fs = s3_filesystem(limits.STORE_READ_S, attempts=2, retries=limits.STORE_RETRIES)
            else:
                self._fs = fsspec.filesystem("file", auto_mkdir=True)
        return self._fs

    def _full(self, rel: str) -> str:
        return f"{self.root}/{rel}"

    def _read_path(self, rel: str, fix: str) -> str:
        """The full path of ``rel`` to read; in a folder store, never through a link leading out of it.

        A writer of a shared folder store could link an object, its artefact's folder or a manifest to a
        file of the reader's machine (fetched as if published, when its SHA-256 is known).
        """
        full = self._full(rel)
        if self.protocol == "file":
            root, real = os.path.realpath(self.root), os.path.realpath(full)
            if real != root and not real.startswith(root + os.sep):
                msg = f"{self.uri(rel)} is a link leading out of the store: nothing was read from it; {fix}"
                raise StoreError(msg)
        return full

    def uri(self, rel: str = "") -> str:
        """The URL of ``rel`` inside the store."""
        return f"{self.url}/{rel}" if rel else self.url

    def lancedb_uri(self, kind: str, key: str, folder: str = "data/processed/lancedb") -> str | None:
        """The URL LanceDB connects to for the tables of artefact ``kind``/``key`` (``None``: not published).

        Example: ``lancedb.connect(store.lancedb_uri("table", key), storage_options=s3_storage_options())``.
        """
        body = self.manifest(kind, key)
        return None if body is None else self.uri(f"{body['base']}/{folder}")

    # -- raw objects ------------------------------------------------------------------------------
    def _problem(self, exc: BaseException) -> StoreError:
        text = " ".join(str(exc).split())[:200] or type(exc).__name__
        msg = (
            f"the artefact store {self.url} cannot be used ({type(exc).__name__}: {text}); check the URL, "
            "AWS_ENDPOINT_URL and the credentials (AWS_ACCESS_KEY_ID/AWS_PROFILE), or drop --store"
        )
        return StoreError(msg)

    def cat(self, rel: str) -> bytes | None:
        """The object ``rel`` (``None`` when absent)."""
        source = self._read_path(rel, "delete it, or ask whoever writes to the store")  # no OSError caught
        try:
            data: bytes = self.fs.cat_file(source)
        except FileNotFoundError:
            return None
        except IsADirectoryError:
            msg = f"{self.uri(rel)} is a folder, not an object: delete it, or ask whoever writes to the store"
            raise StoreError(msg) from None
        except FAILURES as exc:
            raise self._problem(exc) from None
        self.received += len(data)
        return data

    def put_if_absent(self, rel: str, data: bytes) -> bool:
        """Write ``data`` to ``rel`` unless an object is there (a conditional write); whether it wrote it."""
        path = self._full(rel)
        try:
            if self.protocol == "file":
                Path(path).parent.mkdir(parents=True, exist_ok=True)
                part = Path(path + f".part-{os.getpid()}")
                with part.open("wb") as fh:
                    fh.write(data)
                    fh.flush()
                    os.fsync(fh.fileno())
                try:
                    os.link(part, path)  # fails if the name exists: an atomic create
                finally:
                    part.unlink()
            else:
                self.fs.pipe_file(path, data, mode="create")
        except FileExistsError:
            return False
        except OSError as exc:
            if exc.errno == errno.EINVAL and "pre-condition" in str(exc).lower():  # 412 without a Condition
                return False
            raise self._problem(exc) from None
        self.sent += len(data)
        return True

    def put(self, rel: str, data: bytes) -> None:
        """Write ``data`` to ``rel``, replacing what is there (a lease's renewal; never an artefact)."""
        try:
            self.fs.pipe_file(self._full(rel), data)
        except FAILURES as exc:
            raise self._problem(exc) from None
        self.sent += len(data)

    def delete(self, rel: str, *, recursive: bool = False) -> None:
        """Remove ``rel`` (a prefix with ``recursive``); an absent one is fine."""
        with contextlib.suppress(FileNotFoundError):
            try:
                self.fs.rm(self._full(rel), recursive=recursive)
            except FAILURES as exc:
                if not isinstance(exc, FileNotFoundError):
                    raise self._problem(exc) from None
                raise

    # -- artefacts --------------------------------------------------------------------------------
    def manifest(self, kind: str, key: str) -> dict[str, Any] | None:
        """The manifest of artefact ``kind``/``key``, checked whole; ``None`` when it is not published.

        Raises:
            StoreError: It is damaged, points outside its artefact or lists a file outside the artefact's
                folder (:func:`~hepwb.store.manifest.checked_files`): named, with how to rebuild it.
        """
        raw = self.cat(manifest_rel(kind, key))
        if raw is None:
            return None
        try:
            body = json.loads(raw[: limits.MAX_MANIFEST_BYTES].decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            body = None
        ok = (
            isinstance(body, dict)
            and body.get("format") == FORMAT
            and isinstance(body.get("base"), str)
            and isinstance(body.get("files"), dict)
        )
        if not ok:
            msg = f"the manifest {self._where(kind, key)} is damaged (not a {FORMAT} manifest): {REBUILD}"
            raise StoreError(msg)
        assert isinstance(body, dict)
        body["files"] = checked_files(kind, key, body, self._where(kind, key))
        return body

    def _where(self, kind: str, key: str) -> str:
        return f"{manifest_rel(kind, key)} in the store {self.url}"

    def has(self, kind: str, key: str) -> bool:
        """Whether artefact ``kind``/``key`` is published."""
        return self.manifest(kind, key) is not None

    def published(self, kind: str) -> set[str]:
        """The keys of every published artefact of ``kind``, from one listing of its manifests.

        A manifest listed here is whole (it is written in one request, last); :meth:`fetch` still checks it.
        """
        try:
            names = self.fs.ls(self._full(f"manifests/{check_part(kind, 'kind')}"), detail=False)
        except FileNotFoundError:
            return set()
        except FAILURES as exc:
            raise self._problem(exc) from None
        out = {str(n).rstrip("/").rsplit("/", 1)[-1] for n in names}
        return {n[: -len(".json")] for n in out if n.endswith(".json") and is_plain_name(n[: -len(".json")])}

    def publish(
        self,
        kind: str,
        key: str,
        files: Mapping[str, Path],
        meta: Mapping[str, Any] | None = None,
    ) -> bool:
        """Upload ``files`` (``{project-relative path: local file}``), then the manifest; whether it did.

        ``False`` when the artefact was published already (by another process, maybe at the same moment):
        this call's uploads are then removed, and the published one stands.
        """
        where = manifest_rel(kind, key)
        if self.has(kind, key):
            return False
        base = f"objects/{kind}/{key}/{uuid.uuid4().hex[:12]}"
        listing: dict[str, dict[str, Any]] = {}
        local, remote = [], []
        for rel, path in sorted(files.items()):
            listing[check_rel(rel)] = {"bytes": path.stat().st_size, "sha256": _sha256(path)}
            local.append(str(path))
            remote.append(self._full(f"{base}/{rel}"))
        try:
            if local:
                self.fs.put(local, remote)
        except FAILURES as exc:
            raise self._problem(exc) from None
        self.sent += sum(int(v["bytes"]) for v in listing.values())
        body = {
            "format": FORMAT,
            "kind": kind,
            "key": key,
            "base": base,
            "meta": dict(meta or {}),
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
            "files": listing,
        }
        if self.put_if_absent(where, json.dumps(body, indent=1, sort_keys=True).encode()):
            return True
        with contextlib.suppress(StoreError, FileNotFoundError):
            self.delete(base, recursive=True)
        return False

    def fetch(
        self,
        kind: str,
        key: str,
        dest: Path,
        *,
        last: Sequence[str] = (),
        only: Callable[[str], bool] | None = None,
    ) -> dict[str, Any] | None:
        """Download artefact ``kind``/``key`` under ``dest`` (its files at their relative paths), verified.

        Files already there with the listed size and SHA-256 are kept. Each file is downloaded beside its
        place and renamed into it once its SHA-256 matches; files whose name is in ``last`` (the artefact's
        completion markers) are placed after all the others. ``only``: the files (by relative path) wanted,
        when not all are.

        Returns:
            The manifest, or ``None`` when the artefact is not published.

        Raises:
            StoreError: A file does not match its manifest (damaged in the store: delete its manifest).
        """
        body = self.manifest(kind, key)
        if body is None:
            return None
        files: dict[str, dict[str, Any]] = body["files"]
        wanted = [rel for rel in files if only is None or only(rel)]
        order = sorted(wanted, key=lambda rel: (rel.rsplit("/", 1)[-1] in last, rel))
        staged: list[tuple[Path, Path]] = []
        try:
            for rel in order:
                entry = files[rel]
                final = dest.joinpath(*rel.split("/"))
                if (
                    final.is_file()
                    and final.stat().st_size == entry["bytes"]
                    and _sha256(final) == entry["sha256"]
                ):
                    continue
                final.parent.mkdir(parents=True, exist_ok=True)
                part = final.with_name(f".{final.name}.part-{os.getpid()}")
                source = self._read_path(f"{body['base']}/{rel}", f"{REBUILD} ({self._where(kind, key)})")
                try:
                    self.fs.get_file(source, str(part))
                except FileNotFoundError:
                    msg = (
                        f"{self.uri(body['base'] + '/' + rel)} is missing from the store although its "
                        f"manifest {self._where(kind, key)} lists it: {REBUILD}"
                    )
                    raise StoreError(msg) from None
                except FAILURES as exc:
                    raise self._problem(exc) from None
                self.received += part.stat().st_size
                if _sha256(part) != entry["sha256"]:
                    msg = (
                        f"{self.uri(body['base'] + '/' + rel)} does not match its manifest "
                        f"{self._where(kind, key)}: {REBUILD}"
                    )
                    raise StoreError(msg)
                staged.append((part, final))
            for part, final in staged:  # every file verified: into place, markers last
                part.replace(final)
        finally:
            for part, _ in staged:
                part.unlink(missing_ok=True)
        return body


def store_problem(url: str) -> str | None:
    """Why the store at ``url`` cannot be used from here (one clause), or ``None`` when it answers.

    Lists the store's root once, one try waiting at most :data:`~hepwb.limits.STORE_PROBE_S` for the reply:
    a store that accepts connections and never answers is named within seconds.
    """
    try:
        store = ArtefactStore(url)
        if store.protocol == "s3":
            with extra("facility", f"the artefact store {url}"):
                import s3fs  # noqa: F401 - named by the message when missing
            store = ArtefactStore(url, fs=s3_filesystem(limits.STORE_PROBE_S, attempts=1, retries=1))
        store.fs.ls(store.root, detail=False)
    except FileNotFoundError:
        return None if urlsplit(url).scheme == "s3" else f"no folder {urlsplit(url).path}"
    except HepwbError as exc:
        return str(exc)
    except FAILURES as exc:
        return f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}"
    return None
