"""TREC run, qrels and topics files: written so that every IR tool keeps hepwb's order, read with every check.

* **run**: ``qid Q0 docno rank score tag``, one line per retrieved document (trec_eval, ir_measures, ranx,
  PyTerrier, Pyserini/Anserini).
* **qrels**: ``qid 0 docno relevance``.
* **topics**: ``qid<TAB>text`` (``topics.tsv``, what Anserini's ``TsvString`` topic reader, ir_datasets'
  ``TsvQueries`` and pandas read).

trec_eval and the tools built on it order a query's documents by score, ties broken by docno in reverse
order, and ignore the rank column. :func:`write_run` therefore writes a ranking's own scores when they
strictly decrease, and ``1/rank`` for a query where they do not (a tie would reorder it); :func:`read_run`
orders every query the trec_eval way, so a run read here is ranked as every IR tool ranks it.

Example:
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> write_run(folder / "run.trec", {"q1": [("c2", 3.5), ("c7", 3.5)]}, "bm25")
    2
    >>> print((folder / "run.trec").read_text(), end="")
    q1 Q0 c2 1 1.0 bm25
    q1 Q0 c7 2 0.5 bm25
    >>> read_run(folder / "run.trec").rankings
    {'q1': [('c2', 1.0), ('c7', 0.5)]}
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from hepwb import limits
from hepwb.exceptions import ConfigError
from hepwb.files.io import atomic_write_text
from hepwb.files.readers import ReadError, count_lines, iter_lines

__all__ = [
    "RunFile",
    "check_run_file",
    "read_qrels",
    "read_run",
    "read_topics",
    "trec_order",
    "write_qrels",
    "write_run",
    "write_topics",
]

_PLAIN_NUMBER = re.compile(r"^[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]{1,3})?$")
"""A score as a TREC run writes it: decimal, with an optional exponent."""

_RUN_FIX = "write one line per retrieved document: qid Q0 docno rank score tag"
_QRELS_FIX = "write one line per judgement: qid 0 docno relevance"


@dataclass(frozen=True)
class RunFile:
    """A TREC run file read and checked by :func:`read_run`.

    Attributes:
        path: The file.
        rankings: ``{qid: [(docno, score), ...]}``, each query best first (trec_eval's order), in file order.
        tags: The run tags (sixth column) found, in file order.
        n_lines: The lines read.
    """

    path: Path
    rankings: dict[str, list[tuple[str, float]]]
    tags: tuple[str, ...]
    n_lines: int


def trec_order(ranking: Sequence[tuple[str, float]]) -> list[tuple[str, float]]:
    """``ranking`` as trec_eval orders it: score descending, ties by docno descending.

    Example:
        >>> trec_order([("a", 1.0), ("c", 2.0), ("b", 1.0)])
        [('c', 2.0), ('b', 1.0), ('a', 1.0)]
    """
    return sorted(ranking, key=lambda pair: (pair[1], pair[0]), reverse=True)


def _field(value: str, what: str) -> str:
    """``value`` when it can be one whitespace-free column of a TREC file; else a :class:`ConfigError`."""
    if not value or any(ch.isspace() for ch in value):
        msg = f"{what} {value!r} cannot be a column of a TREC file (empty or holds whitespace); rename it"
        raise ConfigError(msg)
    return value


def _written_scores(scores: Sequence[float]) -> list[float]:
    """The scores to write: the ranking's own when finite and strictly decreasing, else ``1/rank``."""
    ok = all(math.isfinite(s) for s in scores) and all(a > b for a, b in itertools.pairwise(scores))
    return list(scores) if ok else [1.0 / r for r in range(1, len(scores) + 1)]


def write_run(path: str | Path, rankings: Mapping[str, Sequence[tuple[str, float]]], tag: str) -> int:
    """Write ``{qid: [(docno, score), ...]}`` (best first) as a TREC run file; returns the lines written.

    Ranks follow the given order; the scores are the given ones when they strictly decrease, else
    ``1/rank`` for that query, so trec_eval's sort by score keeps the order (see the module docstring).

    Raises:
        ConfigError: A qid, docno or tag is empty or holds whitespace.
    """
    _field(tag, "run tag")
    lines = []
    for qid, ranking in rankings.items():
        _field(qid, "qid")
        scores = _written_scores([float(s) for _, s in ranking])
        for rank, ((docno, _), score) in enumerate(zip(ranking, scores, strict=True), start=1):
            lines.append(f"{qid} Q0 {_field(docno, 'docno')} {rank} {score!r} {tag}\n")
    atomic_write_text(Path(path), "".join(lines))
    return len(lines)


def write_qrels(path: str | Path, qrels: Mapping[str, Mapping[str, int]]) -> int:
    """Write ``{qid: {docno: relevance}}`` as a TREC qrels file; returns the lines written."""
    lines = [
        f"{_field(qid, 'qid')} 0 {_field(docno, 'docno')} {int(rel)}\n"
        for qid, docs in qrels.items()
        for docno, rel in docs.items()
    ]
    atomic_write_text(Path(path), "".join(lines))
    return len(lines)


def write_topics(path: str | Path, topics: Mapping[str, str]) -> int:
    """Write ``{qid: text}`` as ``qid<TAB>text`` lines (tabs and newlines in a text become spaces)."""
    lines = [f"{_field(qid, 'qid')}\t{' '.join(text.split())}\n" for qid, text in topics.items()]
    atomic_write_text(Path(path), "".join(lines))
    return len(lines)


def check_run_file(path: str | Path) -> int:
    """The number of lines of the run file ``path``, refused (one line) past the bounds before any parsing.

    Raises:
        ReadError: Not a regular file, more than :data:`~hepwb.limits.MAX_RUN_FILE_BYTES` bytes or more
            than :data:`~hepwb.limits.MAX_RUN_LINES` lines.
    """
    return count_lines(
        path,
        "run file",
        max_lines=limits.MAX_RUN_LINES,
        max_bytes=limits.MAX_RUN_FILE_BYTES,
        fix="keep each query's top hits (e.g. awk '$4 <= 100' run.trec), or split the file",
    )


def read_run(
    path: str | Path,
    *,
    qids: Collection[str] | None = None,
    docno_problem: Callable[[str], str | None] | None = None,
    qid_hint: str = "",
    k: int | None = None,
) -> RunFile:
    """Read a TREC run file, checking every line; each query ordered as trec_eval orders it.

    Args:
        path: The file (bounded: :func:`check_run_file` is applied first).
        qids: The question ids it may name (``None``: any).
        docno_problem: Why a docno cannot be scored (``None`` when it can); ``None``: any docno.
        qid_hint: Appended to the message of an unknown qid (what the known ones look like, what to do).
        k: Keep each query's first ``k`` documents (after ordering).

    Raises:
        ReadError: One line naming the file, the line and the fix: a wrong column count, a rank that is not
            a whole number from 1 or repeats within a query, a score that is not a finite number, an unknown
            qid or docno, or a docno ranked twice for one query.
    """
    p = Path(path)
    check_run_file(p)
    seen_doc: dict[str, dict[str, int]] = {}
    seen_rank: dict[str, dict[int, int]] = {}
    rankings: dict[str, list[tuple[str, float]]] = {}
    tags: dict[str, None] = {}
    n = 0

    def bad(lineno: int, problem: str) -> ReadError:
        return ReadError(f"run file {p} line {lineno}: {problem}")

    lines = iter_lines(
        p, "run file", max_lines=limits.MAX_RUN_LINES, max_line_chars=limits.MAX_RUN_LINE_CHARS, fix=_RUN_FIX
    )
    for lineno, line in lines:
        cols = line.split()
        if not cols:
            continue
        n += 1
        if len(cols) != 6:
            shown = line if len(line) <= 80 else line[:79] + "…"
            raise bad(lineno, f"{len(cols)} columns ({shown!r}); {_RUN_FIX}")
        qid, _, docno, rank_text, score_text, tag = cols
        if qids is not None and qid not in qids:
            raise bad(lineno, f"qid {qid!r} is not a question of the question set{qid_hint}")
        why = docno_problem(docno) if docno_problem is not None else None
        if why:
            raise bad(lineno, f"docno {docno!r} {why}")
        if not (rank_text.isascii() and rank_text.isdigit() and len(rank_text) <= 9 and int(rank_text) >= 1):
            raise bad(lineno, f"rank {rank_text[:40]!r} is not a whole number from 1; {_RUN_FIX}")
        # a number as trec_eval reads one: no "1_000", "inf" or "nan" (Python's float takes them all)
        score = float(score_text) if _PLAIN_NUMBER.match(score_text) else math.nan
        if not math.isfinite(score):
            raise bad(lineno, f"score {score_text[:40]!r} is not a finite number; {_RUN_FIX}")
        docs, ranks = seen_doc.setdefault(qid, {}), seen_rank.setdefault(qid, {})
        if docno in docs:
            raise bad(
                lineno, f"docno {docno!r} is ranked twice for qid {qid!r} (first on line {docs[docno]})"
            )
        rank = int(rank_text)
        if rank in ranks:
            raise bad(
                lineno,
                f"rank {rank} is given twice for qid {qid!r} (first on line {ranks[rank]}); give each "
                "document of a query its own rank",
            )
        docs[docno], ranks[rank] = lineno, lineno
        rankings.setdefault(qid, []).append((docno, score))
        tags.setdefault(tag)
    ordered = {q: trec_order(r)[:k] if k is not None else trec_order(r) for q, r in rankings.items()}
    return RunFile(p, ordered, tuple(tags), n)


def read_qrels(path: str | Path) -> dict[str, dict[str, int]]:
    """Read a TREC qrels file (``qid iteration docno relevance``) into ``{qid: {docno: relevance}}``.

    Raises:
        ReadError: One line naming the file and line: a wrong column count, a relevance that is not a whole
            number, a docno judged twice for one query, or the file's bounds.
    """
    p = Path(path)
    out: dict[str, dict[str, int]] = {}
    lines = iter_lines(
        p,
        "qrels file",
        max_lines=limits.MAX_RUN_LINES,
        max_line_chars=limits.MAX_RUN_LINE_CHARS,
        fix=_QRELS_FIX,
    )
    for lineno, line in lines:
        cols = line.split()
        if not cols:
            continue
        if len(cols) != 4:
            msg = f"qrels file {p} line {lineno}: {len(cols)} columns; {_QRELS_FIX}"
            raise ReadError(msg)
        qid, _, docno, rel = cols
        if not (rel.lstrip("-").isascii() and rel.lstrip("-").isdigit()) or len(rel) > 9:
            msg = f"qrels file {p} line {lineno}: relevance {rel[:40]!r} is not a whole number; {_QRELS_FIX}"
            raise ReadError(msg)
        docs = out.setdefault(qid, {})
        if docno in docs:
            msg = f"qrels file {p} line {lineno}: docno {docno!r} is judged twice for qid {qid!r}; keep one"
            raise ReadError(msg)
        docs[docno] = int(rel)
    return out


def read_topics(path: str | Path) -> dict[str, str]:
    """Read a ``qid<TAB>text`` topics file into ``{qid: text}``.

    Raises:
        ReadError: A line without a tab, a qid given twice, or the file's bounds.
    """
    p = Path(path)
    fix = "write one topic per line: qid<TAB>text"
    out: dict[str, str] = {}
    for lineno, line in iter_lines(
        p,
        "topics file",
        max_lines=limits.MAX_RUN_LINES,
        max_line_chars=limits.MAX_QUESTION_CHARS + 200,
        fix=fix,
    ):
        if not line.strip():
            continue
        qid, tab, text = line.partition("\t")
        qid = qid.strip()
        if not tab or not qid or not text.strip():
            msg = f"topics file {p} line {lineno}: no qid<TAB>text; {fix}"
            raise ReadError(msg)
        if qid in out:
            msg = f"topics file {p} line {lineno}: qid {qid!r} is given twice; keep one"
            raise ReadError(msg)
        out[qid] = text.strip()
    return out
