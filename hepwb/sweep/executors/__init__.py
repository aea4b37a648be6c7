"""Where a sweep's tasks run: ``serial`` (this process) or Dask (``local``, ``dask``), chosen by name."""

from __future__ import annotations

from hepwb.sweep.executors.base import EXECUTORS, Executor, get_executor, register_executor

__all__ = ["EXECUTORS", "Executor", "get_executor", "register_executor"]


def __dir__() -> list[str]:
    return __all__
