"""One call each for the CLI and notebooks: adapt the embedder to a corpus; fit a fusion on a question set."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from hepwb.paths import Layout

if TYPE_CHECKING:
    from hepwb.adapt.finetune import AdaptSettings, ModelCard
    from hepwb.adapt.fusion import FusionFit

__all__ = ["adapt_corpus", "fit_fusion_for"]


def adapt_corpus(
    name: str = "hep-minilm",
    *,
    corpus: str | None = None,
    base_model: str = "all-MiniLM-L6-v2",
    max_docs: int | None = None,
    prefer_latex: bool = True,
    max_pairs: int = 3000,
    settings: AdaptSettings | None = None,
    layout: Layout | None = None,
    progress: bool = True,
) -> ModelCard:
    """Build pairs from ``corpus`` and fine-tune ``base_model`` into ``data/models/<name>/``."""
    from hepwb.adapt.finetune import adapt_embedder
    from hepwb.adapt.pairs import corpus_pairs
    from hepwb.env import configure_runtime
    from hepwb.exceptions import ConfigError
    from hepwb.pipeline.corpus import ingest

    configure_runtime(offline=None)
    if not name or "/" in name or name.startswith("."):
        msg = f"model name {name!r}: a plain folder name such as 'hep-minilm' (saved under data/models/)"
        raise ConfigError(msg)
    layout = layout or Layout.default()
    docs = ingest(
        corpus, layout=layout, max_docs=max_docs, prefer_latex=prefer_latex, progress=progress, require=True
    )
    pairs = corpus_pairs(docs, max_pairs=max_pairs, seed=(settings.seed if settings else 0))
    out = layout.data / "models" / name
    return adapt_embedder(pairs, base_model, out, name=name, settings=settings, progress=progress)


def fit_fusion_for(
    name: str,
    *,
    layout: Layout | None = None,
    fields: str = "context",
    dense_read: str = "max",
    top_m: int = 1,
    fetch: int = 50,
    n_folds: int = 4,
    progress: bool = True,
    **config: Any,
) -> FusionFit:
    """Fit a fusion on the chunk set and question set of ``config`` (``ExperimentConfig`` fields); save it.

    The fit is written to ``data/models/fusion/<name>.json`` for the ``fusion`` retriever.
    """
    from hepwb.adapt.fusion import fit_fusion
    from hepwb.env import configure_runtime
    from hepwb.index import get_embedder
    from hepwb.io import write_json
    from hepwb.pipeline.experiment import ExperimentConfig
    from hepwb.pipeline.stages import chunk_stage, index_stage, load_inputs

    configure_runtime(offline=None)
    layout = layout or Layout.default()
    cfg = ExperimentConfig.from_params(**config)
    inputs = load_inputs(cfg, layout, progress=progress)
    cs = chunk_stage(cfg, inputs.documents, layout, inputs.log, progress=progress)
    embedder = get_embedder(cfg.embedding_model)
    table = index_stage(cs, embedder, layout, windows=dense_read != "first")
    fit = fit_fusion(
        name, table, embedder, inputs, cs, fields=fields, dense_read=dense_read, top_m=top_m, fetch=fetch,
        n_folds=n_folds, k=cfg.k,
    )  # fmt: skip
    write_json(layout.data / "models" / "fusion" / f"{name}.json", dataclasses.asdict(fit))
    return fit
