"""Where entities come from at ingest and query time: in process (the default) or the NER service.

:func:`ner_source` picks the NER service when a URL is given or ``HEPWB_NER_URL`` is set (``hepwb
--ner-url``), else the in-process HEP dictionary and rules. Both answer :meth:`EntitySource.batch` (one
sorted entity list per text) and name their :attr:`EntitySource.model`, which is recorded with every table
indexed through them.

Example:
    >>> src = ner_source(url="")
    >>> src.batch(["J/psi at LHCb"])
    [['experiment:lhcb', 'particle:jpsi']]
    >>> src.model.startswith("hepwb-hep-dictionary@")
    True
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Protocol

from hepwb.models.entities import EntityExtractor
from hepwb.ner.client import NERClient
from hepwb.ner.service import model_name

__all__ = ["EntitySource", "LocalNER", "ner_source"]


class EntitySource(Protocol):
    """Gives the entities of texts and names the model that found them."""

    @property
    def model(self) -> str:
        """The active NER model (recorded per chunk table)."""
        ...

    @property
    def failed_soft(self) -> int:
        """Texts given empty entities because the service failed (``--ner-fail-soft``)."""
        ...

    def batch(self, texts: list[str]) -> list[list[str]]:
        """The distinct entities of every text, sorted."""
        ...


@dataclass
class LocalNER:
    """The HEP entity dictionary and rules, in this process (notebooks' default)."""

    extractor: EntityExtractor | None = field(default=None, repr=False)
    failed_soft: int = 0

    @property
    def model(self) -> str:
        """``hepwb-hep-dictionary@<hash>`` (as the service reports it)."""
        return model_name()

    def batch(self, texts: list[str]) -> list[list[str]]:
        """Entities of every text."""
        if self.extractor is None:
            self.extractor = EntityExtractor.default()
        return [self.extractor.entities(t) for t in texts]


def ner_source(url: str | None = None, *, fail_soft: bool | None = None) -> EntitySource:
    """The NER service at ``url`` (default ``$HEPWB_NER_URL``), or :class:`LocalNER` when none is set.

    ``fail_soft`` (default ``$HEPWB_NER_FAIL_SOFT``) indexes with empty entities, logged, when the service
    fails; otherwise a failing service stops ingest with an error naming the fix.
    """
    url = os.environ.get("HEPWB_NER_URL", "") if url is None else url
    if not url:
        return LocalNER()
    if fail_soft is None:
        fail_soft = os.environ.get("HEPWB_NER_FAIL_SOFT", "").lower() in ("1", "true", "yes")
    return NERClient(url, fail_soft=fail_soft)
