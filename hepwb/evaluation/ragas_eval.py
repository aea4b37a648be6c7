"""ragas metrics on hepwb's retrieval results.

Each question becomes a ragas ``SingleTurnSample``: ``user_input`` the question,
``retrieved_contexts``/``retrieved_context_ids`` the texts/ids of its top ``k`` hits,
``reference_context_ids`` the chunks relevant to its evidence (the chunk level of
:mod:`hepwb.evaluation.levels`), ``reference_contexts`` the located evidence quotes (as they stand in
the converted document) and ``reference`` the reference answer.

Always (no LLM, no network):

* ``id_context_precision`` / ``id_context_recall`` - ragas ``IDBasedContextPrecision`` / ``Recall``
  (these equal ``chunk_precision@k`` / ``chunk_recall@k`` computed by ir-measures when ``k`` hits come back:
  the tests check it);
* ``nonllm_context_precision`` / ``nonllm_context_recall`` - ragas ``NonLLMContextPrecisionWithReference``
  / ``NonLLMContextRecall`` (rapidfuzz string similarity of contexts and quotes, threshold 0.5);
* ``answer_in_context`` - ragas ``StringPresence`` of the reference answer in the retrieved text.

With an OpenAI-compatible endpoint (:class:`hepwb.runtime.llm.LLMEndpoint`): ``llm_context_precision``,
``llm_context_recall``, ``faithfulness`` and ``answer_relevancy`` (ragas collections metrics; the
response they judge is an answer the same LLM writes from the retrieved contexts, and answer
relevancy embeds with hepwb's embedding model).
"""

from __future__ import annotations

import asyncio
import os
import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from hepwb import defaults
from hepwb.evaluation.matching import Located
from hepwb.evaluation.questions import Question
from hepwb.models.tokenizers import resolve_model_path
from hepwb.runtime.aio import run_isolated
from hepwb.runtime.deps import extra
from hepwb.runtime.llm import LLMEndpoint
from hepwb.types import Document, Hit, JSONObject

if TYPE_CHECKING:
    import pandas as pd


__all__ = [
    "ANSWER_METRICS",
    "LLM_METRICS",
    "OFFLINE_METRICS",
    "llm_scores",
    "no_user_file",
    "offline_scores",
    "ragas_samples",
]

OFFLINE_METRICS = (
    "id_context_precision",
    "id_context_recall",
    "nonllm_context_precision",
    "nonllm_context_recall",
    "answer_in_context",
)
LLM_METRICS = ("llm_context_precision", "llm_context_recall", "faithfulness", "answer_relevancy")
ANSWER_METRICS = frozenset(
    {"ragas_answer_in_context", "ragas_llm_context_precision", "ragas_llm_context_recall"}
)
"""The per-question columns that read the question's reference ``answer``: a question without one has none."""

ANSWER_PROMPT = (
    "Answer the question from the excerpts of physics papers below, in one or two sentences. "
    "If they do not contain the answer, say so.\n\n{contexts}\n\nQuestion: {question}"
)


def _quiet() -> None:
    """No ragas telemetry, and no ragas file outside ``data/`` and ``reports/`` (:func:`no_user_file`)."""
    os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
    no_user_file()


def no_user_file() -> None:
    """Keep ragas from writing ``~/.local/share/ragas/uuid.json`` (its analytics user id).

    ragas builds an analytics event (and formats its log lines) with ``ragas._analytics.get_userid``, which
    writes that file on first use even with ``RAGAS_DO_NOT_TRACK`` set: a file outside ``data/`` and
    ``reports/``. Here the folder lookup it uses (appdirs' ``user_data_dir``) fails, so ragas takes a
    throwaway id (``anonymous-…``) and writes nothing; nothing is sent either way. Call it before ragas
    scores anything (every hepwb entry to ragas does); without ragas installed it does nothing.
    """
    try:
        import ragas._analytics as analytics
    except ImportError:  # the ragas extra is not installed: its users say so
        return

    def nowhere(*_: Any, **__: Any) -> str:
        msg = "hepwb writes no ragas user id file (RAGAS_DO_NOT_TRACK; files only under data/ and reports/)"
        raise OSError(msg)

    if hasattr(analytics, "user_data_dir"):
        analytics.user_data_dir = nowhere


def ragas_samples(
    questions: Sequence[Question],
    results: Mapping[str, Sequence[Hit]],
    located: Sequence[Located],
    relevant: Mapping[str, set[str]],
    documents: Mapping[str, Document],
    k: int = defaults.RAGAS_TOP_K,
) -> dict[str, JSONObject]:
    """``{qid: SingleTurnSample fields}`` for the questions with located evidence."""
    quotes: dict[str, list[str]] = {}
    for loc in located:
        quotes.setdefault(loc.qid, []).append(documents[loc.document_id].markdown[loc.start : loc.end])
    out = {}
    for q in questions:
        if q.qid not in quotes:
            continue
        hits = list(results.get(q.qid, ()))[:k]
        out[q.qid] = {
            "user_input": q.question,
            "retrieved_contexts": [h.text for h in hits],
            "retrieved_context_ids": [h.chunk_id for h in hits],
            "reference_context_ids": sorted(relevant.get(q.qid, ())),
            "reference_contexts": quotes[q.qid],
            "reference": q.answer,
        }
    return out


def offline_scores(samples: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """The LLM-free ragas metrics, one row per question (index ``qid``).

    A question that retrieved nothing gets NaN for each (ragas cannot score an empty retrieval; its
    retrieval metrics, computed elsewhere, are 0).
    """
    import pandas as pd

    _quiet()
    with extra("ragas", "ragas metrics"):
        from ragas.dataset_schema import SingleTurnSample
        from ragas.metrics._context_precision import (
            IDBasedContextPrecision,
            NonLLMContextPrecisionWithReference,
        )
        from ragas.metrics._context_recall import IDBasedContextRecall, NonLLMContextRecall
        from ragas.metrics._string import StringPresence

    metrics = {
        "id_context_precision": IDBasedContextPrecision(),
        "id_context_recall": IDBasedContextRecall(),
        "nonllm_context_precision": NonLLMContextPrecisionWithReference(),
        "nonllm_context_recall": NonLLMContextRecall(),
    }
    presence = StringPresence()

    async def score_all() -> dict[str, dict[str, float]]:
        # the async API: ragas' synchronous single_turn_score applies nest_asyncio to a running loop
        rows = {}
        for qid, fields in samples.items():
            if not fields[
                "retrieved_contexts"
            ]:  # nothing retrieved: ragas has nothing to score (max() of [])
                rows[qid] = dict.fromkeys(OFFLINE_METRICS, float("nan"))
                continue
            sample = SingleTurnSample(**fields)
            row = {name: float(await m.single_turn_ascore(sample)) for name, m in metrics.items()}
            joined = SingleTurnSample(
                response="\n".join(fields["retrieved_contexts"]), reference=fields["reference"]
            )
            row["answer_in_context"] = (
                float(await presence.single_turn_ascore(joined)) if fields["reference"] else float("nan")
            )
            rows[qid] = row
        return rows

    rows = run_isolated(score_all())
    return pd.DataFrame.from_dict(rows, orient="index", columns=list(OFFLINE_METRICS))


async def _llm_rows(
    samples: Mapping[str, Mapping[str, Any]], endpoint: LLMEndpoint, embedding_model: str
) -> JSONObject:
    with extra("ragas", "ragas metrics"):
        from openai import AsyncOpenAI
        from ragas.embeddings import HuggingFaceEmbeddings
        from ragas.llms import llm_factory
        from ragas.metrics.collections import AnswerRelevancy, ContextPrecision, ContextRecall, Faithfulness

    client = AsyncOpenAI(
        base_url=endpoint.url, api_key=endpoint.api_key or "not-needed", max_retries=endpoint.attempts
    )
    llm = llm_factory(endpoint.model, client=client)
    emb = HuggingFaceEmbeddings(model=resolve_model_path(embedding_model))
    cp, cr, fa = ContextPrecision(llm=llm), ContextRecall(llm=llm), Faithfulness(llm=llm)
    ar = AnswerRelevancy(llm=llm, embeddings=emb, strictness=1)
    rows = {}
    for qid, f in samples.items():
        contexts = "\n\n".join(f"[{i}] {c}" for i, c in enumerate(f["retrieved_contexts"], start=1))
        answer = await asyncio.to_thread(
            endpoint.chat, ANSWER_PROMPT.format(contexts=contexts, question=f["user_input"])
        )
        q, ctx, ref = f["user_input"], f["retrieved_contexts"], f["reference"]
        rows[qid] = {
            "llm_context_precision": (
                await cp.ascore(user_input=q, reference=ref, retrieved_contexts=ctx)
            ).value,
            "llm_context_recall": (
                await cr.ascore(user_input=q, retrieved_contexts=ctx, reference=ref)
            ).value,
            "faithfulness": (await fa.ascore(user_input=q, response=answer, retrieved_contexts=ctx)).value,
            "answer_relevancy": (await ar.ascore(user_input=q, response=answer)).value,
            "response": answer,
        }
    return rows


def llm_scores(
    samples: Mapping[str, Mapping[str, Any]],
    endpoint: LLMEndpoint,
    embedding_model: str = defaults.EMBEDDING_MODEL,
) -> pd.DataFrame:
    """The LLM-judged ragas metrics (and the judged answer), one row per question."""
    import pandas as pd

    _quiet()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        rows = run_isolated(_llm_rows(samples, endpoint, embedding_model))
    return pd.DataFrame.from_dict(rows, orient="index", columns=[*LLM_METRICS, "response"])
