"""A worker's scratch folder in a store-backed sweep: what a task fetches from the store, what it publishes.

A worker that shares no file system with the client keeps a project of its own in a scratch folder (under
the Dask worker's local directory, else a temporary folder removed when the process ends). Before a task
runs, :class:`Scratch` fetches what it reads from the store into that project: the copies of the corpus
and question file, the converted documents, the chunk set, the table (and its window tables), the vectors
a table build needs. Every fetch is verified (SHA-256) and places the artefact's completion marker last,
so the stages' own "is it done?" checks see either the whole artefact or none of it. After the task,
:class:`Scratch` publishes what it made (manifest last). Bytes sent and received are counted per task.

A chunk set's HEPilot tree (two files per chunk) travels as one ``hepilot.tar.gz`` beside its
``chunkset.json`` and ``chunks.parquet``; tasks fetch only those two files.
"""

from __future__ import annotations

import atexit
import shutil
import tarfile
import tempfile
import threading
from pathlib import Path
from typing import Any

from hepwb.corpus import failure_marker
from hepwb.files.io import write_json
from hepwb.index.cache import EmbeddingCache
from hepwb.paths import Layout
from hepwb.store import ArtefactStore
from hepwb.sweep.site import StoreSite
from hepwb.types import JSONObject

__all__ = [
    "HEPILOT_TAR",
    "Scratch",
    "chunkset_files",
    "files_under",
    "read_vectors",
    "scratch_root",
    "write_vectors",
]

HEPILOT_TAR = "hepilot.tar.gz"
"""The chunk set's HEPilot tree, in one file of its artefact."""
_CHUNKSET_OWN = ("chunkset.json", "chunks.parquet")
_LOCK = threading.Lock()  # a worker with several threads fetches one artefact at a time
_FS: dict[str, Any] = {}
_FETCHED: dict[tuple[str, str, str, str], JSONObject] = {}
"""Manifests of the artefacts this process fetched already: they never change."""
_ROOT: list[Path] = []


def scratch_root() -> Path:
    """This process's scratch folder: under the Dask worker's local directory, else a temporary one."""
    try:
        from distributed import get_worker

        return Path(get_worker().local_directory) / "hepwb"
    except (ImportError, ValueError):
        pass
    if not _ROOT:
        _ROOT.append(Path(tempfile.mkdtemp(prefix="hepwb-scratch-")))
        atexit.register(shutil.rmtree, _ROOT[0], True)
    return _ROOT[0]


def _store(url: str) -> ArtefactStore:
    """A store object counting its own bytes, on the process's one connection pool to ``url``."""
    store = ArtefactStore(url, fs=_FS.get(url))
    _FS.setdefault(url, store.fs)
    return store


def files_under(root: Path, folder: Path) -> dict[str, Path]:
    """``{path relative to root: file}`` of every file under ``folder`` (none when it does not exist)."""
    return {p.relative_to(root).as_posix(): p for p in sorted(folder.rglob("*")) if p.is_file()}


def chunkset_files(root: Path, folder: Path, tmp: Path) -> dict[str, Path]:
    """The files of the chunk set in ``folder`` as published: its own two files and its tree as one archive.

    The archive is written under ``tmp``; paths are relative to the project ``root``.
    """
    rel = folder.relative_to(root).as_posix()
    tmp.mkdir(parents=True, exist_ok=True)
    archive = tmp / f"{folder.name}.{HEPILOT_TAR}"
    with tarfile.open(archive, "w:gz", compresslevel=1) as tar:
        for path in sorted(folder.rglob("*")):
            if path.is_file() and path.relative_to(folder).as_posix() not in _CHUNKSET_OWN:
                tar.add(path, arcname=path.relative_to(folder).as_posix(), recursive=False)
    out = {f"{rel}/{name}": folder / name for name in _CHUNKSET_OWN}
    out[f"{rel}/{HEPILOT_TAR}"] = archive
    return out


def write_vectors(path: Path, vectors: dict[str, Any]) -> Path:
    """Write ``{text hash: vector}`` as a Parquet file of ``key`` and ``vector`` columns."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    keys = sorted(vectors)
    if keys:
        mat = np.stack([np.asarray(vectors[k], np.float32) for k in keys])
        column = pa.FixedSizeListArray.from_arrays(pa.array(mat.ravel(), pa.float32()), mat.shape[1])
    else:
        column = pa.array([], pa.list_(pa.float32()))
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"key": pa.array(keys, pa.string()), "vector": column}), path)
    return path


def read_vectors(path: Path) -> dict[str, Any]:
    """The ``{text hash: vector}`` of a file :func:`write_vectors` wrote."""
    import numpy as np
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    if not table.num_rows:
        return {}
    flat = table.column("vector").combine_chunks().flatten().to_numpy()
    mat = flat.reshape(table.num_rows, -1).astype(np.float32)
    return dict(zip(table.column("key").to_pylist(), mat, strict=True))


class Scratch:
    """One task's view of the worker's scratch project and of the store (see the module docstring)."""

    def __init__(self, site: StoreSite) -> None:
        self.site = site
        self.store = _store(site.url)
        self.root = scratch_root()
        self.layout = Layout(self.root / "project")

    @property
    def home(self) -> str:
        """The scratch project's root, as the worker's stage functions take it."""
        return str(self.layout.root)

    def moved(self) -> dict[str, int]:
        """Bytes this task sent to and received from the store."""
        return {"sent": self.store.sent, "received": self.store.received}

    def _fetch(
        self, kind: str, key: str, dest: Path | None = None, *, last: tuple[str, ...] = (), only: Any = None
    ) -> JSONObject:
        """Fetch an artefact once per process: keyed by content, it never changes, and only we write here."""
        where = dest or self.layout.root
        memo = (self.site.url, kind, key, str(where))
        with _LOCK:
            body = _FETCHED.get(memo) or self.store.fetch(kind, key, where, last=last, only=only)
            if body is not None:
                _FETCHED[memo] = body
        if body is None:
            msg = f"artefact {kind}/{key} is not in the store {self.site.url}: was it deleted mid-sweep?"
            raise FileNotFoundError(msg)
        return body

    # -- inputs -----------------------------------------------------------------------------------
    def corpus_folder(self, value: object) -> Path:
        """The scratch copy of the corpus a configuration (or a convert task) names, fetched once."""
        key, folder = self.site.corpus(value)
        dest = self.root / "inputs" / f"corpus-{key}"
        self._fetch("corpus", key, dest)
        for conversion_key, record in self.site.failed:  # skipped here as by the client
            marker = failure_marker(self.layout, conversion_key)
            if not marker.is_file():
                write_json(marker, record)
        return dest / folder if folder else dest

    def inputs(self, config: JSONObject, documents: list[str]) -> JSONObject:
        """Fetch the corpus, question file and ``documents`` of ``config``; ``config`` reading the copies."""
        self.corpus_folder(config.get("corpus"))
        sha, _ = self.site.question_file(config.get("questions"))
        self._fetch("questions", sha, self.root / "inputs" / f"questions-{sha}")
        for key in documents:
            self._fetch("document", key, last=("document.json",))
        return self.site.local_config(config, self.root)

    def chunkset(self, chunkset_id: str) -> None:
        """Fetch a chunk set's ``chunkset.json`` and ``chunks.parquet`` (not its HEPilot tree)."""
        self._fetch(
            "chunkset", chunkset_id, last=("chunkset.json",), only=lambda rel: not rel.endswith(HEPILOT_TAR)
        )

    def table(self, key: str, name: str, *, windows: bool = False) -> None:
        """Fetch table ``name`` (``windows``: its window tables) published under ``key``, marker last."""
        marker = f"{name}__windows.json" if windows else f"{name}.json"
        self._fetch("windows" if windows else "table", key, last=(marker,))

    def embeddings(self, key: str, model: str) -> int:
        """Put the vectors published under ``key`` into the scratch embedding cache; how many were new."""
        body = self._fetch("embeddings", key)
        cache = EmbeddingCache(self.layout.lancedb, model)
        added = 0
        for rel in body["files"]:
            vectors = read_vectors(self.layout.root / rel)
            todo = {k: vectors[k] for k in cache.missing(list(vectors))}
            cache.add(todo)
            added += len(todo)
        return added

    # -- outputs ----------------------------------------------------------------------------------
    def publish_folder(self, kind: str, key: str, folder: Path, *, only: Path | None = None) -> bool:
        """Publish every file under the scratch ``folder`` (a document, a run), or ``only`` that one."""
        files = files_under(self.layout.root, folder)
        if only is not None:
            files = {rel: p for rel, p in files.items() if p == only}
        return self.store.publish(kind, key, files)

    def publish_chunkset(self, chunkset_id: str, folder: Path, fingerprint: str) -> bool:
        """Publish the chunk set built in ``folder`` (its tree as one archive)."""
        tmp = Path(tempfile.mkdtemp(dir=self.root, prefix=".publish-"))
        try:
            files = chunkset_files(self.layout.root, folder, tmp)
            return self.store.publish("chunkset", chunkset_id, files, {"fingerprint": fingerprint})
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def publish_table(self, key: str, name: str, chunkset_id: str, *, windows: bool = False) -> bool:
        """Publish table ``name`` (its folder, lexicon and marker), or with ``windows`` its window tables."""
        db = self.layout.lancedb
        if windows:
            parts = [db / f"{name}__windows.lance", db / f"{name}__wmean.lance"]
            markers = [db / "_complete" / f"{name}__windows.json"]
        else:
            parts = [db / f"{name}.lance"]
            markers = [db / "_lexicon" / f"{chunkset_id}.json", db / "_complete" / f"{name}.json"]
        files: dict[str, Path] = {}
        for folder in parts:
            files.update(files_under(self.layout.root, folder))
        files.update({p.relative_to(self.layout.root).as_posix(): p for p in markers if p.is_file()})
        return self.store.publish("windows" if windows else "table", key, files, {"table": name})
