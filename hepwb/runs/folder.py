"""A run folder's tables (``hits.parquet``, ``per_question.parquet``), read with their values checked.

A run folder is hepwb's own artefact, but files get edited, truncated or half-copied. Every reader of a run's
tables (``hepwb export``, the catalog behind ``hepwb report``) reads them here. A damaged one is then one line
naming the file and the command that rebuilds the run, never an error deep inside pandas or DuckDB, and never
a TREC file or a catalog row built from values hepwb did not write.

A sound ``hits.parquet`` has text ``qid``, ``chunk_id`` and ``label``, a whole ``rank`` from 1 that fits the
catalog's 32-bit column, a finite float ``score`` and a boolean ``relevant``, none of them null. Each
question ranks a chunk at most once, and its ranks are 1, 2, …, n.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from hepwb import limits
from hepwb.exceptions import ConfigError

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "HITS_COLUMNS",
    "MAX_RANK",
    "DamagedRunError",
    "hits_problem",
    "read_hits",
    "read_per_question",
    "rebuild_hint",
]

HITS_COLUMNS = ("qid", "rank", "chunk_id", "label", "score", "relevant")
"""The columns of ``hits.parquet`` that export and the catalog read."""

MAX_RANK = limits.MAX_RANK
"""The largest rank (:data:`hepwb.limits.MAX_RANK`)."""

_TEXT = ("qid", "chunk_id", "label")


class DamagedRunError(ConfigError):
    """A run folder's table is not what hepwb wrote; the message names the file and the rebuild command."""


def rebuild_hint(run_dir: Path) -> str:
    """How to make the run in ``run_dir`` again: its ``rerun.sh`` where it has one.

    Example:
        >>> rebuild_hint(Path("/no/such/run"))
        'delete /no/such/run and run it again'
    """
    rerun = run_dir / "rerun.sh"
    if rerun.is_file():
        return f"rebuild the run with: bash {rerun}"
    return f"delete {run_dir} and run it again"


def _damaged(path: Path, why: str, then: str) -> DamagedRunError:
    why = " ".join(why.split())[:160]
    return DamagedRunError(f"{path} is damaged ({why}); {rebuild_hint(path.parent)}{then}")


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:59] + "…"


def _read(path: Path, columns: tuple[str, ...] | None, then: str) -> Any:
    """The Parquet table at ``path`` (only those of ``columns`` it has, when given)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        names = None if columns is None else [c for c in columns if c in pq.read_schema(path).names]
        return pq.read_table(path, columns=names)
    except (pa.ArrowException, OSError, ValueError, KeyError) as exc:
        raise _damaged(path, str(exc) or type(exc).__name__, then) from None


def _column_problem(table: Any, name: str) -> str | None:
    """Why column ``name`` of a non-empty ``table`` does not hold what hepwb writes (``None``: it does)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    col = table.column(name)
    kind = col.type
    if name in _TEXT:
        ok, want = pa.types.is_string(kind) or pa.types.is_large_string(kind), "text"
    elif name == "rank":
        ok, want = pa.types.is_integer(kind), "whole numbers"
    elif name == "score":
        ok, want = pa.types.is_floating(kind), "floats"
    else:
        ok, want = pa.types.is_boolean(kind), "true/false values"
    if not ok:
        return f"column {name!r} holds {kind}, not {want}"
    if col.null_count:
        return f"column {name!r} has {col.null_count} empty value(s)"
    if name == "rank":
        span = pc.min_max(col)
        low, high = span["min"].as_py(), span["max"].as_py()
        if low < 1 or high > MAX_RANK:
            bad = low if low < 1 else high
            return f"rank {bad} is not a whole number from 1 to {MAX_RANK}"
    if name == "score" and not pc.all(pc.is_finite(col)).as_py():
        return "a score is not a finite number"
    return None


def hits_problem(table: Any) -> str | None:
    """Why a ``hits.parquet`` table (pyarrow) is not one hepwb wrote (``None``: it is sound).

    Example:
        >>> import pyarrow as pa
        >>> row = {"qid": ["Q1"], "rank": [1], "chunk_id": ["c1"], "label": ["P01"], "score": [1.0],
        ...        "relevant": [True]}
        >>> hits_problem(pa.table(row)) is None
        True
        >>> hits_problem(pa.table({**row, "rank": [2**62]}))
        'rank 4611686018427387904 is not a whole number from 1 to 2147483647'
        >>> twice = {k: v * 2 for k, v in row.items()} | {"rank": [1, 2]}
        >>> hits_problem(pa.table(twice))
        "question 'Q1' ranks chunk 'c1' twice"
    """
    missing = [c for c in HITS_COLUMNS if c not in table.column_names]
    if missing:
        return f"no column {', '.join(map(repr, missing))}"
    if table.num_rows == 0:
        return None
    for name in HITS_COLUMNS:
        problem = _column_problem(table, name)
        if problem:
            return problem
    frame = table.select(["qid", "rank", "chunk_id"]).to_pandas()
    twice = frame.duplicated(["qid", "chunk_id"])
    if twice.any():
        row = frame[twice].iloc[0]
        return f"question {_shown(row['qid'])} ranks chunk {_shown(row['chunk_id'])} twice"
    ranks = frame.groupby("qid", sort=False)["rank"].agg(["size", "nunique", "max"])
    wrong = ranks[(ranks["nunique"] != ranks["size"]) | (ranks["max"] != ranks["size"])]
    if not wrong.empty:
        qid, n = wrong.index[0], int(wrong["size"].iloc[0])
        return f"the ranks of question {_shown(qid)} are not 1 to {n}, each once"
    return None


def read_hits(run_dir: str | Path, *, then: str = "") -> pd.DataFrame:
    """The checked :data:`HITS_COLUMNS` of ``run_dir/hits.parquet``, as pandas.

    Args:
        run_dir: The run folder.
        then: Appended to the fix of the error (e.g. ``", then export"``).

    Raises:
        DamagedRunError: No Parquet file, a column missing, of another type or with values hepwb never
            writes (:func:`hits_problem`); naming the file and the command that rebuilds the run.
    """
    path = Path(run_dir) / "hits.parquet"
    table = _read(path, HITS_COLUMNS, then)
    problem = hits_problem(table)
    if problem:
        raise _damaged(path, problem, then)
    frame: pd.DataFrame = table.select(list(HITS_COLUMNS)).to_pandas()
    return frame


def read_per_question(run_dir: str | Path, *, then: str = "") -> pd.DataFrame:
    """``run_dir/per_question.parquet`` as pandas, its ``qid`` column checked (text, each question once).

    Raises:
        DamagedRunError: No Parquet file, or no sound ``qid`` column; naming the file and the rebuild.
    """
    import pyarrow as pa

    path = Path(run_dir) / "per_question.parquet"
    table = _read(path, None, then)
    if "qid" not in table.column_names:
        raise _damaged(path, "no column 'qid'", then)
    if table.num_rows:
        qid = table.column("qid")
        if not (pa.types.is_string(qid.type) or pa.types.is_large_string(qid.type)) or qid.null_count:
            raise _damaged(path, f"column 'qid' holds {qid.type} or empty values, not text", then)
    frame: pd.DataFrame = table.to_pandas()
    twice = frame["qid"].duplicated()
    if twice.any():
        raise _damaged(path, f"question {_shown(frame['qid'][twice].iloc[0])} has two rows", then)
    return frame
