"""Stage keys: what each stage's artefact depends on, computed from the inputs without doing the work.

Every artefact is keyed by the hash of its configuration and of its inputs, so it is computed once and
reused by every run that shares it, and a changed input or stage code gives a new key:

=============  ============================================================================  ==============
stage          key                                                                           unit
=============  ============================================================================  ==============
convert        label, file SHA-256, converter input (PDF / LaTeX tree hash), converter code    document
chunk set      chunker name + parameters, chunking/writer/converter code, conversion keys      chunker config
embeddings     (model, SHA-256 of the text)                                                  unique text
index          chunk set id, embedding model, index code                                     chunk set × model
cell           run configuration, chunk set, index, question-file SHA-256, evaluation code    cell
=============  ============================================================================  ==============

Nothing here loads a model or converts a document: a sweep plans (and a rerun skips) in well under a
second.

Example:
    >>> from hepwb.chunking.keys import chunkset_id_of, chunkset_key
    >>> key = chunkset_key("hepilot", {"chunk_size": 512, "chunk_overlap": 0.1}, ["P01-ab-cd-pdf"])
    >>> chunkset_id_of("hepilot", {"chunk_size": 512, "chunk_overlap": 0.1}, key)[:20]
    'hepilot-cs512-ov0.1-'
"""

from __future__ import annotations

from collections.abc import Sequence

from hepwb.index.chunk_store import index_key
from hepwb.models.tokenizers import model_identity
from hepwb.retrieval.rerank import cross_encoder_name
from hepwb.text.ids import code_fingerprint, short_hash
from hepwb.types import JSONObject

__all__ = [
    "STAGE_PACKAGES",
    "cell_key",
    "cell_name",
    "index_key",
    "retriever_label",
]

STAGE_PACKAGES = (
    "processing",
    "corpus",
    "models",
    "chunking",
    "hepilot",
    "index",
    "retrieval",
    "evaluation",
    "runs",
    "experiment",
)
"""hepwb's packages whose code a run's results depend on (their fingerprints go into records and fit keys)."""

CELL_CODE = ("retrieval", "evaluation", "runs", "experiment", "defaults")
"""Sub-packages (and the defaults module: a retriever's default options) a cell's results depend on."""


def retriever_label(name: str, options: JSONObject) -> str:
    """``hybrid_linear`` or, with options, ``hybrid_linear-<hash of the options>``.

    Example:
        >>> retriever_label("bm25", {}), retriever_label("hybrid_linear", {"weight": 0.5})[:14]
        ('bm25', 'hybrid_linear-')
    """
    return f"{name}-{short_hash(options, 4)}" if options else name


def cell_name(config: JSONObject) -> str:
    """Stable run-folder name of a configuration (its inputs' contents not included).

    Example:
        >>> cell_name({"chunker": "hepilot", "chunk_size": 512, "chunk_overlap": 0.1,
        ...            "retriever": "bm25", "k": 10})[:29]
        'hepilot-cs512-ov0.1-bm25-k10-'
    """
    cfg = {k: v for k, v in config.items() if k != "run_dir"}
    retr = retriever_label(str(cfg.get("retriever")), dict(cfg.get("retriever_options") or {}))
    chunker = str(cfg.get("chunker"))
    if cfg.get("chunker_options"):
        chunker += f"-{short_hash(cfg['chunker_options'], 4)}"
    index = cfg.get("vector_index")  # absent while it is the default (``auto``)
    index = f"-{index}" if index and index != "auto" else ""
    return (
        f"{chunker}-cs{cfg.get('chunk_size')}-ov{float(cfg.get('chunk_overlap') or 0):.15g}-{retr}{index}"
        f"-k{cfg.get('k')}-{short_hash(cfg, 6)}"
    )


def cell_key(
    config: JSONObject,
    *,
    chunkset_id: str,
    index: str,
    questions_sha256: str,
    question_subset: Sequence[str] | None = None,
) -> str:
    """Key of one cell's results: a finished run with this key is never recomputed.

    A reranking cell's key also holds its cross-encoder's identity (retrained weights under the same name
    make a new key).
    """
    models = {}
    if config.get("retriever") == "rerank":
        chosen = (config.get("retriever_options") or {}).get("model")
        models["reranker"] = model_identity(cross_encoder_name(chosen))
    return short_hash(
        {
            "config": {k: v for k, v in config.items() if k != "run_dir"},
            **({"models": models} if models else {}),
            "chunkset": chunkset_id,
            "index": index,
            "questions": questions_sha256,
            "subset": sorted(question_subset) if question_subset is not None else None,
            "code": [code_fingerprint(pkg) for pkg in CELL_CODE],
        },
        16,
    )
