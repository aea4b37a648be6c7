"""One call each for the CLI and notebooks: adapt the embedder, train a reranker, fit a fusion."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hepwb import defaults
from hepwb.adapt.crossencoder import CrossEncoderSettings, adapt_cross_encoder
from hepwb.adapt.finetune import AdaptSettings, ModelCard, adapt_embedder
from hepwb.adapt.generated import generated_pairs
from hepwb.adapt.pairs import Pair, corpus_pairs
from hepwb.corpus import ingest
from hepwb.exceptions import RetrieverUnavailableError
from hepwb.experiment.config import ExperimentConfig
from hepwb.experiment.fusion_fit import FusionFit, fit_fusion
from hepwb.experiment.run import run_experiment
from hepwb.experiment.stages import chunk_stage, index_stage, load_inputs
from hepwb.files.io import write_json
from hepwb.index import get_embedder
from hepwb.paths import Layout
from hepwb.runtime.env import configure_runtime
from hepwb.runtime.llm import LLMEndpoint
from hepwb.text.names import check_name, under

if TYPE_CHECKING:
    import pandas as pd


__all__ = ["adapt_corpus", "adapt_reranker", "compare_embedders", "fit_fusion_for"]


def adapt_corpus(
    name: str = "hep-minilm",
    *,
    corpus: str | None = None,
    base_model: str = defaults.EMBEDDING_MODEL,
    max_docs: int | None = None,
    prefer_latex: bool = True,
    max_pairs: int = defaults.ADAPT_MAX_PAIRS,
    llm_questions: int | None = None,
    settings: AdaptSettings | None = None,
    layout: Layout | None = None,
    progress: bool = True,
) -> ModelCard:
    """Build pairs from ``corpus`` and fine-tune ``base_model`` into ``data/models/<name>/``.

    ``llm_questions``: LLM pseudo-questions per paper (:mod:`hepwb.adapt.generated`); ``None``:
    :data:`~hepwb.defaults.ADAPT_LLM_QUESTIONS` when an endpoint is configured (``HEPWB_LLM_URL``,
    ``HEPWB_LLM_MODEL``), else none; 0: none.
    """
    check_name(name, "adapted model", "hep-minilm")
    layout = layout or Layout.default()
    seed = settings.seed if settings else 0
    pairs = _pairs(corpus, max_docs, prefer_latex, max_pairs, llm_questions, seed, layout, progress)
    out = layout.data / "models" / name
    return adapt_embedder(pairs, base_model, out, name=name, settings=settings, progress=progress)


def adapt_reranker(
    name: str = defaults.CROSS_ENCODER,
    *,
    corpus: str | None = None,
    base_model: str = defaults.EMBEDDING_MODEL,
    max_docs: int | None = None,
    prefer_latex: bool = True,
    max_pairs: int = defaults.ADAPT_MAX_PAIRS,
    llm_questions: int | None = None,
    settings: CrossEncoderSettings | None = None,
    layout: Layout | None = None,
    progress: bool = True,
) -> ModelCard:
    """Train a cross-encoder from ``base_model`` on pairs of ``corpus`` into ``data/models/<name>/``.

    The same pairs as :func:`adapt_corpus` (never a question file); the ``rerank`` retriever then uses it
    as ``model=<name>`` (:mod:`hepwb.adapt.crossencoder`).
    """
    check_name(name, "cross-encoder", defaults.CROSS_ENCODER)
    layout = layout or Layout.default()
    seed = settings.seed if settings else 0
    pairs = _pairs(corpus, max_docs, prefer_latex, max_pairs, llm_questions, seed, layout, progress)
    out = layout.data / "models" / name
    return adapt_cross_encoder(pairs, base_model, out, name=name, settings=settings, progress=progress)


def _pairs(
    corpus: str | None,
    max_docs: int | None,
    prefer_latex: bool,
    max_pairs: int,
    llm_questions: int | None,
    seed: int,
    layout: Layout,
    progress: bool,
) -> list[Pair]:
    """The training pairs of ``corpus`` (plus LLM pseudo-questions where asked for and configured)."""
    configure_runtime(offline=None)
    docs = ingest(
        corpus, layout=layout, max_docs=max_docs, prefer_latex=prefer_latex, progress=progress, require=True
    )
    pairs = corpus_pairs(docs, max_pairs=max_pairs, seed=seed)
    llm = _endpoint(llm_questions)
    if llm is not None:
        pairs += generated_pairs(docs, llm, per_doc=llm_questions or defaults.ADAPT_LLM_QUESTIONS, seed=seed)
    return pairs


def _endpoint(llm_questions: int | None) -> Any:
    """The LLM endpoint for pseudo-questions, or ``None`` (not asked for, or none configured)."""
    if llm_questions == 0:
        return None
    try:
        return LLMEndpoint.from_env()
    except RetrieverUnavailableError:
        if llm_questions:  # asked for explicitly: say what is missing
            raise
        return None


def fit_fusion_for(
    name: str,
    *,
    layout: Layout | None = None,
    fields: str = defaults.HYBRID_FIELDS,
    dense_read: str | Sequence[str] = ("first", "max"),
    top_m: int = defaults.TOP_M,
    fetch: int = defaults.FETCH,
    n_folds: int = defaults.FUSION_FOLDS,
    progress: bool = True,
    **config: Any,
) -> FusionFit:
    """Fit a fusion on the chunk set and question set of ``config`` (``ExperimentConfig`` fields); save it.

    The fit is written to ``data/models/fusion/<name>.json`` for the ``fusion`` retriever.
    """
    configure_runtime(offline=None)
    layout = layout or Layout.default()
    cfg = ExperimentConfig.from_params(**config)
    inputs = load_inputs(cfg, layout, progress=progress)
    cs = chunk_stage(cfg, inputs.documents, layout, inputs.log, progress=progress)
    embedder = get_embedder(cfg.embedding_model)
    reads = (dense_read,) if isinstance(dense_read, str) else tuple(dense_read)
    table = index_stage(cs, embedder, layout, windows=any(r != "first" for r in reads), progress=progress)
    fit = fit_fusion(
        name, table, embedder, inputs, cs, fields=fields, dense_read=dense_read, top_m=top_m, fetch=fetch,
        n_folds=n_folds, k=cfg.k,
    )  # fmt: skip
    write_json(under(layout.data / "models" / "fusion", name, "fusion fit", ".json"), dataclasses.asdict(fit))
    return fit


def compare_embedders(
    models: Sequence[str],
    *,
    reads: Sequence[str] = ("first", "max"),
    layout: Layout | None = None,
    progress: bool = False,
    **config: Any,
) -> pd.DataFrame:
    """Dense retrieval with each of ``models`` × ``reads`` on one chunk set and question set.

    One row per pair: found@5 (``hit_rate@5``) with its 95 % interval, recall@5, MRR@10 and the share
    of chunks the model reads only in part (0 for windowed reads). ``config`` holds the other
    ``ExperimentConfig`` fields (corpus, questions, max_docs, chunk_size …).
    """
    import pandas as pd

    layout = layout or Layout.default()
    rows, inputs = [], None
    for model in models:
        for read in reads:
            cfg = ExperimentConfig.from_params(
                **config, retriever="dense", retriever_options={"read": read}, embedding_model=model
            )
            inputs = inputs or load_inputs(cfg, layout, progress=progress)
            res = run_experiment(cfg, layout=layout, progress=progress, inputs=inputs)
            lo, hi = res.record.summary_ci95.get("hit_rate@5", (float("nan"), float("nan")))
            s = res.summary
            rows.append({"model": model, "read": read, "found@5": s["hit_rate@5"], "ci_low": lo,
                         "ci_high": hi, "recall@5": s["recall@5"], "mrr@10": s["mrr@10"],
                         "truncated": s["share_chunks_truncated"]})  # fmt: skip
    return pd.DataFrame(rows)
