"""Chunking strategies, registered by name (see :func:`get_chunker`).

``hepilot`` (sections > paragraphs > sentences, the HEPilot algorithm), ``token`` (fixed windows),
``recursive`` (paragraph > line > sentence > word), ``sentence``, ``section``,
``sentence_window`` (one sentence per chunk, neighbours as context), ``hierarchical`` (small
children, parent as context), ``semantic`` (breakpoints at embedding-distance jumps) and
``cluster_semantic`` (Chroma's DP grouping of small pieces by similarity). Every strategy gives
chunks with exact offsets (``markdown[start:end] == text``) and never splits display math, tables
or code.

Each strategy is a class exported here (``HepilotChunker(chunk_size=512)``, ``TokenChunker(...)``), usable
on its own (``.chunk(document)``) and accepted wherever a chunker name is
(``ExperimentConfig(chunker=HierarchicalChunker(chunk_size=128))``).
"""

from __future__ import annotations

from hepwb.chunking import cluster_semantic as _cluster_semantic  # noqa: F401
from hepwb.chunking import hepilot as _hepilot  # noqa: F401  (registers the strategies)
from hepwb.chunking import hierarchical as _hierarchical  # noqa: F401
from hepwb.chunking import recursive as _recursive  # noqa: F401
from hepwb.chunking import section as _section  # noqa: F401
from hepwb.chunking import semantic as _semantic  # noqa: F401
from hepwb.chunking import sentence as _sentence  # noqa: F401
from hepwb.chunking import sentence_window as _sentence_window  # noqa: F401
from hepwb.chunking import token as _token  # noqa: F401
from hepwb.chunking.base import CHUNKERS, Chunker, config_key, get_chunker, register_chunker
from hepwb.chunking.cluster_semantic import ClusterSemanticChunker
from hepwb.chunking.hepilot import HepilotChunker
from hepwb.chunking.hierarchical import HierarchicalChunker
from hepwb.chunking.recursive import RecursiveChunker
from hepwb.chunking.section import SectionChunker
from hepwb.chunking.semantic import SemanticChunker
from hepwb.chunking.sentence import SentenceChunker
from hepwb.chunking.sentence_window import SentenceWindowChunker
from hepwb.chunking.token import TokenChunker
from hepwb.models.tokenizers import get_tokenizer

__all__ = [
    "CHUNKERS",
    "Chunker",
    "ClusterSemanticChunker",
    "HepilotChunker",
    "HierarchicalChunker",
    "RecursiveChunker",
    "SectionChunker",
    "SemanticChunker",
    "SentenceChunker",
    "SentenceWindowChunker",
    "TokenChunker",
    "config_key",
    "get_chunker",
    "get_tokenizer",
    "register_chunker",
]


def __dir__() -> list[str]:
    return __all__
