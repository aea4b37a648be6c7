"""Acquisition: discover papers on arXiv (REST API, OAI-PMH) and INSPIRE-HEP, download and verify them.

Every network call goes through :class:`~hepwb.acquisition.http.PoliteClient` (User-Agent, pacing,
retries with back-off and ``Retry-After``, verified atomic downloads with Range resume).
"""

from __future__ import annotations

from hepwb.acquisition.arxiv import ArxivAPI, ArxivOAI, ArxivRecord
from hepwb.acquisition.http import PoliteClient

__all__ = ["ArxivAPI", "ArxivOAI", "ArxivRecord", "PoliteClient"]


def __dir__() -> list[str]:
    return __all__
