"""Add evidence to a JSONL question file, one checked quote at a time (the document view's *mark evidence*).

A physicist selects a passage of a paper, types the question it answers (or picks one already in the file),
and :func:`add_evidence` appends it: a new line, or one more evidence entry of an existing question. The
quote is located in the document first (:func:`~hepwb.evaluation.matching.locate_evidence`), so a file
built this way holds only evidence a run can score; a duplicate quote, an ambiguous short quote, a
quote the converted text does not hold, an unknown document, an empty quote or question, a page that is
no page of the document are refused with one line naming the file and the fix, and nothing is written.
Other lines are kept byte for byte.

The file is read, changed and written under a lock (``.<name>.lock`` beside it), so two processes adding
at once both land; it is split into lines at ``\\n`` only, as the question reader splits it (a question
holding U+2028, U+2029 or U+0085 stays one line), and rewritten atomically.

Example:
    >>> import tempfile
    >>> from hepwb.evaluation.questions import load_questions
    >>> from hepwb.processing.markdown import markdown_document
    >>> doc = markdown_document("# Fit\\n\\nThe fitted amplitude is 0.42 with an error of 0.05.", "N1")
    >>> path = Path(tempfile.mkdtemp()) / "mine.jsonl"
    >>> q = add_evidence(path, question="What amplitude does the fit give?", doc=doc, page=None,
    ...                  quote="fitted amplitude is 0.42")
    >>> q.qid, q.evidence[0].quote, [x.qid for x in load_questions(path)]
    ('N1-01', 'fitted amplitude is 0.42', ['N1-01'])
    >>> try:
    ...     add_evidence(path, question="Again?", doc=doc, page=None, quote="Fitted amplitude is 0.42.")
    ... except ConfigError as exc:
    ...     print(str(exc).replace(str(path), "FILE"))
    not added to FILE: N1-01 already quotes 'fitted amplitude is 0.42' from N1; select another passage
"""

from __future__ import annotations

import codecs
import json
import re
from pathlib import Path
from typing import Any

from hepwb.evaluation.matching import Located, locate_evidence
from hepwb.evaluation.questions import Evidence, Question, load_questions
from hepwb.exceptions import ConfigError
from hepwb.files.io import atomic_write_text
from hepwb.files.locks import building
from hepwb.files.parsers import parse_json
from hepwb.files.readers import read_text
from hepwb.limits import MAX_QUESTION_FILE_BYTES, PAGE, pages_of
from hepwb.text.textkey import key
from hepwb.types import Document

__all__ = ["add_evidence", "read_question_file"]


def read_question_file(path: str | Path) -> list[Question]:
    """The questions of ``path``; none when the file does not exist yet or holds only blank lines.

    Raises:
        ConfigError: The file is not a ``.jsonl`` file, or a line is malformed (message from
            :func:`~hepwb.evaluation.questions.load_questions`).
    """
    path = _jsonl_path(path)
    if not path.exists() or not read_text(path, "question file", max_bytes=MAX_QUESTION_FILE_BYTES).strip():
        return []
    return load_questions(path)


def _jsonl_path(path: str | Path) -> Path:
    """``path`` as a :class:`~pathlib.Path`, refused when it names a CSV file (evidence goes to JSONL).

    Raises:
        ConfigError: ``path`` ends in ``.csv``.
    """
    path = Path(path)
    if path.suffix.lower() == ".csv":
        msg = f"{path} is a CSV file; evidence is written to .jsonl question files: choose a .jsonl path"
        raise ConfigError(msg)
    return path


def _lock_path(path: Path) -> Path:
    """The lock file held while ``path`` is read, changed and written: ``.<name>.lock`` beside it."""
    return path.with_name(f".{path.name}.lock")


def _checked_page(refused: str, doc: Document | str, page: object) -> None:
    """Refuse a ``page`` that is not ``None`` or a positive whole number, or past the document's last page.

    The document's page count is known when its metadata has ``pages`` (PDF and LaTeX conversions).

    Raises:
        ConfigError: One line naming the page given and the fix.
    """
    if page is None:
        return
    if PAGE.problem(page):
        shown = repr(page) if len(repr(page)) <= 40 else repr(page)[:39] + "…"
        msg = f"{refused}: page {shown} is no page number; give {PAGE.what}, or None without pages"
        raise ConfigError(msg)
    if isinstance(doc, str):
        return  # a document that is not loaded: refused when the quote is located
    pages = doc.meta_value("pages")
    known = PAGE.problem(pages) is None  # PDF and LaTeX conversions know their pages
    if known and pages_of(pages).problem(page):
        msg = f"{refused}: page {page} is past the last page of {doc.label} ({pages}); give a page from 1 to "
        msg += str(pages)
        raise ConfigError(msg)


def _next_qid(label: str, questions: list[Question]) -> str:
    """``{label}-{n:02d}``, one past the highest ``n`` of the label's questions (unique in the file)."""
    taken = {q.qid for q in questions}
    pattern = re.compile(rf"{re.escape(label)}-(\d+)")
    n = max((int(m.group(1)) for q in questions if (m := pattern.fullmatch(q.qid))), default=0) + 1
    while f"{label}-{n:02d}" in taken:
        n += 1
    return f"{label}-{n:02d}"


def add_evidence(
    path: str | Path,
    *,
    question: str,
    doc: Document | str,
    page: int | None,
    quote: str,
    qid: str | None = None,
    answer: str = "",
    kind: str = "",
) -> Question:
    """Append ``quote`` of ``doc`` as evidence to the JSONL question file ``path``, checked first.

    The question is ``qid`` when the file has it, else the file's question whose text is ``question``,
    else a new line: ``qid`` when given, otherwise ``{label}-{n:02d}`` unique in the file. The file is
    created when missing and rewritten atomically when it changes; every other line is kept as it was.

    Args:
        path: The question file (``.jsonl``; the format of ``hepqa-dev.jsonl``).
        question: The question the passage answers (ignored when ``qid`` names a question of the file).
        doc: The processed document the passage was selected in; a label (``str``) stands for a
            document that is not loaded, which is refused (the quote cannot be checked).
        page: The 1-based page the passage was selected on; ``None`` for documents without pages.
            When the quote stands on another page only, that page is written.
        quote: The selected passage, verbatim (spacing, case and symbols are ignored when matched).
        qid: The question to add the evidence to, or the id of the new question.
        answer: Reference answer of a new question (optional; the answer metrics count only questions with
            one).
        kind: Category of a new question (``numeric``, ``definition`` …; optional), as in the file format.

    Returns:
        The question as written, with all its evidence.

    Raises:
        ConfigError: One line naming the file and the fix: an empty quote or question, a page that is
            not a positive whole number or past the document's last page, an unknown document, a quote
            that is ambiguous or not in the document's text, a quote of the same document already in the
            file (compared by :func:`~hepwb.text.textkey.key`), or a malformed file.
        CatalogBusyError: Another process held the file's lock for longer than hepwb waits.
    """
    path = _jsonl_path(path)
    quote, question = quote.strip(), question.strip()
    refused = f"not added to {path}"
    _checked_page(refused, doc, page)
    with building(_lock_path(path), f"the question file {path}"):
        # read inside the lock: another process may have added a line since this one was called
        return _add(path, refused, question, doc, page, quote, qid, (answer, kind))


def _add(
    path: Path,
    refused: str,
    question: str,
    doc: Document | str,
    page: int | None,
    quote: str,
    qid: str | None,
    answer_kind: tuple[str, str],
) -> Question:
    """:func:`add_evidence` once the file is locked: read it, check, append, write it atomically."""
    questions = read_question_file(path)
    by_qid = {q.qid: q for q in questions}
    if qid is None:
        qid = next((q.qid for q in questions if q.question.strip() == question and question), None)
    target = by_qid.get(qid) if qid else None
    if not quote:
        msg = f"{refused}: no text is selected; select the passage in the page text first"
        raise ConfigError(msg)
    if target is None and not question:
        msg = f"{refused}: the question is empty; type the question the passage answers"
        raise ConfigError(msg)
    label = doc if isinstance(doc, str) else doc.label
    entry = _checked_entry(refused, questions, doc, label, page, quote, qid)
    if target is not None:
        record, index, lines = _added_to(path, questions, qid, entry)
    else:
        record, index, lines = _new_question(path, questions, qid, label, question, answer_kind, entry)
    written = Question.from_dict(record, f"{path} line {index + 1}")  # validated before it is written
    lines[index] = _json_line(record)
    bom, newline = _file_style(path)
    atomic_write_text(path, bom + newline.join(lines) + newline)  # the other lines kept byte for byte
    return written


def _file_style(path: Path) -> tuple[str, str]:
    """The byte-order mark (``""`` or U+FEFF) and line ending (its first line's) of the file at ``path``.

    A file saved by Excel or Notepad on Windows keeps its mark and its ``\r\n`` when a line is added.
    """
    if not path.is_file():
        return "", "\n"
    with path.open("rb") as fh:
        head = fh.read(1 << 16)
    bom = "\ufeff" if head.startswith(codecs.BOM_UTF8) else ""
    first = head.find(b"\n")
    return bom, "\r\n" if first > 0 and head[first - 1 : first] == b"\r" else "\n"


def _checked_entry(
    refused: str,
    questions: list[Question],
    doc: Document | str,
    label: str,
    page: int | None,
    quote: str,
    qid: str | None,
) -> dict[str, Any]:
    """The evidence entry of ``quote``, once located in ``doc`` and found in no evidence of the file.

    Its page is where the quote stands, when not on ``page``.

    Raises:
        ConfigError: The quote is not located (unknown document, ambiguous or absent quote), or the file
            already quotes it from the same document (compared by :func:`~hepwb.text.textkey.key`).
    """
    found = locate_evidence(
        Evidence(f"{qid or 'new'}#e0", label, page, quote), {} if isinstance(doc, str) else {label: doc}
    )
    if not isinstance(found, Located):
        msg = f"{refused}: {found.reason}"
        raise ConfigError(msg)
    qk = key(quote)
    for q in questions:
        for ev in q.evidence:
            if ev.doc == label and key(ev.quote) == qk:
                msg = f"{refused}: {q.qid} already quotes {ev.quote!r} from {label}; select another passage"
                raise ConfigError(msg)
    entry: dict[str, Any] = {"doc": label}
    on_page = page if found.page_ok else found.page  # where the quote stands, when not on ``page``
    if on_page is not None:
        entry["page"] = on_page
    entry["quote"] = quote
    return entry


_LINE_BREAKS = {"\u0085": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"}
"""Characters that some readers take for a line break (``str.splitlines``, JavaScript), written escaped."""


def _json_line(record: dict[str, Any]) -> str:
    r"""``record`` as one JSON line: UTF-8 characters kept, those some readers break lines at escaped.

    Example:
        >>> _json_line({"question": "é\u2028x\x85"})
        '{"question": "é\\u2028x\\u0085"}'
    """
    line = json.dumps(record, ensure_ascii=False)  # json escapes C0 controls (\x0b, \x0c, \x1c …) itself
    for ch, escaped in _LINE_BREAKS.items():
        line = line.replace(ch, escaped)  # in JSON text they stand only inside strings: the same value
    return line


def _split_jsonl(text: str) -> list[str]:
    r"""The lines of JSON-lines ``text`` as the question reader counts them: split at ``\n`` only.

    A ``\r`` ending a line is dropped, and a UTF-8 byte-order mark before the first; U+2028, U+2029,
    U+0085, ``\x0b``, ``\x0c``, ``\x1c``-``\x1e`` are characters of a line (``str.splitlines`` breaks
    lines there, which would cut a JSON string in two). No empty last line after a final newline.

    Example:
        >>> _split_jsonl('\ufeff{"q": "a\u2028b"}\r\n\n{}\n')
        ['{"q": "a\u2028b"}', '', '{}']
    """
    lines = [line.removesuffix("\r") for line in text.removeprefix("\ufeff").split("\n")]
    if lines[-1] == "":
        lines.pop()
    return lines


def _lines(path: Path, questions: list[Question]) -> list[str]:
    """The file's lines (:func:`_split_jsonl`; none when it holds no question yet)."""
    text = read_text(path, "question file", max_bytes=MAX_QUESTION_FILE_BYTES) if questions else ""
    return _split_jsonl(text)


def _added_to(
    path: Path, questions: list[Question], qid: str | None, entry: dict[str, Any]
) -> tuple[dict[str, Any], int, list[str]]:
    """Question ``qid``'s line with ``entry`` added to its evidence: the record, its index, the lines."""
    lines = _lines(path, questions)
    # the file was just read and checked by load_questions: every line parses
    index = next(
        i for i, line in enumerate(lines) if line.strip() and parse_json(line, str(path))["qid"] == qid
    )
    record: dict[str, Any] = parse_json(lines[index], str(path))
    record["evidence"].append(entry)
    return record, index, lines


def _new_question(
    path: Path,
    questions: list[Question],
    qid: str | None,
    label: str,
    question: str,
    answer_kind: tuple[str, str],
    entry: dict[str, Any],
) -> tuple[dict[str, Any], int, list[str]]:
    """A new last line for ``question`` (with its answer and kind, when given) and ``entry`` as its evidence.

    Returns the record, its index and the file's lines.
    """
    lines = _lines(path, questions)
    index = len(lines)
    record: dict[str, Any] = {"qid": qid or _next_qid(label, questions), "question": question}
    for name, value in zip(("answer", "kind"), answer_kind, strict=True):
        if value.strip():
            record[name] = value.strip()
    record["evidence"] = [entry]
    lines.append("")
    return record, index, lines
