"""Acquisition: discover papers on arXiv (REST API, OAI-PMH) and INSPIRE-HEP, download and verify them.

Every network call goes through :class:`~hepwb.acquisition.http.PoliteClient` (User-Agent, pacing,
retries with back-off and ``Retry-After``, verified atomic downloads with Range resume).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hepwb.acquisition.arxiv import ArxivAPI, ArxivOAI, ArxivRecord
    from hepwb.acquisition.http import PoliteClient

__all__ = ["ArxivAPI", "ArxivOAI", "ArxivRecord", "PoliteClient"]

_WHERE = {"ArxivAPI": "arxiv", "ArxivOAI": "arxiv", "ArxivRecord": "arxiv", "PoliteClient": "http"}


def __getattr__(name: str) -> object:
    """Import the HTTP clients on first use (``hepwb.acquisition.folder`` stays light)."""
    if name in _WHERE:
        return getattr(importlib.import_module(f"hepwb.acquisition.{_WHERE[name]}"), name)
    msg = f"module 'hepwb.acquisition' has no attribute {name!r}"
    raise AttributeError(msg)


def __dir__() -> list[str]:
    return __all__
