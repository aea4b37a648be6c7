"""The old name of :mod:`hepwb.experiment`, kept for one release: importing it warns.

Its modules moved to :mod:`hepwb.experiment`, :mod:`hepwb.chunking`, :mod:`hepwb.runs` and
:mod:`hepwb.report`.

``from hepwb.pipeline import run_experiment`` still works; write ``from hepwb.experiment import
run_experiment``. Its old modules (``hepwb.pipeline.cell``, ``hepwb.pipeline.chunksets``, …) import as the
moved modules themselves (:data:`hepwb.runtime.moved.MOVED`).
"""

from __future__ import annotations

import warnings
from typing import Any

from hepwb import experiment

warnings.warn(
    "hepwb.pipeline is hepwb.experiment now (chunk sets: hepwb.chunking, run folders: hepwb.runs); "
    "the old name goes in the next release",
    DeprecationWarning,
    stacklevel=2,
)

__all__ = list(experiment.__all__)


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(experiment, name)
    msg = f"module 'hepwb.pipeline' has no attribute {name!r}"
    raise AttributeError(msg)


def __dir__() -> list[str]:
    return __all__
