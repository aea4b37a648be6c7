"""Score an outside system's TREC run file on hepwb's questions, and record it beside hepwb's own runs.

A run file from PyTerrier, Pyserini/Anserini, ranx or a script of yours is read with every check
(:func:`~hepwb.interop.trec.read_run`: bounded before anything is parsed; each query ordered as trec_eval
orders it and cut at ``k``), then scored at one of two levels:

* **chunk** (the default): each docno is a chunk id of the chunk set the configuration builds (the
  ``corpus.jsonl`` ids of ``hepwb export --format beir``). The run goes through the code that scores
  hepwb's own runs (:func:`~hepwb.experiment.scoring.score`): found@k, recall, MRR and nDCG per evidence
  quote, the chunk, paper and span levels, the ragas metrics, and their 95 % intervals.
* **paper**: each docno is a paper label (``P01``) or ``LABEL#anything`` (a passage of that paper, as
  msmarco-document's segments are named); a paper counts at its first appearance. The paper-level
  metrics (``doc_…``) with their intervals: they depend on no chunking.

A question the run has no line for is scored 0, as a hepwb run that retrieves nothing. The run gets a run
folder under ``reports/runs/`` (``metrics.json``, ``per_question.parquet``, ``hits.parquet``) and its
rows in the catalog, its retriever named ``run:<tag>``, so the report's verdict tests it beside hepwb's
runs on the same questions; ``sweep=`` adds it to a sweep's cells (the report shows the latest sweep).
"""

from __future__ import annotations

import os
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from hepwb.catalog import Catalog
from hepwb.chunking.chunksets import ChunkSet
from hepwb.corpus import plain_label
from hepwb.evaluation import load_questions
from hepwb.evaluation.levels import document_level, level_columns
from hepwb.evaluation.stats import summary_with_ci
from hepwb.exceptions import ConfigError
from hepwb.experiment.cell import RunResult, environment, worker_name
from hepwb.experiment.config import ExperimentConfig
from hepwb.experiment.scoring import score, scored_hits_frame
from hepwb.experiment.stages import EvalInputs, Timer, chunk_stage, load_inputs
from hepwb.hepilot.log import utc_now
from hepwb.interop.trec import RunFile, check_run_file, read_run
from hepwb.paths import Layout
from hepwb.runs.record import RunInputs, RunRecord
from hepwb.text.ids import code_fingerprint, file_sha256, short_hash
from hepwb.text.names import under
from hepwb.types import Hit, JSONObject

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["LEVELS", "Level", "score_run_file"]

Level = Literal["chunk", "paper"]
LEVELS: tuple[Level, ...] = ("chunk", "paper")
"""The levels a run file is scored at (module docstring)."""


def _ks(k: int) -> tuple[int, ...]:
    """The cutoffs of a run with ``k`` hits per question (as :func:`~hepwb.experiment.scoring.score`)."""
    return tuple(sorted({c for c in (1, 3, 5, 10) if c <= k} | {k}))


def _tag(run: RunFile, name: str | None) -> str:
    """The run's name: ``name``, else its one tag (a plain name made of it)."""
    if name is None:
        if len(run.tags) > 1:
            shown = ", ".join(run.tags[:5])
            msg = (
                f"run file {run.path} holds several runs (tags {shown}); give each its own file "
                "(e.g. awk '$6 == \"TAG\"'), or name the one to score"
            )
            raise ConfigError(msg)
        name = run.tags[0] if run.tags else run.path.stem
    return plain_label(name)


def _docno_check(level: Level, inputs: EvalInputs, cs: ChunkSet | None) -> Callable[[str], str | None]:
    if cs is not None:
        chunks = {c.chunk_id for c in cs.chunks}
        where = (
            f"is not a chunk of chunk set {cs.chunkset_id}; score the run with the chunking it was made on "
            "(--chunker, --chunk-size, --chunk-overlap: the export's manifest.json names its chunk set), or "
            "at paper level (--level paper)"
        )
        return lambda d: None if d in chunks else where
    labels = {d.label for d in inputs.documents}
    shown = ", ".join(sorted(labels)[:3])
    why = f"is not a paper of the corpus ({shown}, …); at paper level a docno is a label, or LABEL#passage"
    return lambda d: None if d.split("#", 1)[0] in labels else why


def _hits(run: RunFile, inputs: EvalInputs, cs: ChunkSet | None, tag: str) -> dict[str, list[Hit]]:
    """Each question's ranking as hepwb's hits (chunks of ``cs``, or papers), an empty list when absent."""
    label_of = {d.document_id: d.label for d in inputs.documents}
    by_label = {d.label: d.document_id for d in inputs.documents}
    chunks = {c.chunk_id: c for c in cs.chunks} if cs is not None else {}
    out: dict[str, list[Hit]] = {}
    for q in inputs.questions:
        hits = []
        for rank, (docno, s) in enumerate(run.rankings.get(q.qid, []), start=1):
            c = chunks.get(docno)
            if c is not None:
                doc, span = (c.document_id, label_of[c.document_id]), (c.start, c.end)
                hits.append(Hit(c.chunk_id, *doc, *span, rank, s, text=c.text, retriever=tag, pages=c.pages,
                                section_path=c.section_path))  # fmt: skip
            else:
                label = docno.split("#", 1)[0]
                hits.append(Hit(docno, by_label[label], label, 0, 0, rank, s, retriever=tag))
        out[q.qid] = hits
    return out


def _paper_scores(
    cfg: ExperimentConfig, inputs: EvalInputs, results: dict[str, list[Hit]]
) -> tuple[pd.DataFrame, dict[str, float], dict[str, tuple[float, float]], dict[tuple[str, int], bool]]:
    """Paper-level metrics per question, their means and intervals, and which hits are relevant."""
    import pandas as pd

    ks = _ks(cfg.k)
    located: dict[str, set[str]] = defaultdict(set)
    for loc in inputs.located:
        located[loc.qid].add(loc.document_id)
    n_located = Counter(loc.qid for loc in inputs.located)
    cols = [c for c in level_columns(ks, max(ks)) if c.startswith("doc_")]
    rows = document_level({q: results[q] for q in located}, located, ks)
    qs = inputs.questions
    per_question = pd.DataFrame(
        {
            "qid": [q.qid for q in qs],
            "kind": [q.kind for q in qs],
            "style": [q.style for q in qs],
            "n_evidence": [len(q.evidence) for q in qs],
            "n_located": [n_located[q.qid] for q in qs],
            "paper": [q.evidence[0].doc if q.evidence else "" for q in qs],
        }
    ).join(pd.DataFrame.from_dict(rows, orient="index", columns=cols), on="qid")
    evaluated = per_question[per_question["n_located"] > 0]
    summary = {c: float(evaluated[c].mean()) if len(evaluated) else float("nan") for c in cols}
    summary |= {
        "n_questions": float(len(qs)),
        "n_questions_evaluated": float(len(evaluated)),
        "n_questions_unlocatable": float(len(qs) - len(evaluated)),
        "n_evidence": float(sum(len(q.evidence) for q in qs)),
        "n_evidence_located": float(len(inputs.located)),
        "min_coverage": cfg.min_coverage,
    }
    ci95: dict[str, tuple[float, float]] = {}
    if len(evaluated):
        ci = summary_with_ci(evaluated, cols)
        ci95 = {str(m): (round(float(lo), 4), round(float(hi), 4))
                for m, lo, hi in zip(ci["metric"], ci["ci_low"], ci["ci_high"], strict=True)}  # fmt: skip
    relevant = {
        (q, h.rank): h.document_id in located.get(q, set()) for q, hits in results.items() for h in hits
    }
    return per_question, summary, ci95, relevant


def _sweep_id(catalog: Catalog, sweep: str) -> str:
    sweep_id = catalog.latest_sweep() if sweep == "latest" else sweep
    known = catalog.sql("SELECT sweep_id FROM sweeps")["sweep_id"].astype(str).tolist()
    if sweep_id is None or sweep_id not in known:
        have = ", ".join(known[:5]) or "none yet"
        msg = f"no sweep {sweep!r} in the catalog (sweeps: {have}); run `hepwb sweep`, or leave out --sweep"
        raise ConfigError(msg)
    return sweep_id


def _write_parquet(frame: pd.DataFrame, path: Path) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    frame.to_parquet(tmp)
    tmp.replace(path)


def score_run_file(
    cfg: ExperimentConfig,
    path: str | Path,
    *,
    level: Level = "chunk",
    name: str | None = None,
    sweep: str | None = None,
    layout: Layout | None = None,
    progress: bool = True,
) -> RunResult:
    """Score the TREC run file ``path`` on ``cfg``'s questions and record it (see the module docstring).

    Args:
        cfg: Corpus, question set, chunk set (chunk level), ``k`` and ``min_coverage``; its retriever is
            not used.
        path: The run file.
        level: ``"chunk"`` or ``"paper"``.
        name: The run's name (default: the file's run tag).
        sweep: A sweep id, or ``"latest"``, whose cells the run joins (the report shows one sweep).
        layout: Artefact folders (default: this project's).
        progress: Show progress bars while papers are converted and chunked.

    Raises:
        ReadError: The run file is refused (one line naming its line and the fix).
        ConfigError: An unknown level or sweep, or a run file of several runs without ``name``.
    """
    path = Path(path)
    check_run_file(path)  # a huge file is refused before any paper is converted
    if level not in LEVELS:
        msg = f"level {level!r}: choose chunk or paper"
        raise ConfigError(msg)
    layout = layout or Layout.default()
    catalog = Catalog(layout.catalog)
    sweep_id = _sweep_id(catalog, sweep) if sweep is not None else None
    timings = Timer()
    with timings("ingest_s"):
        inputs = load_inputs(cfg, layout, progress=progress)
    cs = None
    if level == "chunk":
        with timings("chunk_s"):
            cs = chunk_stage(cfg, inputs.documents, layout, inputs.log, progress=progress)
    run = _read(path, cfg, inputs, level, cs)
    tag = _tag(run, name)
    results = _hits(run, inputs, cs, tag)
    with timings("evaluate_s"):
        per_question, summary, ci95, relevant = _scores(cfg, inputs, cs, results)
    config = _run_config(cfg, path, level, tag, run, inputs, cs)
    cs_id = cs.chunkset_id if cs is not None else ""
    key = short_hash({"config": config, "questions": inputs.questions_sha256, "chunkset": cs_id}, 16)
    folder = f"run-{tag}-{cs_id or 'papers'}-k{cfg.k}-{key[:6]}"
    run_dir = under(layout.runs, folder[:120], "run folder")
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / RunRecord.FILE).unlink(missing_ok=True)
    hits = scored_hits_frame(results, relevant)
    _write_parquet(per_question, run_dir / "per_question.parquet")
    _write_parquet(hits, run_dir / "hits.parquet")
    record = _record(cfg, config, key, inputs, cs, tag, summary, ci95, timings, sweep_id)
    record.save(run_dir)
    catalog.record_run(run_dir)
    if sweep_id is not None:
        catalog.record_sweep_cells(sweep_id, [(run_dir.name, record.run_id, "ok", False)])
    return RunResult(record, run_dir, per_question, hits)


def _read(
    path: Path, cfg: ExperimentConfig, inputs: EvalInputs, level: Level, cs: ChunkSet | None
) -> RunFile:
    """The run file, checked against the question set's ids and the level's docnos, cut at ``cfg.k``."""
    known = [q.qid for q in load_questions(inputs.questions_path)]
    hint = (
        f" {inputs.questions_path} (its ids: {', '.join(known[:3])}, …); score a run of its questions, or "
        "pass the run's question file with --questions"
    )
    return read_run(
        path, qids=set(known), docno_problem=_docno_check(level, inputs, cs), qid_hint=hint, k=cfg.k
    )


def _scores(
    cfg: ExperimentConfig, inputs: EvalInputs, cs: ChunkSet | None, results: dict[str, list[Hit]]
) -> tuple[pd.DataFrame, dict[str, float], dict[str, tuple[float, float]], dict[tuple[str, int], bool]]:
    """Per-question metrics, their means and intervals, and which hits are relevant, at the run's level.

    Chunk level scores as hepwb's own runs are scored (:func:`~hepwb.experiment.scoring.score`); paper
    level by :func:`_paper_scores`.
    """
    if cs is not None:
        s = score(cfg, inputs, cs, inputs.questions, results)
        return s.per_question, s.summary, s.ci95, s.relevant
    return _paper_scores(cfg, inputs, results)


def _run_config(
    cfg: ExperimentConfig,
    path: Path,
    level: Level,
    tag: str,
    run: RunFile,
    inputs: EvalInputs,
    cs: ChunkSet | None,
) -> JSONObject:
    """The configuration recorded for the run: ``cfg`` with the run file as its retriever (``run:<tag>``).

    A paper-level run names no chunking (``paper level``).
    """
    config: JSONObject = {
        **cfg.to_dict(),
        "retriever": f"run:{tag}",
        "retriever_options": {},
        "level": level,
        "run_file": str(path),
        "run_file_sha256": file_sha256(path),
        "questions_without_lines": sum(q.qid not in run.rankings for q in inputs.questions),
        "scored_config": cfg.to_dict(),
    }
    if cs is None:
        config |= {"chunker": "paper level", "chunk_size": None, "chunk_overlap": None, "tokenizer": None}
    return config


def _record(
    cfg: ExperimentConfig,
    config: JSONObject,
    key: str,
    inputs: EvalInputs,
    cs: ChunkSet | None,
    tag: str,
    summary: dict[str, float],
    ci95: dict[str, tuple[float, float]],
    timings: Timer,
    sweep_id: str | None,
) -> RunRecord:
    """The run's record, as a hepwb run's: its configuration, inputs, scores, timings and environment."""
    cs_id = cs.chunkset_id if cs is not None else ""
    unlocated = [u for u in inputs.unlocated if u.qid in {q.qid for q in inputs.questions}]
    return RunRecord(
        run_id=f"{cs_id or 'papers'}__run-{tag}__k{cfg.k}-{key[:6]}",
        chunkset_id=cs_id,
        chunkset_root=str(cs.root) if cs is not None else "",
        hepilot_compliant=cs.hepilot_compliant if cs is not None else False,
        created=utc_now(),
        config=config,
        cell_key=key,
        stage_keys={"chunkset": cs_id, "run_file": config["run_file_sha256"]},
        code_fingerprint={pkg: code_fingerprint(pkg) for pkg in ("evaluation", "interop")},
        summary=summary,
        summary_ci95=ci95,
        timings_s={k: round(v, 3) for k, v in timings.items()},
        inputs=RunInputs(
            corpus_documents=inputs.corpus_documents,
            questions_file=str(inputs.questions_path),
            questions_sha256=inputs.questions_sha256,
            unlocated_evidence=[u.eid for u in unlocated],
            unscored=[u.row() for u in unlocated],
        ),
        environment=environment(),
        processing_errors=[e.dump() for e in inputs.log.errors],
        worker=worker_name(),
        sweep_id=sweep_id,
    )
