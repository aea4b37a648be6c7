"""Evidence in the reader's context: does what a reader is handed hold the evidence?

Rank metrics ask whether the *chunk* holding the evidence is retrieved. A reader is handed more
than the chunk when the reader context is widened: the parent of a hierarchical child, the
sentence window, or (:func:`hepwb.processing.links.reader_context`) the captions of the figures
and tables a chunk mentions. ``evidence_in_context@k`` is the share of located evidence quotes
that the top ``k`` hits' reader contexts cover (at least ``min_coverage`` of the quote's key
characters, as for relevance), averaged over questions; it is computed with the chunk alone and
with the linked captions added, so the option is measured on the same hits.

Example:
    >>> from hepwb.evaluation.matching import KeyIndex, locate_all
    >>> from hepwb.evaluation.questions import Evidence, Question
    >>> from hepwb.processing.markdown import markdown_document
    >>> from hepwb.types import Hit
    >>> quote = "The beam-spin asymmetry rises with -t at every beam energy"
    >>> doc = markdown_document(f"As Fig. 1 shows, it rises.\\n\\nFigure 1: {quote}.", "S01")
    >>> q = Question("q1", "What rises?", "", (Evidence("q1#e0", "S01", 1, quote),))
    >>> located, _ = locate_all([q], [doc])
    >>> hits = {"q1": [Hit("c0", doc.document_id, "S01", 0, 26, 1, 1.0)]}
    >>> docs = {doc.document_id: doc}
    >>> [evidence_in_context(located, hits, docs, k=1, captions=c) for c in (False, True)]
    [0.0, 1.0]
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence

from hepwb import defaults
from hepwb.evaluation.matching import KeyIndex, Located, coverage
from hepwb.types import Document, Hit

__all__ = ["context_spans", "evidence_in_context"]


def context_spans(doc: Document, hit: Hit, *, captions: bool = True) -> list[tuple[int, int]]:
    """The spans of ``doc`` a reader gets for ``hit``: its chunk, and the captions it mentions."""
    spans = [(hit.start, hit.end)]
    if not captions:
        return spans
    mentioned = {
        m["target"] for m in doc.meta.get("xrefs", []) if m["target"] and hit.start <= m["start"] < hit.end
    }
    spans.extend(
        (int(f["caption_start"]), int(f["caption_end"]))
        for f in doc.meta.get("figures", [])
        if f["id"] in mentioned
    )
    return spans


def evidence_in_context(
    located: Sequence[Located],
    hits: Mapping[str, Sequence[Hit]],
    documents: Mapping[str, Document],
    *,
    k: int = defaults.RAGAS_TOP_K,
    captions: bool = True,
    min_coverage: float = defaults.MIN_COVERAGE,
    keyindexes: Mapping[str, KeyIndex] | None = None,
) -> float:
    """Mean over questions of the share of their located evidence covered by the top-``k`` contexts.

    ``keyindexes`` (``{document_id: KeyIndex}``, as :func:`~hepwb.evaluation.build_keyindexes` gives)
    saves building them again.
    """
    indexes: dict[str, KeyIndex] = dict(keyindexes or {})
    per_question: dict[str, list[bool]] = defaultdict(list)
    for loc in located:
        doc = documents.get(loc.document_id)
        if doc is None:
            per_question[loc.qid].append(False)
            continue
        idx = indexes.get(loc.document_id) or indexes.setdefault(loc.document_id, KeyIndex.build(doc))
        spans = [
            s
            for h in hits.get(loc.qid, [])[:k]
            if h.document_id == loc.document_id
            for s in context_spans(doc, h, captions=captions)
        ]
        per_question[loc.qid].append(any(coverage(loc, a, z, idx) >= min_coverage for a, z in spans))
    if not per_question:
        return float("nan")
    return sum(sum(v) / len(v) for v in per_question.values()) / len(per_question)
