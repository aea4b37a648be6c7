"""Find a corpus, convert its files to documents (cached), and attach sidecar metadata.

A corpus is a folder of PDFs (and/or ``.md`` files). Bibliographic metadata comes from an optional
``papers.json`` in the folder or its parent (``{"papers": [{"pid", "pdf", "title", "authors", …}]}``,
the format of ``../shared/corpus/papers/papers.json``); an entry's ``"tex"`` names its LaTeX source
folder under ``tex/`` beside that file (see :mod:`hepwb.pipeline.sources`). Converted documents are
cached under ``data/interim/documents`` keyed by the input's SHA-256, the converter input and a
fingerprint of the converter's code, so a second run reuses them and a converter change invalidates them.
"""

from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from hepwb.exceptions import ConfigError, CorpusNotFoundError, ProcessingError
from hepwb.hepilot.log import ProcessingLog, utc_now
from hepwb.ids import code_fingerprint, file_sha256
from hepwb.io import atomic_write_text, read_json, write_json
from hepwb.paths import Layout, shared_dir
from hepwb.pipeline.sources import convert, label_of, source_key
from hepwb.types import Block, Document

_log = logging.getLogger("hepwb.corpus")

__all__ = ["corpus_files", "default_corpus", "default_questions", "ingest", "load_sidecar", "resolve_corpus"]

SUFFIXES = (".pdf", ".md")


def default_corpus() -> Path | None:
    """``$HEPWB_CORPUS``, else the shared 32-paper corpus when it is present."""
    env = os.environ.get("HEPWB_CORPUS")
    if env:
        return Path(env)
    cand = shared_dir() / "corpus" / "papers" / "pdf"
    return cand if cand.is_dir() else None


def default_questions() -> Path | None:
    """``$HEPWB_QUESTIONS``, else the shared hepqa-dev set when present."""
    env = os.environ.get("HEPWB_QUESTIONS")
    if env:
        return Path(env)
    cand = shared_dir() / "eval" / "hepqa-dev.jsonl"
    return cand if cand.is_file() else None


def resolve_corpus(corpus: str | Path | None) -> Path:
    """Return the corpus folder or raise :class:`CorpusNotFoundError` naming the option to set."""
    path = Path(corpus) if corpus else default_corpus()
    if path is None:
        msg = (
            "no corpus configured and none found: pass --corpus DIR (CLI), corpus='DIR' (notebook "
            "parameter) or set HEPWB_CORPUS to a folder of PDF files"
        )
        raise CorpusNotFoundError(msg)
    if not path.is_dir():
        msg = f"corpus folder {path} does not exist: set --corpus / HEPWB_CORPUS to a folder of PDF files"
        raise CorpusNotFoundError(msg)
    return path


def corpus_files(corpus: Path, max_docs: int | None = None, only: list[str] | None = None) -> list[Path]:
    """Supported files of ``corpus`` in name order (only labels ``only``; the first ``max_docs``)."""
    files = sorted(p for p in corpus.iterdir() if p.is_file() and p.suffix.lower() in SUFFIXES)
    if not files:
        msg = f"corpus folder {corpus} holds no .pdf or .md files; point --corpus at a folder of papers"
        raise CorpusNotFoundError(msg)
    if only is not None:
        files = [p for p in files if label_of(p) in set(only)]
        if not files:
            msg = f"no file of {corpus} has a label in {only}; labels are the file-name prefix before '_'"
            raise CorpusNotFoundError(msg)
    if max_docs is not None:
        if max_docs < 1:
            msg = f"max_docs must be >= 1 or None, got {max_docs}"
            raise ConfigError(msg)
        files = files[:max_docs]
    return files


def load_sidecar(corpus: Path) -> dict[str, dict[str, Any]]:
    """Metadata from ``papers.json`` beside or above the corpus, keyed by file name and by ``pid``."""
    for cand in (corpus / "papers.json", corpus.parent / "papers.json"):
        if cand.is_file():
            try:
                data = read_json(cand)
            except json.JSONDecodeError as exc:
                msg = f"{cand} is not valid JSON ({exc}); fix or remove it"
                raise ConfigError(msg) from None
            papers = data.get("papers", data) if isinstance(data, dict) else data
            out: dict[str, dict[str, Any]] = {}
            for p in papers if isinstance(papers, list) else []:
                if not isinstance(p, dict):
                    _log.warning("%s: ignoring an entry that is not an object: %.60r", cand, p)
                    continue
                if p.get("tex"):
                    p = {**p, "tex_dir": str(cand.parent / "tex" / str(p["tex"]))}
                if p.get("pdf"):
                    out[Path(p["pdf"]).name] = p
                elif p.get("pid"):  # entries naming their file are matched by file name only
                    out[str(p["pid"])] = p
            return out
    return {}


def _load_cached(folder: Path) -> Document:
    rec = read_json(folder / "document.json")
    markdown = (folder / "full_document.md").read_text(encoding="utf-8")
    return Document(
        document_id=rec["document_id"],
        label=rec["label"],
        markdown=markdown,
        blocks=tuple(Block(**b) for b in rec["blocks"]),
        meta=rec["meta"],
    )


def _store(folder: Path, doc: Document) -> None:
    atomic_write_text(folder / "full_document.md", doc.markdown)
    write_json(
        folder / "document.json",
        {
            "document_id": doc.document_id,
            "label": doc.label,
            "blocks": [asdict(b) for b in doc.blocks],
            "meta": doc.meta,
        },
    )


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
    folder = resolve_corpus(corpus)
    sidecar = load_sidecar(folder)
    fp = code_fingerprint("processing")
    docs: list[Document] = []
    seen: dict[str, str] = {}
    for path in tqdm(
        corpus_files(folder, max_docs, only), desc="converting", unit="doc", disable=not progress
    ):
        meta = dict(sidecar.get(path.name) or sidecar.get(label_of(path)) or {})
        label = str(meta.get("pid") or label_of(path))
        if label in seen:  # e.g. my_a.pdf and my_b.pdf: fall back to the whole file name
            log.add(
                "warning",
                "ProcessingPipeline",
                f"label {label!r} of {path.name} is already used by "
                f"{seen[label]}; using {path.stem!r} (set a unique 'pid' in papers.json to choose)",
                file_path=str(path),
            )
            label = path.stem
        seen[label] = path.name
        meta["pid"] = label
        try:
            sha = file_sha256(path)
        except OSError as exc:
            log.add(
                "error",
                "ProcessingPipeline",
                f"cannot read {path}: {exc}",
                error_code="PROC_IO",
                recovery_action="skipped document; check the file's permissions",
                file_path=str(path),
            )
            continue
        src = source_key(path, meta, prefer_latex)
        cache = layout.interim / f"{label}-{sha[:16]}-{fp}-{src}"
        if (cache / "document.json").is_file():
            docs.append(_load_cached(cache))
            continue
        t0 = time.perf_counter()
        stamp = utc_now()
        try:
            doc = convert(path, meta, prefer_latex=prefer_latex)
        except ProcessingError as exc:
            log.add(
                "error",
                "ProcessingPipeline",
                str(exc),
                error_code=exc.code,
                recovery_action="skipped document; the others continue",
                file_path=str(path),
            )
            continue
        except Exception as exc:  # a converter bug must not stop the corpus
            log.add(
                "error",
                "ProcessingPipeline",
                f"unexpected failure converting {path}: {exc!r}",
                error_code="PROC_UNEXPECTED",
                recovery_action="skipped document; please report it",
                file_path=str(path),
            )
            continue
        meta_full = {
            **doc.meta,
            "processing_timestamp": stamp,
            "processing_duration": round(time.perf_counter() - t0, 4),
        }
        doc = Document(doc.document_id, doc.label, doc.markdown, doc.blocks, meta_full)
        _store(cache, doc)
        log.add(
            "info",
            "ProcessingPipeline",
            f"converted {path.name}",
            document_id=doc.document_id,
            file_path=str(path),
            pages=doc.meta.get("pages"),
        )
        docs.append(doc)
    if require and not docs:
        msg = f"no document of corpus {corpus or '(default)'} could be converted; see the processing log"
        raise CorpusNotFoundError(msg)
    return docs
