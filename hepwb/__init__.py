"""hepwb: a Jupyter-first workbench for chunking and retrieval experiments over HEP papers.

The package is split by pipeline stage: :mod:`hepwb.processing` (PDF/markdown to documents),
:mod:`hepwb.chunking`, :mod:`hepwb.hepilot` (HEPilot output layout), :mod:`hepwb.index` (embeddings and
LanceDB), :mod:`hepwb.retrieval`, :mod:`hepwb.evaluation`, :mod:`hepwb.runs` (run folders),
:mod:`hepwb.experiment` (the experiment runner), :mod:`hepwb.catalog` (the DuckDB catalog of what was
measured), :mod:`hepwb.report` (the report, its verdict and plots) and :mod:`hepwb.sweep`, and the command
line :mod:`hepwb.cli`. What every stage shares: :mod:`hepwb.files`, :mod:`hepwb.text`,
:mod:`hepwb.components`, :mod:`hepwb.runtime` and the root's types, exceptions, paths, defaults and limits.
Heavy dependencies load lazily.
"""

from __future__ import annotations

import sys
from importlib.metadata import PackageNotFoundError, version

from hepwb.exceptions import (
    ConfigError,
    CorpusNotFoundError,
    DependencyError,
    HepwbError,
    ProcessingError,
    RetrieverUnavailableError,
    SchemaValidationError,
)
from hepwb.runtime import moved
from hepwb.runtime.env import hub_offline, show_errors_briefly, show_logs_in_kernel
from hepwb.types import Block, Chunk, Document, Hit

moved.install()  # the old names of moved modules (hepwb.files.io, hepwb.cli.sweep, …) for one release
hub_offline()  # no hub lookups unless HEPWB_ONLINE=1 (or the user's HF_HUB_OFFLINE=0): see hepwb.runtime.env

try:
    __version__ = version("hepwb")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0.0.0"

if (
    "ipykernel" in sys.modules
    and getattr(sys.modules.get("IPython"), "get_ipython", lambda: None)() is not None
):
    show_logs_in_kernel()  # a notebook kernel: log lines as plain cell output, not red stderr
    show_errors_briefly()  # and hepwb's errors as their one-line message, not a long traceback

__all__ = [
    "Block",
    "Chunk",
    "ConfigError",
    "CorpusNotFoundError",
    "DependencyError",
    "Document",
    "HepwbError",
    "Hit",
    "ProcessingError",
    "RetrieverUnavailableError",
    "SchemaValidationError",
    "__version__",
]


def __dir__() -> list[str]:
    return __all__
