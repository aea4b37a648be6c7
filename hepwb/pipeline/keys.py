"""Stage keys: what each stage's artefact depends on, computed from the inputs without doing the work.

Every artefact is keyed by the hash of its configuration and of its inputs, so it is computed once and
reused by every run that shares it, and a changed input or stage code gives a new key:

=============  ============================================================================  ==============
stage          key                                                                           unit
=============  ============================================================================  ==============
convert        label, file SHA-256, converter input (PDF / LaTeX tree hash), converter code    document
chunk set      chunker name + parameters, chunking/writer/converter code, conversion keys      chunker config
embeddings     (model, SHA-256 of the text)                                                  unique text
index          chunk set id, embedding model, index code                                     chunk set × model
cell           run configuration, chunk set, index, question-file SHA-256, evaluation code    cell
=============  ============================================================================  ==============

Nothing here loads a model or converts a document: a sweep plans (and a rerun skips) in well under a
second.

Example:
    >>> key = chunkset_key("hepilot", {"chunk_size": 512, "chunk_overlap": 0.1}, ["P01-ab-cd-pdf"])
    >>> chunkset_id_of("hepilot", {"chunk_size": 512, "chunk_overlap": 0.1}, key)[:20]
    'hepilot-cs512-ov0.1-'
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from hepwb.acquisition.folder import corpus_files, label_of, load_sidecar, resolve_corpus
from hepwb.hepilot.log import ProcessingLog
from hepwb.ids import code_fingerprint, file_sha256, short_hash
from hepwb.index.chunk_store import index_key
from hepwb.models.tokenizers import model_identity
from hepwb.names import is_plain_name
from hepwb.pipeline.sources import source_key, text_too_large
from hepwb.plaintext import plain
from hepwb.retrieval.rerank import cross_encoder_name
from hepwb.types import JSONObject

__all__ = [
    "STAGE_PACKAGES",
    "SourceFile",
    "cell_key",
    "cell_name",
    "chunkset_id_of",
    "chunkset_key",
    "index_key",
    "labelled_files",
    "plain_label",
    "plan_corpus",
    "retriever_label",
]

STAGE_PACKAGES = (
    "processing",
    "models",
    "chunking",
    "hepilot",
    "index",
    "retrieval",
    "evaluation",
    "pipeline",
)
"""hepwb's packages whose code a run's results depend on (their fingerprints go into records and fit keys)."""

_log = logging.getLogger("hepwb.corpus")
CELL_CODE = ("retrieval", "evaluation", "pipeline", "defaults")
"""Sub-packages (and the defaults module: a retriever's default options) a cell's results depend on."""


@dataclass(frozen=True)
class SourceFile:
    """One corpus file as the converter will see it."""

    path: Path
    label: str
    meta: JSONObject = field(hash=False)
    sha256: str
    source: str  # "pdf", "md" or "tex<hash of the LaTeX tree>"

    @property
    def conversion_key(self) -> str:
        """The convert stage's key (also the name of its cache folder under ``data/interim``)."""
        return f"{self.label}-{self.sha256[:16]}-{code_fingerprint('processing')}-{self.source}"


def safe_label(label: str) -> bool:
    """Whether ``label`` can name a folder: no path separator, no leading dot, nothing but a plain name.

    Example:
        >>> [safe_label(x) for x in ("P01", "hep-ex_0106068", "../../x", ".hidden", "a/b", "")]
        [True, True, False, False, False, False]
    """
    return is_plain_name(label)


def plain_label(text: str) -> str:
    r"""A plain label made of ``text``: control sequences dropped, other characters ``-`` (``doc`` if none).

    Example:
        >>> plain_label("P07\x1b]52;c;SGk=\x07X"), plain_label("../../x"), plain_label("\x1b[2J")
        ('P07X', 'x', 'doc')
    """
    label = re.sub(r"[^A-Za-z0-9._+-]+", "-", plain(text))
    label = re.sub(r"\.{2,}", ".", label).strip("-._+")[:64].rstrip("-._+")
    return label if safe_label(label) else "doc"


def labelled_files(
    corpus: str | Path | None,
    *,
    max_docs: int | None = None,
    only: list[str] | None = None,
    log: ProcessingLog | None = None,
) -> list[tuple[Path, JSONObject, str]]:
    """The files of ``corpus`` with their ``papers.json`` metadata and the label each document gets.

    A label is the sidecar's ``pid`` or the file-name prefix. A ``pid`` that is not a plain name falls back
    to the file-name prefix; a prefix that is not one to :func:`plain_label` of it; a label another file
    already took to the file name (or, when that is not plain, the label and a hash of the name). Each
    fallback is one warning (in ``log`` when given). Only the folder listing and the sidecar are read, so
    a widget can list thousands of papers at once.
    """

    def warn(msg: str, path: Path) -> None:
        if log is None:
            _log.warning(msg)
        else:
            log.add("warning", "ProcessingPipeline", msg, file_path=plain(str(path)))

    folder = resolve_corpus(corpus)
    sidecar = load_sidecar(folder)
    seen: dict[str, str] = {}
    out: list[tuple[Path, JSONObject, str]] = []
    for path in corpus_files(folder, max_docs, only):
        meta = dict(sidecar.get(path.name) or sidecar.get(label_of(path)) or {})
        name = plain(path.name)
        prefix = label_of(path)
        label = str(meta.get("pid") or prefix)
        if not safe_label(label):  # a label names folders: it must not climb out of them
            fallback = prefix if safe_label(prefix) else plain_label(prefix)
            rule = "letters, digits, '.', '_', '+' or '-'"
            if meta.get("pid"):
                msg = (
                    f"papers.json 'pid' {plain(label)!r} of {name} is not a plain name; labelled "
                    f"{fallback!r} instead (give 'pid' {rule} only)"
                )
            else:
                shown = f"{name!r}" + (" (control characters removed)" if name != path.name else "")
                msg = (
                    f"file name {shown} does not start with a plain label; labelled {fallback!r} instead "
                    f"(rename it to start with {rule}, or give it a 'pid' in papers.json)"
                )
            warn(msg, path)
            label = fallback
        if label in seen:  # e.g. my_a.pdf and my_b.pdf: fall back to the whole file name
            other = path.stem if safe_label(path.stem) else f"{label}-{short_hash(path.name, 8)}"
            msg = (
                f"label {label!r} of {name} is already used by {seen[label]}; using "
                f"{other!r} (set a unique 'pid' in papers.json to choose)"
            )
            if log is not None:
                log.add("warning", "ProcessingPipeline", msg, file_path=plain(str(path)))
            label = other
        seen[label] = name
        meta["pid"] = label
        out.append((path, meta, label))
    return out


def plan_corpus(
    corpus: str | Path | None,
    *,
    max_docs: int | None = None,
    only: list[str] | None = None,
    prefer_latex: bool = True,
    log: ProcessingLog | None = None,
) -> list[SourceFile]:
    """The files of ``corpus`` with their labels, hashes and converter inputs (nothing converted).

    Unreadable files are logged (``log``) and left out; labels used twice fall back to the file name.
    """
    out: list[SourceFile] = []
    for path, meta, label in labelled_files(corpus, max_docs=max_docs, only=only, log=log):
        try:
            too_large = text_too_large(path)
            if too_large:  # never hashed nor read: a 3 GB .md was read whole (MemoryError)
                if log is None:
                    _log.error(too_large)
                else:
                    skipped = "skipped document; the others continue"
                    log.add("error", "ProcessingPipeline", too_large, error_code="PROC_TOO_LARGE",
                            recovery_action=skipped, file_path=str(path))  # fmt: skip
                continue
            sha = file_sha256(path)
        except OSError as exc:
            if log is not None:
                log.add(
                    "error",
                    "ProcessingPipeline",
                    f"cannot read {path}: {exc}",
                    error_code="PROC_IO",
                    recovery_action="skipped document; check the file's permissions",
                    file_path=str(path),
                )
            continue
        out.append(SourceFile(path, label, meta, sha, source_key(path, meta, prefer_latex)))
    return out


def chunkset_key(chunker: str, params: JSONObject, conversion_keys: Sequence[str]) -> str:
    """Key of a chunk set: chunker configuration, chunking code and the converted documents."""
    return short_hash(
        {
            "config": short_hash({"chunker": chunker, **params}),
            "code": [code_fingerprint(pkg) for pkg in ("models", "chunking", "hepilot", "processing")],
            "docs": sorted(conversion_keys),
        }
    )


def chunkset_id_of(chunker: str, params: JSONObject, key: str) -> str:
    """The readable id (and folder name) of a chunk set with key ``key``."""
    overlap = float(params.get("chunk_overlap") or 0)  # every digit: 0.7499999 is no 'ov0.75'
    return f"{chunker}-cs{params.get('chunk_size', 'x')}-ov{overlap:.15g}-{key[:8]}"


def retriever_label(name: str, options: JSONObject) -> str:
    """``hybrid_linear`` or, with options, ``hybrid_linear-<hash of the options>``.

    Example:
        >>> retriever_label("bm25", {}), retriever_label("hybrid_linear", {"weight": 0.5})[:14]
        ('bm25', 'hybrid_linear-')
    """
    return f"{name}-{short_hash(options, 4)}" if options else name


def cell_name(config: JSONObject) -> str:
    """Stable run-folder name of a configuration (its inputs' contents not included).

    Example:
        >>> cell_name({"chunker": "hepilot", "chunk_size": 512, "chunk_overlap": 0.1,
        ...            "retriever": "bm25", "k": 10})[:29]
        'hepilot-cs512-ov0.1-bm25-k10-'
    """
    cfg = {k: v for k, v in config.items() if k != "run_dir"}
    retr = retriever_label(str(cfg.get("retriever")), dict(cfg.get("retriever_options") or {}))
    chunker = str(cfg.get("chunker"))
    if cfg.get("chunker_options"):
        chunker += f"-{short_hash(cfg['chunker_options'], 4)}"
    index = cfg.get("vector_index")  # absent while it is the default (``auto``)
    index = f"-{index}" if index and index != "auto" else ""
    return (
        f"{chunker}-cs{cfg.get('chunk_size')}-ov{float(cfg.get('chunk_overlap') or 0):.15g}-{retr}{index}"
        f"-k{cfg.get('k')}-{short_hash(cfg, 6)}"
    )


def cell_key(
    config: JSONObject,
    *,
    chunkset_id: str,
    index: str,
    questions_sha256: str,
    question_subset: Sequence[str] | None = None,
) -> str:
    """Key of one cell's results: a finished run with this key is never recomputed.

    A reranking cell's key also holds its cross-encoder's identity (retrained weights under the same name
    make a new key).
    """
    models = {}
    if config.get("retriever") == "rerank":
        chosen = (config.get("retriever_options") or {}).get("model")
        models["reranker"] = model_identity(cross_encoder_name(chosen))
    return short_hash(
        {
            "config": {k: v for k, v in config.items() if k != "run_dir"},
            **({"models": models} if models else {}),
            "chunkset": chunkset_id,
            "index": index,
            "questions": questions_sha256,
            "subset": sorted(question_subset) if question_subset is not None else None,
            "code": [code_fingerprint(pkg) for pkg in CELL_CODE],
        },
        16,
    )
