"""Named-entity recognition as a service (``POST /ner``), as the Document-RAG design specifies.

:class:`NERService` serves hepwb's HEP entity dictionary and rules
(:class:`hepwb.models.entities.EntityExtractor`) over HTTP on 127.0.0.1 (``hepwb ner-serve``);
:class:`NERClient` calls it with retries, and either stops with a clear error when the service is down
(the design's default) or, with ``fail_soft=True``, returns empty entity lists and logs why.
"""

from __future__ import annotations

from hepwb.ner.client import NERClient, NERUnavailableError
from hepwb.ner.service import NERService

__all__ = ["NERClient", "NERService", "NERUnavailableError"]


def __dir__() -> list[str]:
    return __all__
