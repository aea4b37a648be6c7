"""Chunk sets: one chunking configuration applied to a corpus, written in the HEPilot layout.

A chunk set lives in ``data/processed/chunksets/<chunkset_id>/`` with the HEPilot tree
(``documents/…``, ``catalog.json``, ``processing_log.json``, and ``adapter_config.json`` when the
configuration is HEPilot-compliant, i.e. 512 <= chunk_size <= 4096), plus hepwb's own
``chunkset.json`` manifest and ``chunks.parquet`` (all chunks, for indexing:
:mod:`hepwb.chunking.table`). Research sweeps may use
smaller sizes; their manifest says ``"hepilot_compliant": false`` and no adapter_config is written.
"""

from __future__ import annotations

import errno
import logging
import os
import shutil
import threading
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hepwb import __version__, defaults
from hepwb.chunking import get_chunker
from hepwb.chunking.keys import chunkset_id_of, chunkset_key
from hepwb.chunking.sentences import remembered
from hepwb.chunking.table import load_chunks, save_chunks
from hepwb.exceptions import ConfigError
from hepwb.files.io import UNREADABLE, discard_folder, read_json_object, write_json
from hepwb.files.readers import ReadError
from hepwb.hepilot.log import ProcessingLog, utc_now
from hepwb.hepilot.records import AdapterConfig, CatalogEntry, ProcessingConfig
from hepwb.hepilot.tree import TreeWriter
from hepwb.hepilot.writer import document_dir, write_catalog, write_chunk_files, write_document_files
from hepwb.limits import HEPILOT_CHUNK_SIZE
from hepwb.paths import Layout
from hepwb.processing.links import write_link_files
from hepwb.text.ids import code_fingerprint, config_hash, short_hash, text_sha256
from hepwb.types import Chunk, Document, JSONObject

_log = logging.getLogger("hepwb.chunksets")

__all__ = [
    "CHUNKSET_REBUILD",
    "ChunkSet",
    "build_chunkset",
    "document_key",
    "document_record",
    "finished_fingerprint",
    "saved_chunkset",
    "truncation_report",
]

CHUNKSET_REBUILD = "delete its folder and run `hepwb ingest` again (it is rebuilt when needed)"
"""The fix named for a damaged ``chunkset.json``: a search or sweep rebuilds the chunk set on its own."""

CROPS = "figure-crops"
"""The folder (beside ``chunksets/``) where each document's figure crops are rendered once and shared."""

DOCUMENT_FILES = "document-files"
"""The folder (beside ``chunksets/``) holding each document's chunk-independent files, written once and
linked into every chunk set's tree (:func:`document_files`)."""


_PENDING: dict[Path, tuple[str, ChunkSet]] = {}
"""Chunk sets still being written in the background, by their final folder: asked again, they are shared."""
_PENDING_LOCK = threading.Lock()


@dataclass
class ChunkSet:
    """A corpus chunked with one configuration."""

    chunkset_id: str
    root: Path
    chunker: JSONObject
    chunks: list[Chunk]
    documents: dict[str, Document] = field(repr=False)
    hepilot_compliant: bool = False
    pending: Future[None] | None = field(default=None, repr=False, compare=False)
    """The background writing of this chunk set's files (``build_chunkset(background=True)``), if any."""

    def wait(self) -> None:
        """Return once this chunk set's folder is complete on disk; a failure to write it is raised here."""
        if self.pending is not None:
            self.pending.result()

    def by_document(self) -> dict[str, list[Chunk]]:
        """Chunks grouped by document id, in order."""
        out: dict[str, list[Chunk]] = {}
        for c in self.chunks:
            out.setdefault(c.document_id, []).append(c)
        return out


def document_key(doc: Document) -> str:
    """What a chunk set depends on of ``doc``: its conversion key, or its text's hash when made in memory."""
    return str(doc.meta_value("conversion_key") or f"{doc.document_id}-{text_sha256(doc.markdown)}")


def document_record(doc: Document, root: Path) -> JSONObject:
    """The catalog's row of ``doc`` in the chunk set ``root``, as ``chunkset.json`` keeps it.

    A sweep's catalog is filled from run folders, where the documents themselves are not: this record is
    what gives the report each paper's label, title and folder (figures and cross-references).
    """
    front = doc.meta.get("front_matter") or {}
    return {
        "document_id": doc.document_id,
        "label": doc.label,
        "title": doc.title,
        "arxiv": str(doc.meta_value("arxiv") or ""),
        "pages": doc.meta_value("pages"),
        "source_file": str(doc.meta_value("source_file", "")),
        "file_hash": str(doc.meta_value("file_hash", "")),
        "n_chars": len(doc.markdown),
        "collaboration": front.get("collaboration") or doc.meta.get("collaboration"),
        "folder": document_dir(root, doc).relative_to(root).as_posix(),
    }


def truncation_report(chunks: list[Chunk], tokenizer: str | None) -> JSONObject | None:
    """What an embedder limited to its model's input length would drop from these chunks.

    Only meaningful when the chunks were counted with the embedding model's own tokenizer (the
    default): all-MiniLM-L6-v2 reads the first 256 word pieces of each text and ignores the rest.

    Example:
        >>> from hepwb.types import Chunk
        >>> c = [Chunk("a", "d", 0, 0, 1, "x", 300), Chunk("b", "d", 1, 1, 2, "y", 100)]
        >>> truncation_report(c, "all-MiniLM-L6-v2")["share_chunks_truncated"]
        0.5
    """
    limit = 256 if tokenizer and "minilm" in tokenizer.lower() else None
    if limit is None or not chunks:
        return None
    total = sum(c.token_count for c in chunks)
    dropped = sum(max(0, c.token_count - limit) for c in chunks)
    return {
        "model_max_tokens": limit,
        "share_chunks_truncated": sum(c.token_count > limit for c in chunks) / len(chunks),
        "share_tokens_dropped": dropped / total if total else 0.0,
    }


def _adapter_config(chunker: Any, docs: list[Document]) -> JSONObject:
    params = chunker.params()
    source = "arxiv" if docs and all(d.meta_value("arxiv") for d in docs) else "other"
    body = {
        "name": f"hepwb-{chunker.name}",
        "version": __version__,
        "source_type": source,
        "profile": "core",
        "processing_config": ProcessingConfig(
            chunk_size=params["chunk_size"], chunk_overlap=params["chunk_overlap"]
        ).dump(),
        "x_extension": {"hepwb": {"chunker": chunker.name, **params}},
    }
    body["config_hash"] = config_hash(body)
    return {"adapter_config": AdapterConfig(**body).dump()}


def build_chunkset(
    docs: list[Document],
    chunker: str = defaults.CHUNKER,
    *,
    layout: Layout | None = None,
    log: ProcessingLog | None = None,
    progress: bool = True,
    require_compliant: bool = False,
    background: bool = False,
    **params: Any,
) -> ChunkSet:
    """Chunk ``docs`` with ``chunker(**params)`` and write the HEPilot tree (reused when unchanged).

    With ``require_compliant`` (HEPilot-compliant mode) a chunk size outside 512-4096 tokens is an
    error; otherwise such research configurations are allowed and labelled non-compliant.

    With ``background`` the chunks are returned as soon as they are made, and the tree's thousands of
    files are written by one background thread while the caller indexes and searches (a run waits with
    :meth:`ChunkSet.wait` before it records itself); asked for again meanwhile, the same chunk set is
    returned. The folder is published whole, as without it.
    """
    layout = layout or Layout.default()
    log = log or ProcessingLog()
    ch = get_chunker(chunker, **params)
    p = ch.params()
    # everything the chunks depend on: chunker configuration, chunking/writer/converter code, and the
    # converted documents (their conversion keys; the exact text for documents made in memory)
    fingerprint = chunkset_key(ch.name, p, [document_key(d) for d in docs])
    size = p.get("chunk_size", "x")
    chunkset_id = chunkset_id_of(ch.name, p, fingerprint)
    root = layout.chunksets / chunkset_id
    by_id = {d.document_id: d for d in docs}
    compliant = HEPILOT_CHUNK_SIZE.problem(size) is None
    if require_compliant and not compliant:
        msg = f"{HEPILOT_CHUNK_SIZE.problem(size)}; or drop HEPilot-compliant mode for a research sweep"
        raise ConfigError(msg)
    being_written = _being_written(root, fingerprint)
    if being_written is not None:
        return being_written
    cached = _cached_chunks(root, fingerprint, log)
    if cached is not None:
        return ChunkSet(chunkset_id, root, {"name": ch.name, **p}, cached, by_id, compliant)
    # built in a private folder and moved into place when complete: a killed build leaves no
    # half-written chunk set behind, and two processes building the same set do not mix files
    final, root = root, root.parent / f".{chunkset_id}.part-{os.getpid()}"
    shutil.rmtree(root, ignore_errors=True)
    tree = ChunkSetTree(root, chunkset_id, shared=layout.chunksets.parent, background=background)
    chunks = _chunk_documents(docs, ch, tree, log, progress=progress, spans=layout.spans)
    body = {
        "chunkset_id": chunkset_id,
        "fingerprint": fingerprint,
        "chunker": {"name": ch.name, **p},
        "hepilot_compliant": compliant,
        "compliance_note": None
        if compliant
        else f"research configuration: {HEPILOT_CHUNK_SIZE.problem(size)}",
        "n_documents": len(docs),
        "n_chunks": len(chunks),
        "truncation": truncation_report(chunks, p.get("tokenizer")),
        "created": utc_now(),
    }
    adapter = _adapter_config(ch, docs) if compliant else None
    done = tree.submit(_finish, tree, final, body, adapter, chunks, log)
    cs = ChunkSet(chunkset_id, final, {"name": ch.name, **p}, chunks, by_id, compliant)
    if background:
        cs.pending = done
        with _PENDING_LOCK:
            _PENDING[final] = (fingerprint, cs)
        done.add_done_callback(lambda _: _forget(final))
    return cs


def _compliance_note(size: Any) -> str | None:
    problem = HEPILOT_CHUNK_SIZE.problem(size)
    return None if problem is None else f"research configuration: {problem}"


class ChunkSetTree(TreeWriter):
    """A chunk set's tree being written, with the catalog entries and records of the papers written so far."""

    def __init__(self, root: Path, chunkset_id: str, *, shared: Path, background: bool) -> None:
        super().__init__(root, background=background)
        self.chunkset_id, self.shared = chunkset_id, shared
        self.entries: list[CatalogEntry] = []
        self.records: list[JSONObject] = []


def _being_written(final: Path, fingerprint: str) -> ChunkSet | None:
    """The chunk set of ``fingerprint`` still being written to ``final`` by this process, if any."""
    with _PENDING_LOCK:
        pending = _PENDING.get(final)
    return pending[1] if pending is not None and pending[0] == fingerprint else None


def _forget(final: Path) -> None:
    with _PENDING_LOCK:
        _PENDING.pop(final, None)


def _chunk_documents(
    docs: list[Document], ch: Any, tree: ChunkSetTree, log: ProcessingLog, *, progress: bool, spans: Path
) -> list[Chunk]:
    """Chunk each of ``docs`` with ``ch``, each paper's files written by ``tree`` (:func:`_write_document`).

    The sentence splits of each paper are kept in ``spans`` (:func:`~hepwb.chunking.sentences.remembered`):
    another process chunking it at another size reuses them.

    Oversized atomic units (tables, equations, code blocks longer than the chunk size, kept whole) are
    logged per document and in sum. Returns the chunks, in document order.
    """
    from tqdm.auto import tqdm

    chunks: list[Chunk] = []
    oversized: dict[str, int] = {}
    for doc in tqdm(docs, desc=f"chunking {tree.chunkset_id}", unit="doc", disable=not progress):
        paragraphs = (doc.markdown[b.start : b.end] for b in doc.blocks if b.retrievable and not b.atomic)
        with remembered(spans / f"{text_sha256(doc.markdown)[:32]}.json", paragraphs):
            doc_chunks = ch.chunk(doc)
        n_over = sum(c.oversized for c in doc_chunks)
        if n_over:
            log.add(
                "info",
                "ChunkingEngine",
                f"{n_over} oversized atomic unit(s) in {doc.label} kept whole",
                document_id=doc.document_id,
                detail=True,
                chunkset=tree.chunkset_id,
            )
            oversized[doc.label] = n_over
        tree.submit(_write_document, tree, doc, doc_chunks)
        chunks.extend(doc_chunks)
    if oversized:
        log.add(  # information, not a fault: no strategy ever cuts an equation, table or code block
            "info",
            "ChunkingEngine",
            f"chunk set {tree.chunkset_id}: {sum(oversized.values())} table/equation/code block(s) longer "
            f"than the chunk size kept whole as oversized chunks in {len(oversized)} document(s)",
            chunkset=tree.chunkset_id,
        )
    return chunks


def _write_document(tree: ChunkSetTree, doc: Document, doc_chunks: list[Chunk]) -> None:
    """Write ``doc``'s HEPilot folder in ``tree``: its shared files linked, its chunk files written.

    A document's files that do not depend on its chunks are written once (:func:`document_files`).
    """
    link_tree(document_files(tree.shared, doc), document_dir(tree.root, doc))
    tree.entries.append(write_chunk_files(tree.root, doc, doc_chunks))
    tree.records.append(document_record(doc, tree.root))
    doc.release()  # a stored paper's text goes back to its cache: memory holds few papers at a time


def _finish(
    tree: ChunkSetTree,
    final: Path,
    body: JSONObject,
    adapter: JSONObject | None,
    chunks: list[Chunk],
    log: ProcessingLog,
) -> None:
    """Write the tree's catalog, adapter configuration, log, chunk table and manifest; publish it whole."""
    root, chunkset_id = tree.root, tree.chunkset_id
    write_catalog(root, tree.entries)
    if adapter is not None:
        write_json(root / "adapter_config.json", adapter)
    log.add(
        "debug",
        "ChunkingEngine",
        f"chunk set {chunkset_id}: {len(chunks)} chunks from {body['n_documents']} documents",
        chunkset=chunkset_id,
        hepilot_compliant=body["hepilot_compliant"],
    )
    # this tree's log: corpus events plus this chunk set's own, not those of sibling chunk sets
    log.filtered(lambda e: (e.context or {}).get("chunkset") in (None, chunkset_id)).save(
        root / "processing_log.json"
    )
    save_chunks(root / "chunks.parquet", chunks, (body["truncation"] or {}).get("model_max_tokens"))
    write_json(root / "chunkset.json", {**body, "documents": tree.records})
    os.sync()  # the tree's files were written plainly (a private folder): on disk before it is published
    _publish(root, final, str(body["fingerprint"]))


def document_files(shared: Path, doc: Document) -> Path:
    """The folder of ``doc``'s files that every chunk set's tree holds alike, written on first use.

    Its markdown, metadata, references, blocks, figures (with their crops), cross-references and front
    matter (:func:`~hepwb.hepilot.writer.write_document_files`,
    :func:`~hepwb.processing.links.write_link_files`) depend on the converted document and the writers'
    code only, so a new chunk size links them instead of writing them again. Keyed by both; built beside
    and renamed into place with its marker last.
    """
    key = short_hash(
        {"document": document_key(doc), "code": [code_fingerprint("hepilot"), code_fingerprint("processing")]}
    )
    folder = shared / DOCUMENT_FILES / key
    if (folder / ".complete").is_file():
        return folder
    part = folder.with_name(f".{key}.part-{os.getpid()}")
    shutil.rmtree(part, ignore_errors=True)
    write_document_files(part, doc)
    write_link_files(part, doc, crops=shared / CROPS)
    (part / ".complete").touch()
    for _ in range(2):
        try:
            part.replace(folder)  # never onto a folder with files: another process may be linking them
            return folder
        except OSError:
            if (folder / ".complete").is_file():  # another process published the same files first
                break
            shutil.rmtree(folder, ignore_errors=True)  # a leftover without its marker: replaced
    shutil.rmtree(part, ignore_errors=True)
    if not (folder / ".complete").is_file():
        msg = f"could not put a paper's files in place at {folder}: check that folder's permissions"
        raise OSError(msg)
    return folder


def link_tree(source: Path, target: Path) -> None:
    """Hard-link (or copy, across file systems) every file under ``source`` into ``target`` (not markers)."""
    for path in source.rglob("*"):
        if path.is_dir() or path.name == ".complete":
            continue
        dest = target / path.relative_to(source)
        dest.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(path, dest)
        except OSError:
            shutil.copyfile(path, dest)


def saved_chunkset(root: Path, docs: list[Document]) -> ChunkSet:
    """The finished chunk set in the folder ``root`` read back as it is (a run's ``chunkset_root``).

    Raises:
        OSError, ValueError, KeyError, TypeError: a missing, unreadable or damaged chunk set folder.
    """
    manifest = _manifest(root)
    by_id = {d.document_id: d for d in docs}
    chunks = load_chunks(root / "chunks.parquet")
    return ChunkSet(
        manifest["chunkset_id"], root, manifest["chunker"], chunks, by_id, manifest["hepilot_compliant"]
    )


def _manifest(root: Path) -> JSONObject:
    """The ``chunkset.json`` of the chunk set folder ``root``, which must hold a JSON object.

    A damaged one (not an object, not JSON, a FIFO...) raises :class:`~hepwb.files.readers.ReadError`
    naming it.
    """
    return read_json_object(root / "chunkset.json", "chunk set manifest", fix=CHUNKSET_REBUILD)


def finished_fingerprint(root: Path) -> str | None:
    """The fingerprint of the finished chunk set in ``root``; ``None`` when there is none or it is damaged.

    A damaged one is named and rebuilt where its chunks are read (:func:`build_chunkset`).
    """
    if not (root / "chunkset.json").is_file():
        return None
    try:
        value = _manifest(root).get("fingerprint")
    except UNREADABLE:
        return None
    return value if isinstance(value, str) else None


def _cached_chunks(root: Path, fingerprint: str, log: ProcessingLog | None) -> list[Chunk] | None:
    """The chunks of the finished chunk set ``root`` if it has ``fingerprint``; a corrupt one is removed."""
    manifest, table = root / "chunkset.json", root / "chunks.parquet"
    if not (manifest.is_file() and table.is_file()):
        return None
    try:
        if _manifest(root).get("fingerprint") != fingerprint:
            return None
        return load_chunks(table)
    except UNREADABLE as exc:
        why = str(exc).removesuffix(f"; {CHUNKSET_REBUILD}")
        why = why if isinstance(exc, ReadError) else f"{type(exc).__name__}: {why}"
        msg = f"cached chunk set {root} is unreadable ({why[:300]}); building it again"
        if log is None:
            _log.warning(msg)
        else:  # the log echoes it: one line, not two
            log.add("warning", "ChunkingEngine", msg, recovery_action="rebuilt the chunk set")
        discard_folder(root, "corrupt")
        return None


def _publish(built: Path, final: Path, fingerprint: str) -> None:
    """Move the finished folder ``built`` to ``final``, replacing a stale one (never a half-written one).

    Another process building the same chunk set may publish it between the look and the rename: its
    finished chunk set is then kept and ``built`` removed (they are the same files).
    """
    for _ in range(10):
        if finished_fingerprint(final) == fingerprint:
            shutil.rmtree(built, ignore_errors=True)  # another process finished the same chunk set first
            return
        if final.exists():
            discard_folder(final)
        try:
            built.replace(final)
            return
        except OSError as exc:
            if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                raise
    msg = f"could not publish the chunk set {final}: other processes kept replacing it; run again"
    raise OSError(errno.EBUSY, msg)
