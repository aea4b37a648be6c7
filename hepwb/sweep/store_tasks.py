"""The stage functions of a store-backed sweep: fetch into the worker's scratch, compute, publish.

Each mirrors its counterpart of :mod:`hepwb.sweep.tasks` and takes a :class:`~hepwb.sweep.site.StoreSite`
where that one takes the project folder; the client passes the keys of the artefacts a task reads
(``artefacts``). A worker reads nothing of the client's file system: its inputs come from the store
(:class:`~hepwb.sweep.scratch.Scratch`), its outputs go there, and the outcome it returns says how many bytes
it moved (``detail["store"]``). A cell is computed with the client's configuration, so its record carries the
client's cell key and paths (corpus, question file, chunk set folder), and a rerun of the sweep finds it.

A store that cannot be reached fails the task with a :class:`~hepwb.store.StoreError` (``error_type``), which
the client turns into one line stopping the sweep; a cell whose table failed that way says so too.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hepwb.corpus import failure_marker
from hepwb.exceptions import ConfigError
from hepwb.experiment.config import ExperimentConfig
from hepwb.experiment.keys import cell_name
from hepwb.files.io import read_json, write_json
from hepwb.index.parts import PARTS
from hepwb.paths import Layout
from hepwb.runs.record import RunRecord
from hepwb.store import StoreError, lease
from hepwb.sweep import worker
from hepwb.sweep.scratch import Scratch
from hepwb.sweep.site import StoreSite
from hepwb.sweep.tasks import Outcome, convert_keyed, run_stage
from hepwb.text.ids import config_hash
from hepwb.types import JSONObject

__all__ = ["cell_task", "chunkset_task", "convert_task", "index_task"]


def _done(out: Outcome, scratch: Scratch) -> Outcome:
    out.detail["store"] = scratch.moved()
    return out


def convert_task(
    site: StoreSite, corpus: str, max_docs: int | None, prefer_latex: bool, conversion_key: str
) -> Outcome:
    """Convert one corpus file from the store's copy of the corpus; publish the document.

    A failure's record (what the project keeps in ``data/interim/documents/.failed``) comes back in
    ``detail["failure"]`` for the client to keep.
    """
    sc = Scratch(site)
    copy: list[str] = []

    def body() -> JSONObject:
        if sc.store.has("document", conversion_key):
            return {"reused": True}
        folder = sc.corpus_folder(corpus)
        copy.append(str(folder))
        label = convert_keyed(folder, corpus, max_docs, prefer_latex, conversion_key, sc.layout)
        sc.publish_folder("document", conversion_key, sc.layout.interim / conversion_key)
        return {"label": label}

    out = run_stage("convert", conversion_key, body)
    marker = failure_marker(sc.layout, conversion_key)
    if out.ok or not marker.is_file() or out.error_type == "StoreError":
        return _done(out, sc)

    def client(text: str) -> str:  # the client's paths, not this scratch folder's
        return text.replace(copy[0], corpus).replace(sc.home, site.home) if copy else text

    out.error, out.traceback = client(out.error), client(out.traceback)
    record = {k: client(v) if isinstance(v, str) else v for k, v in read_json(marker).items()}
    write_json(marker, record)
    sc.publish_folder("failure", conversion_key, marker.parent, only=marker)  # other projects skip it too
    out.detail["failure"] = record
    return _done(out, sc)


def chunkset_task(
    site: StoreSite, config: JSONObject, inputs_key: str, chunkset_id: str, *, documents: list[str]
) -> Outcome:
    """Build the chunk set of ``config`` from the store's documents; publish it."""
    sc = Scratch(site)

    def body() -> JSONObject:
        if sc.store.has("chunkset", chunkset_id):
            return {"reused": True}
        with lease(sc.store, f"chunkset-{chunkset_id}", f"chunk set {chunkset_id}"):  # one builder at a time
            if sc.store.has("chunkset", chunkset_id):  # built by the lease's holder while this one waited
                return {"reused": True}
            local = ExperimentConfig.from_params(**sc.inputs(config, documents))
            cs = worker.chunkset(sc.home, local, inputs_key)
            if cs.chunkset_id != chunkset_id:
                msg = f"built chunk set {cs.chunkset_id}, planned {chunkset_id}: the corpus changed meanwhile"
                raise RuntimeError(msg)
            fingerprint = str(read_json(cs.root / "chunkset.json").get("fingerprint", ""))
            sc.publish_chunkset(chunkset_id, cs.root, fingerprint)
        return {"n_chunks": len(cs.chunks)}

    return _done(run_stage("chunkset", chunkset_id, body), sc)


def index_task(
    site: StoreSite,
    config: JSONObject,
    inputs_key: str,
    table: str,
    windows: bool,
    *after: Any,
    artefacts: JSONObject,
    parts: Sequence[str] = tuple(PARTS),
) -> Outcome:
    """Build the table ``table`` (and its window tables) from the store's chunk set and vectors; publish.

    ``artefacts``: the store keys of its ``documents``, ``chunkset``, ``table`` and ``windows`` (``None``
    unless ``windows``), and of its ``embeddings`` (``None`` when none were published). What is published
    already (the table, when only its windows are missing) is fetched, not built.
    """
    sc = Scratch(site)

    def body() -> JSONObject:
        local = ExperimentConfig.from_params(**sc.inputs(config, artefacts["documents"]))
        sc.chunkset(artefacts["chunkset"])
        tkey, wkey = artefacts["table"], artefacts["windows"] if windows else None
        with lease(
            sc.store, f"table-{tkey}", f"table {table}"
        ):  # one builder of an expensive table at a time
            if sc.store.has("table", tkey):  # published, maybe by the lease's holder while this one waited
                sc.table(tkey, table)
            if wkey and sc.store.has("windows", wkey):
                sc.table(wkey, table, windows=True)
            if artefacts["embeddings"]:
                sc.embeddings(artefacts["embeddings"], config["embedding_model"])
            emb = worker.embedder(config["embedding_model"])
            before = emb.n_embedded
            tbl = worker.table(sc.home, local, inputs_key, windows=windows, parts=parts)
            sc.publish_table(tkey, table, artefacts["chunkset"])  # nothing is written when it is published
            if wkey:
                sc.publish_table(wkey, table, artefacts["chunkset"], windows=True)
        return {"rows": int(tbl.count_rows()), "embedded_here": emb.n_embedded - before}

    return _done(run_stage("index", table, body), sc)


def cell_task(
    site: StoreSite,
    config: JSONObject,
    inputs_key: str,
    key: str,
    *after: Any,
    sweep_id: str | None = None,
    question_subset: list[str] | None = None,
    with_ci: bool = True,
    notebook: bool = False,
    artefacts: JSONObject,
) -> Outcome:
    """Retrieve and score one cell in the scratch project; publish its run folder (``metrics.json`` last).

    ``artefacts``: ``documents``, ``chunkset``, ``table``, ``windows`` (``None`` unless the cell reads
    windows) and ``name`` (the table's name). The run is keyed and recorded with ``config`` (the client's):
    its record names the client's question file and chunk set folder.
    """
    sc = Scratch(site)
    run_dir = sc.layout.runs / cell_name(config)

    def body() -> JSONObject:
        for dep in after:
            if isinstance(dep, Outcome) and not dep.ok:
                msg = f"{dep.stage} {dep.key} failed: {dep.error}"
                raise StoreError(msg) if dep.error_type == "StoreError" else RuntimeError(msg)
        if notebook:
            msg = "--notebooks runs cells on a shared file system: drop --store or --notebooks"
            raise ConfigError(msg)
        if not sc.store.has("run", key):
            _compute(sc, config, inputs_key, key, run_dir, sweep_id, question_subset, with_ci, artefacts)
        rec = RunRecord.load(run_dir) if (run_dir / "metrics.json").is_file() else None
        if rec is None or rec.cell_key != key:  # published meanwhile by another sweep: its record
            shutil.rmtree(run_dir, ignore_errors=True)
            sc.store.fetch("run", key, sc.layout.root, last=("metrics.json",))
            rec = RunRecord.load(run_dir)
        client = config.get("run_dir") or str(Layout(Path(site.home)).runs / cell_name(config))
        return {"run_id": rec.run_id, "run_dir": client, "summary": rec.summary, "timings": rec.timings_s}

    return _done(run_stage("cell", key, body), sc)


def _compute(
    sc: Scratch,
    config: JSONObject,
    inputs_key: str,
    key: str,
    run_dir: Any,
    sweep_id: str | None,
    question_subset: list[str] | None,
    with_ci: bool,
    artefacts: JSONObject,
) -> None:
    """Run the cell here (inputs fetched) and publish its folder, its record naming the client's paths."""
    local = ExperimentConfig.from_params(**sc.inputs(config, artefacts["documents"]))
    sc.chunkset(artefacts["chunkset"])
    sc.table(artefacts["table"], artefacts["name"])
    if artefacts.get("windows"):
        sc.table(artefacts["windows"], artefacts["name"], windows=True)
    shutil.rmtree(run_dir, ignore_errors=True)
    recorded = ExperimentConfig.from_params(**{**config, "run_dir": None})  # written here, then published
    rec = worker.cell(
        sc.home, local, inputs_key, sweep_id, question_subset, with_ci, recorded=recorded, run_dir=run_dir
    )
    if rec.cell_key != key:
        msg = (
            f"the worker's run has cell key {rec.cell_key}, the client planned {key}: the worker runs other "
            "hepwb code or reads other inputs; restart the workers from the client's environment"
        )
        raise RuntimeError(msg)
    client_inputs = rec.inputs.model_copy(
        update={"questions_file": sc.site.client_questions(config.get("questions"))}
    )
    rec = rec.model_copy(
        update={
            "config": config,
            "config_hash": config_hash(config),
            "chunkset_root": str(Layout(Path(sc.site.home)).chunksets / rec.chunkset_id),
            "inputs": client_inputs,
        }
    )
    rec.save(run_dir)
    sc.publish_folder("run", key, run_dir)
