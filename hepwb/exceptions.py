"""The hepwb exception hierarchy.

Every error raised on purpose by hepwb is a :class:`HepwbError`; each subclass also inherits the
matching built-in so callers can catch either.

Example:
    >>> from hepwb.exceptions import ConfigError, HepwbError
    >>> issubclass(ConfigError, ValueError) and issubclass(ConfigError, HepwbError)
    True
"""

from __future__ import annotations

__all__ = [
    "CatalogBusyError",
    "ConfigError",
    "CorpusNotFoundError",
    "DependencyError",
    "HepwbError",
    "ProcessingError",
    "RetrieverUnavailableError",
    "SchemaValidationError",
]


class HepwbError(Exception):
    """Base class of every error hepwb raises on purpose."""


class ConfigError(HepwbError, ValueError):
    """A parameter or configuration value is invalid; the message names it and the fix."""


class CorpusNotFoundError(HepwbError, FileNotFoundError):
    """No corpus was configured or found; the message names the option to set."""


class ProcessingError(HepwbError, RuntimeError):
    """A document could not be converted; carries a machine-readable ``code`` for the processing log."""

    def __init__(self, message: str, *, code: str = "PROC_FAILED", path: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.path = path


class SchemaValidationError(HepwbError, ValueError):
    """An output artefact does not validate against its HEPilot JSON schema."""


class DependencyError(HepwbError, ImportError):
    """An optional dependency or model is missing; the message says what to install."""


class RetrieverUnavailableError(HepwbError, RuntimeError):
    """A retrieval method cannot run here (no cross-encoder model, no LLM endpoint configured)."""


class CatalogBusyError(HepwbError, TimeoutError):
    """Another process held the DuckDB catalog longer than hepwb waits (``$HEPWB_CATALOG_WAIT_S``)."""
