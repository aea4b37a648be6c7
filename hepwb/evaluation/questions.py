"""Evaluation questions with evidence quotes, loaded from JSONL or CSV.

A question names one or more evidence quotes, each on a 1-based page of a labelled document
(``"P01"``). Every evidence entry gets a stable id ``"{qid}#e{i}"`` so that metrics can be
computed per quote.

Example:
    >>> q = Question.from_dict({"qid": "Q1", "question": "Why?", "answer": "Because.",
    ...     "evidence": [{"doc": "P01", "page": 2, "quote": "because of the beam"}]})
    >>> q.evidence[0].eid, q.evidence[0].page
    ('Q1#e0', 2)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hepwb.exceptions import ConfigError
from hepwb.files.parsers import iter_jsonl, read_csv, read_json_file
from hepwb.limits import MAX_QID_CHARS, MAX_QUESTION_CHARS, MAX_QUESTION_FILE_BYTES, MAX_QUOTE_CHARS, PAGE
from hepwb.text.textkey import key
from hepwb.types import JSONObject

__all__ = ["QUESTION_KINDS", "SCHEMA_PATH", "Evidence", "Question", "load_questions", "question_schema"]

_CSV_COLUMNS = ("qid", "question", "doc", "quote")
"""Required CSV columns (``answer``, ``page``, ``kind`` and ``style`` are optional)."""

SCHEMA_PATH = Path(__file__).with_name("questions.schema.json")
"""The published JSON Schema of one question (one line of a ``.jsonl`` file); the loader enforces it."""


def question_schema() -> JSONObject:
    """The JSON Schema of one question: required and optional fields, with examples.

    Example:
        >>> question_schema()["required"]
        ['qid', 'question', 'evidence']
    """
    schema: JSONObject = read_json_file(SCHEMA_PATH, "the question schema")
    return schema


@dataclass(frozen=True, slots=True)
class Evidence:
    """One evidence quote of a question.

    Attributes:
        eid: Stable id ``"{qid}#e{i}"`` (``i`` is the 0-based position in the question's list).
        doc: Label of the document holding the quote (matched against ``Document.label``).
        page: 1-based page of the source PDF where the quote stands; ``None`` when the source has no
            pages (a markdown corpus): the quote is then looked for anywhere in the document.
        quote: The quoted text, as extracted from the PDF.
    """

    eid: str
    doc: str
    page: int | None
    quote: str

    @property
    def qid(self) -> str:
        """The id of the question the evidence belongs to."""
        return self.eid.rsplit("#e", 1)[0]


@dataclass(frozen=True, slots=True)
class Question:
    """An evaluation question.

    Attributes:
        qid: Unique question id, e.g. ``"P01-03"``.
        question: The question text given to the retriever.
        answer: Reference answer (not used by the retrieval metrics).
        evidence: The evidence quotes, at least one.
        kind: Question category (``numeric``, ``definition`` ...), ``""`` when not given.
        style: ``lexical`` or ``paraphrase`` (``""`` when not given).
    """

    qid: str
    question: str
    answer: str
    evidence: tuple[Evidence, ...]
    kind: str = ""
    style: str = ""

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "question") -> Question:
        """Build a question from one JSONL record.

        Args:
            data: Mapping with ``qid``, ``question``, ``evidence`` (list of ``{doc, page, quote}``)
                and optionally ``answer``, ``kind`` and ``style``.
            where: Location used in error messages (e.g. ``"qa.jsonl line 3"``).

        Returns:
            The question.

        Raises:
            ConfigError: A required field is missing or has the wrong type.
        """
        qid = _text(data, "qid", where)
        evidence_raw = data.get("evidence")
        if not isinstance(evidence_raw, list) or not evidence_raw:
            msg = f"{where}: field 'evidence' is missing or empty; give a list of {{doc, page, quote}}"
            raise ConfigError(msg)
        evidence = []
        for i, ev in enumerate(evidence_raw):
            ev_where = f"{where}, evidence[{i}]"
            if not isinstance(ev, Mapping):
                msg = f"{ev_where}: expected an object with doc, page and quote, got {type(ev).__name__}"
                raise ConfigError(msg)
            quote = _text(ev, "quote", ev_where)
            if not key(quote):
                msg = (
                    f"{ev_where}: field 'quote' has no letter or digit ({quote!r}); quote the passage's words"
                )
                raise ConfigError(msg)
            if len(quote) > MAX_QUOTE_CHARS:  # locating it would cost its length times the paper's
                msg = (
                    f"{ev_where}: the quote of question {qid!r} has {len(quote)} characters; at most "
                    f"{MAX_QUOTE_CHARS} are matched (quote the sentence or paragraph that holds the answer, "
                    "not a whole section)"
                )
                raise ConfigError(msg)
            evidence.append(
                Evidence(
                    eid=f"{qid}#e{i}",
                    doc=_text(ev, "doc", ev_where),
                    page=_page(ev.get("page"), ev_where),
                    quote=quote,
                )
            )
        return cls(
            qid=qid,
            question=_bounded(_text(data, "question", where), where),
            answer=_text(data, "answer", where, required=False),
            evidence=tuple(evidence),
            kind=_text(data, "kind", where, required=False),
            style=_text(data, "style", where, required=False),
        )


QUESTION_KINDS = ("numeric", "definition", "method", "setup", "result", "table", "equation", "comparison")
"""Kinds the shipped question sets use (``kind`` is free text; offered when a question is marked)."""

_IDS = ("qid", "doc", "kind", "style")
"""Fields that name something (a question, a document, a category): no control character at all."""


def _text(data: Mapping[str, Any], field: str, where: str, *, required: bool = True) -> str:
    value = data.get(field)
    if value is None or (isinstance(value, str) and not value.strip()):
        if not required:
            return ""
        msg = f"{where}: required field {field!r} is missing or empty; add it"
        raise ConfigError(msg)
    if not isinstance(value, str):
        msg = f"{where}: field {field!r} must be a string, got {type(value).__name__}"
        raise ConfigError(msg)
    problem = _not_text(value, control=field in _IDS)
    if problem:
        msg = f"{where}: field {field!r} {problem}; write it as plain UTF-8 text"
        raise ConfigError(msg)
    if field == "qid" and len(value) > MAX_QID_CHARS:  # it is printed, and names files and rows
        msg = (
            f"{where}: field 'qid' is {len(value):,} characters long ({value[:20]!r}…); a qid names a "
            f"question in at most {MAX_QID_CHARS} characters: give a shorter one"
        )
        raise ConfigError(msg)
    return value


def _not_text(value: str, *, control: bool) -> str:
    r"""What makes ``value`` unusable as text (``""``: nothing): a lone surrogate, NUL, other controls.

    A lone surrogate (``"\ud800"`` in JSON) is no Unicode text: it cannot be written as UTF-8, and C
    libraries (pytrec_eval) crash on it. NUL is refused everywhere, every other control character
    (C0, DEL, C1) in the fields that name something (``control``).

    Example:
        >>> _not_text("Q1\ud800", control=True), _not_text("Q1\x1b]8;;x\x07", control=True)
        ('holds a lone surrogate (U+D800)', 'holds the control character U+001B')
        >>> _not_text("line\nbreak", control=False)
        ''
    """
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"holds a lone surrogate (U+{ord(value[exc.start]):04X})"
    for ch in value:
        if ch == "\0" or (control and (ch < " " or "\x7f" <= ch <= "\x9f")):
            return f"holds the control character U+{ord(ch):04X}"
    return ""


_PAGE_DIGITS = len(str(int(PAGE.high or 0)))
"""A page number has at most this many digits (:data:`hepwb.limits.PAGE`)."""


def _page(value: Any, where: str) -> int | None:
    """The evidence page: a 1-based number, or ``None`` when not given (sources without pages).

    Example:
        >>> _page(" 12 ", "q.csv line 2"), _page(None, "q.csv line 2")
        (12, None)
        >>> _page("9" * 5000, "q.csv line 2")
        Traceback (most recent call last):
        ...
        hepwb.exceptions.ConfigError: q.csv line 2: field 'page' is a number of 5,000 digits; ...
    """
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
        value = value.strip()
        if len(value) <= _PAGE_DIGITS:
            value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value < 10**_PAGE_DIGITS:
        return value
    if (
        isinstance(value, str | int)
        and not isinstance(value, bool)
        and str(value).isascii()
        and str(value).isdigit()
        and len(str(value)) > _PAGE_DIGITS
    ):
        shown = f"a number of {len(str(value)):,} digits"
    else:
        shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:39] + "…"
    msg = (
        f"{where}: field 'page' is {shown}; give the 1-based page number of the quote "
        f"(at most {_PAGE_DIGITS} digits), or leave it out when the document has no pages (markdown)"
    )
    raise ConfigError(msg)


_FIX = "pass the path of a .jsonl or .csv question set"


def _read_jsonl(path: Path) -> Iterable[tuple[str, Question]]:
    lines = iter_jsonl(
        path, "question file", fix="each line must be one JSON object", max_bytes=MAX_QUESTION_FILE_BYTES
    )
    for lineno, data in lines:
        where = f"{path} line {lineno}"
        if not isinstance(data, dict):
            msg = f"{where}: expected a JSON object, got {type(data).__name__}"
            raise ConfigError(msg)
        yield where, Question.from_dict(data, where)


def _read_csv(path: Path) -> Iterable[tuple[str, Question]]:
    header, rows = read_csv(path, "question file", max_bytes=MAX_QUESTION_FILE_BYTES)
    missing = [c for c in _CSV_COLUMNS if c not in header]
    if missing:
        msg = f"{path}: CSV header lacks column(s) {missing}; required columns are {list(_CSV_COLUMNS)}"
        first = str(header[0]) if header else ""
        if first.startswith("sep="):
            msg += " (its first line is Excel's separator hint 'sep=…': delete that line)"
        elif len(header) == 1 and (";" in first or "\t" in first):
            msg += " (its fields are not separated by commas: save it as 'CSV UTF-8 (comma delimited)')"
        raise ConfigError(msg)
    groups: dict[str, tuple[str, JSONObject]] = {}
    for lineno, row in rows:
        where = f"{path} line {lineno}"
        if None in row:
            msg = f"{where}: more fields than the header has columns; quote fields that hold commas"
            raise ConfigError(msg)
        qid = _text(row, "qid", where)
        if qid not in groups:
            record: JSONObject = {k: row.get(k) for k in ("qid", *_CSV_SHARED)}
            record["evidence"] = []
            groups[qid] = (where, record)
        else:
            _same_question(groups[qid], row, where)
        groups[qid][1]["evidence"].append(
            {
                "doc": _text(row, "doc", where),
                "page": _page(row.get("page"), where),
                "quote": _text(row, "quote", where),
            }
        )
    for where, record in groups.values():
        yield where, Question.from_dict(record, where)


_CSV_SHARED = ("question", "answer", "kind", "style")
"""The fields of a CSV question every row of its ``qid`` shares (a later row may leave them empty)."""


def _same_question(first: tuple[str, JSONObject], row: dict[str, Any], where: str) -> None:
    """Refuse a later CSV row of a ``qid`` whose question, answer, kind or style differs from its first row's.

    Example:
        >>> first = ("q.csv line 2", {"qid": "Q0", "question": "Which?", "answer": None})
        >>> _same_question(first, {"qid": "Q0", "question": "", "doc": "P01"}, "q.csv line 3")
        >>> _same_question(first, {"qid": "Q0", "question": "Why?"}, "q.csv line 3")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        hepwb.exceptions.ConfigError: q.csv line 3: qid 'Q0' has question 'Why?' here but 'Which?' at ...
    """
    at, record = first
    for field in _CSV_SHARED:
        here = (row.get(field) or "").strip()
        there = (record.get(field) or "").strip()
        if here and here != there:
            msg = (
                f"{where}: qid {str(record['qid'])!r} has {field} {here[:80]!r} here but {there[:80]!r} at "
                f"{at}; rows of one qid are one question with several evidence quotes: give another qid, or "
                f"the same {field}"
            )
            raise ConfigError(msg)


def load_questions(path: str | Path) -> list[Question]:
    """Load evaluation questions from a ``.jsonl`` or ``.csv`` file.

    JSONL: one object per line with ``qid``, ``question`` and ``evidence`` (a list of
    ``{doc, page, quote}``; ``page`` optional), and optionally ``answer``, ``kind`` and ``style``
    (:data:`SCHEMA_PATH` is the JSON Schema). CSV: columns ``qid, question, doc, quote`` (optionally
    ``answer, page, kind, style``), one row per evidence quote, rows of the same ``qid`` grouped into
    one question in file order.

    Args:
        path: The file; the suffix (``.csv`` or anything else for JSONL) selects the format.

    Returns:
        The questions in file order.

    Raises:
        ConfigError: The file is missing, a line is malformed (the message names file, line and
            field), or a ``qid`` occurs twice.
    """
    path = Path(path)
    if not path.exists():
        msg = f"question file {path} does not exist; {_FIX}"
        raise ConfigError(msg)
    reader = _read_csv if path.suffix.lower() == ".csv" else _read_jsonl
    questions: list[Question] = []
    seen: dict[str, str] = {}
    for where, question in reader(path):
        if question.qid in seen:
            first = seen[question.qid]
            msg = f"{where}: duplicate qid {question.qid!r} (first at {first}); qids must be unique"
            raise ConfigError(msg)
        seen[question.qid] = where
        questions.append(question)
    if not questions and reader is _read_csv:
        msg = (
            f"question file {path} has no question rows under the header; add one row per evidence quote "
            f"(columns {', '.join(_CSV_COLUMNS)}, optionally answer, page, kind, style)"
        )
        raise ConfigError(msg)
    if not questions:
        msg = f"question file {path} holds no questions; write one JSON object per line (see hepqa-dev.jsonl)"
        raise ConfigError(msg)
    return questions


def _bounded(question: str, where: str) -> str:
    if len(question) > MAX_QUESTION_CHARS:
        msg = (
            f"{where}: the question has {len(question)} characters; at most {MAX_QUESTION_CHARS} are "
            "searched (shorten it: a question is a sentence or a paragraph)"
        )
        raise ConfigError(msg)
    return question
