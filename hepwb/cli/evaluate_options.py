"""The options of ``hepwb evaluate``: one typed alias each, with its help and shown default.

The defaults ``--help`` shows are the project's pinned ones (``hepwb defaults show``) when a pin file is
readable; a damaged pin file is reported when ``evaluate`` runs, not here.
"""

from __future__ import annotations

from typing import Annotated

import typer

from hepwb import defaults
from hepwb.exceptions import HepwbError
from hepwb.index.ann import KINDS
from hepwb.project_defaults import ProjectDefaults, current_defaults

__all__ = [
    "AcceptUnscored",
    "AllMetrics",
    "ChunkSize",
    "Chunker",
    "EmbeddingModel",
    "IndexOption",
    "RagasLlm",
    "Retriever",
    "RetrieverOption",
    "ShowConfig",
    "VectorIndex",
]


def _shown_defaults() -> ProjectDefaults:
    """The defaults ``--help`` shows: the project's pin, else the package's."""
    try:
        return current_defaults()
    except HepwbError:
        return ProjectDefaults(defaults.RETRIEVER, defaults.CHUNK_SIZE)


_SHOWN = _shown_defaults()

ChunkSize = Annotated[
    int | None,
    typer.Option(
        help="Chunk size in tokens (the default: `hepwb defaults show`).", show_default=str(_SHOWN.chunk_size)
    ),
]
Retriever = Annotated[
    str | None,
    typer.Option(
        help="Retriever: a name (see `hepwb retrievers`) or NAME(KEY=VALUE, ...), e.g. "
        "'dense(read=max)'. The default is the main job's recommendation (docs: 'Which chunking and "
        "retriever should I use?'), or your project's pin.",
        show_default=_SHOWN.retriever,
    ),
]
Chunker = Annotated[str, typer.Option(help="Chunking strategy.")]
EmbeddingModel = Annotated[
    str, typer.Option(help="Embedding model: a name, a folder, or a model adapted with `hepwb adapt`.")
]
RetrieverOption = Annotated[
    list[str] | None,
    typer.Option(help="Retriever option KEY=VALUE (repeatable), e.g. read=max, weight=0.3, fields=context."),
]
RagasLlm = Annotated[
    bool, typer.Option("--ragas-llm", help="Also LLM-judged ragas metrics (needs HEPWB_LLM_URL/MODEL).")
]
VectorIndex = Annotated[str, typer.Option(help=f"Vector index of dense search: {', '.join(KINDS)}.")]
IndexOption = Annotated[
    list[str] | None,
    typer.Option(help="Vector index option KEY=VALUE (repeatable), e.g. partitions=64, nprobes=16."),
]
AcceptUnscored = Annotated[
    bool,
    typer.Option(
        "--accept-unscored",
        help="Go on when fewer than half of the questions can be scored (their quotes are not located).",
    ),
]
AllMetrics = Annotated[
    bool, typer.Option("--all-metrics", help="Print every metric, not only the headline ones.")
]
ShowConfig = Annotated[
    bool, typer.Option("--show-config", help="Print the validated configuration as JSON and stop.")
]
