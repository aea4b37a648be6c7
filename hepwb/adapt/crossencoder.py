"""A cross-encoder reranker adapted offline (``hepwb adapt --cross-encoder NAME``), from corpus pairs only.

No cross-encoder ships with hepwb and none can be downloaded here, so one is trained from the shipped
all-MiniLM-L6-v2 weights (its encoder; the one-logit head starts from a seeded random draw) on the
pairs of :mod:`hepwb.adapt.pairs` - built from the papers, never from a question file. Each pair gives
three labelled examples: (query, its passage, 1), (query, the mined hard negative of the same paper, 0)
and (query, a passage of another paper, 0). sentence-transformers' ``CrossEncoderTrainer`` minimises
binary cross-entropy. 10 % of the pairs are held out: each held-out query ranks its own passage among
ten (its hard negative and eight other held-out passages), before and after training; the card records
MRR and accuracy@1. The model is published in ``data/models/<name>/`` with ``model_card.json`` and its
manifest (:func:`hepwb.adapt.finetune.save_model`) and is then the ``rerank`` retriever's ``model=<name>``.
"""

from __future__ import annotations

import random
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hepwb import defaults
from hepwb.adapt.finetune import ModelCard, checkpoints_dir, hard_negatives, save_model, seeded_split
from hepwb.adapt.pairs import Pair
from hepwb.adapt.progress import show_training
from hepwb.models.device import resolve_device
from hepwb.models.tokenizers import resolve_model_path
from hepwb.runtime.deps import extra
from hepwb.runtime.env import quiet_transformers
from hepwb.types import JSONObject

__all__ = [
    "CrossEncoderSettings",
    "adapt_cross_encoder",
    "heldout_candidates",
    "heldout_ranks",
    "labelled_examples",
]

_CANDIDATES = 10
"""A held-out query ranks its passage among this many."""


@dataclass(frozen=True)
class CrossEncoderSettings:
    """Training settings of the cross-encoder.

    The defaults were chosen on the held-out pairs (never on questions) of the 32 shared papers: held-out MRR
    0.44 after 1 epoch at 5e-5 (batch 16), 0.61 after 5 epochs at 1e-4 (batch 32), 0.57 after 10, 0.62 after
    20, and 0.30 (no learning) at 2e-4. Five epochs take 30 s on an H100 and about 45 minutes on 2 CPU cores.
    """

    epochs: float = defaults.CROSS_ENCODER_EPOCHS
    batch_size: int = defaults.CROSS_ENCODER_BATCH_SIZE
    learning_rate: float = defaults.CROSS_ENCODER_LEARNING_RATE
    warmup: float = defaults.CROSS_ENCODER_WARMUP
    max_length: int = defaults.CROSS_ENCODER_MAX_LENGTH
    holdout: float = defaults.ADAPT_HOLDOUT
    seed: int = 0
    device: str | None = None
    """``auto``, ``cpu``, ``cuda``, ``cuda:N`` or ``mps``; default ``$HEPWB_DEVICE`` or ``auto``."""


def labelled_examples(pairs: list[Pair], seed: int = 0) -> JSONObject:
    """The training columns ``query``, ``passage``, ``label``: each pair, its hard negative, a random one.

    >>> from hepwb.adapt.pairs import Pair
    >>> ps = [Pair("heading", f"q{i}", f"passage {i} about topic {i}", f"P{i % 2}") for i in range(4)]
    >>> cols = labelled_examples(ps)
    >>> len(cols["query"]), sum(cols["label"])
    (12, 4.0)
    """
    rng = random.Random(seed)
    hard = hard_negatives(pairs)
    query: list[str] = []
    passage: list[str] = []
    label: list[float] = []
    for p, neg in zip(pairs, hard, strict=True):
        others = [o.passage for o in pairs if o.label != p.label] or [o.passage for o in pairs if o != p]
        for text, y in ((p.passage, 1.0), (neg, 0.0), (rng.choice(others), 0.0)):
            query.append(p.query)
            passage.append(text)
            label.append(y)
    return {"query": query, "passage": passage, "label": label}


def heldout_candidates(held: list[Pair], seed: int = 0) -> list[tuple[str, list[str]]]:
    """Each held-out query with :data:`_CANDIDATES` passages: its own, its hard negative, then others."""
    rng = random.Random(seed)
    passages = sorted({p.passage for p in held})
    out = []
    for p, neg in zip(held, hard_negatives(held), strict=True):
        others = [t for t in passages if t not in (p.passage, neg)]
        out.append((p.query, [p.passage, neg, *rng.sample(others, min(len(others), _CANDIDATES - 2))]))
    return out


def heldout_ranks(model: Any, lists: list[tuple[str, list[str]]]) -> dict[str, float]:
    """MRR and accuracy@1 of each query's own passage (the first of its list) among its candidates."""
    flat = [(query, c) for query, cands in lists for c in cands]
    scores = np.asarray(model.predict(flat, batch_size=32, show_progress_bar=False), dtype=float)
    ranks, at = [], 0
    for _, cands in lists:
        s = scores[at : at + len(cands)]
        ranks.append(int((s > s[0]).sum()) + 1)
        at += len(cands)
    r = np.asarray(ranks)
    return {"mrr": float(np.mean(1.0 / r)), "acc@1": float(np.mean(r == 1))}


def adapt_cross_encoder(
    pairs: list[Pair],
    base_model: str,
    out_dir: str | Path,
    *,
    name: str,
    settings: CrossEncoderSettings | None = None,
    progress: bool = True,
) -> ModelCard:
    """Train a cross-encoder from ``base_model``'s encoder on ``pairs`` into ``out_dir`` (see the module)."""
    with extra("adapt", "hepwb adapt --cross-encoder"):
        from datasets import Dataset
    from sentence_transformers.cross_encoder import (
        CrossEncoder,
        CrossEncoderTrainer,
        CrossEncoderTrainingArguments,
    )
    from sentence_transformers.cross_encoder.losses import BinaryCrossEntropyLoss

    s = settings or CrossEncoderSettings()
    t0 = time.perf_counter()
    held, train = seeded_split(pairs, s.holdout, s.seed)
    device = resolve_device(s.device)
    with quiet_transformers():  # "weights of the classifier newly initialized" is the point here
        path = resolve_model_path(base_model)
        model = CrossEncoder(path, num_labels=1, max_length=s.max_length, device=device)
    candidates = heldout_candidates(held, s.seed)  # the same lists before and after training
    before = heldout_ranks(model, candidates)
    out = Path(out_dir)
    args = CrossEncoderTrainingArguments(
        output_dir=str(checkpoints_dir(out)),
        num_train_epochs=s.epochs,
        per_device_train_batch_size=s.batch_size,
        learning_rate=s.learning_rate,
        warmup_steps=s.warmup,
        seed=s.seed,
        data_seed=s.seed,
        save_strategy="no",
        logging_steps=1,  # the loss of every step, for the bar
        report_to="none",
        use_cpu=device == "cpu",
        disable_tqdm=True,  # transformers' bar, table and log lines: show_training draws one bar instead
    )
    trainer = CrossEncoderTrainer(
        model=model,
        args=args,
        train_dataset=Dataset.from_dict(labelled_examples(train, s.seed)),
        loss=BinaryCrossEntropyLoss(model),
    )
    show_training(trainer, f"training {name} (cross-encoder)", progress=progress)
    try:
        result = trainer.train()
    finally:
        shutil.rmtree(checkpoints_dir(out), ignore_errors=True)
    after = heldout_ranks(model, candidates)
    steps = int(result.global_step)
    heldout = (before, after)
    card = ModelCard.trained(
        name, base_model, out, pairs, held, steps, t0, asdict(s), heldout, device, "cross-encoder"
    )
    save_model(model, card)
    return card
