"""Tier-aware evaluation: the same question set scored against LT only, HOT only and LT+HOT.

The documents of both tiers (their sources, recorded in ``tiers.json``) locate the evidence quotes;
questions whose evidence lies outside them are left out. Searches here are not recorded (they would
otherwise count as reinforcement). A question answered by a HOT paper scores in ``hot`` and
``lt+hot``, never in ``lt``: the table shows what the HOT tier adds and what LT+HOT fusion costs.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from hepwb import defaults
from hepwb.corpus import ingest
from hepwb.evaluation import build_keyindexes, evaluate, load_questions, locate_all
from hepwb.exceptions import ConfigError
from hepwb.experiment.stages import questions_path
from hepwb.tiers.store import Tiers
from hepwb.types import Document

if TYPE_CHECKING:
    import pandas as pd


__all__ = ["MODES", "evaluate_tiers", "tier_documents"]

MODES = {"lt": ("lt",), "hot": ("hot",), "lt+hot": ("lt", "hot")}


def tier_documents(tiers: Tiers) -> list[Document]:
    """The converted documents of every source of the tiers (from the conversion cache)."""
    docs: dict[str, Document] = {}
    for src in tiers.meta.get("sources", []):
        found = ingest(
            src["corpus"], layout=tiers.layout, only=src["only"], max_docs=src["max_docs"], progress=False
        )
        for d in found:
            docs[d.document_id] = d
    return list(docs.values())


def evaluate_tiers(
    tiers: Tiers, questions: str | Path | None = None, *, k: int = defaults.SEARCH_K, strict: bool = False
) -> pd.DataFrame:
    """One row per mode (``lt``, ``hot``, ``lt+hot``): questions, recall@k, MRR@k, mean latency (ms)."""
    import pandas as pd

    docs = tier_documents(tiers)
    labels = {d.label for d in docs}
    qs = [
        q
        for q in load_questions(questions_path(str(questions) if questions else None))
        if all(e.doc in labels for e in q.evidence)
    ]
    if not qs:
        msg = f"no question of the set has all its evidence in the tiers' documents ({sorted(labels)})"
        raise ConfigError(msg)
    located, _ = locate_all(qs, docs)
    keyindexes = build_keyindexes(docs)
    rows = []
    for mode, which in MODES.items():
        present = [t for t in which if tiers.has(t)]
        if not present:
            continue
        results, spent = {}, 0.0
        for q in qs:
            t0 = time.perf_counter()
            results[q.qid] = tiers.search(q.question, k, which=present, strict=strict, record=False)
            spent += time.perf_counter() - t0
        ev = evaluate(qs, located, results, ks=(k,), keyindexes=keyindexes)
        s = ev.summary
        rows.append(
            {
                "mode": mode,
                "questions": int(s["n_questions_evaluated"]),
                f"recall@{k}": s[f"recall@{k}"],
                f"mrr@{k}": s[f"mrr@{k}"],
                "latency_ms": 1000 * spent / len(qs),
            }
        )
    return pd.DataFrame(rows)
