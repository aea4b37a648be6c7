"""Plan a corpus: its files, the label each document gets, their hashes and converter inputs.

Nothing here converts a document: a sweep lists thousands of papers and computes every conversion key
(:attr:`~hepwb.corpus.plan.SourceFile.conversion_key`, the convert stage's key in
:mod:`hepwb.experiment.keys`) in well under a second, and a widget lists a corpus without reading a PDF.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from pathlib import Path

from hepwb.acquisition.folder import corpus_files, label_of, load_sidecar, resolve_corpus
from hepwb.corpus.sources import source_key, text_too_large
from hepwb.hepilot.log import ProcessingLog
from hepwb.text.ids import code_fingerprint, file_sha256, short_hash
from hepwb.text.names import is_plain_name
from hepwb.text.plaintext import plain
from hepwb.types import JSONObject

__all__ = ["SourceFile", "labelled_files", "plain_label", "plan_corpus", "safe_label"]

_log = logging.getLogger("hepwb.corpus")


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
