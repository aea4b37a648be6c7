"""The client's side of a store-backed sweep: what it publishes, what it counts as done, what it fetches.

With ``run_sweep(store=URL)`` the client plans as usual, then :class:`StoreSweep`:

* counts as done what the store holds (documents, chunk sets, tables, window tables and finished runs,
  one listing per kind), and fetches the finished runs this project does not have yet, so a warm rerun
  recomputes nothing and a sweep whose client was killed resumes with every cell its workers published;
* publishes the inputs the workers read (each corpus folder as one artefact keyed by its files' contents,
  each question file, and documents converted on this disk but missing from the store) and hands the tasks
  a :class:`~hepwb.sweep.site.StoreSite`;
* embeds on the workers as before, but publishes the vectors of each table to build as one file
  (:class:`TableVectors`) instead of writing the project's embedding cache;
* fetches each finished run into its run folder (then its chunk set, for the catalog) and writes the run's
  failure when a cell fails: the client alone writes the DuckDB catalog and the report;
* stops the sweep with the store's one-line message when any task could not reach the store.
"""

from __future__ import annotations

import contextlib
import shutil
import tarfile
import tempfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from hepwb.acquisition.folder import corpus_files, label_of, load_sidecar, resolve_corpus
from hepwb.corpus import failure_marker
from hepwb.experiment.config import ExperimentConfig
from hepwb.experiment.notebook import write_rerun_files
from hepwb.experiment.stages import needs_windows, questions_path
from hepwb.files.io import discard_folder, read_json
from hepwb.index.parts import PARTS
from hepwb.index.windows import windows_key
from hepwb.paths import Layout
from hepwb.runs.record import RunRecord
from hepwb.store import ArtefactStore, StoreError, store_problem
from hepwb.store.manifest import REBUILD, manifest_rel
from hepwb.sweep.plan import CellPlan, ChunkSetPlan, IndexPlan, SweepPlan, plan_cells
from hepwb.sweep.scratch import HEPILOT_TAR, files_under, write_vectors
from hepwb.sweep.site import StoreSite, embeddings_key, entry, table_key
from hepwb.sweep.tasks import Outcome, record_cell_failure
from hepwb.text.ids import file_sha256, short_hash
from hepwb.types import JSONObject

__all__ = ["StoreSweep", "TableVectors", "corpus_bundle"]


def corpus_bundle(folder: Path) -> tuple[dict[str, Path], str]:
    """The files a copy of the corpus ``folder`` needs, by path inside the copy, and the folder's path there.

    Every paper of the folder (a question may name one outside a ``max_docs`` subset), its ``papers.json``
    (beside the folder or above it) and the LaTeX sources that file names for its papers.
    """
    folder = folder.resolve()
    sidecar = next((c for c in (folder / "papers.json", folder.parent / "papers.json") if c.is_file()), None)
    base = sidecar.parent if sidecar is not None else folder
    sub = "" if base == folder else folder.relative_to(base).as_posix()
    papers = corpus_files(folder)
    files = {f"{sub}/{p.name}" if sub else p.name: p for p in papers}
    if sidecar is not None:
        files["papers.json"] = sidecar
        meta = load_sidecar(folder)
        for p in papers:
            tex = (meta.get(p.name) or meta.get(label_of(p)) or {}).get("tex_dir")
            if tex and Path(tex).is_dir() and Path(tex).is_relative_to(base):
                for f in sorted(Path(tex).rglob("*")):
                    if f.is_file() and not f.is_symlink():
                        files[f.relative_to(base).as_posix()] = f
    return files, sub


class TableVectors:
    """The vectors of the tables to build, published as one file per table once embedded.

    It stands where a local sweep writes its embedding cache (:class:`~hepwb.index.cache.EmbeddingCache`):
    the embedding loop asks it which texts are :meth:`missing` and :meth:`add` s what the workers return.
    """

    def __init__(self, sweep: StoreSweep, needs: dict[str, list[str]]) -> None:
        self.sweep = sweep
        self.needs = needs
        self.vectors: dict[str, Any] = {}

    def missing(self, keys: list[str]) -> list[str]:
        """The ``keys`` some table to build needs, sorted and without repeats."""
        wanted = set().union(*self.needs.values()) if self.needs else set()
        return sorted(set(keys) & wanted)

    def add(self, vectors: dict[str, Any]) -> None:
        """Keep ``vectors`` until :meth:`close`."""
        self.vectors.update(vectors)

    def close(self) -> None:
        """Publish each table's vectors (those embedded: the table build embeds any batch that failed)."""
        with self.sweep.counting("embed"), tempfile.TemporaryDirectory() as tmp:
            for key, keys in sorted(self.needs.items()):
                have = {k: self.vectors[k] for k in keys if k in self.vectors}
                rel = f"data/processed/embeddings/{key}.parquet"
                self.sweep.store.publish("embeddings", key, {rel: write_vectors(Path(tmp) / rel, have)})
                self.sweep.vectors_published.add(key)


class StoreSweep:
    """The client's side of a store-backed sweep of the project ``layout`` (see the module docstring)."""

    def __init__(self, url: str, layout: Layout) -> None:
        self.url = url
        self.layout = layout
        self.store = ArtefactStore(url)
        if self.store.protocol == "file":  # made here: the workers' check asks them to see it
            try:
                Path(self.store.root).mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                msg = (
                    f"the artefact store {url} cannot be used: its folder cannot be made "
                    f"({exc.strerror or type(exc).__name__}); give a file:// URL of a folder you can write, "
                    "or drop --store"
                )
                raise StoreError(msg) from None
        elif problem := store_problem(url):  # one short look first: a silent endpoint is named in seconds
            msg = (
                f"the artefact store {url} cannot be used ({problem}); check the URL, AWS_ENDPOINT_URL and "
                "the credentials (AWS_ACCESS_KEY_ID/AWS_PROFILE), or drop --store"
            )
            raise StoreError(msg)
        self.site: StoreSite | None = None
        self.moved: dict[str, dict[str, int]] = {}
        """Bytes sent and received per stage: the client's own (``plan``, ``inputs``, ``embed``, ``fetch``)
        and its workers' (``convert``, ``chunkset``, ``index``, ``cell``)."""
        self.vectors_published: set[str] = set()
        self._bundles: dict[str, tuple[str, str]] = {}

    @contextlib.contextmanager
    def counting(self, stage: str) -> Iterator[None]:
        """Count the client's bytes moved in the block under ``stage``."""
        sent, received = self.store.sent, self.store.received
        try:
            yield
        finally:
            self._add(stage, self.store.sent - sent, self.store.received - received)

    def _add(self, stage: str, sent: int, received: int) -> None:
        row = self.moved.setdefault(stage, {"sent": 0, "received": 0})
        row["sent"] += sent
        row["received"] += received

    def check(self, outcome: Outcome) -> Outcome:
        """Count a task's bytes; stop the sweep (:class:`StoreError`) when it could not use the store."""
        moved = outcome.detail.get("store") or {}
        self._add(outcome.stage, int(moved.get("sent", 0)), int(moved.get("received", 0)))
        if outcome.error_type == "StoreError":
            raise StoreError(outcome.error)
        return outcome

    # -- planning ---------------------------------------------------------------------------------
    def plan(self, cells: list[ExperimentConfig], sweep_id: str, *, notebooks: bool = False) -> SweepPlan:
        """:func:`~hepwb.sweep.plan.plan_cells` with the store's failed conversions known and its stages done.

        A conversion that failed for another project of this store is remembered here too (its record is
        fetched into ``data/interim/documents/.failed``), so its file is left out as it is there.
        """
        plan = plan_cells(cells, self.layout, sweep_id=sweep_id, notebooks=notebooks)
        with self.counting("plan"):
            keys = {f.conversion_key for cp in plan.corpora.values() for f in cp.files}
            failed = sorted(keys & self.store.published("failure"))
            for key in failed:
                self.store.fetch("failure", key, self.layout.root)
        if failed:
            plan = plan_cells(cells, self.layout, sweep_id=sweep_id, notebooks=notebooks)
        self.attach(plan)
        return plan

    def attach(self, plan: SweepPlan) -> None:
        """Count what the store holds as done in ``plan`` (fetching finished runs this project lacks)."""
        with self.counting("plan"):
            plan.converted = self.store.published("document")
            chunksets = self.store.published("chunkset")
            tables, windows = self.store.published("table"), self.store.published("windows")
            self.vectors_published = self.store.published("embeddings")
            runs = self.store.published("run") if any(not c.done for c in plan.cells) else set()
        for cs in plan.chunksets.values():
            cs.done = cs.chunkset_id in chunksets
        for ix in plan.indexes.values():
            ix.table_done = table_key(ix.chunkset_id, ix.key) in tables
            # the store holds whole tables: each is built and published with its vectors
            ix.parts = PARTS
            ix.present = PARTS if ix.table_done else frozenset()
            ix.windows_done = table_key(ix.chunkset_id, windows_key(ix.chunkset_id, ix.model)) in windows
        for c in plan.cells:
            if c.record is None and c.key in runs:  # published by a worker, not fetched by its client
                self.fetch_run(plan, c)
                c.record = RunRecord.finished(c.run_dir, c.key)
        if self.site is not None:
            self.site = replace(self.site, failed=self._failed(plan))
        plan.store = self

    def _failed(self, plan: SweepPlan) -> tuple[tuple[str, JSONObject], ...]:
        keys = sorted({f.conversion_key for cp in plan.corpora.values() for f in cp.failed})
        return tuple((k, read_json(failure_marker(self.layout, k))) for k in keys)

    def publish_inputs(self, plan: SweepPlan) -> None:
        """Publish the corpora, question files and local documents the workers will read; set :attr:`site`."""
        corpora: dict[str, tuple[str, str]] = {}
        questions: dict[str, tuple[str, str]] = {}
        paths: dict[str, str] = {}
        with self.counting("inputs"):
            for c in plan.cells:
                folder = str(resolve_corpus(c.config.corpus).resolve())
                corpora[entry(c.config.corpus)] = corpora[folder] = self._bundle(folder)
                value = entry(c.config.questions)
                if value not in questions:
                    qpath = questions_path(c.config.questions).resolve()
                    self.store.publish("questions", c.questions_sha256, {qpath.name: qpath})
                    questions[value], paths[value] = (c.questions_sha256, qpath.name), str(qpath)
            done = plan.converted if plan.converted is not None else set()
            for cp in plan.corpora.values():
                for f in cp.files:
                    local = self.layout.interim / f.conversion_key
                    if f.conversion_key not in done and (local / "document.json").is_file():
                        self.store.publish("document", f.conversion_key, files_under(self.layout.root, local))
                        done.add(f.conversion_key)
            plan.converted = done
        self.site = StoreSite(
            self.url,
            str(self.layout.root),
            tuple((k, *v) for k, v in corpora.items()),
            tuple((k, *v) for k, v in questions.items()),
            tuple(paths.items()),
            self._failed(plan),
        )

    def _bundle(self, folder: str) -> tuple[str, str]:
        if folder not in self._bundles:
            files, sub = corpus_bundle(Path(folder))
            key = short_hash(sorted((rel, file_sha256(p)) for rel, p in files.items()), 16)
            self.store.publish("corpus", key, files)
            self._bundles[folder] = (key, sub)
        return self._bundles[folder]

    # -- what tasks are given -----------------------------------------------------------------------
    def index_artefacts(self, plan: SweepPlan, ix: IndexPlan) -> JSONObject:
        """The store keys an index task reads and writes."""
        ekey = embeddings_key(ix.chunkset_id, ix.key, ix.windows)
        wkey = table_key(ix.chunkset_id, windows_key(ix.chunkset_id, ix.model))
        return {
            "documents": [f.conversion_key for f in plan.chunksets[ix.chunkset_id].corpus.files],
            "chunkset": ix.chunkset_id,
            "table": table_key(ix.chunkset_id, ix.key),
            "windows": wkey if ix.windows else None,
            "embeddings": ekey if ekey in self.vectors_published else None,
        }

    def cell_artefacts(self, plan: SweepPlan, c: CellPlan) -> JSONObject:
        """The store keys a cell task reads."""
        ix = plan.indexes[c.index]
        art = self.index_artefacts(plan, ix)
        wkey = table_key(ix.chunkset_id, windows_key(ix.chunkset_id, ix.model))
        return {**art, "windows": wkey if needs_windows(c.config) else None, "name": ix.name}

    def vectors(self, plan: SweepPlan, tables: list[IndexPlan], keys: dict[str, list[str]]) -> TableVectors:
        """Where the vectors of ``tables`` go (``keys``: their text hashes, by chunk set; ``+w``: windows)."""
        needs = {}
        for ix in tables:
            ekey = embeddings_key(ix.chunkset_id, ix.key, ix.windows)
            if ekey not in self.vectors_published:
                needs[ekey] = keys[ix.chunkset_id] + (keys[ix.chunkset_id + "+w"] if ix.windows else [])
        return TableVectors(self, needs)

    # -- fetching ---------------------------------------------------------------------------------
    def fetch_chunkset(self, cs: ChunkSetPlan) -> None:
        """Bring the chunk set ``cs`` (its HEPilot tree too) into this project unless it is here."""
        final = self.layout.chunksets / cs.chunkset_id
        manifest = final / "chunkset.json"
        if manifest.is_file() and (final / "chunks.parquet").is_file():
            with contextlib.suppress(ValueError, OSError):
                if read_json(manifest).get("fingerprint") == cs.key:
                    return
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=final.parent, prefix=f".{cs.chunkset_id}.fetch-"))
        try:
            with self.counting("fetch"):
                self._need(self.store.fetch("chunkset", cs.chunkset_id, tmp, last=("chunkset.json",)), cs.key)
            built = tmp / final.relative_to(self.layout.root)
            self._placed("chunkset", cs.chunkset_id, built, ("chunkset.json", "chunks.parquet", HEPILOT_TAR))
            with tarfile.open(built / HEPILOT_TAR) as tar:
                tar.extractall(built, filter="data")
            (built / HEPILOT_TAR).unlink()
            if final.exists():
                discard_folder(final)
            built.replace(final)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def fetch_run(self, plan: SweepPlan, c: CellPlan) -> None:
        """Bring the finished run of ``c`` into its run folder (replacing what is there) and its chunk set."""
        c.run_dir.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=c.run_dir.parent, prefix=f".{c.run_dir.name}.fetch-"))
        try:
            with self.counting("fetch"):
                self._need(self.store.fetch("run", c.key, tmp, last=(RunRecord.FILE,)), c.key)
            fetched = tmp / self.layout.runs.relative_to(self.layout.root) / c.name
            self._placed("run", c.key, fetched, (RunRecord.FILE, "per_question.parquet", "hits.parquet"))
            if c.run_dir.exists():  # only now: a manifest that does not hold the run replaces nothing
                discard_folder(c.run_dir)
            fetched.replace(c.run_dir)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        write_rerun_files(c.run_dir, c.config.to_dict(), self.layout)  # this project's paths
        self.fetch_chunkset(plan.chunksets[c.chunkset_id])

    def _placed(self, kind: str, key: str, folder: Path, files: tuple[str, ...]) -> None:
        """Check that the artefact fetched holds its folder ``folder`` with ``files``.

        What its manifest lists is inside its artefact's folder, but may not be this artefact (another run's
        files, or nothing at all).
        """
        missing = next((f for f in files if not (folder / f).is_file()), None)
        if missing is not None:
            msg = (
                f"the manifest {manifest_rel(kind, key)} in the store {self.url} does not hold "
                f"{folder.name}/{missing}: nothing of it was placed; {REBUILD}"
            )
            raise StoreError(msg)

    def _need(self, body: JSONObject | None, key: str) -> None:
        if body is None:
            msg = (
                f"artefact {key} is gone from the store {self.url} (deleted mid-sweep?): run the sweep again"
            )
            raise StoreError(msg)

    def finish_cell(self, plan: SweepPlan, c: CellPlan, outcome: Outcome) -> None:
        """A cell's outcome: its run fetched into this project, or its failure written in its run folder."""
        self.check(outcome)
        if outcome.ok:
            self.fetch_run(plan, c)
            outcome.detail["run_dir"] = str(c.run_dir)  # this project's folder of the run (the plan's)
        else:
            record_cell_failure(outcome, c.config.to_dict(), c.run_dir, plan.sweep_id)
