"""Cross-encoder reranking of any retriever's top candidates.

A cross-encoder reads (question, chunk) pairs jointly - slower than a bi-encoder, but sharper.
The model (:func:`cross_encoder_name`) is ``model=``, else ``$HEPWB_CROSS_ENCODER``, else the one
``hepwb adapt --cross-encoder`` trained from the shipped MiniLM weights on the corpus
(``data/models/hep-reranker``, :data:`~hepwb.defaults.CROSS_ENCODER`), else
``cross-encoder/ms-marco-MiniLM-L-6-v2`` from a hub. A name may be an adapted model's name, a folder
or a hub name; one that cannot load makes the retriever unavailable with a message saying how to make
one. It runs on the device of :func:`~hepwb.models.device.resolve_device` (a GPU when present).
"""

from __future__ import annotations

import logging
import os
from functools import lru_cache
from pathlib import Path
from typing import Any

from hepwb import defaults
from hepwb.components.callspec import named
from hepwb.exceptions import RetrieverUnavailableError
from hepwb.files.publish import IncompleteArtefactError
from hepwb.models.device import resolve_device
from hepwb.models.embedder import Embedder
from hepwb.models.tokenizers import resolve_model_path
from hepwb.paths import Layout
from hepwb.retrieval.base import get_retriever, register_retriever
from hepwb.retrieval.options import TopN
from hepwb.runtime.env import online_requested, quiet_transformers
from hepwb.types import Hit

__all__ = ["DEFAULT_CROSS_ENCODER", "RerankRetriever", "cross_encoder_name", "load_cross_encoder"]

DEFAULT_CROSS_ENCODER = "cross-encoder/ms-marco-MiniLM-L-6-v2"

_log = logging.getLogger(__name__)


def cross_encoder_name(model: str | None = None) -> str:
    """The cross-encoder ``rerank`` uses for option ``model`` (see the module docstring)."""
    if model:
        return model
    if os.environ.get("HEPWB_CROSS_ENCODER"):
        return os.environ["HEPWB_CROSS_ENCODER"]
    if (Layout.default().data / "models" / defaults.CROSS_ENCODER).is_dir():
        return defaults.CROSS_ENCODER  # an incomplete one is named, with its fix, when it is loaded
    return DEFAULT_CROSS_ENCODER


def _unavailable(model: str, exc: BaseException) -> str:
    """Why cross-encoder ``model`` cannot run here, as one complete sentence saying how to get one.

    The loader's own error (a hub connection failure, a missing folder) is logged at debug level,
    never pasted in: its text is long, spans lines and says nothing about the fix.

    Example:
        >>> why = _unavailable(DEFAULT_CROSS_ENCODER, OSError("We couldn't connect to 'https://"))
        >>> print(why)  # doctest: +ELLIPSIS
        needs a trained cross-encoder: run `hepwb adapt --cross-encoder hep-reranker` (or set ...)
        >>> print(_unavailable("/tmp/ce", FileNotFoundError("Path /tmp/ce not found")))  # doctest: +ELLIPSIS
        cross-encoder '/tmp/ce' does not load (FileNotFoundError): run `hepwb adapt ...` (or set ...)
    """
    _log.debug("cross-encoder %r does not load: %s", model, exc)
    fix = (
        f"run `hepwb adapt --cross-encoder {defaults.CROSS_ENCODER}` "
        "(or set HEPWB_CROSS_ENCODER to a CrossEncoder folder)"
    )
    if model == DEFAULT_CROSS_ENCODER:
        return f"needs a trained cross-encoder: {fix}"
    return f"cross-encoder {model!r} does not load ({type(exc).__name__}): {fix}"


def _loadable_offline(path: str) -> bool:
    """Whether ``path`` is a folder here, or a hub name in the local cache, or the hub may be asked."""
    if Path(path).expanduser().exists() or online_requested():
        return True
    from huggingface_hub.constants import HF_HUB_CACHE

    return "/" in path and (Path(HF_HUB_CACHE) / f"models--{path.replace('/', '--')}").is_dir()


@lru_cache(maxsize=2)
def load_cross_encoder(model: str) -> Any:
    """The :class:`sentence_transformers.CrossEncoder` ``model`` (an adapted name, folder or hub name).

    Raises:
        RetrieverUnavailableError: The model does not load here; the message is
            :func:`_unavailable`'s one sentence.
    """
    try:
        path = resolve_model_path(model)
    except IncompleteArtefactError as exc:  # a folder left by an interrupted `hepwb adapt`
        raise RetrieverUnavailableError(str(exc)) from None
    if not _loadable_offline(path):  # said at once, without importing sentence-transformers
        raise RetrieverUnavailableError(
            _unavailable(model, FileNotFoundError(f"{path}: not here, hub offline"))
        )
    from sentence_transformers import CrossEncoder

    try:
        with quiet_transformers():
            return CrossEncoder(path, device=resolve_device())
    except (OSError, ValueError) as exc:
        raise RetrieverUnavailableError(_unavailable(model, exc)) from None


@register_retriever("rerank")
class RerankRetriever:
    """Rerank the top ``top_n`` hits of ``base`` by a cross-encoder's score.

    Args:
        table: LanceDB chunk table.
        embedder: Query embedder (for dense/hybrid bases).
        base: The first-stage retriever, with options if any (``"bm25(fields=context)"``).
        top_n: Candidates reranked.
        model: Cross-encoder name or folder (see the module docstring).
    """

    name = "rerank"
    over_base = True  # reads what its base reads (hepwb.retrieval.base.table_parts)

    def __init__(
        self,
        table: Any,
        embedder: Embedder | None = None,
        base: str = defaults.BASE_RETRIEVER,
        top_n: TopN = defaults.RERANK_TOP_N,
        model: str | None = None,
    ) -> None:
        self.model_name = cross_encoder_name(model)
        self.model = load_cross_encoder(self.model_name)
        base_name, base_options = named(base)
        self.base = get_retriever(base_name, table, embedder=embedder, **base_options)
        self.top_n = top_n

    def search(self, query: str, k: int = defaults.EVAL_K) -> list[Hit]:
        """Top ``k`` of the base retriever's ``top_n`` candidates by cross-encoder score."""
        import dataclasses

        cands = self.base.search(query, max(k, self.top_n))
        if not cands:
            return []
        pairs = [(query, h.text) for h in cands]
        scores = self.model.predict(pairs, batch_size=len(pairs), show_progress_bar=False)
        order = sorted(range(len(cands)), key=lambda i: (-float(scores[i]), cands[i].rank))[:k]
        return [
            dataclasses.replace(
                cands[i],
                rank=rank,
                score=float(scores[i]),
                retriever=self.name,
                why=f"cross-encoder {float(scores[i]):.3f} (was #{cands[i].rank}: {cands[i].why})",
            )
            for rank, i in enumerate(order, start=1)
        ]
