"""Discovery and acquisition outputs in the HEPilot layout, with verification and resume.

:func:`discovered` turns arXiv/INSPIRE records into HEPilot discovery entries (``document_id`` =
UUID from the arXiv id, stable across runs); :func:`acquire` downloads each PDF (and optionally the
LaTeX source tarball, extracted safely into ``tex/``), verifies it (SHA-256 and SHA-512, ``%PDF-``
magic, minimum size) and writes ``acquisition_output.json``; :func:`write_sidecar` writes the
``papers.json`` that carries the arXiv/INSPIRE metadata into processing. A re-run skips documents
whose file is on disk with the recorded SHA-256; a failure is logged (``processing_log.json``: trace
id, component, error code, recovery action), leaves no file under its final name and does not stop
the other documents.
"""

from __future__ import annotations

import gzip
import io
import shutil
import tarfile
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from hepwb import defaults
from hepwb.acquisition.arxiv import ArxivRecord
from hepwb.acquisition.folder import corpus_files, load_sidecar
from hepwb.acquisition.http import Download, PoliteClient, file_hashes
from hepwb.exceptions import ProcessingError
from hepwb.files.io import read_json_object, write_json
from hepwb.hepilot.log import ProcessingLog, utc_now
from hepwb.text.ids import content_uuid
from hepwb.types import JSONObject

__all__ = [
    "MIN_PDF_BYTES",
    "acquire",
    "discovered",
    "discovered_inspire",
    "discovered_local",
    "discovery_output",
    "extract_source",
    "write_sidecar",
]

MIN_PDF_BYTES = 1024


def discovered(
    records: Iterable[ArxivRecord], estimated_size: int = defaults.ACQUIRE_ESTIMATED_BYTES
) -> list[JSONObject]:
    """HEPilot discovery entries (plus hepwb's ``arxiv`` block) for arXiv records."""
    stamp = utc_now()
    out = []
    for r in records:
        out.append(
            {
                "document_id": content_uuid("arxiv", r.arxiv_id),
                "source_type": "arxiv",
                "source_url": r.pdf_url,
                "title": r.title or r.arxiv_id,
                "authors": r.authors,
                "discovery_timestamp": stamp,
                "estimated_size": int(estimated_size),
                "content_type": "application/pdf",
                "arxiv": {
                    "id": r.arxiv_id,
                    "version": r.version,
                    "categories": r.categories,
                    "published": r.published,
                    "updated": r.updated,
                    "doi": r.doi,
                    "versions": r.versions,
                    "withdrawn": r.withdrawn,
                    "source_url": r.source_url,
                },
            }
        )
    return out


def discovered_local(folder: str | Path, max_results: int | None = None) -> list[JSONObject]:
    """Discovery entries for the PDFs of a local folder (metadata from its ``papers.json`` sidecar)."""
    folder = Path(folder)
    side = load_sidecar(folder)
    stamp = utc_now()
    out = []
    used: set[str] = set()
    for path in corpus_files(folder, max_results):
        if path.suffix.lower() != ".pdf":
            continue
        meta = side.get(path.name) or {}
        ax = str(meta.get("arxiv") or "")
        name = local_name(path, ax, used)
        authors = meta.get("authors") or []
        out.append(
            {
                "document_id": content_uuid("arxiv", ax) if ax else content_uuid("file", path.name),
                "source_type": "arxiv" if ax else "other",
                "source_url": path.resolve().as_uri(),
                "title": str(meta.get("title") or path.stem),
                "authors": [authors] if isinstance(authors, str) else list(authors),
                "discovery_timestamp": stamp,
                "estimated_size": path.stat().st_size,
                "content_type": "application/pdf",
                "name": name,
                "arxiv": {"id": ax, "categories": [str(meta.get("category") or "")]} if ax else {},
            }
        )
    return out


def discovered_inspire(records: Iterable[Any]) -> list[JSONObject]:
    """Discovery entries for INSPIRE records that have an arXiv eprint (the PDF comes from arXiv)."""
    out = []
    for rec in records:
        if not rec.arxiv_id:
            continue
        (entry,) = discovered([ArxivRecord(rec.arxiv_id, title=rec.title, authors=rec.authors,
                                           categories=rec.arxiv_categories, published=rec.date)])  # fmt: skip
        entry["inspire"] = {
            "recid": rec.recid,
            "collaborations": rec.collaborations,
            "experiments": rec.experiments,
            "texkeys": rec.texkeys,
            "citation_count": rec.citation_count,
            "dois": rec.dois,
            "license": rec.license,
            "references": [_csl(r, i) for i, r in enumerate(rec.references)],
        }
        out.append(entry)
    return out


def _csl(ref: JSONObject, i: int) -> JSONObject:
    """An INSPIRE reference as a CSL-JSON item."""
    item: JSONObject = {"id": f"ref{i + 1}", "type": "article-journal"}
    title = (ref.get("title") or {}).get("title")
    if title:
        item["title"] = title
    authors = [a.get("full_name", "") for a in ref.get("authors") or []]
    if authors:
        item["author"] = [
            {"family": n.split(",")[0].strip(), "given": n.split(",", 1)[1].strip()}
            if "," in n
            else {"literal": n}
            for n in authors
        ]
    pub = ref.get("publication_info") or {}
    if pub.get("journal_title"):
        item["container-title"] = pub["journal_title"]
    if pub.get("year"):
        item["issued"] = {"date-parts": [[int(pub["year"])]]}
    if ref.get("dois"):
        item["DOI"] = ref["dois"][0]
    eprint = (ref.get("arxiv_eprint") or "").strip()
    if eprint:
        item["URL"] = f"https://arxiv.org/abs/{eprint}"
    return item


def write_sidecar(entries: Sequence[JSONObject], acquisition: JSONObject, out_dir: str | Path) -> Path:
    """``papers.json`` beside ``pdf/`` so ``hepwb ingest --corpus <out>/pdf`` gets the metadata."""
    out = Path(out_dir)
    ok = {d["document_id"] for d in acquisition["acquired_documents"] if d["validation_status"] != "failed"}
    papers = []
    for e in entries:
        if e["document_id"] not in ok:
            continue
        ax, ins = e.get("arxiv", {}), e.get("inspire", {})
        name = e.get("name") or _safe_name(ax.get("id") or e["document_id"])
        paper = {
            "pid": name,
            "pdf": f"pdf/{name}.pdf",
            "arxiv": ax.get("id"),
            "title": e["title"],
            "authors": e.get("authors") or [],
            "category": "/".join(ax.get("categories") or []),
            "published": ax.get("published", "")[:10],
            "license": ins.get("license") or ax.get("license") or "",
            "collaboration": (ins.get("collaborations") or [""])[0],
            "experiments": ins.get("experiments") or [],
            "inspire_recid": ins.get("recid"),
            "inspire_references": ins.get("references") or [],
            "document_id": e["document_id"],
        }
        if (out / "tex" / name).is_dir():
            paper["tex"] = name
        papers.append({k: v for k, v in paper.items() if v not in (None, "", [])})
    path = out / "papers.json"
    write_json(path, {"papers": papers})
    return path


def discovery_output(entries: Sequence[JSONObject], client: PoliteClient | None = None) -> JSONObject:
    """The ``discovery_output.json`` document (schema fields only; hepwb extras stay in entries)."""
    keep = ("document_id", "source_type", "source_url", "title", "authors", "discovery_timestamp",
            "estimated_size", "content_type")  # fmt: skip
    doc: JSONObject = {"discovered_documents": [{k: e[k] for k in keep if k in e} for e in entries]}
    if client is not None and client.rate_limit:
        doc["rate_limit_status"] = client.rate_limit
    return doc


def _safe_name(arxiv_id: str) -> str:
    return arxiv_id.replace("/", "_")


def local_name(path: Path, arxiv_id: str, used: set[str]) -> str:
    """A file name (without suffix) for ``path`` that no other source of this acquisition has.

    The arXiv id when known, else the file name after its label (``P01_dvcs.pdf`` → ``dvcs``); when that
    is empty or already taken, the whole file stem, then with ``-2``, ``-3`` …: two sources never share a
    file, and no name starts with a dot.

    Example:
        >>> used = set()
        >>> [local_name(Path(n), "", used) for n in ("A_same.pdf", "B_same.pdf", "G_.pdf", "A_same.PDF")]
        ['same', 'B_same', 'G_', 'A_same']
    """
    import re

    def clean(text: str) -> str:
        return re.sub(r"[^A-Za-z0-9._+-]+", "_", text).lstrip(".")

    first = clean(_safe_name(arxiv_id) if arxiv_id else path.stem.split("_", 1)[-1])
    name = first if first and first.lower() not in used else clean(path.stem) or "paper"
    base, n = name, 2
    while name.lower() in used:
        name, n = f"{base}-{n}", n + 1
    used.add(name.lower())
    return name


def extract_source(data: bytes, dest: Path) -> list[str]:
    """Extract an arXiv e-print (tar.gz, or a single gzipped .tex) into ``dest``; returns member names.

    Absolute paths, ``..`` components, links and special files are refused (nothing is extracted);
    extraction goes to a temporary folder renamed into place only when complete.
    """
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".extract-", dir=dest.parent))
    try:
        if tarfile.is_tarfile(io.BytesIO(data)):
            with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as tar:
                members = tar.getmembers()
                for m in members:
                    if (
                        m.name.startswith(("/", "\\"))
                        or ".." in Path(m.name).parts
                        or not (m.isfile() or m.isdir())
                    ):
                        msg = (
                            f"source {dest.name}: refused member {m.name!r} (absolute, '..', link or device)"
                        )
                        raise ProcessingError(msg, code="UNSAFE_ARCHIVE")
                tar.extractall(tmp, filter="data")
                names = [m.name for m in members if m.isfile()]
        else:
            try:
                text = gzip.decompress(data)
            except (OSError, EOFError) as exc:
                msg = f"source {dest.name}: neither a tarball nor gzipped TeX ({exc})"
                raise ProcessingError(msg, code="BAD_ARCHIVE") from exc
            (tmp / "main.tex").write_bytes(text)
            names = ["main.tex"]
        if dest.exists():
            shutil.rmtree(dest)
        tmp.replace(dest)
        return names
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _copy_local(uri: str, dest: Path) -> Any:
    """Copy a ``file:`` URI like a download: via ``.part``, hashed, renamed when complete."""
    from urllib.parse import unquote, urlparse

    src = Path(unquote(urlparse(uri).path))
    if not src.is_file():
        msg = f"local file {src} not found"
        raise ProcessingError(msg, code="LOCAL_MISSING")
    part = dest.with_name(dest.name + ".part")
    shutil.copyfile(src, part)
    sha256, sha512 = file_hashes(part)
    part.replace(dest)
    return Download(dest, dest.stat().st_size, sha256, sha512, 1)


def _previous(path: Path) -> dict[str, JSONObject]:
    if not path.is_file():
        return {}
    return {
        e["document_id"]: e
        for e in read_json_object(path, "acquisition record").get("acquired_documents", [])
    }


def acquire(
    entries: Sequence[JSONObject],
    out_dir: str | Path,
    client: PoliteClient,
    *,
    sources: bool = False,
    log: ProcessingLog | None = None,
) -> JSONObject:
    """Download, verify and record every discovered document (see the module docstring)."""
    out = Path(out_dir)
    (out / "pdf").mkdir(parents=True, exist_ok=True)
    manifest = out / "acquisition_output.json"
    before = _previous(manifest)
    log = log or ProcessingLog()
    results = []
    for e in entries:
        doc_id = e["document_id"]
        name = e.get("name") or _safe_name(e.get("arxiv", {}).get("id") or doc_id)
        dest = out / "pdf" / f"{name}.pdf"
        old = before.get(doc_id)
        if old and old.get("validation_status") == "passed" and dest.is_file():
            # HEPilot: verify SHA-256 *and* SHA-512 before trusting a file already on disk
            if file_hashes(dest) == (old["file_hash_sha256"], old.get("file_hash_sha512")):
                results.append(old)
                log.add(
                    "info",
                    "acquisition",
                    f"{name}: verified copy on disk, skipped",
                    document_id=doc_id,
                    detail=True,
                )
                continue
            log.add("warning", "acquisition", f"{name}: the file on disk does not match its recorded "
                    "SHA-256/SHA-512; downloading it again", document_id=doc_id)  # fmt: skip
        results.append(_one(e, dest, client, log, sources))
    doc = {"acquired_documents": results}
    write_json(manifest, doc)
    log.save(out / "processing_log.json")
    return doc


def _one(e: JSONObject, dest: Path, client: PoliteClient, log: ProcessingLog, sources: bool) -> JSONObject:
    doc_id = e["document_id"]
    record: JSONObject = {
        "document_id": doc_id,
        "local_path": str(dest),
        "file_hash_sha256": "0" * 64,
        "file_hash_sha512": "0" * 128,
        "file_size": 0,
        "download_timestamp": utc_now(),
        "download_status": "failed",
        "retry_count": 0,
        "validation_status": "failed",
    }
    try:
        got = (
            _copy_local(e["source_url"], dest)
            if e["source_url"].startswith("file:")
            else client.download(e["source_url"], dest)
        )
        record.update(
            file_hash_sha256=got.sha256, file_hash_sha512=got.sha512, file_size=got.size,
            retry_count=got.attempts - 1, download_status="success",
        )  # fmt: skip
        head = dest.read_bytes()[:5]
        if head != b"%PDF-" or got.size < MIN_PDF_BYTES:
            dest.unlink(missing_ok=True)
            msg = f"{dest.name}: not a PDF ({head!r}, {got.size} bytes); removed"
            raise ProcessingError(msg, code="NOT_A_PDF")
        record["validation_status"] = "passed"
        log.add(
            "info",
            "acquisition",
            f"{dest.name}: {got.size} bytes, sha256 {got.sha256[:12]}",
            document_id=doc_id,
            detail=True,
        )
        src_url = e.get("arxiv", {}).get("source_url")
        if sources and src_url:
            tar = dest.with_suffix(".src")
            try:
                client.download(src_url, tar)
                names = extract_source(tar.read_bytes(), dest.parent.parent / "tex" / dest.stem)
                log.add(
                    "info",
                    "acquisition",
                    f"{dest.stem}: {len(names)} source files",
                    document_id=doc_id,
                    detail=True,
                )
            except ProcessingError as exc:
                record["validation_status"] = "warning"
                log.add("warning", "acquisition", str(exc), document_id=doc_id, error_code=exc.code,
                        recovery_action="source skipped; the PDF is used")  # fmt: skip
            finally:
                tar.unlink(missing_ok=True)
    except ProcessingError as exc:
        log.add("error", "acquisition", str(exc), document_id=doc_id, error_code=exc.code,
                recovery_action="document skipped; re-run to retry (verified files are kept)")  # fmt: skip
    return record
