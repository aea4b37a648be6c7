"""The typed stages of one evaluation run, shared by notebooks (:func:`run_experiment`) and sweeps.

``load_inputs`` (convert the corpus, read the question set, locate the evidence) → ``chunk_stage``
→ ``index_stage`` (embeddings + LanceDB table) → :func:`run_cell` (retrieve, score, save). Every
stage before ``run_cell`` is cached on disk by its key (:mod:`hepwb.experiment.keys`); a sweep worker
also keeps their results in memory between cells.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hepwb.acquisition.folder import file_labels, resolve_corpus
from hepwb.chunking.chunksets import ChunkSet, build_chunkset, document_key
from hepwb.components.options import checked_already
from hepwb.corpus import default_questions, ingest
from hepwb.corpus.haystack import describe as describe_haystack
from hepwb.corpus.haystack import haystack_of
from hepwb.corpus.sources import substitution_line
from hepwb.evaluation import KeyIndex, Located, Question, Unlocated, build_keyindexes, load_questions
from hepwb.evaluation.evidence import EvidenceCheck, check_evidence
from hepwb.evaluation.questions import Evidence
from hepwb.exceptions import ConfigError, CorpusNotFoundError
from hepwb.experiment.config import CorpusInputs, ExperimentConfig
from hepwb.files.io import UNREADABLE, read_json_object, write_json
from hepwb.files.readers import read_bytes
from hepwb.hepilot.log import ProcessingLog
from hepwb.index import ChunkStore
from hepwb.index.parts import PARTS
from hepwb.models.embedder import Embedder
from hepwb.paths import Layout
from hepwb.retrieval import get_retriever, reads_vectors
from hepwb.retrieval.base import table_parts, unexplained
from hepwb.retrieval.fusion import fit_reads, load_fit
from hepwb.text.ids import code_fingerprint, file_sha256, short_hash
from hepwb.types import Document, Hit, JSONObject

if TYPE_CHECKING:
    from collections.abc import Collection, Iterator


__all__ = [
    "EvalInputs",
    "Timer",
    "chunk_stage",
    "index_stage",
    "left_out",
    "load_inputs",
    "needs_vectors",
    "needs_windows",
    "questions_path",
    "retrieve_stage",
    "say_once",
    "table_parts_of",
]

_log = logging.getLogger("hepwb.evaluation")
_SAID: set[tuple[str, int | None, str]] = set()
"""Corpus selections whose left-out papers and questions were said (once per process)."""


class Timer(dict[str, float]):
    """Wall times of named stages in seconds (``with timer("chunk_s"): ...``)."""

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        """Add the wall time of the ``with`` block to ``self[name]``."""
        t = time.perf_counter()
        try:
            yield
        finally:
            self[name] = self.get(name, 0.0) + time.perf_counter() - t


def questions_path(questions: str | Path | None) -> Path:
    """The question-set file (``questions`` or the default), or an error naming the option to set.

    Raises:
        CorpusNotFoundError: No question set is given or found.
        ReadError: The path exists but is no regular file (a folder, FIFO, device or socket: named).
    """
    path = Path(questions) if questions else default_questions()
    if path is not None and path.exists() and not path.is_file():
        read_bytes(path, "question file", fix="pass --questions FILE, a .jsonl or .csv question set")
    if path is None or not path.is_file():
        msg = (
            f"no question set found ({path}): pass --questions FILE (CLI), questions='FILE' "
            "(notebook parameter) or set HEPWB_QUESTIONS to a hepqa-style JSONL file"
        )
        raise CorpusNotFoundError(msg)
    return path


@dataclass
class EvalInputs:
    """The documents of one corpus and the questions asked of them, with their evidence located."""

    documents: list[Document]
    questions: list[Question]
    questions_path: Path
    questions_sha256: str
    located: list[Located] = field(repr=False)
    unlocated: list[Unlocated] = field(repr=False)
    """Every quote not located, with its status and reason (reported with each run, never dropped)."""
    log: ProcessingLog = field(repr=False)

    @functools.cached_property
    def keyindexes(self) -> dict[str, KeyIndex]:
        """Key indexes of the documents some located evidence is in (scoring needs no other; built on use)."""
        cited = {loc.document_id for loc in self.located}
        return build_keyindexes(d for d in self.documents if d.document_id in cited)

    @property
    def by_id(self) -> dict[str, Document]:
        """Documents by id."""
        return {d.document_id: d for d in self.documents}

    @property
    def corpus_documents(self) -> dict[str, str | None]:
        """``{label: SHA-256 of the source file}`` (recorded with every run)."""
        return {d.label: d.meta_value("file_hash") for d in self.documents}


def load_documents(
    source: ExperimentConfig | CorpusInputs, layout: Layout, log: ProcessingLog, *, progress: bool = True
) -> list[Document]:
    """Convert (or load) the documents of ``source``'s corpus: all a chunk set needs (no question is read)."""
    src = _inputs_of(source)
    return ingest(
        src.corpus,
        layout=layout,
        max_docs=src.max_docs,
        prefer_latex=src.prefer_latex,
        log=log,
        progress=progress,
        require=True,
    )


def _inputs_of(source: ExperimentConfig | CorpusInputs) -> CorpusInputs:
    return source.corpus_inputs if isinstance(source, ExperimentConfig) else source


def load_inputs(
    source: ExperimentConfig | CorpusInputs,
    layout: Layout,
    *,
    progress: bool = True,
    documents: list[Document] | None = None,
    log: ProcessingLog | None = None,
) -> EvalInputs:
    """Convert (or load) the corpus, read the question set and locate every evidence quote.

    ``documents`` and ``log``: the corpus's documents already loaded (:func:`load_documents`) and their log.

    Raises:
        UnscoredError: Fewer than half of the questions can be scored and ``accept_unscored`` is off.
    """
    cfg = _inputs_of(source)
    log = log if log is not None else ProcessingLog()
    qpath = questions_path(cfg.questions)
    every = load_questions(qpath)  # a bad question file fails before any paper is converted
    folder = resolve_corpus(cfg.corpus).resolve()
    files = file_labels(folder)
    hay = haystack_of(folder)
    if hay is not None:
        say_once((str(folder), None, "haystack"), describe_haystack(hay))
    _check_documents_exist(every, qpath, {name for pair in files for name in pair}, cfg.corpus)
    docs = documents if documents is not None else load_documents(cfg, layout, log, progress=progress)
    labels = {d.label for d in docs}
    swapped = substitution_line(docs)
    if swapped:
        say_once((str(folder), cfg.max_docs, "substitutions"), swapped)
    questions = [q for q in every if all(e.doc in labels for e in q.evidence)]
    gone = [label for label, stem in files if label not in labels and stem not in labels]
    if len(questions) < len(every) or gone:
        line = left_out(cfg.max_docs, len(files), gone, [q.qid for q in every], [q.qid for q in questions])
        say_once((str(folder), cfg.max_docs, str(qpath)), line)
    if not questions:
        msg = (
            f"none of the questions in {qpath} refer only to documents of this corpus ({sorted(labels)[:5]}…)"
        )
        raise ConfigError(msg)
    qsha = file_sha256(qpath)
    check = _located(questions, docs, qsha, layout)
    check.require_scorable(str(qpath), accept=cfg.accept_unscored)  # before any chunking or embedding
    located, unlocated = list(check.located), list(check.unlocated)
    if unlocated:
        _log.info("%s: %s", qpath.name, check.summary())
    return EvalInputs(docs, questions, qpath, qsha, located, unlocated, log)


def say_once(key: tuple[str, int | None, str], line: str) -> None:
    """Log ``line`` (info) the first time ``key`` (corpus folder, max_docs, what) is met in this process.

    The sweep's planner and each run's inputs say the same things of the same corpus: said once.
    """
    if key not in _SAID:
        _SAID.add(key)
        _log.info("%s", line)


def left_out(max_docs: int | None, total: int, gone: list[str], every: list[str], asked: list[str]) -> str:
    """One line naming the papers (``gone`` of ``total``) and questions (``every``, not ``asked``) left out.

    Example:
        >>> left_out(2, 3, ["C"], ["Q1", "Q2", "Q3"], ["Q1", "Q2"])
        'max_docs=2: 2 of 3 papers used, 1 left out (C); 1 of 3 questions not asked, it cites them (Q3); \
a larger max_docs reads more'
    """
    used = total - len(gone)
    skipped = [q for q in every if q not in set(asked)]
    why = f"max_docs={max_docs}" if max_docs is not None and used >= max_docs else "not converted"
    names = ", ".join(gone[:8]) + (", …" if len(gone) > 8 else "")
    line = f"{why}: {used} of {total} papers used, {len(gone)} left out ({names})"
    if skipped:
        names = ", ".join(skipped[:8]) + (", …" if len(skipped) > 8 else "")
        cite = "it cites" if len(skipped) == 1 else "they cite"
        line += f"; {len(skipped)} of {len(every)} questions not asked, {cite} them ({names})"
    if why.startswith("max_docs"):
        line += "; a larger max_docs reads more"
    return line


def _located(questions: list[Question], docs: list[Document], qsha: str, layout: Layout) -> EvidenceCheck:
    """:func:`~hepwb.evaluation.evidence.check_evidence` of ``questions`` in ``docs``, cached as every stage.

    Keyed by the question file's SHA-256, the converted documents and the evidence code: a question set is
    located in a corpus once, not once per run or process (``data/processed/evidence/<key>.json``).
    """
    key = short_hash(
        {
            "questions": qsha,
            "documents": [document_key(d) for d in docs],
            "code": code_fingerprint("evaluation"),
        }
    )
    path = layout.data / "processed" / "evidence" / f"{key}.json"
    if path.is_file():
        try:
            saved = read_json_object(path, "located evidence")
            located = tuple(Located(**loc) for loc in saved["located"])
            unlocated = tuple(
                Unlocated(Evidence(**u["evidence"]), u["status"], u["reason"], tuple(u["pages"]))
                for u in saved["unlocated"]
            )
            return EvidenceCheck(tuple(questions), located, unlocated)
        except UNREADABLE:  # damaged: located again and written anew
            pass
    check = check_evidence(questions, docs)
    write_json(
        path,
        {
            "located": [dataclasses.asdict(loc) for loc in check.located],
            "unlocated": [
                {"evidence": dataclasses.asdict(u.evidence), "status": u.status, "reason": u.reason,
                 "pages": list(u.pages)}
                for u in check.unlocated
            ],
        },
    )  # fmt: skip
    return check


def _check_documents_exist(
    questions: list[Question], qpath: Path, known: set[str], corpus: str | None
) -> None:
    """Refuse evidence naming a document the corpus does not have (outside a max_docs subset is fine)."""
    bad = [(q.qid, i, e.doc) for q in questions for i, e in enumerate(q.evidence) if e.doc not in known]
    if not bad:
        return
    qid, i, doc = bad[0]
    more = f" (and {len(bad) - 1} more evidence entries, documents {sorted({d for *_, d in bad})[:8]})"
    msg = (
        f"{qpath}: question {qid!r}, field evidence[{i}].doc names document {doc!r}, which is not in the "
        f"corpus {corpus or resolve_corpus(None)}{more if len(bad) > 1 else ''}; its labels are "
        f"{sorted(known)[:8]}…. Fix the 'doc' field, add the paper to the corpus, or use a question "
        "file for this corpus"
    )
    raise ConfigError(msg)


def chunk_stage(
    cfg: ExperimentConfig,
    documents: list[Document],
    layout: Layout,
    log: ProcessingLog,
    *,
    progress: bool = True,
    background: bool = False,
) -> ChunkSet:
    """The chunk set of ``cfg``'s chunker configuration (built once, then read from disk).

    ``background``: its files are written while the caller goes on (:func:`build_chunkset`).
    """
    with checked_already():  # the configuration checked the chunker's options
        return build_chunkset(
            documents,
            cfg.chunker,
            layout=layout,
            log=log,
            progress=progress,
            background=background,
            chunk_size=cfg.chunk_size,
            chunk_overlap=cfg.chunk_overlap,
            tokenizer=cfg.tokenizer,
            **cfg.chunker_options,
        )


def needs_windows(cfg: ExperimentConfig) -> bool:
    """Whether ``cfg``'s retriever reads chunks through windows (``read``/``dense_read``, or its fit's)."""
    opts = cfg.retriever_options
    reads = {str(opts.get("read", "first")), str(opts.get("dense_read", "first"))}
    if cfg.retriever == "fusion":  # a named fit's readings; a run without one fits both (first, max)
        reads |= fit_reads(load_fit(str(opts["fitted"]))) if opts.get("fitted") else {"max"}
    return reads != {"first"}


def needs_vectors(cfg: ExperimentConfig) -> bool:
    """Whether ``cfg``'s retriever reads the chunks' vectors (:func:`~hepwb.retrieval.base.reads_vectors`).

    A lexical run (``bm25``, ``bm25_plain``, ``entity``, and ``xref``/``parent``/``rerank`` over them) does
    not: its table is built without embeddings and the embedding model is never loaded.
    """
    return reads_vectors(cfg.retriever, cfg.retriever_options) or needs_windows(cfg)


def table_parts_of(cfg: ExperimentConfig) -> frozenset[str]:
    """The table parts ``cfg``'s retriever reads: what its table is built with.

    :func:`~hepwb.retrieval.base.table_parts`, and the vectors when it reads windows.
    """
    parts = table_parts(cfg.retriever, cfg.retriever_options)
    return parts | {"vector"} if needs_windows(cfg) else parts


def index_stage(
    cs: ChunkSet,
    embedder: Embedder,
    layout: Layout,
    *,
    parts: Collection[str] = PARTS,
    windows: bool = False,
    progress: bool = True,
) -> Any:
    """The LanceDB table of ``cs`` (built once, with its full-text indexes).

    ``parts``: those the run reads (:data:`~hepwb.index.parts.PARTS`, default all; vectors embedded by
    ``embedder``), built or added to the table when missing; ``windows``: also the window tables
    (:mod:`hepwb.index.windows`) of chunks longer than the model reads.
    """
    store = ChunkStore(layout.lancedb, embedder, progress=progress)
    wanted = {*parts, "vector"} if windows else set(parts)
    table = store.table(cs.chunkset_id, cs.chunks, cs.documents, parts=wanted)
    if windows:
        store.windows(cs.chunkset_id, cs.chunks)
    return table


def retrieve_stage(
    cfg: ExperimentConfig,
    table: Any,
    embedder: Embedder,
    questions: list[Question],
    *,
    progress: bool = True,
    questions_sha256: str = "",
    latencies_ms: dict[str, float] | None = None,
    options: JSONObject | None = None,
) -> dict[str, list[Hit]]:
    """The top ``cfg.k`` hits of ``cfg``'s retriever for every question.

    ``latencies_ms``, when given, receives each question's search time in milliseconds. ``options``
    replace ``cfg.retriever_options`` (a ``fusion`` run passes the fit it made).
    """
    from tqdm.auto import tqdm

    opts = cfg.retriever_options if options is None else options
    with checked_already():  # the configuration checked the retriever's options
        retriever = get_retriever(cfg.retriever, table, embedder=embedder, **opts)
    # a retriever fitted on this very question set answers each question out of fold (``fusion``)
    oof = getattr(retriever, "out_of_fold", None)
    if latencies_ms is not None and questions:
        retriever.search(
            questions[0].question, cfg.k
        )  # warm-up (model load, caches): latency is per warm query
    out = {}
    with unexplained():  # scored by ids and offsets: no highlighting of every hit
        for q in tqdm(questions, desc=f"retrieving ({cfg.retriever})", unit="q", disable=not progress):
            own = oof(q, questions_sha256) if oof is not None else None
            start = time.perf_counter()
            out[q.qid] = (own or retriever).search(q.question, cfg.k)
            if latencies_ms is not None:
                latencies_ms[q.qid] = 1000 * (time.perf_counter() - start)
    return out
