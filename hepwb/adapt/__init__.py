"""Learned from the corpus, never from the scored questions: fusion weights, an adapted embedder."""

from __future__ import annotations

__all__: list[str] = []


def __dir__() -> list[str]:
    return __all__
