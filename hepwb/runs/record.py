"""Typed records of one evaluation run, saved in its run folder and read back everywhere.

``metrics.json`` holds a :class:`RunRecord` (configuration and its hash, the cell and stage keys,
code fingerprints, input hashes, timings, worker, metric summary and 95 % intervals); it is written
last, after ``per_question.parquet`` and ``hits.parquet``, so a run folder with a valid record is a
finished run. A cell that failed leaves a :class:`CellFailure` in ``error.json`` instead.

Example:
    >>> import tempfile
    >>> rec = RunRecord(run_id="r", chunkset_id="c", config={"k": 5}, summary={"recall@5": 0.5})
    >>> folder = Path(tempfile.mkdtemp())
    >>> rec.save(folder)
    >>> RunRecord.load(folder).metric("recall@5")
    0.5
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from hepwb.evaluation.ragas_eval import ANSWER_METRICS
from hepwb.exceptions import ConfigError
from hepwb.files.io import atomic_write_text
from hepwb.files.readers import ReadError, read_bytes
from hepwb.text.ids import config_hash
from hepwb.types import JSONObject

__all__ = ["CellFailure", "RunInputs", "RunRecord", "run_folder"]

_RERUN = "delete the run folder and run the cell again"


class RunInputs(BaseModel):
    """What a run read: the corpus files (label → SHA-256), the question set and the quotes not located."""

    model_config = ConfigDict(extra="forbid")
    corpus_documents: dict[str, str | None] = Field(default_factory=dict)
    questions_file: str = ""
    questions_sha256: str = ""
    unlocated_evidence: list[str] = Field(default_factory=list)
    unscored: list[JSONObject] = Field(default_factory=list)
    """Every quote not located: question, evidence, document, page, quote, status, reason, pages matched."""
    question_subset: list[str] | None = None
    substitutions: list[str] = Field(default_factory=list)
    """Papers converted from another source than named (their PDF, not their LaTeX), with why."""


class RunRecord(BaseModel):
    """The outcome of one finished run (one sweep cell)."""

    model_config = ConfigDict(extra="forbid")
    FILE: ClassVar[str] = "metrics.json"

    run_id: str
    chunkset_id: str
    chunkset_root: str = ""
    hepilot_compliant: bool = False
    created: str = ""
    config: JSONObject
    config_hash: str = ""
    cell_key: str = ""
    stage_keys: dict[str, str] = Field(default_factory=dict)
    code_fingerprint: dict[str, str] = Field(default_factory=dict)
    summary: dict[str, float] = Field(default_factory=dict)
    summary_ci95: dict[str, tuple[float, float]] = Field(default_factory=dict)
    summary_n: dict[str, int] = Field(default_factory=dict)
    """The questions a metric averages where fewer than all scored ones (an answer metric: those with an
    ``answer``); every other metric averages ``summary["n_questions_evaluated"]``."""
    timings_s: dict[str, float] = Field(default_factory=dict)
    costs: dict[str, float] = Field(default_factory=dict)
    """What the configuration costs (``index_mib``, ``query_p50_ms``, ``query_p95_ms``): measured, so they
    vary from run to run, unlike ``summary``; the catalog stores them beside the metrics."""
    inputs: RunInputs = Field(default_factory=RunInputs)
    environment: JSONObject = Field(default_factory=dict)
    processing_errors: list[JSONObject] = Field(default_factory=list)
    worker: str = ""
    sweep_id: str | None = None

    def model_post_init(self, context: Any, /) -> None:
        """Fill ``config_hash`` from ``config`` (HEPilot's rule) when not given."""
        if not self.config_hash:
            self.config_hash = config_hash(self.config)

    def metric(self, name: str) -> float:
        """The summary value ``name``; the error lists the metrics there are."""
        try:
            return self.summary[name]
        except KeyError:
            msg = f"run {self.run_id} has no metric {name!r}; it has {sorted(self.summary)}"
            raise ConfigError(msg) from None

    def metric_n(self, name: str) -> int:
        """How many questions the metric ``name`` averages (its own n)."""
        return int(self.summary_n.get(name, self.summary.get("n_questions_evaluated", 0)))

    def without(self, name: str) -> str:
        """What the metric ``name`` could not use, in words ("" when it used every scored question).

        Example:
            >>> rec = RunRecord(run_id="r", chunkset_id="c", config={},
            ...     summary={"n_questions_evaluated": 8.0}, summary_n={"ragas_answer_in_context": 3})
            >>> rec.without("ragas_answer_in_context"), rec.without("hit_rate@5")
            ('5 of 8 scored questions have no answer', '')
        """
        scored = int(self.summary.get("n_questions_evaluated", 0))
        n = self.metric_n(name)
        if n >= scored:
            return ""
        why = "have no answer" if name in ANSWER_METRICS else "have no value (nothing retrieved)"
        return f"{scored - n} of {scored} scored questions {why}"

    def save(self, run_dir: str | Path) -> None:
        """Write ``metrics.json`` atomically (call it after the run's other files)."""
        atomic_write_text(Path(run_dir) / self.FILE, self.model_dump_json(indent=2) + "\n")

    @classmethod
    def load(cls, run_dir: str | Path) -> RunRecord:
        """Read a run folder's record; a missing, truncated or foreign file gets an error naming it."""
        path = Path(run_dir) / cls.FILE
        try:
            return cls.model_validate_json(read_bytes(path, "run record", fix=_RERUN))
        except ReadError as exc:
            if path.exists():
                raise
            msg = f"{path} does not exist: the run did not finish; run the cell again"
            raise ConfigError(msg) from exc
        except ValidationError as exc:
            msg = (
                f"{path} is not a hepwb run record ({exc.error_count()} problem(s), first: "
                f"{exc.errors()[0]['msg']}); delete the run folder and run the cell again"
            )
            raise ConfigError(msg) from None

    @classmethod
    def finished(cls, run_dir: str | Path, cell_key: str | None = None) -> RunRecord | None:
        """The record of a finished run in ``run_dir`` (with ``cell_key`` if given), else ``None``."""
        folder = Path(run_dir)
        if not (folder / cls.FILE).is_file():
            return None
        try:
            rec = cls.load(folder)
        except ConfigError:
            return None
        if cell_key is not None and rec.cell_key != cell_key:
            return None
        needed = ("per_question.parquet", "hits.parquet")
        return rec if all((folder / n).is_file() for n in needed) else None


class CellFailure(BaseModel):
    """Why a sweep cell failed (``error.json`` in its run folder, and a catalog row)."""

    model_config = ConfigDict(extra="forbid")
    FILE: ClassVar[str] = "error.json"

    run_id: str
    cell_key: str
    stage: str
    error: str
    error_type: str
    traceback: str
    config: JSONObject
    worker: str = ""
    created: str = ""
    sweep_id: str | None = None

    def save(self, run_dir: str | Path) -> None:
        """Write ``error.json`` and ``traceback.txt`` into the run folder."""
        folder = Path(run_dir)
        atomic_write_text(folder / self.FILE, self.model_dump_json(indent=2) + "\n")
        atomic_write_text(folder / "traceback.txt", self.traceback)

    @classmethod
    def load(cls, run_dir: str | Path) -> CellFailure:
        """Read a run folder's ``error.json``."""
        return cls.model_validate_json(
            read_bytes(Path(run_dir) / cls.FILE, "cell failure record", fix=_RERUN)
        )


def run_folder(home: str | Path, cell_key: str) -> Path:
    """Where the run of the cell ``cell_key`` lives, given its configuration's folder ``home``.

    A finished run is never overwritten. ``home`` (named after the configuration) is used when it holds this
    very cell's finished run, or no finished run at all (empty, failed or half-written). When it holds the
    finished run of *another* cell — the same configuration over a changed question file, corpus or code —
    that run stays and this one gets its own folder: ``home`` and the first 8 characters of its key.

    Example:
        >>> import tempfile
        >>> home = Path(tempfile.mkdtemp()) / "hepilot-cs512-bm25-k10-abc123"
        >>> run_folder(home, "0123456789ab") == home  # nothing there yet
        True
        >>> home.mkdir()
        >>> for name in ("per_question.parquet", "hits.parquet"):
        ...     _ = (home / name).write_text("")
        >>> RunRecord(run_id="old", chunkset_id="c", config={}, cell_key="ffffffff").save(home)
        >>> run_folder(home, "ffffffff") == home  # its own finished run: read back
        True
        >>> run_folder(home, "0123456789ab").name  # another cell's finished run stays
        'hepilot-cs512-bm25-k10-abc123-01234567'
    """
    home = Path(home)
    own = home.with_name(f"{home.name}-{cell_key[:8]}")
    for folder in (home, own):
        if RunRecord.finished(folder, cell_key) is not None:
            return folder
    return home if RunRecord.finished(home) is None else own
