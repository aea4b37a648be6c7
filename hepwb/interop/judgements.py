"""hepwb's relevance judgements of a question set, as qrels an IR tool reads: paper level and chunk level.

hepwb judges relevance by *evidence quotes*: each question names the passages (``doc``, ``quote``) that
answer it, and :func:`~hepwb.evaluation.matching.locate_evidence` finds each quote in its converted paper.
Two levels of qrels follow, each ``{qid: {docno: 1}}`` over the questions with at least one located quote
(the others cannot be scored by anyone; every run lists them by name):

* **paper level**: the papers holding a question's located quotes (docno = the paper's label, ``P01``). It
  depends on no chunking, so systems with different chunkers, or none, compare on it.
* **chunk level**, for one chunk set: every chunk holding at least ``min_coverage`` (default half) of a
  located quote's letters and digits, or the whole quote verbatim anywhere in it, or the whole of another
  place the quote stands (:attr:`~hepwb.evaluation.matching.Located.copies`: a sentence repeated in
  abstract and conclusion counts where it repeats, quoted verbatim or with a typo). That is
  :func:`~hepwb.evaluation.matching.is_relevant`, the rule of every hepwb run
  (:func:`~hepwb.evaluation.levels.relevant_chunks`).

With these qrels, trec_eval's ``Success@k`` on the chunk level is hepwb's ``hit_rate@k`` (found@k) and the
measures of both levels are hepwb's ``chunk_…`` and ``doc_…`` columns. hepwb's ``recall@k``, ``mrr@k`` and
``ndcg@k`` are averaged per quote first (a second chunk holding the same quote does not count twice), which
a qrels file cannot say.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hepwb.chunking.chunksets import ChunkSet
from hepwb.evaluation import KeyIndex, Located
from hepwb.evaluation.levels import relevant_chunks
from hepwb.exceptions import ConfigError
from hepwb.experiment.config import ExperimentConfig
from hepwb.experiment.stages import EvalInputs, chunk_stage, load_inputs
from hepwb.paths import Layout
from hepwb.types import Chunk

__all__ = [
    "RELEVANCE_RULE",
    "Judgements",
    "chunk_qrels",
    "mismatched_chunk",
    "paper_qrels",
    "question_judgements",
]

RELEVANCE_RULE = (
    "A question is scored when at least one of its evidence quotes is located in its paper's converted "
    "text. Paper level: the papers holding its located quotes are relevant. Chunk level: a chunk is "
    "relevant when it holds at least min_coverage of a located quote's letters and digits, or the whole "
    "quote verbatim, or the whole of another place the quote stands (a repeated sentence)."
)
"""The relevance rule in one paragraph (written into every export's ``manifest.json``)."""


@dataclass(frozen=True)
class Judgements:
    """A question set's judgements over one corpus (and, for chunk-level qrels, one chunk set).

    Attributes:
        inputs: The converted documents, the questions and their located quotes.
        chunkset: The chunk set the chunk-level qrels are about (``None``: paper level only).
        min_coverage: The share of a quote a chunk must hold.
        paper: ``{qid: {paper label: 1}}``.
        chunk: ``{qid: {chunk id: 1}}`` (empty without a chunk set).
    """

    inputs: EvalInputs
    chunkset: ChunkSet | None
    min_coverage: float
    paper: dict[str, dict[str, int]]
    chunk: dict[str, dict[str, int]]

    @property
    def topics(self) -> dict[str, str]:
        """``{qid: question}`` of every question asked of this corpus, in file order."""
        return {q.qid: q.question for q in self.inputs.questions}


def paper_qrels(located: Sequence[Located]) -> dict[str, dict[str, int]]:
    """``{qid: {label: 1}}``: the papers holding each question's located quotes.

    Example:
        >>> loc = Located("Q1#e0", "Q1", "P01", "d1", 0, 5, 0, 5, "strict", 1, True)
        >>> paper_qrels([loc])
        {'Q1': {'P01': 1}}
    """
    out: dict[str, dict[str, int]] = {}
    for loc in located:
        out.setdefault(loc.qid, {})[loc.label] = 1
    return out


def chunk_qrels(
    located: Sequence[Located], chunks: Sequence[Chunk], keyindexes: dict[str, KeyIndex], min_coverage: float
) -> dict[str, dict[str, int]]:
    """``{qid: {chunk id: 1}}``: the chunks relevant to each question (hepwb's rule, module docstring).

    Questions none of whose chunks is relevant (a quote spread thinly over several small chunks) get no
    entry, as in hepwb's own chunk-level scores. Chunk ids are in chunk-set order.
    """
    relevant = relevant_chunks(located, chunks, keyindexes, min_coverage)
    order = {c.chunk_id: i for i, c in enumerate(chunks)}
    first: dict[str, int] = {}  # question-file order: where each question's first quote is
    for i, loc in enumerate(located):
        first.setdefault(loc.qid, i)
    return {
        q: dict.fromkeys(sorted(ids, key=order.__getitem__), 1)
        for q, ids in sorted(relevant.items(), key=lambda kv: first[kv[0]])
        if ids
    }


def mismatched_chunk(cs: ChunkSet, inputs: EvalInputs) -> str | None:
    """The first chunk of a paper holding located evidence whose text is not that paper's text at its offsets.

    ``None`` when every such chunk matches: the chunk set and the converted papers agree, so chunk-level
    judgements made from them are sound (a chunk set kept from before a converter change may not).
    """
    cited = {loc.document_id for loc in inputs.located}
    docs = inputs.by_id
    for c in cs.chunks:
        if c.document_id in cited and docs[c.document_id].markdown[c.start : c.end] != c.text:
            return c.chunk_id
    return None


def question_judgements(
    cfg: ExperimentConfig,
    *,
    layout: Layout | None = None,
    chunks: bool = True,
    inputs: EvalInputs | None = None,
    chunkset: ChunkSet | None = None,
    progress: bool = True,
) -> Judgements:
    """The judgements of ``cfg``'s question set over ``cfg``'s corpus, for a chunk set if ``chunks``.

    Converts the corpus and builds ``cfg``'s chunk set (both read from hepwb's caches when built before)
    unless ``inputs`` or ``chunkset`` are given, then applies the rule of the module docstring.

    Raises:
        ConfigError: ``chunkset`` does not match the converted papers (:func:`mismatched_chunk`).
    """
    layout = layout or Layout.default()
    inputs = inputs or load_inputs(cfg, layout, progress=progress)
    cs = None
    if chunks:
        cs = chunkset or chunk_stage(cfg, inputs.documents, layout, inputs.log, progress=progress)
        bad = mismatched_chunk(cs, inputs)
        if bad is not None:
            msg = (
                f"chunk set {cs.chunkset_id} does not match the papers as converted now (chunk {bad}): "
                "hepwb's converter changed since it was built; run the run again, then export"
            )
            raise ConfigError(msg)
    chunk = chunk_qrels(inputs.located, cs.chunks, inputs.keyindexes, cfg.min_coverage) if cs else {}
    return Judgements(inputs, cs, cfg.min_coverage, paper_qrels(inputs.located), chunk)
