"""Adapt the embedding model to the corpus on CPU (``hepwb adapt``): contrastive fine-tuning on corpus pairs.

The pairs of :mod:`hepwb.adapt.pairs` (never a question set) train the model with sentence-transformers'
trainer and ``MultipleNegativesRankingLoss``: every other passage of the batch is a negative, and each
pair brings a mined hard negative - the passage of the same paper most similar to the query by TF-IDF
that is not its own. Seeded; 10 % of the pairs are held out and scored before and after (the rank of each
held-out query's passage among all held-out passages), so the card says whether adaptation helped on
text it did not train on. The model is published under ``data/models/<name>/`` with ``model_card.json``, a
README (base model, pair-set hash, steps, seed, time, versions) and ``hepwb-manifest.json``
(:func:`save_model`: written beside, checked complete, renamed into place), and is then usable by name
anywhere a model name is (``embedding_model: <name>`` in a sweep).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hepwb import defaults, limits
from hepwb.adapt.pairs import Pair, pairs_sha256
from hepwb.adapt.progress import show_training
from hepwb.exceptions import ConfigError
from hepwb.experiment.cell import environment
from hepwb.files.io import atomic_write_text, write_json
from hepwb.files.publish import publish_folder
from hepwb.models.device import resolve_device
from hepwb.models.tokenizers import resolve_model_path
from hepwb.runtime.deps import extra
from hepwb.runtime.env import quiet_transformers
from hepwb.types import JSONObject

__all__ = [
    "AdaptSettings",
    "ModelCard",
    "adapt_embedder",
    "hard_negatives",
    "heldout_scores",
    "rebuild_command",
    "save_model",
    "seeded_split",
]


@dataclass(frozen=True)
class AdaptSettings:
    """Training settings (defaults fit the 32 shared papers in under 20 minutes on 2 CPU cores)."""

    epochs: float = defaults.ADAPT_EPOCHS
    batch_size: int = defaults.ADAPT_BATCH_SIZE
    learning_rate: float = defaults.ADAPT_LEARNING_RATE
    warmup: float = defaults.ADAPT_WARMUP
    max_seq_length: int = defaults.ADAPT_MAX_SEQ_LENGTH
    hard_negatives: bool = True
    holdout: float = defaults.ADAPT_HOLDOUT
    seed: int = 0
    device: str | None = None
    """``auto``, ``cpu``, ``cuda``, ``cuda:N`` or ``mps``; default ``$HEPWB_DEVICE`` or ``auto`` (the GPU)."""


@dataclass
class ModelCard:
    """What was trained, on what, how, and how it scores on held-out pairs."""

    name: str
    base_model: str
    path: str
    pairs_sha256: str
    pairs: dict[str, int]
    n_train: int
    n_heldout: int
    steps: int
    seconds: float
    settings: JSONObject
    heldout_before: dict[str, float]
    heldout_after: dict[str, float]
    versions: dict[str, str | None] = field(default_factory=dict)
    device: str = "cpu"
    """Where the model was trained (``cpu``, ``cuda``, ``mps``)."""
    kind: str = "embedder"
    """``embedder`` (a sentence-transformers bi-encoder) or ``cross-encoder`` (the ``rerank`` model)."""

    def save(self, folder: str | Path | None = None) -> None:
        """Write ``model_card.json`` and ``README.md`` into ``folder`` (default: the model folder)."""
        folder = Path(folder or self.path)
        write_json(folder / "model_card.json", asdict(self))
        rows = "\n".join(
            f"| {k} | {self.heldout_before[k]:.3f} | {self.heldout_after[k]:.3f} |"
            for k in self.heldout_after
        )
        what = (
            "a cross-encoder (reranker) trained from"
            if self.kind == "cross-encoder"
            else "adapted by hepwb to"
        )
        among = " among ten candidates" if self.kind == "cross-encoder" else ""
        atomic_write_text(
            folder / "README.md",
            f"# {self.name}\n\n{what} a corpus of papers with "
            f"{self.n_train} (query, passage) pairs built from the papers themselves (kinds: {self.pairs}; "
            f"SHA-256 {self.pairs_sha256}). {self.steps} steps, seed {self.settings['seed']}, "
            f"{self.seconds:.0f} s on {self.device}.\n\nHeld-out pairs ({self.n_heldout}), rank of the right "
            f"passage{among}:\n\n"
            f"| metric | base | adapted |\n|---|---|---|\n{rows}\n\nSettings: {json.dumps(self.settings)}\n",
        )

    @classmethod
    def trained(
        cls,
        name: str,
        base_model: str,
        out: Path,
        pairs: list[Pair],
        held: list[Pair],
        steps: int,
        started: float,
        settings: JSONObject,
        heldout: tuple[dict[str, float], dict[str, float]],
        device: str,
        kind: str = "embedder",
    ) -> ModelCard:
        """The card of a model just trained on ``pairs`` (``held`` held out) since ``started`` (not saved)."""
        counts: dict[str, int] = {}
        for p in pairs:
            counts[p.kind] = counts.get(p.kind, 0) + 1
        return cls(
            name=name,
            base_model=base_model,
            path=str(out),
            pairs_sha256=pairs_sha256(pairs),
            pairs=counts,
            n_train=len(pairs) - len(held),
            n_heldout=len(held),
            steps=steps,
            seconds=round(time.perf_counter() - started, 1),
            settings=settings,
            heldout_before=heldout[0],
            heldout_after=heldout[1],
            versions=environment()["packages"],
            device=device,
            kind=kind,
        )


def rebuild_command(name: str, base_model: str, kind: str = "embedder") -> str:
    """The ``hepwb adapt`` command that makes the model ``name`` again (named when it is found damaged).

    Example:
        >>> rebuild_command("hep-reranker", "all-MiniLM-L6-v2", "cross-encoder")
        'hepwb adapt --cross-encoder hep-reranker'
    """
    cmd = f"hepwb adapt --cross-encoder {name}" if kind == "cross-encoder" else f"hepwb adapt --name {name}"
    return cmd if base_model == defaults.EMBEDDING_MODEL else f"{cmd} --base {base_model}"


def save_model(model: Any, card: ModelCard) -> Path:
    """Publish ``model`` with its card to ``card.path``: written beside, checked complete, renamed into place.

    The folder keeps the layout sentence-transformers loads (``modules.json``, ``config.json``, weights,
    tokenizer, pooling and normalisation) plus ``model_card.json``, ``README.md`` and the manifest listing
    every file (:func:`hepwb.files.publish.publish_folder`); a process killed while saving leaves the previous
    model of that name, or none, never part of one.
    """

    def write(folder: Path) -> None:
        with quiet_transformers():  # its "Writing model shards" bar
            model.save(str(folder))
        card.save(folder)

    rebuild = rebuild_command(card.name, card.base_model, card.kind)
    return publish_folder(Path(card.path), write, {"kind": card.kind, "name": card.name, "rebuild": rebuild})


def checkpoints_dir(out: Path) -> Path:
    """Where the trainer of the model published at ``out`` may write (a hidden sibling, removed after)."""
    return out.parent / f".{out.name}.checkpoints-{os.getpid()}"


def seeded_split(pairs: list[Pair], holdout: float, seed: int) -> tuple[list[Pair], list[Pair]]:
    """``(held_out, train)``: ``pairs`` shuffled with ``seed``, ``holdout`` of them (at least 2) held out.

    Also seeds Python's, NumPy's and PyTorch's generators for the training that follows.
    """
    import torch

    if len(pairs) < limits.ADAPT_MIN_PAIRS:
        msg = f"only {len(pairs)} training pairs: adapt on more papers (at least a few with running text)"
        raise ConfigError(msg)
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    order = list(range(len(pairs)))
    random.Random(seed).shuffle(order)
    n_hold = max(2, int(len(pairs) * holdout))
    return [pairs[i] for i in order[:n_hold]], [pairs[i] for i in order[n_hold:]]


def _words(text: str) -> set[str]:
    return set(text.lower().split())


def _overlaps(a: str, b: str, limit: float = defaults.ADAPT_NEGATIVE_MAX_OVERLAP) -> bool:
    """Whether two passages share more than ``limit`` of their words (Jaccard): one text seen twice."""
    wa, wb = _words(a), _words(b)
    return len(wa & wb) > limit * max(len(wa | wb), 1)


def hard_negatives(pairs: list[Pair]) -> list[str]:
    """For each pair, the passage of the same paper most similar to its query (TF-IDF) that is not a positive.

    A candidate is skipped when it contains the query or overlaps the pair's own passage (the same
    paragraph reached by another pair kind): those would teach the model that the answer is wrong.
    """
    with extra("adapt", "hepwb adapt"):
        from sklearn.feature_extraction.text import TfidfVectorizer

    by_paper: dict[str, list[int]] = {}
    for i, p in enumerate(pairs):
        by_paper.setdefault(p.label, []).append(i)
    out = [""] * len(pairs)
    for idx in by_paper.values():
        passages = sorted({pairs[i].passage for i in idx})
        vec = TfidfVectorizer(stop_words="english").fit(passages + [pairs[i].query for i in idx])
        sims = (vec.transform([pairs[i].query for i in idx]) @ vec.transform(passages).T).toarray()
        for row, i in zip(sims, idx, strict=True):
            own, query = pairs[i].passage, pairs[i].query.lower()
            for j in np.argsort(-row):
                cand = passages[int(j)]
                if cand != own and query not in cand.lower() and not _overlaps(cand, own):
                    out[i] = cand
                    break
            else:  # no safe passage in this paper: one of another paper (any other, in a one-paper corpus)
                others = [p.passage for p in pairs if p.label != pairs[i].label] or [
                    p.passage for p in pairs if p.passage != own
                ]
                out[i] = others[0] if others else own
    return out


def heldout_scores(model: Any, pairs: list[Pair]) -> dict[str, float]:
    """MRR and accuracy@1/@5 of each held-out query's own passage among all held-out passages."""
    passages = sorted({p.passage for p in pairs})
    at = {t: i for i, t in enumerate(passages)}
    q = model.encode(
        [p.query for p in pairs], normalize_embeddings=True, convert_to_numpy=True, batch_size=32
    )
    d = model.encode(passages, normalize_embeddings=True, convert_to_numpy=True, batch_size=32)
    sims = q @ d.T
    ranks = np.array([int((sims[i] > sims[i, at[p.passage]]).sum()) + 1 for i, p in enumerate(pairs)])
    return {
        "mrr": float(np.mean(1.0 / ranks)),
        "acc@1": float(np.mean(ranks == 1)),
        "acc@5": float(np.mean(ranks <= 5)),
    }


def adapt_embedder(
    pairs: list[Pair],
    base_model: str,
    out_dir: str | Path,
    *,
    name: str,
    settings: AdaptSettings | None = None,
    progress: bool = True,
) -> ModelCard:
    """Fine-tune ``base_model`` on ``pairs`` into ``out_dir`` (see the module docstring)."""
    with extra("adapt", "hepwb adapt"):
        from datasets import Dataset
    from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
    from sentence_transformers.sentence_transformer.training_args import (
        BatchSamplers,
        SentenceTransformerTrainingArguments,
    )

    s = settings or AdaptSettings()
    t0 = time.perf_counter()
    held, train = seeded_split(pairs, s.holdout, s.seed)
    device = resolve_device(s.device)
    with quiet_transformers():  # its "Loading weights" bar
        model = SentenceTransformer(resolve_model_path(base_model), device=device)
    before = heldout_scores(model, held)
    seq_len = int(model.max_seq_length or s.max_seq_length)
    model.max_seq_length = min(seq_len, s.max_seq_length)
    columns = {"anchor": [p.query for p in train], "positive": [p.passage for p in train]}
    if s.hard_negatives:
        columns["negative"] = hard_negatives(train)
    out = Path(out_dir)
    args = SentenceTransformerTrainingArguments(
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
        batch_sampler=BatchSamplers.NO_DUPLICATES,
    )
    trainer = SentenceTransformerTrainer(
        model=model,
        args=args,
        train_dataset=Dataset.from_dict(columns),
        loss=MultipleNegativesRankingLoss(model),
    )
    show_training(trainer, f"training {name}", progress=progress)
    try:
        result = trainer.train()
    finally:
        shutil.rmtree(checkpoints_dir(out), ignore_errors=True)
    model.max_seq_length = seq_len
    after = heldout_scores(model, held)
    card = ModelCard.trained(
        name, base_model, out, pairs, held, int(result.global_step), t0, asdict(s), (before, after), device
    )
    save_model(model, card)
    return card
