"""Questions a run missed, as a physicist checks them: the question, the passage it needed, what came first.

:func:`missed` takes a configuration and its :class:`~hepwb.experiment.cell.RunResult` and returns, for
the first ``n`` questions with no relevant chunk in the top 5, the question, the expected passage
(paper, page, section, the evidence quote as it stands in the converted text) and the retriever's top
hit (paper, page, section, a snippet with the question's words highlighted). :func:`misses_html`
renders them for a notebook; every string is escaped.
"""

from __future__ import annotations

from dataclasses import dataclass

from hepwb import defaults
from hepwb.experiment.cell import RunResult
from hepwb.experiment.config import ExperimentConfig
from hepwb.experiment.search import Searcher
from hepwb.experiment.stages import EvalInputs, load_inputs
from hepwb.paths import Layout
from hepwb.retrieval.explain import section_label, section_of, snippet
from hepwb.text.plaintext import escape_html
from hepwb.types import Chunk, Document, Hit

__all__ = ["Miss", "missed", "misses_html"]


@dataclass(frozen=True)
class Miss:
    """One missed question: where its evidence is, and what the retriever put first instead."""

    qid: str
    question: str
    kind: str
    first_relevant_rank: int | None
    paper: str
    page: int | None
    section: str
    quote: str
    top: Hit | None
    top_section: str = ""


def missed(
    cfg: ExperimentConfig,
    result: RunResult,
    layout: Layout | None = None,
    n: int = defaults.DISPLAY_MISSES,
    metric: str = defaults.DECISION_METRIC,
    inputs: EvalInputs | None = None,
) -> list[Miss]:
    """The first ``n`` questions of ``result`` whose ``metric`` is 0, each with its evidence and top hit.

    Uses the cached stages of ``cfg`` (nothing is converted, chunked or embedded again); ``inputs``: the
    run's documents and located evidence when the caller holds them (else read again).
    """
    import pandas as pd

    layout = layout or Layout.default()
    pq = result.per_question
    evaluated = pq[pq["n_located"] > 0] if "n_located" in pq.columns else pq
    qids = [str(q) for q in evaluated.loc[evaluated[metric] == 0, "qid"]][:n]
    if not qids:
        return []
    inputs = inputs or load_inputs(cfg, layout, progress=False)
    searcher = Searcher.open(
        cfg.corpus, cfg.chunker, cfg.chunk_size, cfg.chunk_overlap, cfg.tokenizer, cfg.embedding_model,
        cfg.max_docs, cfg.prefer_latex, layout,
    )  # fmt: skip
    retriever = searcher.retriever(cfg.retriever, **cfg.retriever_options)
    docs = inputs.by_id
    chunks = searcher.chunkset.chunks if searcher.chunkset is not None else []
    questions = {q.qid: q for q in inputs.questions}
    ranks = dict(zip(pq["qid"].astype(str), pq.get("first_relevant_rank", [None] * len(pq)), strict=True))
    out = []
    for qid in qids:
        q = questions[qid]
        where = next(loc for loc in inputs.located if loc.qid == qid)
        doc = docs[where.document_id]
        home = next(
            (c for c in chunks if c.document_id == doc.document_id and c.start <= where.start < c.end), None
        )
        hits = retriever.search(q.question, 1)
        rank = ranks.get(qid)
        out.append(
            Miss(
                qid=qid,
                question=q.question,
                kind=q.kind,
                first_relevant_rank=None if pd.isna(rank) else int(rank),
                paper=doc.label,
                page=doc.page_at(where.start) or None,
                section=_section(home, doc) if home is not None else "",
                quote=doc.markdown[where.start : where.end],
                top=hits[0] if hits else None,
                top_section=section_of(hits[0], docs.get(hits[0].document_id)) if hits else "",
            )
        )
    return out


def _section(chunk: Chunk, doc: Document) -> str:
    """The section shown for the chunk holding the evidence (as for a hit: :func:`section_of`)."""
    as_hit = Hit(chunk.chunk_id, doc.document_id, doc.label, chunk.start, chunk.end, 0, 0.0,
                 section_path=tuple(chunk.section_path), title=doc.title)  # fmt: skip
    return section_of(as_hit, doc)


def _where(paper: str, page: int | None, section: str) -> str:
    parts = [paper] + ([f"p. {page}"] if page else []) + ([f"§ {section}"] if section else [])
    return escape_html(", ".join(parts))


def misses_html(misses: list[Miss], width: int = defaults.DISPLAY_MISS_SNIPPET_CHARS) -> str:
    """The missed questions as HTML: question, expected passage, top hit with highlighted snippet."""
    if not misses:
        return "<p>No question was missed.</p>"
    items = []
    for m in misses:
        found = (
            f"first relevant chunk at rank {m.first_relevant_rank}"
            if m.first_relevant_rank
            else "not in the top k"
        )
        top = "<i>no hit</i>"
        if m.top is not None:
            h = m.top
            snip = (
                escape_html(snippet(h, width, ("\ue000", "\ue001")))
                .replace("\ue000", "<mark>")
                .replace("\ue001", "</mark>")
            )
            page = min(h.pages) if h.pages else None
            section = m.top_section or section_label(h.section_path, h.title)
            top = f"<b>{_where(h.label, page, section)}</b><br>{snip}"
        items.append(
            "<div class='hw-miss' style='border-left:3px solid #c63;padding:4px 10px;margin:8px 0'>"
            f"<div><b>{escape_html(m.qid)}</b> ({escape_html(m.kind)}, {found}): "
            f"{escape_html(m.question)}</div>"
            f"<div style='margin-top:4px'><b>Expected</b> — {_where(m.paper, m.page, m.section)}"
            f"<blockquote style='margin:2px 0 2px 12px;color:#333'>{escape_html(m.quote)}</blockquote></div>"
            f"<div><b>Top hit</b> — {top}</div></div>"
        )
    return "".join(items)
