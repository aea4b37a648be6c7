"""Write a chunk set in the HEPilot output layout.

::

 <root>/
   documents/{source_type}_{document_id}/
     full_document.md  document_metadata.json  processing_metadata.json
     references.json  (CSL-JSON bibliography)
     blocks.json  (hepwb extension: kind, page(s) and offsets of every block)
     figures.json  figures/figure_3.png ...  xrefs.json  front_matter.json
         (hepwb extensions written by :func:`hepwb.processing.links.write_link_files`)
     chunks/chunk_0001.md  chunk_0001_metadata.json ...   (file numbers are chunk_index + 1)
   catalog.json  processing_log.json  [adapter_config.json]

Content lives only in ``.md`` files; JSON files hold metadata only (HEPilot MUST).
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path

from hepwb import __version__
from hepwb.files.io import atomic_write_text, json_bytes, write_json, write_private_files
from hepwb.hepilot.log import utc_now
from hepwb.hepilot.records import (
    CatalogEntry,
    ChunkMetadata,
    ChunkOutput,
    ContentFeatures,
    DocumentMetadata,
    HepilotCatalog,
    OverlapInfo,
    ProcessingMetadata,
)
from hepwb.types import Chunk, Document, JSONObject

__all__ = [
    "chunk_output_record",
    "document_dir",
    "document_metadata",
    "source_type_of",
    "write_catalog",
    "write_chunk_files",
    "write_document",
    "write_document_files",
]

_HEADING = re.compile(r"^#{1,6}\s", re.MULTILINE)
_LIST = re.compile(r"(?:^|\n\n)\s*(?:[-*+]|\d+[.)])\s", re.MULTILINE)
_TABLE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*\|", re.MULTILINE)
_DISPLAY = re.compile(r"\$\$.+?\$\$", re.DOTALL)
_INLINE = re.compile(r"(?<![\\$])\$(?!\$)[^$\n]+?(?<!\\)\$")


def source_type_of(doc: Document) -> str:
    """``arxiv`` for documents with an arXiv identifier, else ``other``."""
    return "arxiv" if doc.meta.get("arxiv") else "other"


def document_dir(root: Path, doc: Document) -> Path:
    """The document's output folder ``documents/{source_type}_{document_id}``."""
    return root / "documents" / f"{source_type_of(doc)}_{doc.document_id}"


def _original_url(doc: Document) -> str:
    meta = doc.meta
    if meta.get("arxiv"):
        return f"https://arxiv.org/abs/{meta['arxiv']}"
    if meta.get("repo") and meta.get("commit") and meta.get("src"):
        return f"https://github.com/{meta['repo']}/blob/{meta['commit']}/{meta['src']}"
    if meta.get("url"):
        return str(meta["url"])
    return Path(str(meta.get("source_file", doc.label))).resolve().as_uri()


def document_metadata(doc: Document) -> DocumentMetadata:
    """Bibliographic and provenance record of ``doc``."""
    meta = doc.meta
    front = meta.get("front_matter") or {}
    authors = meta.get("authors") or front.get("authors")
    if isinstance(authors, str):
        authors = [a.strip() for a in re.split(r"[,;]|\band\b", authors.split(":", 1)[-1]) if a.strip()]
    cats = meta.get("category")
    collab = meta.get("collaboration") or front.get("collaboration") or None
    if collab and "collaboration" not in str(collab).lower():
        collab = f"{collab} Collaboration"
    raw_authors = str(meta.get("authors") or "")
    if not collab and (m := re.match(r"^(?:The\s+)?([A-Z0-9][\w-]*)\s+Collaboration", raw_authors)):
        collab = f"{m.group(1)} Collaboration"
    published = str(meta.get("published") or "")[:10]
    return DocumentMetadata(
        document_id=doc.document_id,
        source_type=source_type_of(doc),
        original_url=_original_url(doc),
        title=doc.title,
        file_hash=str(meta.get("file_hash", "")),
        file_size=int(meta.get("file_size", len(doc.markdown.encode()))),
        processing_timestamp=str(meta.get("processing_timestamp") or utc_now()),
        adapter_version=__version__,
        local_path=str(meta["source_file"]) if meta.get("source_file") else None,
        authors=authors or None,
        subject_categories=[c.strip() for c in str(cats).split("/") if c.strip()] if cats else None,
        language="en",
        collaboration=collab,
        publication_date=published if re.fullmatch(r"\d{4}-\d{2}-\d{2}", published) else None,
        experiment_tags=list(meta.get("experiments") or []) or None,
        license=str(meta["license"]) if meta.get("license") else None,
    )


def _features(text: str) -> ContentFeatures:
    display = _DISPLAY.findall(text)
    inline = _INLINE.findall(_DISPLAY.sub("", text))
    return ContentFeatures(
        heading_count=len(_HEADING.findall(text)),
        list_count=len(_LIST.findall(text)),
        table_count=len(_TABLE.findall(text)),
        equation_count=len(display) + len(inline),
    )


def chunk_output_record(chunk: Chunk, total: int, next_overlap: bool) -> ChunkOutput:
    """The ``chunk_output`` record of ``chunk`` (content included; not written as JSON)."""
    return ChunkOutput(
        chunk_id=chunk.chunk_id,
        document_id=chunk.document_id,
        chunk_index=chunk.index,
        total_chunks=total,
        content=chunk.text,
        token_count=chunk.token_count,
        chunk_type=chunk.chunk_type
        if chunk.chunk_type in ("text", "table", "equation", "mixed")
        else "mixed",
        section_path=list(chunk.section_path),
        has_overlap_previous=chunk.overlap_tokens > 0,
        has_overlap_next=next_overlap,
        content_features=_features(chunk.text),
    )


def _chunk_metadata(chunk: Chunk, total: int, next_overlap_tokens: int) -> ChunkMetadata:
    feats = _features(chunk.text)
    return ChunkMetadata(
        chunk_id=chunk.chunk_id,
        document_id=chunk.document_id,
        chunk_index=chunk.index,
        total_chunks=total,
        token_count=chunk.token_count,
        section_hierarchy=list(chunk.section_path),
        character_count=len(chunk.text),
        chunk_type=chunk.chunk_type,
        contains_equations=feats.equation_count > 0,
        contains_tables=feats.table_count > 0,
        overlap_info=OverlapInfo(
            has_previous_overlap=chunk.overlap_tokens > 0,
            has_next_overlap=next_overlap_tokens > 0,
            # overlap with the adjacent chunks: the larger of the two shared regions
            overlap_token_count=max(chunk.overlap_tokens, next_overlap_tokens),
        ),
    )


def write_document(root: Path, doc: Document, chunks: list[Chunk]) -> CatalogEntry:
    """Write one document's folder (replacing an older one) and return its catalog entry."""
    write_document_files(document_dir(root, doc), doc)
    return write_chunk_files(root, doc, chunks)


def write_document_files(out: Path, doc: Document) -> None:
    """The files of a document's folder that do not depend on its chunks (the same in every chunk set).

    ``full_document.md``, ``document_metadata.json``, ``processing_metadata.json``, ``references.json`` and
    ``blocks.json``.
    """
    atomic_write_text(out / "full_document.md", doc.markdown)
    write_json(out / "document_metadata.json", document_metadata(doc).dump())
    proc = ProcessingMetadata(
        processor_used=str(doc.meta.get("processor", f"hepwb/{__version__}")),
        processing_timestamp=str(doc.meta.get("processing_timestamp") or utc_now()),
        processing_duration=float(doc.meta.get("processing_duration", 0.0)),
        conversion_warnings=list(doc.meta.get("conversion_warnings", [])),
    )
    write_json(out / "processing_metadata.json", proc.dump())
    # bibliography as CSL-JSON (an empty list when none was recognised)
    refs = doc.meta.get("inspire_references") or doc.meta.get("references") or []
    write_json(out / "references.json", list(refs))
    # hepwb extension (no HEPilot schema): every block's kind, page(s) and offsets in full_document.md
    write_json(
        out / "blocks.json",
        [
            {
                "kind": b.kind,
                "start": b.start,
                "end": b.end,
                "page": b.page,
                "page_end": b.page_end or b.page,
                "level": b.level,
            }
            for b in doc.blocks
        ],
    )


def write_chunk_files(root: Path, doc: Document, chunks: list[Chunk]) -> CatalogEntry:
    """Write the ``chunks/`` folder of a document's folder (replacing an older one); its catalog entry."""
    out = document_dir(root, doc)
    chunk_dir = out / "chunks"
    if chunk_dir.exists():
        shutil.rmtree(chunk_dir)  # stale chunk files from an earlier configuration must not linger
    total = len(chunks)

    def files() -> Iterator[tuple[str, bytes]]:
        for i, ch in enumerate(chunks):
            nxt = chunks[i + 1].overlap_tokens if i + 1 < total else 0
            stem = f"chunk_{ch.index + 1:04d}"
            yield f"{stem}.md", ch.text.encode("utf-8")
            yield f"{stem}_metadata.json", json_bytes(_chunk_metadata(ch, total, nxt).dump())

    # inside the chunk set's private build folder, published whole (hepwb.files.io.write_private_text)
    write_private_files(chunk_dir, files())
    return CatalogEntry(
        document_id=doc.document_id,
        source_type=source_type_of(doc),
        title=doc.title,
        chunk_count=total,
        file_path=out.relative_to(root).as_posix(),
    )


def write_catalog(root: Path, entries: list[CatalogEntry]) -> JSONObject:
    """Write ``catalog.json`` for ``entries`` and return it."""
    dist: dict[str, int] = {}
    for e in entries:
        key = e.source_type if e.source_type in ("arxiv", "indico", "internal_notes", "twiki") else "other"
        dist[key] = dist.get(key, 0) + 1
    cat = HepilotCatalog(
        creation_timestamp=utc_now(),
        adapter_version=__version__,
        total_documents=len(entries),
        total_chunks=sum(e.chunk_count for e in entries),
        documents=sorted(entries, key=lambda e: e.file_path),
        source_distribution=dist,
    ).dump()
    write_json(root / "catalog.json", cat)
    return cat
