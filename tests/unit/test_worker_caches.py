"""Sweep workers bound what they keep loaded by bytes, not only by count."""

from __future__ import annotations

from pathlib import Path

from hepwb import defaults
from hepwb.chunking.chunksets import ChunkSet
from hepwb.sweep import worker
from hepwb.types import Chunk


def chunkset(name: str, mib: int) -> ChunkSet:
    text = "x" * (mib * 2**20 // 8)
    chunks = [Chunk(f"{name}-{i}", "d", i, 0, len(text), text, 1) for i in range(8)]
    return ChunkSet(name, Path(name), {"name": "t"}, chunks, {})


def test_chunk_sets_are_evicted_by_bytes_oldest_first():
    cache = worker._LRU(6, budget_mib=50)
    made: list[str] = []

    def make(name: str, mib: int):
        made.append(name)
        return chunkset(name, mib)

    cache.get_or("a", lambda: make("a", 20))
    cache.get_or("b", lambda: make("b", 20))
    assert list(cache) == ["a", "b"]  # 40 MiB: both kept
    cache.get_or("a", lambda: make("a", 20))  # a hit: a is now the most recent
    cache.get_or("c", lambda: make("c", 20))  # 60 MiB > 50: the least recently used (b) goes
    assert list(cache) == ["a", "c"] and made == ["a", "b", "c"]
    cache.get_or("huge", lambda: make("huge", 80))  # alone above the budget: kept, every other one goes
    assert list(cache) == ["huge"]
    assert 80 * 2**20 <= worker.size_bytes(cache["huge"]) < 81 * 2**20


def test_the_worker_caches_use_the_configured_budget():
    assert worker._INPUTS.budget == worker._CHUNKSETS.budget == defaults.WORKER_CACHE_MIB * 2**20
    assert worker._TABLES.budget is None  # open tables hold no data in memory
