"""An IR collection (documents, queries, qrels) as a hepwb corpus folder and question set.

What a BEIR folder (:mod:`hepwb.interop.beir`) or an ``ir_datasets`` collection
(:mod:`hepwb.interop.irdatasets`) becomes, so hepwb's chunkers, retrievers and sweeps run on it:

* each document is a markdown file ``corpus/<label>.md`` holding its text exactly (no pages); its title and
  original id go to ``corpus/papers.json``. The label is the document id when that is a plain name (letters,
  digits, ``.``, ``+``, ``-``), else a plain name made of it and a hash of it; ``docids.tsv`` lists
  every such label with its id. Documents of identical text are one document (chunk ids derive from the
  text); their judgements go to the first.
* each query with at least one relevant document (score > 0) is a question whose evidence quotes its
  relevant documents whole (``{"doc": label, "quote": text, "relevance": score}``). So a chunk is relevant
  when it holds at least ``min_coverage`` (half) of a relevant document, and a document's own chunk is
  whenever the chunk size holds the document (passage collections). For collections of long documents
  read the paper-level metrics (``doc_…``), which need no quote.

Queries without a relevant document, judgements of documents the corpus lacks, and documents without a
letter or digit are left out and counted in ``import.json``.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from hepwb import __version__, limits
from hepwb.corpus import plain_label
from hepwb.evaluation import load_questions
from hepwb.exceptions import ConfigError
from hepwb.files.io import atomic_write_text, write_json
from hepwb.interop.beir import BeirDoc
from hepwb.text.ids import short_hash, text_sha256
from hepwb.text.names import is_plain_name
from hepwb.text.plaintext import not_text
from hepwb.text.textkey import key

__all__ = ["ImportedCollection", "label_for", "write_collection"]


@dataclass(frozen=True)
class ImportedCollection:
    """What an import wrote: the corpus folder and question file, with counts and what was left out."""

    corpus: Path
    questions: Path
    n_documents: int
    n_questions: int
    skipped: dict[str, int] = field(default_factory=dict)

    def summary(self) -> str:
        """One line: what was written, what was left out, and the command that evaluates on it."""
        left = (
            "; left out: " + ", ".join(f"{n} {why}" for why, n in self.skipped.items())
            if self.skipped
            else ""
        )
        return (
            f"{self.n_documents} documents in {self.corpus}, {self.n_questions} questions in {self.questions}"
            f"{left}. Evaluate with: hepwb evaluate --corpus {self.corpus} --questions {self.questions}"
        )


def label_for(doc_id: str) -> str:
    """The label (file name) of document ``doc_id``: itself, or a plain name made of it and a hash of it.

    Itself when it is a plain name without ``_`` (a corpus file's label ends at its first ``_``).

    Example:
        >>> label_for("MED-10"), label_for("<dbpedia:Animalia_(book)>")[:23], label_for("doc_7")[:6]
        ('MED-10', 'dbpedia-Animalia--book-', 'doc-7-')
    """
    if is_plain_name(doc_id) and "_" not in doc_id:
        return doc_id
    return f"{plain_label(doc_id.replace('_', '-'))[:100]}-{short_hash(doc_id, 8)}"


def _unique_label(doc_id: str, used: set[str], source: str) -> str:
    """:func:`label_for` of ``doc_id``, or a longer hash when another document has that label already.

    A document id may equal another id's hashed label (``a_b`` is ``a-b-3ebec71b``, which is also a plain
    id); the later of the two gets a label with a 16-digit hash, so no document's file overwrites another's.

    Raises:
        ConfigError: Naming the id, when even the longer label is taken.
    """
    label = label_for(doc_id)
    if label.casefold() not in used:
        return label
    longer = f"{plain_label(doc_id.replace('_', '-'))[:100]}-{short_hash(doc_id, 16)}"
    if longer.casefold() in used:
        msg = f"{source}: document id {doc_id!r} gets the label {label!r} of another document; rename one"
        raise ConfigError(msg)
    return longer


def _check_text(doc: BeirDoc, source: str) -> None:
    """Refuse a document whose text or title holds a lone surrogate or NUL, naming ``source`` and its id.

    The readers of each format refuse these with the file and line; this is the check for any source, so
    no such text reaches the corpus files or the question file (whose own check would name hepwb's output).

    Example:
        >>> _check_text(BeirDoc("d1", "T", "a\\x00b"), "BEIR folder b")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        hepwb.exceptions.ConfigError: BEIR folder b: the text of document 'd1' holds the control character ...
    """
    for name, value in (("text", doc.text), ("title", doc.title)):
        if problem := not_text(value, control=False):
            msg = f"{source}: the {name} of document {doc.doc_id[:80]!r} {problem}; remove it (no plain text)"
            raise ConfigError(msg)


def _refuse_nonempty(out: Path) -> None:
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        msg = f"{out} exists and is not an empty folder; give a new folder to import into"
        raise ConfigError(msg)


def write_collection(
    out: str | Path,
    docs: Iterable[BeirDoc],
    queries: Mapping[str, str],
    qrels: Mapping[str, Mapping[str, int]],
    *,
    source: str,
) -> ImportedCollection:
    """Write ``docs``, ``queries`` and ``qrels`` into ``out`` as a corpus and question set (module docstring).

    ``docs`` is read once, a document at a time; only the texts of judged documents are kept in memory.

    On any failure ``out`` is left as it was found (gone, or empty), so the same command can run again.

    Raises:
        ConfigError: ``out`` is not a new or empty folder, more than
            :data:`~hepwb.limits.MAX_COLLECTION_DOCS` documents, no question has a relevant document, or
            the question file would exceed :data:`~hepwb.limits.MAX_QUESTION_FILE_BYTES`.
    """
    out = Path(out)
    _refuse_nonempty(out)
    existed = out.exists()
    try:
        return _write(out, docs, queries, qrels, source)
    except BaseException:  # nothing half-written is left to block the retry
        if existed:
            for child in list(out.iterdir()):
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child)
                else:
                    child.unlink()
        else:
            shutil.rmtree(out, ignore_errors=True)
        raise


def _write(
    out: Path,
    docs: Iterable[BeirDoc],
    queries: Mapping[str, str],
    qrels: Mapping[str, Mapping[str, int]],
    source: str,
) -> ImportedCollection:
    """The body of :func:`write_collection`, into the new or empty folder ``out``."""
    corpus = out / "corpus"
    corpus.mkdir(parents=True, exist_ok=True)
    needed = {d for docs_ in qrels.values() for d, rel in docs_.items() if rel > 0}
    skipped: Counter[str] = Counter()
    labels: dict[str, str] = {}  # document id -> label (a duplicate text: the first document's label)
    by_text: dict[str, str] = {}
    texts: dict[str, str] = {}
    papers, renamed = [], []
    used: set[str] = set()  # labels given so far, casefolded (a file system may ignore case)
    for i, doc in enumerate(docs):
        if i >= limits.MAX_COLLECTION_DOCS:
            msg = f"{source}: more than {limits.MAX_COLLECTION_DOCS:,} documents; import a part of it"
            raise ConfigError(msg)
        if doc.doc_id in labels:
            msg = f"{source}: document id {doc.doc_id!r} is given twice; keep one"
            raise ConfigError(msg)
        _check_text(doc, source)
        if not key(doc.text):
            skipped["documents without a letter or digit"] += 1
            continue
        sha = text_sha256(doc.text)
        if sha in by_text:
            labels[doc.doc_id] = by_text[sha]
            skipped["documents repeating another's text (merged into it)"] += 1
            renamed.append((by_text[sha], doc.doc_id))
            if doc.doc_id in needed:
                texts[by_text[sha]] = doc.text
            continue
        label = _unique_label(doc.doc_id, used, source)
        used.add(label.casefold())
        if label != doc.doc_id:
            renamed.append((label, doc.doc_id))
        labels[doc.doc_id] = by_text[sha] = label
        (corpus / f"{label}.md").write_text(doc.text, encoding="utf-8")
        papers.append(
            {"pid": label, "pdf": f"{label}.md", "title": doc.title or label, "source_id": doc.doc_id}
        )
        if doc.doc_id in needed:
            texts[label] = doc.text
    write_json(corpus / "papers.json", {"source": source, "papers": papers})
    if renamed:
        lines = "".join(f"{label}\t{doc_id}\n" for label, doc_id in renamed)
        atomic_write_text(out / "docids.tsv", "label\tdocument id\n" + lines)
    questions = out / "questions.jsonl"
    n = _write_questions(questions, queries, qrels, labels, texts, skipped, source)
    load_questions(questions)  # what hepwb will read: checked now, with its own messages
    write_json(
        out / "import.json",
        {
            "source": source,
            "hepwb": __version__,
            "documents": len(papers),
            "questions": n,
            "skipped": skipped,
        },
    )
    return ImportedCollection(corpus, questions, len(papers), n, dict(skipped))


def _write_questions(
    path: Path,
    queries: Mapping[str, str],
    qrels: Mapping[str, Mapping[str, int]],
    labels: Mapping[str, str],
    texts: Mapping[str, str],
    skipped: Counter[str],
    source: str,
) -> int:
    """Write one question per query with a relevant document in the corpus; returns how many."""
    lines: list[str] = []
    size = 0
    for qid, text in queries.items():
        evidence: dict[str, int] = {}
        for doc_id, rel in qrels.get(qid, {}).items():
            if rel <= 0:
                continue
            label = labels.get(doc_id)
            if label is None or label not in texts:
                skipped["judgements of documents not in the corpus"] += 1
                continue
            evidence[label] = max(rel, evidence.get(label, rel))
        if not evidence:
            skipped["queries without a relevant document"] += 1
            continue
        if len(qid) > limits.MAX_QID_CHARS:  # hepwb's question files name a question in fewer characters
            skipped[f"queries whose id is longer than {limits.MAX_QID_CHARS} characters"] += 1
            continue
        if len(text) > limits.MAX_QUESTION_CHARS or not text.strip():
            skipped[f"queries empty or longer than {limits.MAX_QUESTION_CHARS} characters"] += 1
            continue
        row = {
            "qid": qid,
            "question": text,
            "evidence": [{"doc": d, "quote": texts[d], "relevance": r} for d, r in evidence.items()],
        }
        lines.append(json.dumps(row, ensure_ascii=False) + "\n")
        size += len(lines[-1].encode("utf-8"))
        if size > limits.MAX_QUESTION_FILE_BYTES:
            msg = (
                f"{source}: the questions would take more than {limits.MAX_QUESTION_FILE_BYTES:,} bytes "
                "(each quotes its relevant documents whole); import fewer queries"
            )
            raise ConfigError(msg)
    if not lines:
        why = ", ".join(f"{n} {reason}" for reason, n in skipped.items())
        msg = (
            f"{source}: no query became a question{f' (left out: {why})' if why else ''}; a question needs a "
            "query with a relevant document in the corpus: check the qrels split and the ids"
        )
        raise ConfigError(msg)
    atomic_write_text(path, "".join(lines))
    return len(lines)
