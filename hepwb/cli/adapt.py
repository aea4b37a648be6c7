"""``hepwb adapt`` and ``hepwb fit-fusion`` (registered on :data:`hepwb.cli.base.app`)."""

from __future__ import annotations

from typing import Annotated, Any, TypeVar

import typer

from hepwb import defaults, limits
from hepwb.adapt.commands import adapt_corpus, adapt_reranker, fit_fusion_for
from hepwb.adapt.crossencoder import CrossEncoderSettings
from hepwb.adapt.finetune import AdaptSettings, ModelCard
from hepwb.cli.base import Corpus, Latex, MaxDocs, Overlap, Questions, app
from hepwb.text.labels import human

_S = TypeVar("_S", AdaptSettings, CrossEncoderSettings)


@app.command()
def adapt(
    name: Annotated[
        str, typer.Option(help="Name of the adapted model (saved under data/models/NAME).")
    ] = "hep-minilm",
    base: Annotated[
        str, typer.Option(help="Model to adapt (a sentence-transformers name or folder).")
    ] = defaults.EMBEDDING_MODEL,
    corpus: Corpus = None,
    max_docs: MaxDocs = None,
    latex: Latex = True,
    max_pairs: Annotated[
        int,
        typer.Option(
            min=limits.ADAPT_MIN_PAIRS,
            max=limits.ADAPT_MAX_PAIRS_CAP,
            help="At most this many training pairs.",
        ),
    ] = defaults.ADAPT_MAX_PAIRS,
    epochs: Annotated[
        float | None,
        typer.Option(
            min=limits.ADAPT_MIN_EPOCHS,
            max=limits.ADAPT_MAX_EPOCHS,
            help=f"Passes over the pairs (default {defaults.ADAPT_EPOCHS:g}, or "
            f"{defaults.CROSS_ENCODER_EPOCHS:g} with --cross-encoder).",
        ),
    ] = None,
    batch_size: Annotated[
        int | None,
        typer.Option(
            min=1,
            max=limits.ADAPT_MAX_BATCH,
            help="Pairs per step (in-batch negatives), or examples with --cross-encoder; "
            f"default {defaults.ADAPT_BATCH_SIZE}.",
        ),
    ] = None,
    hard_negatives: Annotated[bool, typer.Option(help="Add a mined hard negative to each pair.")] = True,
    llm_questions: Annotated[
        int | None,
        typer.Option(
            min=0,
            max=limits.ADAPT_MAX_LLM_QUESTIONS,
            help="LLM pseudo-questions per paper (GPL style; needs HEPWB_LLM_URL and HEPWB_LLM_MODEL). "
            f"Default: {defaults.ADAPT_LLM_QUESTIONS} when an endpoint is configured, else none; 0: none.",
        ),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of pairs, split and training.")] = 0,
    cross_encoder: Annotated[
        str | None,
        typer.Option(
            help="Train a cross-encoder reranker of this name instead (from BASE's encoder, on the same "
            f"pairs), for `rerank`; `{defaults.CROSS_ENCODER}` is the one rerank uses by default."
        ),
    ] = None,
) -> None:
    """Adapt the embedding model to a corpus, offline (pairs built from the papers, never questions).

    Use it afterwards by name: `hepwb evaluate --embedding-model NAME`, or `embedding_model: NAME` in a sweep.
    With --cross-encoder NAME it trains a reranker instead: `--retriever 'rerank(base=bm25, model=NAME)'`.
    Runs on the GPU when there is one (HEPWB_DEVICE=cpu forces the CPU).
    """
    if cross_encoder is not None:
        ce = _settings(CrossEncoderSettings, epochs, batch_size, seed=seed)
        card = adapt_reranker(cross_encoder, corpus=corpus, base_model=base, max_docs=max_docs,
                              prefer_latex=latex, max_pairs=max_pairs, llm_questions=llm_questions,
                              settings=ce)  # fmt: skip
        _print_reranker_card(card)
        return
    settings = _settings(AdaptSettings, epochs, batch_size, hard_negatives=hard_negatives, seed=seed)
    card = adapt_corpus(name, corpus=corpus, base_model=base, max_docs=max_docs, prefer_latex=latex,
                        max_pairs=max_pairs, llm_questions=llm_questions, settings=settings)  # fmt: skip
    typer.echo(f"{card.path}: {card.n_train} pairs {card.pairs}, {card.steps} steps in {card.seconds:.0f} s")
    for metric, after in card.heldout_after.items():
        typer.echo(f"held-out {metric:6s} {card.heldout_before[metric]:.3f} -> {after:.3f}")


@app.command("fit-fusion")
def fit_fusion(
    name: Annotated[str, typer.Option(help="Name of the fit (saved under data/models/fusion/NAME.json).")],
    corpus: Corpus = None,
    questions: Questions = None,
    max_docs: MaxDocs = None,
    chunker: Annotated[str, typer.Option(help="Chunking strategy of the chunk set.")] = defaults.CHUNKER,
    chunk_size: Annotated[
        int, typer.Option(help="Chunk size in tokens (the default of `evaluate`).")
    ] = defaults.CHUNK_SIZE,
    chunk_overlap: Overlap = defaults.CHUNK_OVERLAP,
    embedding_model: Annotated[
        str, typer.Option(help="Embedding model (name, folder or adapted name).")
    ] = defaults.EMBEDDING_MODEL,
    dense_read: Annotated[
        str,
        typer.Option(help="How the dense branch may read long chunks (chosen by the CV): first, max, mean."),
    ] = "first,max",
    fields: Annotated[
        str, typer.Option(help="Lexical fields: text, or context (with title and section).")
    ] = defaults.HYBRID_FIELDS,
    folds: Annotated[
        int, typer.Option(help="Cross-validation folds (grouped by paper).")
    ] = defaults.FUSION_FOLDS,
) -> None:
    """Choose the hybrid fusion (dense reading, weighted RRF or convex combination, dense share) by CV.

    Folds are grouped by paper; prints each fold's choice and the out-of-fold metrics with 95 % intervals.
    The `fusion` retriever (`fitted=NAME`) then uses the fit, out of fold on this same question set.
    """
    fit = fit_fusion_for(
        name,
        corpus=corpus,
        questions=questions,
        max_docs=max_docs,
        chunker=chunker,
        chunk_size=chunk_size,
        chunk_overlap=chunk_overlap,
        embedding_model=embedding_model,
        dense_read=tuple(r.strip() for r in dense_read.split(",") if r.strip()),
        fields=fields,
        n_folds=folds,
    )
    for f, p in sorted(fit.fold_params.items()):
        typer.echo(
            f"fold {f}: dense {p['dense_read']}, {p['method']} weight {p['weight']:.2f} "
            f"(scored on {', '.join(p['papers'])})"
        )
    typer.echo(
        f"fitted on all {fit.n_questions} questions: dense {fit.dense_read}, "
        f"{fit.method} weight {fit.weight:.2f}"
    )
    for metric in (defaults.DECISION_METRIC, "recall@5", "mrr@10", "ndcg@10"):
        lo, hi = fit.out_of_fold_ci95.get(metric, (float("nan"), float("nan")))
        typer.echo(f"out of fold {human(metric):10s} {fit.out_of_fold[metric]:.3f}  [{lo:.3f}, {hi:.3f}]")


def _settings(cls: type[_S], epochs: float | None, batch_size: int | None, **fields: Any) -> _S:
    """Training settings of ``cls`` with the options given; those left out keep the settings' defaults."""
    given: dict[str, Any] = {"epochs": epochs, "batch_size": batch_size}
    return cls(**{k: v for k, v in given.items() if v is not None}, **fields)


def _print_reranker_card(card: ModelCard) -> None:
    """What training the cross-encoder did, and its held-out metrics before and after."""
    typer.echo(f"{card.path}: cross-encoder, {card.n_train} pairs {card.pairs}, {card.steps} steps "
               f"in {card.seconds:.0f} s on {card.device}")  # fmt: skip
    for metric, after in card.heldout_after.items():
        before = card.heldout_before[metric]
        typer.echo(f"held-out {metric:6s} {before:.3f} -> {after:.3f} (of 10 candidates)")
