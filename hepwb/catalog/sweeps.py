"""Sweep-level catalog tables and the read side of the catalog (what the report asks).

``sweeps`` (one row per sweep and its specification), ``sweep_cells`` (which run answers which cell
of which sweep: a cell reused from an earlier sweep belongs to both), ``stage_runs`` (every stage a
sweep computed or reused: key, wall time, worker).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hepwb import defaults
from hepwb.components.callspec import call_string
from hepwb.evaluation.evidence import unscored_frame
from hepwb.evaluation.stats import SMALL_N, mean_ci
from hepwb.experiment.config import DIMENSIONS
from hepwb.hepilot.log import utc_now
from hepwb.index.chunk_store import table_name
from hepwb.runs.folder import DamagedRunError
from hepwb.runs.record import RunRecord
from hepwb.types import JSONObject

_log = logging.getLogger("hepwb.catalog")

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["CONFIG_COLUMNS", "SweepCatalogMixin", "option_label"]

CONFIG_COLUMNS = DIMENSIONS
"""Configuration columns of :meth:`SweepCatalogMixin.metrics_wide` (the sweep dimensions)."""


def option_label(name: str, options: JSONObject | None) -> str:
    """``"hybrid_linear(weight=0.5)"`` for a component with options, else its name.

    Example:
        >>> option_label("hybrid_linear", {"weight": 0.5}), option_label("bm25", {})
        ('hybrid_linear(weight=0.5)', 'bm25')
    """
    return call_string(name, options or {})


class SweepCatalogMixin:
    """Methods of :class:`~hepwb.catalog.base.Catalog` for sweeps and reports."""

    def sql(self, query: str, params: list[Any] | None = None, *, lancedb: Any = None) -> pd.DataFrame:
        """Run ``query`` (provided by :class:`~hepwb.catalog.base.Catalog`)."""
        raise NotImplementedError

    def _connect(self) -> Any:
        raise NotImplementedError  # provided by Catalog

    def record_run(self, run_dir: str | Path) -> str:
        """Record a run folder (provided by :class:`~hepwb.catalog.base.Catalog`)."""
        raise NotImplementedError

    # -- writing -----------------------------------------------------------------------------------
    def record_sweep(self, sweep_id: str, params: JSONObject) -> None:
        """Insert or refresh a sweep (its ``updated`` time decides which sweep is the latest)."""
        with self._connect() as con:
            con.execute("DELETE FROM sweeps WHERE sweep_id = ?", [sweep_id])
            con.execute("INSERT INTO sweeps VALUES (?, ?, ?)", [sweep_id, utc_now(), json.dumps(params)])

    def record_sweep_cells(self, sweep_id: str, rows: list[tuple[str, str, str, bool]]) -> None:
        """Set which run answers each cell of ``sweep_id``: ``(cell_name, run_id, status, reused)`` rows."""
        now = utc_now()
        with self._connect() as con:
            con.execute("BEGIN TRANSACTION")
            for name, run_id, status, reused in rows:
                con.execute("DELETE FROM sweep_cells WHERE sweep_id = ? AND cell_name = ?", [sweep_id, name])
                con.execute(
                    "INSERT INTO sweep_cells VALUES (?, ?, ?, ?, ?, ?)",
                    [sweep_id, name, run_id, status, reused, now],
                )
            con.execute("COMMIT")

    def record_stages(self, sweep_id: str, rows: list[tuple[str, str, float, str, bool, JSONObject]]) -> None:
        """Record the stages a sweep ran or reused (``stage, key, wall_s, worker, computed, detail`` rows)."""
        now = utc_now()
        with self._connect() as con:
            con.execute("BEGIN TRANSACTION")
            for stage, key, wall_s, worker, computed, detail in rows:
                con.execute(
                    "DELETE FROM stage_runs WHERE sweep_id = ? AND stage = ? AND key = ?",
                    [sweep_id, stage, key],
                )
                con.execute(
                    "INSERT INTO stage_runs VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [sweep_id, stage, key, wall_s, worker, computed, json.dumps(detail, default=str), now],
                )
            con.execute("COMMIT")

    def has_run(self, run_id: str) -> bool:
        """Whether run ``run_id`` is recorded (finished)."""
        df = self.sql("SELECT count(*) AS n FROM runs WHERE run_id = ? AND status = 'ok'", [run_id])
        return bool(df["n"].iloc[0])

    def sync_runs(self, runs_dir: str | Path) -> list[str]:
        """Record every finished run folder under ``runs_dir`` not recorded yet; returns their ids.

        A run folder whose tables are damaged (:class:`~hepwb.runs.folder.DamagedRunError`) is
        skipped with one logged line naming it and its rebuild command (in a notebook, and so in the
        report, that line is cell output); the other runs are recorded.
        """
        self.forget_replaced_runs()
        out = []
        folders = sorted(Path(runs_dir).glob("*/metrics.json")) if Path(runs_dir).is_dir() else []
        for path in folders:
            rec = RunRecord.finished(path.parent)
            if rec is None or self.has_run(rec.run_id):
                continue
            try:
                out.append(self.record_run(path.parent))
            except DamagedRunError as exc:
                _log.warning("skipped run %s: %s", path.parent.name, exc)
        return out

    def forget_replaced_runs(self) -> list[str]:
        """Drop the rows of runs whose folder now holds no finished run, or another one; returns their ids.

        A re-run clears its folder before writing the new results: if it was killed in between, the
        folder no longer backs the recorded run and the report must not list it. If it was killed after
        writing them but before recording them (``--force``), the folder holds a newer result of the same
        run (another ``created``): the stale rows go, and :meth:`sync_runs` records the folder's. A folder
        that is gone altogether (a moved or copied project) is left alone.
        """
        rows = self.sql("SELECT run_id, run_dir, created FROM runs WHERE status = 'ok'")
        gone = []
        for run_id, run_dir, created in zip(rows["run_id"], rows["run_dir"], rows["created"], strict=True):
            folder = Path(str(run_dir))
            if not folder.is_dir():
                continue
            rec = RunRecord.finished(folder)
            if rec is None or rec.run_id != run_id or str(rec.created) != str(created):
                gone.append(str(run_id))
        if gone:
            with self._connect() as con:
                con.execute("BEGIN TRANSACTION")
                for table in ("runs", "metrics", "metric_ci", "question_results", "hits"):
                    con.executemany(f"DELETE FROM {table} WHERE run_id = ?", [[r] for r in gone])
                con.execute("COMMIT")
            _log.warning("forgot %d run(s) whose folder no longer holds their results: %s", len(gone), gone)
        return gone

    # -- reading -----------------------------------------------------------------------------------
    def latest_sweep(self) -> str | None:
        """Id of the most recently run sweep, if any."""
        latest = self.sql("SELECT sweep_id FROM sweeps ORDER BY updated DESC LIMIT 1")
        return None if latest.empty else str(latest.iloc[0, 0])

    def _run_filter(self, sweep: str | None) -> tuple[str, list[Any]]:
        """SQL condition on ``r`` (runs) selecting one sweep: an id, ``"latest"`` or ``None``/``"all"``."""
        if sweep in (None, "all"):
            return "TRUE", []
        if sweep == "latest":
            sweep = self.latest_sweep()
            if sweep is None:
                return "TRUE", []
        return "r.run_id IN (SELECT run_id FROM sweep_cells WHERE sweep_id = ?)", [sweep]

    def metrics_wide(self, sweep: str | None = "all") -> pd.DataFrame:
        """One row per finished run of ``sweep`` (an id, ``"latest"`` or ``"all"``) with its metrics.

        The configuration columns are :data:`CONFIG_COLUMNS`, chunker and retriever labelled with their
        options.
        """
        cond, params = self._run_filter(sweep)
        runs = self.sql(f"SELECT r.run_id, r.config FROM runs r WHERE r.status = 'ok' AND {cond}", params)
        if runs.empty:
            return runs
        cfg_rows = []
        for run_id, raw in zip(runs["run_id"], runs["config"], strict=True):
            cfg = json.loads(raw)
            row = {"run_id": run_id, **{c: cfg.get(c) for c in CONFIG_COLUMNS}}
            row["chunker"] = option_label(str(cfg.get("chunker")), cfg.get("chunker_options"))
            row["retriever"] = option_label(str(cfg.get("retriever")), cfg.get("retriever_options"))
            index = cfg.get("vector_index") or "auto"  # absent from configurations that keep the default
            row["vector_index"] = option_label(str(index), cfg.get("vector_index_options"))
            cfg_rows.append(row)
        import pandas as pd

        configs = pd.DataFrame(cfg_rows)
        m = self.sql(
            f"SELECT r.run_id, m.metric, m.value FROM runs r JOIN metrics m USING (run_id) WHERE {cond}",
            params,
        )
        values = m.pivot_table(index="run_id", columns="metric", values="value").reset_index()
        values.columns.name = None
        wide = configs.merge(values, on="run_id", how="left")
        for col in [c for c in wide.columns if str(c).startswith("n_") or c in ("chunk_size", "k")]:
            wide[col] = pd.to_numeric(wide[col]).round().astype("Int64")  # None: a run file at paper level
        return wide.sort_values(["chunker", "retriever", "chunk_size", "chunk_overlap"]).reset_index(
            drop=True
        )

    def intervals(self, metric: str = defaults.DECISION_METRIC) -> pd.DataFrame:
        """``run_id, ci_low, ci_high``: the 95 % interval of ``metric`` for every run."""
        return self.sql("SELECT run_id, ci_low, ci_high FROM metric_ci WHERE metric = ?", [metric])

    def per_question(self, run_id: str) -> pd.DataFrame:
        """The per-question metrics of run ``run_id`` (for :func:`hepwb.evaluation.stats.compare_runs`)."""
        import pandas as pd

        df = self.sql("SELECT data FROM question_results WHERE run_id = ? ORDER BY qid", [run_id])
        if df.empty:
            msg = f"no per-question results for run {run_id!r}; record it with Catalog.record_run(run_dir)"
            raise KeyError(msg)
        return pd.DataFrame([json.loads(d) for d in df["data"]])

    def breakdown(
        self,
        metric: str = defaults.DECISION_METRIC,
        by: str = "kind",
        sweep: str | None = "all",
        runs: Sequence[str] | None = None,
    ) -> pd.DataFrame:
        """``metric`` per question group (``kind``, ``style``, ``paper``) with *n* and a 95 % interval.

        One row per group and run (``runs``: these run ids only; default every run of ``sweep``),
        columns ``by, run_id, n, mean, ci_low, ci_high, note`` (intervals of
        :func:`~hepwb.evaluation.stats.mean_ci`: Wilson's for found@k). A group of fewer than ten
        questions says so in ``note``: read its interval before its mean.
        """
        import pandas as pd

        cond, params = self._run_filter(sweep)
        if runs is not None:
            cond += " AND r.run_id IN (SELECT unnest(?::VARCHAR[]))"
            params = [*params, list(runs)]
        df = self.sql(
            "SELECT r.run_id, json_extract_string(q.data, '$.' || ?) AS grp, "
            "TRY_CAST(json_extract(q.data, '$.\"' || ? || '\"') AS DOUBLE) AS v "
            f"FROM question_results q JOIN runs r USING (run_id) WHERE {cond}",
            [by, metric, *params],
        )
        cols = [by, "run_id", "n", "mean", "ci_low", "ci_high", "note"]
        rows = []
        for (grp, run_id), values in df.dropna(subset=["v"]).groupby(["grp", "run_id"], sort=True)["v"]:
            ci = mean_ci(values.to_numpy(dtype=float))
            note = f"small sample (n < {SMALL_N})" if ci.small else ""
            rows.append([grp, run_id, ci.n, ci.mean, ci.low, ci.high, note])
        return pd.DataFrame(rows, columns=cols)

    def compute_seconds(self, run_id: str) -> float:
        """The compute a run's stages took, in seconds, as measured when each was built.

        Its own cell (retrieval, scoring, saving; for a run outside a sweep also conversion, chunking
        and indexing as timed then) plus, from ``stage_runs``, the building of its chunk set and of its
        LanceDB table wherever a sweep computed them. Embedding batches are shared by every table of a
        model and are reported per sweep under *Where the time went*, not here.
        """
        run = self.sql("SELECT chunkset_id, embedding_model, timings FROM runs WHERE run_id = ?", [run_id])
        if run.empty:
            return float("nan")
        cs_id, model, raw = run.iloc[0]
        own = sum(float(v) for v in json.loads(raw or "{}").values())
        built = self.sql(
            "SELECT coalesce(sum(w), 0) FROM (SELECT max(wall_s) AS w FROM stage_runs WHERE computed AND "
            "((stage = 'chunkset' AND key = ?) OR (stage = 'index' AND key = ?)) GROUP BY stage, key)",
            [cs_id, table_name(str(cs_id), str(model))],
        )
        return round(own + float(str(built.iloc[0, 0])), 3)

    def failures(self, sweep: str | None = "latest") -> pd.DataFrame:
        """The failed cells of ``sweep`` with their error (the traceback is in each run folder)."""
        cond, params = self._run_filter(sweep)
        return self.sql(
            "SELECT r.cell_name, r.error, r.worker, r.run_dir FROM runs r "
            f"WHERE r.status = 'failed' AND {cond}",
            params,
        )

    def unprocessed(self, sweep: str | None = "latest") -> pd.DataFrame:
        """Corpus files the runs of ``sweep`` could not process: file, error code, message and the fix."""
        import pandas as pd

        cond, params = self._run_filter(sweep)
        runs = self.sql(f"SELECT r.processing_errors FROM runs r WHERE r.status = 'ok' AND {cond}", params)
        seen: dict[tuple[str, str], dict[str, str]] = {}
        for raw in runs["processing_errors"].dropna():
            for e in json.loads(raw):
                file = str((e.get("context") or {}).get("file_path") or e.get("document_id") or "")
                row = {
                    "file": file,
                    "error_code": str(e.get("error_code") or ""),
                    "message": e.get("message", ""),
                }
                seen.setdefault(
                    (row["file"], row["error_code"]), {**row, "fix": e.get("recovery_action") or ""}
                )
        return pd.DataFrame(list(seen.values()), columns=["file", "error_code", "message", "fix"])

    def substitutions(self, sweep: str | None = "latest") -> pd.DataFrame:
        """Papers the runs of ``sweep`` read from another source than named (``paper``, ``what``), once each.

        A paper converted from its PDF instead of the LaTeX source ``papers.json`` names: the PDF's text is
        what was measured (:func:`~hepwb.corpus.sources.substitutions`).
        """
        import pandas as pd

        cond, params = self._run_filter(sweep)
        runs = self.sql(f"SELECT r.substitutions FROM runs r WHERE r.status = 'ok' AND {cond}", params)
        seen: dict[str, str] = {}
        for raw in runs["substitutions"].dropna():
            for line in json.loads(raw):
                paper, _, what = str(line).partition(": ")
                seen.setdefault(paper, what)
        return pd.DataFrame(sorted(seen.items()), columns=["paper", "what"])

    def unscored(self, sweep: str | None = "latest") -> pd.DataFrame:
        """The evidence quotes the runs of ``sweep`` could not score, once each.

        Columns: question, evidence, document, page, quote, status, reason, the pages where an ambiguous
        quote matched, and ``runs`` (how many runs of the sweep it concerns).
        """
        cond, params = self._run_filter(sweep)
        runs = self.sql(f"SELECT r.unscored FROM runs r WHERE r.status = 'ok' AND {cond}", params)
        seen: dict[str, dict[str, Any]] = {}
        for raw in runs["unscored"].dropna():
            for row in json.loads(raw):
                entry = seen.setdefault(str(row.get("evidence")), {**row, "runs": 0})
                entry["runs"] += 1
        frame = unscored_frame(seen.values())
        frame["runs"] = [r["runs"] for r in seen.values()]
        return frame

    def stage_times(self, sweep: str | None = "latest") -> pd.DataFrame:
        """Wall time per stage of ``sweep`` (computed and reused counts, seconds in all and the longest)."""
        if sweep in (None, "latest"):
            sweep = self.latest_sweep()
        stages = self.sql(
            "SELECT stage, count(*) FILTER (WHERE computed) AS computed, "
            "count(*) FILTER (WHERE NOT computed) AS reused, "
            "sum(wall_s) FILTER (WHERE computed) AS wall_s, max(wall_s) AS longest_s "
            "FROM stage_runs WHERE sweep_id = ? GROUP BY stage",
            [sweep],
        )
        # every cell of the sweep, also those a later run found done: its timings are from when it ran
        cells = self.sql(
            "SELECT r.timings FROM runs r JOIN sweep_cells s USING (run_id) "
            "WHERE s.sweep_id = ? AND r.status = 'ok'",
            [sweep],
        )
        import pandas as pd

        rows = []
        timings = [json.loads(t) for t in cells["timings"]] if not cells.empty else []
        for name in ("fit_s", "retrieve_s", "evaluate_s", "save_s"):  # fit_s: cells that fit a fusion
            vals = [t[name] for t in timings if name in t]
            if vals:
                rows.append(
                    {
                        "stage": "cell:" + name[:-2],
                        "computed": len(vals),
                        "reused": 0,
                        "wall_s": sum(vals),
                        "longest_s": max(vals),
                    }
                )
        order = {"convert": 0, "chunkset": 1, "embed": 2, "index": 3}
        out = pd.concat([stages, pd.DataFrame(rows)], ignore_index=True)
        if out.empty:
            return out
        return out.sort_values("stage", key=lambda s: s.map(lambda v: order.get(v, 9))).reset_index(drop=True)
