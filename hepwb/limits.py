"""The bounds of every user input, in one place: no parameter or file can exhaust the machine.

Example:
    >>> MIN_CHUNK_SIZE, MAX_CHUNK_SIZE, MAX_K, MAX_QUESTION_CHARS
    (16, 32768, 1000, 4000)
"""

from __future__ import annotations

__all__ = ["MAX_CHUNK_SIZE", "MAX_K", "MAX_QUESTION_CHARS", "MAX_QUESTION_FILE_BYTES", "MIN_CHUNK_SIZE"]

MIN_CHUNK_SIZE = 16
"""Smallest chunk size (tokens)."""

MAX_CHUNK_SIZE = 32_768
"""Largest chunk size (tokens): more than any paper section; the embedders read 256-512."""

MAX_K = 1_000
"""Most chunks retrieved per question."""

MAX_QUESTION_CHARS = 4_000
"""Longest question (characters): a paragraph; BM25 over a 10 MB query aborts natively in the FTS engine."""

MAX_QUESTION_FILE_BYTES = 50_000_000
"""Largest question file read (bytes): some 100 000 questions."""
