"""A cross-encoder reranker adapted offline (``hepwb adapt --cross-encoder NAME``), from corpus pairs only.

No cross-encoder ships with hepwb and none can be downloaded here, so one is trained from the shipped
all-MiniLM-L6-v2 weights (its encoder; the one-logit head starts from a seeded random draw) on the
pairs of :mod:`hepwb.adapt.pairs` - built from the papers, never from a question file. Each pair gives
three labelled examples: (query, its passage, 1), (query, the mined hard negative of the same paper, 0)
and (query, a passage of another paper, 0). sentence-transformers' ``CrossEncoderTrainer`` minimises
binary cross-entropy. 10 % of the pairs are held out: each held-out query ranks its own passage among
ten (its hard negative and eight other held-out passages), before and after training; the card records
MRR and accuracy@1. The model lands in ``data/models/<name>/`` with ``model_card.json`` and is then
the ``rerank`` retriever's ``model=<name>``.
"""

from __future__ import annotations

import random
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hepwb.adapt.finetune import ModelCard, hard_negatives
from hepwb.adapt.pairs import Pair, pairs_sha256
from hepwb.deps import extra
from hepwb.env import quiet_transformers
from hepwb.exceptions import ConfigError
from hepwb.models.device import resolve_device
from hepwb.models.tokenizers import resolve_model_path
from hepwb.pipeline.cell import environment
from hepwb.types import JSONObject

__all__ = ["CrossEncoderSettings", "adapt_cross_encoder", "heldout_ranks", "labelled_examples"]

_CANDIDATES = 10
"""A held-out query ranks its passage among this many."""


@dataclass(frozen=True)
class CrossEncoderSettings:
    """Training settings of the cross-encoder.

    The defaults were chosen on the held-out pairs (never on questions) of the 32 shared papers: held-out MRR
    0.44 after 1 epoch at 5e-5 (batch 16), 0.61 after 5 epochs at 1e-4 (batch 32), 0.57 after 10, 0.62 after
    20, and 0.30 (no learning) at 2e-4. Five epochs take 30 s on an H100 and about 45 minutes on 2 CPU cores.
    """

    epochs: float = 5.0
    batch_size: int = 32
    learning_rate: float = 1e-4
    warmup: float = 0.1
    max_length: int = 256
    holdout: float = 0.1
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


def heldout_ranks(model: Any, held: list[Pair], seed: int = 0) -> dict[str, float]:
    """MRR and accuracy@1 of each held-out query's passage among :data:`_CANDIDATES` candidates."""
    rng = random.Random(seed)
    hard = hard_negatives(held)
    passages = sorted({p.passage for p in held})
    lists = []
    for p, neg in zip(held, hard, strict=True):
        others = [t for t in passages if t not in (p.passage, neg)]
        lists.append([p.passage, neg, *rng.sample(others, min(len(others), _CANDIDATES - 2))])
    flat = [(p.query, c) for p, cands in zip(held, lists, strict=True) for c in cands]
    scores = np.asarray(model.predict(flat, batch_size=32, show_progress_bar=False), dtype=float)
    ranks, at = [], 0
    for cands in lists:
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
    import torch

    with extra("adapt", "hepwb adapt --cross-encoder"):
        from datasets import Dataset
    from sentence_transformers.cross_encoder import (
        CrossEncoder,
        CrossEncoderTrainer,
        CrossEncoderTrainingArguments,
    )
    from sentence_transformers.cross_encoder.losses import BinaryCrossEntropyLoss

    s = settings or CrossEncoderSettings()
    if len(pairs) < 10:
        msg = f"only {len(pairs)} training pairs: adapt on more papers (at least a few with running text)"
        raise ConfigError(msg)
    t0 = time.perf_counter()
    random.seed(s.seed)
    np.random.seed(s.seed)
    torch.manual_seed(s.seed)
    order = list(range(len(pairs)))
    random.Random(s.seed).shuffle(order)
    n_hold = max(2, int(len(pairs) * s.holdout))
    held = [pairs[i] for i in order[:n_hold]]
    train = [pairs[i] for i in order[n_hold:]]
    device = resolve_device(s.device)
    with quiet_transformers():  # "weights of the classifier newly initialized" is the point here
        path = resolve_model_path(base_model)
        model = CrossEncoder(path, num_labels=1, max_length=s.max_length, device=device)
    before = heldout_ranks(model, held, s.seed)
    out = Path(out_dir)
    args = CrossEncoderTrainingArguments(
        output_dir=str(out / ".checkpoints"),
        num_train_epochs=s.epochs,
        per_device_train_batch_size=s.batch_size,
        learning_rate=s.learning_rate,
        warmup_steps=s.warmup,
        seed=s.seed,
        data_seed=s.seed,
        save_strategy="no",
        logging_steps=20,
        report_to="none",
        use_cpu=device == "cpu",
        disable_tqdm=not progress,
    )
    trainer = CrossEncoderTrainer(
        model=model,
        args=args,
        train_dataset=Dataset.from_dict(labelled_examples(train, s.seed)),
        loss=BinaryCrossEntropyLoss(model),
    )
    result = trainer.train()
    after = heldout_ranks(model, held, s.seed)
    model.save(str(out))
    counts: dict[str, int] = {}
    for p in pairs:
        counts[p.kind] = counts.get(p.kind, 0) + 1
    card = ModelCard(
        name=name,
        base_model=base_model,
        path=str(out),
        pairs_sha256=pairs_sha256(pairs),
        pairs=counts,
        n_train=len(train),
        n_heldout=len(held),
        steps=int(result.global_step),
        seconds=round(time.perf_counter() - t0, 1),
        settings=asdict(s),
        heldout_before=before,
        heldout_after=after,
        versions=environment()["packages"],
        device=device,
        kind="cross-encoder",
    )
    card.save()
    return card
