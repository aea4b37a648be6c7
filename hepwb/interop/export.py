"""Export hepwb runs (one run, or every run of a sweep) as TREC or BEIR files, with hepwb's judgements.

``--format trec`` writes into ``DIR``:

* ``runs/<run>.trec``: one line per retrieved chunk (docno = chunk id, the run's own order and scores);
* ``runs/<run>.paper.trec``: the papers in order of first appearance (docno = paper label);
* ``qrels/chunk-<chunk set>.txt`` and ``qrels/paper.txt``: the judgements of
  :mod:`hepwb.interop.judgements` (chunk level for each chunk set, paper level once);
* ``topics.tsv``: every question, ``qid<TAB>text``;
* ``manifest.json``: which qrels go with which run, the relevance rule, and hepwb's own values of the
  measures these files reproduce (``chunk_…``, ``doc_…``, ``hit_rate@k``).

``--format beir`` writes the chunk set as a BEIR corpus (``corpus.jsonl``: chunk id, paper title, chunk
text, and the paper label and offsets under ``metadata``), ``queries.jsonl``, ``qrels/test.tsv`` (chunk
level) and the runs (``runs/<run>.trec``): into ``DIR`` for one chunk set, ``DIR/<chunk set>/`` for several.

Every file is rebuilt from the run folder, the question file and hepwb's caches of converted papers and
chunk sets, and checked against the run: a question file or chunk set that changed since is refused, and so
is a damaged ``hits.parquet`` (:mod:`hepwb.runs.folder`). A failed export leaves ``DIR`` as it was.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from hepwb import __version__
from hepwb.catalog import Catalog
from hepwb.chunking.chunksets import ChunkSet, saved_chunkset
from hepwb.exceptions import ConfigError
from hepwb.experiment.config import ExperimentConfig
from hepwb.experiment.stages import EvalInputs, load_inputs
from hepwb.files.io import read_json_object, write_json
from hepwb.files.publish import pid_alive
from hepwb.interop.beir import write_beir
from hepwb.interop.judgements import RELEVANCE_RULE, Judgements, question_judgements
from hepwb.interop.trec import write_qrels, write_run, write_topics
from hepwb.paths import Layout
from hepwb.runs.folder import read_hits
from hepwb.runs.record import RunRecord
from hepwb.text.ids import short_hash
from hepwb.text.names import is_plain_name
from hepwb.text.plaintext import plain
from hepwb.types import JSONObject

__all__ = ["Exported", "export_runs", "resolve_runs", "scored_config"]

Format = Literal["trec", "beir"]
_INPUT_KEYS = ("corpus", "questions", "max_docs", "prefer_latex", "accept_unscored")
_REPRODUCED = ("chunk_", "doc_", "hit_rate@")


@dataclass
class Exported:
    """What :func:`export_runs` wrote."""

    folder: Path
    format: str
    runs: list[str] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)

    def summary(self) -> str:
        """One line: how many runs and files, and where."""
        return (
            f"exported {len(self.runs)} run(s) as {self.format} ({len(self.files)} files) into "
            f"{plain(str(self.folder))}"
        )


def resolve_runs(name: str, layout: Layout | None = None) -> list[Path]:
    """The run folders ``name`` names: a run folder, a run folder's name, a run id, a sweep id or ``latest``.

    Raises:
        ConfigError: Nothing of that name, naming where runs and sweeps are listed.
    """
    layout = layout or Layout.default()
    path = Path(name)
    if (path / RunRecord.FILE).is_file():
        return [path]
    if is_plain_name(name) and (layout.runs / name / RunRecord.FILE).is_file():
        return [layout.runs / name]
    if layout.catalog.is_file():
        cat = Catalog(layout.catalog)
        row = cat.sql("SELECT run_dir FROM runs WHERE run_id = ? AND status = 'ok'", [name])
        if not row.empty:
            return [Path(str(row["run_dir"].iloc[0]))]
        sweep = cat.latest_sweep() if name == "latest" else name
        rows = cat.sql(
            "SELECT r.run_dir FROM runs r JOIN sweep_cells s USING (run_id) WHERE s.sweep_id = ? "
            "AND r.status = 'ok' ORDER BY r.run_id",
            [sweep],
        )
        if not rows.empty:
            return [Path(str(d)) for d in rows["run_dir"]]
    msg = (
        f"{name!r} is no run folder, run id or sweep id here (runs: {layout.runs}); "
        '`hepwb sql "SELECT run_id, sweep_id FROM runs"` lists them'
    )
    raise ConfigError(msg)


def scored_config(record: RunRecord) -> ExperimentConfig:
    """The configuration whose corpus, questions and chunk set a run was scored on (its retriever aside)."""
    given = dict(record.config.get("scored_config") or record.config)
    params = {k: v for k, v in given.items() if k in ExperimentConfig.model_fields and k != "run_dir"}
    return ExperimentConfig.from_params(**{**params, "retriever": "bm25", "retriever_options": {}})


class _Judged:
    """Judgements per corpus × question set (× chunk set), each computed once for all the runs exported."""

    def __init__(self, layout: Layout, progress: bool) -> None:
        self.layout, self.progress = layout, progress
        self.inputs: dict[str, EvalInputs] = {}
        self.judged: dict[str, Judgements] = {}

    def of(self, record: RunRecord, run_dir: Path) -> tuple[str, Judgements]:
        cfg = scored_config(record)
        chunk = record.config.get("level", "chunk") == "chunk"
        given = cfg.to_dict()
        ikey = short_hash({k: given.get(k) for k in _INPUT_KEYS}, 8)
        if ikey not in self.inputs:
            self.inputs[ikey] = load_inputs(cfg, self.layout, progress=self.progress)
        inputs = self.inputs[ikey]
        if record.inputs.questions_sha256 and record.inputs.questions_sha256 != inputs.questions_sha256:
            msg = (
                f"run {run_dir.name}: its question file {inputs.questions_path} changed since it ran; run it "
                "again (`bash rerun.sh` in its folder), then export"
            )
            raise ConfigError(msg)
        ckey = short_hash({"in": ikey, "cs": record.chunkset_id if chunk else None, "cov": cfg.min_coverage})
        if ckey not in self.judged:
            saved = Path(record.chunkset_root)
            cs = None
            if chunk and record.chunkset_root and (saved / "chunkset.json").is_file():
                cs = saved_chunkset(saved, inputs.documents)  # the very chunks the run searched
            self.judged[ckey] = question_judgements(
                cfg, layout=self.layout, chunks=chunk, inputs=inputs, chunkset=cs, progress=self.progress
            )
        judged = self.judged[ckey]
        if judged.chunkset is not None and judged.chunkset.chunkset_id != record.chunkset_id:
            msg = (
                f"run {run_dir.name} searched chunk set {record.chunkset_id}, which is gone; its "
                f"configuration builds {judged.chunkset.chunkset_id} now (hepwb's code changed): run it "
                "again, then export"
            )
            raise ConfigError(msg)
        return ikey, judged


_Ranking = dict[str, list[tuple[str, float]]]


def _rankings(run_dir: Path) -> tuple[_Ranking, _Ranking]:
    """The run's chunk ranking and paper ranking (first appearance) per question, best first.

    Raises:
        DamagedRunError: ``hits.parquet`` is damaged (no Parquet file, a column missing or of another type,
            values hepwb never writes: :func:`~hepwb.runs.folder.read_hits`), naming it and the
            command that rebuilds the run.
    """
    hits = read_hits(run_dir, then=", then export")
    chunks: dict[str, list[tuple[str, float]]] = {}
    papers: dict[str, list[tuple[str, float]]] = {}
    for qid, group in hits.sort_values(["qid", "rank"], kind="stable").groupby("qid", sort=False):
        chunks[str(qid)] = [
            (str(c), float(s)) for c, s in zip(group["chunk_id"], group["score"], strict=True)
        ]
        seen: dict[str, float] = {}
        for label, s in zip(group["label"], group["score"], strict=True):
            seen.setdefault(str(label), float(s))
        papers[str(qid)] = list(seen.items())
    return chunks, papers


def _name(run_dir: Path) -> str:
    return run_dir.name if is_plain_name(run_dir.name) else f"run-{short_hash(str(run_dir), 8)}"


def _corpus_rows(cs: ChunkSet) -> Iterator[JSONObject]:
    """The chunk set as BEIR corpus rows: chunk id, paper title, text; paper label and offsets as metadata."""
    for c in cs.chunks:
        doc = cs.documents[c.document_id]
        meta = {"paper": doc.label, "start": c.start, "end": c.end, "pages": list(c.pages)}
        yield {"_id": c.chunk_id, "title": doc.title, "text": c.text, "metadata": meta}


def export_runs(
    runs: Sequence[str | Path],
    out: str | Path,
    fmt: Format = "trec",
    *,
    layout: Layout | None = None,
    progress: bool = True,
) -> Exported:
    """Write the runs in ``runs`` (run folders) with their judgements as ``fmt`` files into ``out``.

    Raises:
        ConfigError: An unknown format, a folder that holds no finished run, a damaged ``hits.parquet``, a
            question file or chunk set changed since a run, or a paper-level run asked for as BEIR (it has
            no chunk set). Nothing is written then: the files are written into a hidden folder beside
            ``out`` and moved into place once all are written.
    """
    if fmt not in ("trec", "beir"):
        msg = f"format {fmt!r}: choose trec or beir"
        raise ConfigError(msg)
    layout = layout or Layout.default()
    out = Path(out)
    if out.exists() and not out.is_dir():
        msg = f"{out} is not a folder; give a new folder (or an existing one) to export into"
        raise ConfigError(msg)
    judged = _Judged(layout, progress)
    done = Exported(out, fmt)
    entries: list[tuple[Path, RunRecord, str, Judgements]] = []
    ranked: dict[Path, tuple[_Ranking, _Ranking]] = {}
    for run in runs:
        run_dir = Path(run)
        record = RunRecord.finished(run_dir)
        if record is None:
            msg = f"{run_dir} holds no finished run (metrics.json, per_question.parquet, hits.parquet)"
            raise ConfigError(msg)
        ranked[run_dir] = _rankings(run_dir)  # a damaged run is refused before any work
        ikey, j = judged.of(record, run_dir)
        if fmt == "beir" and j.chunkset is None:
            msg = (
                f"run {run_dir.name} is scored at paper level: it has no chunk set to write as a BEIR "
                "corpus; use --format trec"
            )
            raise ConfigError(msg)
        entries.append((run_dir, record, ikey, j))
    writer = _write_trec if fmt == "trec" else _write_beir
    staging = _staging(out)
    try:  # written aside and moved into place at the end: a failed export leaves OUT as it was
        writer(entries, staging, done, ranked)
        done.files = [out / f.relative_to(staging) for f in done.files]
        _publish(staging, out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return done


def _staging(out: Path) -> Path:
    """A new hidden folder to write the export into: beside ``out``, or inside it when it exists already."""
    out = out.absolute()
    if out.is_symlink() and not out.exists():
        msg = f"export folder {plain(str(out))} is a link to nothing; give a folder (or a new name)"
        raise ConfigError(msg)
    parent = out if out.is_dir() else out.parent
    staging = parent / f".{out.name or 'export'}.partial-{os.getpid()}-{secrets.token_hex(4)}"
    try:
        parent.mkdir(parents=True, exist_ok=True)
        _clean_stale(parent, out.name or "export")
        staging.mkdir()
    except OSError as exc:
        msg = (
            f"export folder {plain(str(out))} cannot be written ({exc.strerror or type(exc).__name__}); "
            "give a folder you can write"
        )
        raise ConfigError(msg) from None
    return staging


def _publish(staging: Path, out: Path) -> None:
    """Move the files written into ``staging`` to ``out``: the whole folder when new, else file by file.

    Into an existing folder the manifests go last and the old ones first: a reader (who starts from a
    ``manifest.json``) finds the old export whole, or none while the files move, or the new one whole; a
    kill in between leaves no manifest naming a mix of runs (run the export again). Once the new export is
    whole, the files the old manifest listed that the new one does not write are removed.
    """
    if not out.exists():
        staging.rename(out)
        return
    files = sorted(p for p in staging.rglob("*") if p.is_file())
    manifests = [p for p in files if p.name == "manifest.json"]
    before = _listed(out)  # the earlier export's files: those the new one does not write go once it is whole
    for path in manifests:
        (out / path.relative_to(staging)).unlink(missing_ok=True)
    for path in [p for p in files if p.name != "manifest.json"] + manifests:
        dest = out / path.relative_to(staging)
        dest.parent.mkdir(parents=True, exist_ok=True)
        path.replace(dest)
    for rel in before - {p.relative_to(staging).as_posix() for p in files}:
        (out / rel).unlink(missing_ok=True)


def _listed(out: Path) -> set[str]:
    """The files the export manifest in ``out`` lists (paths inside ``out``; none when it is unreadable)."""
    try:
        runs = read_json_object(out / "manifest.json", "export manifest").get("runs")
    except (ConfigError, OSError):
        return set()
    listed: set[str] = set()
    for run in runs if isinstance(runs, list) else []:
        files = run.get("files") if isinstance(run, dict) else None
        if isinstance(files, dict):
            listed |= {rel for rel in files.values() if isinstance(rel, str) and _inside(rel)}
    return listed


def _inside(rel: str) -> bool:
    """Whether ``rel`` is a plain relative path (no ``..``, not absolute): a file of the export folder."""
    parts = rel.split("/")
    return bool(rel) and not rel.startswith("/") and all(p not in ("", ".", "..") for p in parts)


def _clean_stale(parent: Path, name: str) -> None:
    """Remove the hidden staging folders of exports to ``name`` whose process is gone (killed mid-export)."""
    stale = re.compile(rf"\.{re.escape(name)}\.partial-(\d+)-[0-9a-f]{{8}}")
    for path in parent.iterdir() if parent.is_dir() else ():
        found = stale.fullmatch(path.name)
        if found and not pid_alive(int(found.group(1))) and path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)


def _manifest_run(run_dir: Path, record: RunRecord, files: JSONObject) -> JSONObject:
    return {
        "run": _name(run_dir),
        "run_id": record.run_id,
        "chunkset_id": record.chunkset_id or None,
        "k": record.config.get("k"),
        "files": files,
        "hepwb_metrics": {m: v for m, v in record.summary.items() if m.startswith(_REPRODUCED)},
        "questions_scored": record.summary.get("n_questions_evaluated"),
    }


def _manifest(fmt: str, entries: Sequence[tuple[Path, RunRecord, str, Judgements]]) -> JSONObject:
    first = entries[0][3] if entries else None
    return {
        "hepwb": __version__,
        "format": fmt,
        "relevance": RELEVANCE_RULE,
        "min_coverage": sorted({j.min_coverage for *_, j in entries}),
        "questions_file": str(first.inputs.questions_path) if first else None,
        "note": "questions a run retrieved nothing for have no run lines: hepwb scores them 0, trec_eval "
        "leaves them out of its means unless asked to average over the qrels' queries",
        "runs": [],
    }


def _write_trec(
    entries: Sequence[tuple[Path, RunRecord, str, Judgements]],
    out: Path,
    done: Exported,
    ranked: dict[Path, tuple[_Ranking, _Ranking]],
) -> None:
    several = len({ikey for _, _, ikey, _ in entries}) > 1
    manifest = _manifest("trec", entries)
    written: set[Path] = set()
    for run_dir, record, ikey, j in entries:
        suffix = f"-{ikey}" if several else ""
        topics, paper = out / f"topics{suffix}.tsv", out / "qrels" / f"paper{suffix}.txt"
        if topics not in written:
            write_topics(topics, j.topics)
            write_qrels(paper, j.paper)
            written |= {topics, paper}
        files: JSONObject = {"topics": _rel(topics, out), "qrels_paper": _rel(paper, out)}
        chunks, papers = ranked[run_dir]
        name = _name(run_dir)
        if j.chunkset is not None:
            qrels = out / "qrels" / f"chunk-{j.chunkset.chunkset_id}.txt"
            if qrels not in written:
                write_qrels(qrels, j.chunk)
                written.add(qrels)
            run_file = out / "runs" / f"{name}.trec"
            write_run(run_file, chunks, name)
            files |= {"qrels_chunk": _rel(qrels, out), "run": _rel(run_file, out)}
            written.add(run_file)
        paper_run = out / "runs" / f"{name}.paper.trec"
        write_run(paper_run, papers, name)
        written.add(paper_run)
        files["paper_run"] = _rel(paper_run, out)
        manifest["runs"].append(_manifest_run(run_dir, record, files))
        done.runs.append(name)
    write_json(out / "manifest.json", manifest)
    done.files = sorted(written | {out / "manifest.json"})


def _write_beir(
    entries: Sequence[tuple[Path, RunRecord, str, Judgements]],
    out: Path,
    done: Exported,
    ranked: dict[Path, tuple[_Ranking, _Ranking]],
) -> None:
    sets = {j.chunkset.chunkset_id for *_, j in entries if j.chunkset is not None}
    for cs_id in sorted(sets):
        mine = [e for e in entries if e[3].chunkset is not None and e[3].chunkset.chunkset_id == cs_id]
        folder = out / cs_id if len(sets) > 1 else out
        j = mine[0][3]
        if j.chunkset is None:  # pragma: no cover  (the entries were chosen by their chunk set)
            continue
        queries = ({"_id": q, "text": text} for q, text in j.topics.items())
        write_beir(folder, _corpus_rows(j.chunkset), queries, j.chunk)
        done.files += [folder / "corpus.jsonl", folder / "queries.jsonl", folder / "qrels" / "test.tsv"]
        manifest = _manifest("beir", mine)
        manifest["chunkset_id"] = cs_id
        for run_dir, record, _, _ in mine:
            name = _name(run_dir)
            run_file = folder / "runs" / f"{name}.trec"
            write_run(run_file, ranked[run_dir][0], name)
            done.files.append(run_file)
            done.runs.append(name)
            files = {"corpus": "corpus.jsonl", "queries": "queries.jsonl", "qrels_chunk": "qrels/test.tsv"}
            manifest["runs"].append(_manifest_run(run_dir, record, {**files, "run": _rel(run_file, folder)}))
        write_json(folder / "manifest.json", manifest)
        done.files.append(folder / "manifest.json")


def _rel(path: Path, base: Path) -> str:
    return path.relative_to(base).as_posix()
