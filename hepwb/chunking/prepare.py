"""Prepare a corpus: convert it and build the chunk sets a sweep needs, in the HEPilot layout.

Example (in a notebook)::

    prep = prepare(corpus=None, max_docs=3, chunk_sizes=[256, 512])
    prep.documents_frame()
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from hepwb import defaults, limits
from hepwb.chunking.chunksets import ChunkSet, build_chunkset, truncation_report
from hepwb.corpus import ingest
from hepwb.exceptions import ConfigError
from hepwb.hepilot.log import ProcessingLog
from hepwb.hepilot.schemas import validate_tree
from hepwb.paths import Layout, shared_dir
from hepwb.types import Document, JSONObject, one_at_a_time

if TYPE_CHECKING:
    import pandas as pd


__all__ = ["PreparedCorpus", "prepare"]


@dataclass
class PreparedCorpus:
    """Documents and chunk sets of one corpus."""

    documents: list[Document]
    chunksets: list[ChunkSet]
    log: ProcessingLog = field(repr=False)

    def documents_frame(self) -> pd.DataFrame:
        """One row per document: label, title, pages, characters, blocks by kind."""
        import pandas as pd

        rows = []
        for d in one_at_a_time(self.documents):
            kinds: dict[str, int] = {}
            for b in d.blocks:
                kinds[b.kind] = kinds.get(b.kind, 0) + 1
            rows.append(
                {
                    "label": d.label,
                    "title": d.title[:70],
                    "pages": d.meta.get("pages"),
                    "chars": len(d.markdown),
                    "headings": kinds.get("heading", 0),
                    "captions": kinds.get("caption", 0),
                    "blocks": len(d.blocks),
                }
            )
        return pd.DataFrame(rows)

    def chunksets_frame(self) -> pd.DataFrame:
        """One row per chunk set: size, chunk counts, token statistics, compliance."""
        import pandas as pd

        rows = []
        for cs in self.chunksets:
            toks = [c.token_count for c in cs.chunks]
            rows.append(
                {
                    "chunkset_id": cs.chunkset_id,
                    "chunk_size": cs.chunker.get("chunk_size"),
                    "chunk_overlap": cs.chunker.get("chunk_overlap"),
                    "chunks": len(toks),
                    "mean_tokens": round(sum(toks) / max(len(toks), 1), 1),
                    "max_tokens": max(toks, default=0),
                    "oversized": sum(c.oversized for c in cs.chunks),
                    "share_tokens_dropped_by_embedder": (
                        truncation_report(cs.chunks, cs.chunker.get("tokenizer")) or {}
                    ).get("share_tokens_dropped"),
                    "hepilot_compliant": cs.hepilot_compliant,
                }
            )
        return pd.DataFrame(rows)

    def validation(self, schema_dir: str | None = None) -> pd.DataFrame:
        """Validate every chunk set's JSON files against the HEPilot schemas (one row per chunk set)."""
        import pandas as pd

        folder = schema_dir or str(shared_dir() / defaults.SCHEMA_FOLDER)
        rows: list[JSONObject] = []
        for cs in self.chunksets:
            fails = validate_tree(cs.root, folder)
            n_files = sum(1 for _ in cs.root.rglob("*.json"))
            rows.append(
                {
                    "chunkset_id": cs.chunkset_id,
                    "json_files": n_files,
                    "invalid_files": len(fails),
                    "first_error": next(iter(fails.items()), None),
                }
            )
        return pd.DataFrame(rows)


def prepare(
    corpus: str | None = None,
    *,
    max_docs: int | None = None,
    chunker: str = defaults.CHUNKER,
    chunk_sizes: list[int] | tuple[int, ...] = (512,),
    chunk_overlap: float = defaults.CHUNK_OVERLAP,
    prefer_latex: bool = True,
    require_compliant: bool = False,
    layout: Layout | None = None,
    progress: bool = True,
) -> PreparedCorpus:
    """Convert ``corpus`` and build one chunk set per size.

    The DuckDB catalog is not written here (the catalog sits above this package): a caller that wants
    the chunk sets there records them with :meth:`hepwb.catalog.Catalog.record_chunkset`, as
    ``hepwb ingest`` does; a run records its chunk set when the catalog loads the run.

    Raises:
        ConfigError: No chunk size, more than :data:`~hepwb.limits.MAX_CHUNK_SIZES` distinct sizes, a size or
            the overlap out of range (all before anything is converted).
    """
    chunk_sizes = _checked_sizes(chunk_sizes, require_compliant)
    limits.CHUNK_OVERLAP.check(chunk_overlap)
    layout = layout or Layout.default()
    log = ProcessingLog()
    docs = ingest(
        corpus, layout=layout, max_docs=max_docs, prefer_latex=prefer_latex, log=log, progress=progress
    )
    sets = [
        build_chunkset(
            docs,
            chunker,
            layout=layout,
            log=log,
            progress=progress,
            chunk_size=size,
            chunk_overlap=chunk_overlap,
            require_compliant=require_compliant,
        )
        for size in chunk_sizes
    ]
    return PreparedCorpus(docs, sets, log)


def _checked_sizes(sizes: list[int] | tuple[int, ...], compliant: bool) -> list[int]:
    """The distinct chunk sizes, in order; refused in one line when too many or one is out of range."""
    distinct = list(dict.fromkeys(sizes))
    if not distinct:  # nothing would be built: a table of no chunk set is no result
        msg = "no chunk size given: give at least one (--chunk-sizes 512, or chunk_sizes=[512])"
        raise ConfigError(msg)
    if len(distinct) > limits.MAX_CHUNK_SIZES:
        msg = (
            f"{len(distinct):,} chunk sizes, more than the {limits.MAX_CHUNK_SIZES} one ingest builds "
            "(each is a chunk set of the whole corpus): give at most that many to --chunk-sizes, "
            "e.g. 256,512,1024, and ingest the rest in further runs"
        )
        raise ConfigError(msg)
    bound = limits.HEPILOT_CHUNK_SIZE if compliant else limits.CHUNK_SIZE
    for size in distinct:
        problem = bound.problem(size)
        if problem:
            hint = "; or drop HEPilot-compliant mode for a research sweep" if compliant else ""
            raise ConfigError(problem + hint)
    return distinct
