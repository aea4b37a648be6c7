"""Where hepwb keeps its artefacts, resolved lazily (no import-time side effects).

Layout (cookiecutter-data-science habits): ``data/interim`` caches converted documents,
``data/processed`` holds HEPilot chunk sets and the LanceDB database, ``reports/`` holds runs,
the DuckDB catalog and HTML reports. ``HEPWB_HOME`` overrides the project root and
``HEPWB_SHARED`` the shared test-material folder.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Layout", "find_project_root", "shared_dir"]


def find_project_root(start: str | Path | None = None) -> Path:
    """Return ``$HEPWB_HOME`` or the nearest ancestor of ``start`` holding ``pyproject.toml`` and ``hepwb/``.

    Falls back to the current directory when no project is found (an installed package used elsewhere).
    """
    env = os.environ.get("HEPWB_HOME")
    if env:
        return Path(env).resolve()
    here = Path(start or Path.cwd()).resolve()
    for cand in (here, *here.parents):
        if (cand / "pyproject.toml").is_file() and (cand / "hepwb").is_dir():
            return cand
    return here


def shared_dir(root: str | Path | None = None) -> Path:
    """Return the shared test-material folder.

    ``$HEPWB_SHARED`` if set, else the first existing ``../shared`` beside the project root or beside
    the source tree this package was imported from.
    """
    env = os.environ.get("HEPWB_SHARED")
    if env:
        return Path(env).resolve()
    cands = [
        (Path(root) if root else find_project_root()).resolve().parent / "shared",
        Path(__file__).resolve().parents[2] / "shared",
    ]
    return next((c for c in cands if c.is_dir()), cands[0])


@dataclass(frozen=True)
class Layout:
    """Artefact folders under one project root.

    Example:
        >>> lay = Layout(Path("/tmp/x"))
        >>> lay.lancedb.as_posix()
        '/tmp/x/data/processed/lancedb'
    """

    root: Path

    def __post_init__(self) -> None:
        """Accept a string root too (``Layout("/tmp/x")``)."""
        object.__setattr__(self, "root", Path(self.root))

    @classmethod
    def default(cls) -> Layout:
        """The layout of the current project."""
        return cls(find_project_root())

    @classmethod
    def at(cls, home: str | Path | None) -> Layout:
        """The layout under ``home``, or the default one when ``home`` is None (notebook parameter)."""
        return cls(Path(home).resolve()) if home else cls.default()

    @property
    def data(self) -> Path:
        """``data/``."""
        return self.root / "data"

    @property
    def interim(self) -> Path:
        """Converted documents cache."""
        return self.data / "interim" / "documents"

    @property
    def spans(self) -> Path:
        """Sentence splits of the converted documents' paragraphs, one file per paper (a cache)."""
        return self.data / "interim" / "spans"

    @property
    def chunksets(self) -> Path:
        """HEPilot output trees, one per chunk set."""
        return self.data / "processed" / "chunksets"

    @property
    def lancedb(self) -> Path:
        """The LanceDB database folder."""
        return self.data / "processed" / "lancedb"

    @property
    def reports(self) -> Path:
        """``reports/``."""
        return self.root / "reports"

    @property
    def runs(self) -> Path:
        """One folder per evaluation run."""
        return self.reports / "runs"

    @property
    def catalog(self) -> Path:
        """The DuckDB catalog of documents, chunk sets, runs and metrics."""
        return self.reports / "catalog.duckdb"
