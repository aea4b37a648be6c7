"""Where a sweep's tasks run: ``serial`` (this process) or Dask (``local``, ``dask``), chosen by name."""

from __future__ import annotations

from typing import Any

from hepwb.sweep.executors import dask as _dask  # noqa: F401  (registers "local", "dask")
from hepwb.sweep.executors import serial as _serial  # noqa: F401  (registers "serial")
from hepwb.sweep.executors.base import EXECUTORS, Executor, register_executor

__all__ = ["EXECUTORS", "Executor", "get_executor", "register_executor"]


def get_executor(name: str = "local", **options: Any) -> Executor:
    """Build executor ``name`` (``serial``, ``local``/``dask``) with ``options``."""
    return EXECUTORS.get(name)(**options)  # type: ignore[no-any-return]  # the registry holds classes


def __dir__() -> list[str]:
    return __all__
