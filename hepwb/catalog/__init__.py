"""The DuckDB catalog of what hepwb measured: documents, chunk sets, chunks, runs, metrics, sweeps.

It sits above :mod:`hepwb.experiment` (it loads the folders a run writes) and below :mod:`hepwb.report`
(which reads it). :class:`Catalog` is the file; :func:`connect_catalog` opens it waiting for another
writer; :func:`lance_views` exposes a LanceDB folder's chunk tables to its SQL.

Example:
    >>> import tempfile
    >>> from pathlib import Path
    >>> cat = Catalog(Path(tempfile.mkdtemp()) / "catalog.duckdb")
    >>> cat.sql("SELECT count(*) AS runs FROM runs")["runs"].tolist()
    [0]
"""

from __future__ import annotations

from hepwb.catalog.base import Catalog, connect_catalog, lance_views

__all__ = ["Catalog", "connect_catalog", "lance_views"]


def __dir__() -> list[str]:
    return __all__
