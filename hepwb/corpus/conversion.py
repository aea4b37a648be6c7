"""Find a corpus, convert its files to documents (cached), and attach sidecar metadata.

A corpus is a folder of PDFs (and/or ``.md`` files). Bibliographic metadata comes from an optional
``papers.json`` in the folder or its parent (``{"papers": [{"pid", "pdf", "title", "authors", …}]}``,
the format of ``../shared/corpus/papers/papers.json``); an entry's ``"tex"`` names its LaTeX source
folder under ``tex/`` beside that file (see :mod:`hepwb.corpus.sources`). Converted documents are
cached under ``data/interim/documents`` keyed by the input's SHA-256, the converter input and a
fingerprint of the converter's code, so a second run reuses them and a converter change invalidates them.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

from hepwb.corpus.plan import SourceFile, plan_corpus
from hepwb.corpus.sources import convert
from hepwb.corpus.stored import StoredDocument, store_document
from hepwb.exceptions import CorpusNotFoundError, ProcessingError
from hepwb.files.io import UNREADABLE, discard_folder, read_json, write_json
from hepwb.files.locks import building
from hepwb.files.readers import ReadError
from hepwb.hepilot.log import ProcessingLog, utc_now
from hepwb.paths import Layout, shared_dir
from hepwb.types import Document

_log = logging.getLogger("hepwb.corpus")

__all__ = ["default_questions", "ingest"]


def default_questions() -> Path | None:
    """``$HEPWB_QUESTIONS``, else the shared hepqa-dev set when present."""
    env = os.environ.get("HEPWB_QUESTIONS")
    if env:
        return Path(env)
    cand = shared_dir() / "eval" / "hepqa-dev.jsonl"
    return cand if cand.is_file() else None


def failure_marker(layout: Layout, conversion_key: str) -> Path:
    """Where a failed conversion is remembered (a changed file or converter code has another key)."""
    return layout.interim / ".failed" / f"{conversion_key}.json"


def convert_source(item: SourceFile, layout: Layout, log: ProcessingLog) -> Document | None:
    """Convert one planned corpus file, or load it from the cache; ``None`` (logged) when it fails.

    A failure is remembered by its conversion key, so a sweep does not convert a broken file again
    until the file or the converter changes (delete ``data/interim/documents/.failed`` to retry).
    """
    cached = _from_cache(item, layout, log)
    if cached is not None:
        return cached
    # one process converts a file; another wanting it meanwhile waits, then reads the cache
    lock = layout.interim.parent / ".locks" / f"{item.conversion_key}.lock"  # beside the cache, not in it
    with building(lock, f"the conversion of {item.path}"):
        cached = _from_cache(item, layout, log)
        return cached if cached is not None else _convert(item, layout, log)


def _from_cache(item: SourceFile, layout: Layout, log: ProcessingLog) -> Document | None:
    """The cached conversion of ``item``; an unreadable one is logged and removed (``None``)."""
    cache = layout.interim / item.conversion_key
    if not (cache / "document.json").is_file():
        return None
    try:
        return StoredDocument.open(cache, item.conversion_key)
    except UNREADABLE as exc:
        why = str(exc) if isinstance(exc, ReadError) else f"{type(exc).__name__}: {exc}"
        msg = f"cached conversion {cache} is unreadable ({why[:300]}); converting {item.path.name} again"
        log.add("warning", "ProcessingPipeline", msg, recovery_action="rebuilt the cache entry",
                file_path=str(item.path))  # fmt: skip
        discard_folder(cache, "corrupt")
        return None


def _convert(item: SourceFile, layout: Layout, log: ProcessingLog) -> Document | None:
    """Convert ``item`` and cache the result; a failure is logged and remembered (``None``)."""
    path, meta = item.path, item.meta
    cache = layout.interim / item.conversion_key
    marker = failure_marker(layout, item.conversion_key)
    if marker.is_file():
        failed = read_json(marker)
        log.add(
            "error",
            "ProcessingPipeline",
            f"{failed['message']} (failed before; fix the file, or delete {marker} to retry)",
            error_code=failed["error_code"],
            recovery_action="skipped document; the others continue",
            file_path=str(path),
        )
        return None
    t0 = time.perf_counter()
    stamp = utc_now()
    try:
        doc = convert(path, meta, prefer_latex=item.source != path.suffix.lower().lstrip("."))
    except Exception as exc:  # a converter bug must not stop the corpus
        code = exc.code if isinstance(exc, ProcessingError) else "PROC_UNEXPECTED"
        message = (
            str(exc) if isinstance(exc, ProcessingError) else f"unexpected failure converting {path}: {exc!r}"
        )
        action = "skipped document; the others continue" + (
            "" if isinstance(exc, ProcessingError) else " (please report it)"
        )
        log.add(
            "error",
            "ProcessingPipeline",
            message,
            error_code=code,
            recovery_action=action,
            file_path=str(path),
        )
        write_json(marker, {"error_code": code, "message": message, "file": str(path), "when": stamp})
        return None
    meta_full = {
        **doc.meta,
        "conversion_key": item.conversion_key,
        "processing_timestamp": stamp,
        "processing_duration": round(time.perf_counter() - t0, 4),
    }
    doc = Document(doc.document_id, doc.label, doc.markdown, doc.blocks, meta_full)
    store_document(cache, doc)
    log.add(
        "info",
        "ProcessingPipeline",
        f"converted {path.name}",
        document_id=doc.document_id,
        detail=True,
        file_path=str(path),
        pages=doc.meta.get("pages"),
    )
    return StoredDocument(cache, doc, item.conversion_key)  # its text is read again when needed


def ingest(
    corpus: str | Path | None = None,
    *,
    layout: Layout | None = None,
    max_docs: int | None = None,
    only: list[str] | None = None,
    prefer_latex: bool = True,
    log: ProcessingLog | None = None,
    progress: bool = True,
    require: bool = False,
) -> list[Document]:
    """Convert every file of ``corpus`` to a :class:`Document`, reusing the cache.

    Args:
        corpus: Folder of PDF/markdown files (default: ``$HEPWB_CORPUS`` or the shared corpus).
        layout: Artefact folders (default: this project's).
        max_docs: Only the first N files (name order).
        only: Only files with these labels (file-name prefix before ``_``, e.g. ``["P01"]``).
        prefer_latex: Convert a paper's LaTeX source instead of its PDF when the sidecar names one
            (``"tex"`` in ``papers.json``); the PDF is the fallback.
        log: Processing log receiving one entry per event.
        progress: Show a progress bar.
        require: Raise :class:`~hepwb.exceptions.CorpusNotFoundError` when no document results.

    Files that fail are logged (``log``) with an error code and skipped; the others continue.
    """
    from tqdm.auto import tqdm

    layout = layout or Layout.default()
    log = log or ProcessingLog()
    files = plan_corpus(corpus, max_docs=max_docs, only=only, prefer_latex=prefer_latex, log=log)
    docs = []
    for item in tqdm(files, desc="converting", unit="doc", disable=not progress):
        doc = convert_source(item, layout, log)
        if doc is not None:
            docs.append(doc)
    if require and not docs:
        msg = f"no document of corpus {corpus or '(default)'} could be converted; see the processing log"
        raise CorpusNotFoundError(msg)
    return docs
