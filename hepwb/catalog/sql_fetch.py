"""Fetching the result of a typed query within bounds: rows, columns, characters per cell, bytes in all.

``hepwb sql`` bounds DuckDB's memory, but a result is then copied into Python, pandas and the terminal:
``SELECT repeat('a', 400000000)`` built a 400 MB cell and some 2 GB of copies after DuckDB had finished.
:func:`fetch_bounded` cuts every cell that can be long *inside DuckDB* (text, blobs and nested values
as text, at most :data:`~hepwb.limits.SQL_MAX_CELL_CHARS` characters), reads the rows in Arrow batches
until :data:`~hepwb.limits.SQL_MAX_RESULT_BYTES` or the row cap is reached, and refuses a result wider than
:data:`~hepwb.limits.SQL_MAX_COLUMNS` columns. Numbers, dates and times come back as DuckDB returns them.

Example:
    >>> import duckdb
    >>> con = duckdb.connect()
    >>> frame, more = fetch_bounded(con.sql("SELECT 42 AS x, repeat('ab', 20000) AS s FROM range(3)"), 2)
    >>> frame["x"].tolist(), len(frame["s"][0]), frame["s"][0][-3:], more
    ([42, 42], 20001, 'ab…', 'rows')
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from hepwb import limits
from hepwb.exceptions import ConfigError

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["More", "fetch_bounded", "result_notes"]

_FIXED = frozenset(
    {
        "boolean", "tinyint", "smallint", "integer", "bigint", "hugeint", "utinyint", "usmallint",
        "uinteger", "ubigint", "uhugeint", "float", "double", "decimal", "date", "time", "time_ns",
        "time with time zone", "timestamp", "timestamp_s", "timestamp_ms", "timestamp_ns",
        "timestamp with time zone", "interval", "uuid",
    }
)  # fmt: skip
"""DuckDB types whose values have a small, fixed size: fetched as they are. Every other (text, blobs,
lists, structs, maps, big numbers) is fetched as text cut to the cell cap."""

_BATCH_ROWS = 2_048
"""Rows per Arrow batch at most (one DuckDB vector); fewer for wide results."""

More = Literal["", "rows", "bytes"]


def fetch_bounded(rel: Any, max_rows: int) -> tuple[pd.DataFrame, More]:
    """The rows of DuckDB relation ``rel``: at most ``max_rows`` rows and the bounds of this module.

    Returns:
        The rows (a cut cell ends in ``…``), and why there are more: ``"rows"`` (past ``max_rows``),
        ``"bytes"`` (past :data:`~hepwb.limits.SQL_MAX_RESULT_BYTES`) or ``""`` (none).

    Raises:
        ConfigError: More than :data:`~hepwb.limits.SQL_MAX_COLUMNS` columns.
    """
    import duckdb
    import pyarrow as pa

    cap, ncols = limits.SQL_MAX_CELL_CHARS, len(rel.columns)
    if ncols > limits.SQL_MAX_COLUMNS:
        msg = (
            f"the result has {ncols:,} columns, more than the {limits.SQL_MAX_COLUMNS:,} hepwb sql prints; "
            "select fewer columns"
        )
        raise ConfigError(msg)
    exprs, cut = [], []
    for i, (name, dtype) in enumerate(zip(rel.columns, rel.types, strict=True), start=1):
        alias = '"' + str(name).replace('"', '""') + '"'
        if dtype.id in _FIXED:
            exprs.append(f"#{i} AS {alias}")
            continue
        text = f"#{i}" if dtype.id == "varchar" else f"CAST(#{i} AS VARCHAR)"
        exprs.append(f"left({text}, {cap + 1}) AS {alias}")  # one more: a cut cell is told from a full one
        cut.append(i - 1)
    worst_row = max(1, ncols * 4 * (cap + 1))  # UTF-8: at most 4 bytes a character
    reader = (
        rel.project(", ".join(exprs))
        .limit(max_rows + 1)
        .to_arrow_reader(max(1, min(_BATCH_ROWS, limits.SQL_MAX_RESULT_BYTES // (4 * worst_row))))
    )
    batches: list[Any] = []
    size = 0
    more: More = ""
    for batch in reader:
        if batches and size + batch.nbytes > limits.SQL_MAX_RESULT_BYTES:
            more = "bytes"
            break
        batches.append(batch)
        size += batch.nbytes
    table = pa.Table.from_batches(batches, schema=reader.schema)
    if table.num_rows > max_rows:
        table, more = table.slice(0, max_rows), "rows"
    with duckdb.connect() as con:  # DuckDB's own conversion to pandas, as the result had before
        frame: pd.DataFrame = con.from_arrow(table).df()
    for j in cut:
        frame.isetitem(j, [_marked(v, cap) for v in frame.iloc[:, j]])
    return frame, more


def _marked(value: Any, cap: int) -> Any:
    """``value`` cut to ``cap`` characters and marked ``…`` when longer (it was cut in DuckDB)."""
    return value[:cap] + "…" if isinstance(value, str) and len(value) > cap else value


def result_notes(frame: pd.DataFrame, more: More, max_rows: int) -> list[str]:
    """The lines ``hepwb sql`` prints under ``frame``: rows left out, and why; cells cut.

    Example:
        >>> import pandas as pd
        >>> for note in result_notes(pd.DataFrame({"s": ["x" * 20_000 + "…"]}), "rows", 1):
        ...     print(note)
        (the first 1 rows; there are more: add a LIMIT or raise --max-rows)
        (cells longer than 20,000 characters are cut, ending in …)
    """
    notes = []
    if more == "rows":
        notes.append(f"(the first {max_rows:,} rows; there are more: add a LIMIT or raise --max-rows)")
    elif more == "bytes":
        mib = limits.SQL_MAX_RESULT_BYTES // 1_048_576
        notes.append(
            f"(the first {len(frame):,} rows, {mib} MiB of cells; there are more: add a LIMIT or select "
            "fewer or shorter columns)"
        )
    cap = limits.SQL_MAX_CELL_CHARS
    if any(isinstance(v, str) and len(v) > cap for col in range(frame.shape[1]) for v in frame.iloc[:, col]):
        notes.append(f"(cells longer than {cap:,} characters are cut, ending in …)")
    return notes
