"""``hepwb validate`` and ``hepwb sql``: look into what hepwb wrote (on :data:`hepwb.cli.base.app`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from hepwb import defaults, limits
from hepwb.catalog import Catalog
from hepwb.catalog.sql_fetch import result_notes
from hepwb.cli.base import app, fail
from hepwb.exceptions import ConfigError, HepwbError
from hepwb.hepilot.schemas import schema_for_file, validate_tree
from hepwb.paths import Layout, shared_dir
from hepwb.text.plaintext import plain

__all__ = ["sql", "validate"]


@app.command()
def validate(
    root: Annotated[Path, typer.Argument(help="A HEPilot output tree (a chunk set folder).")],
    schemas: Annotated[
        str | None, typer.Option(help="Folder of HEPilot *.schema.json (default ../shared/hepilot).")
    ] = None,
) -> None:
    """Read every JSON file of an output tree; validate those with a HEPilot schema against it."""
    if not root.is_dir():
        fail(ValueError(f"{root} is not a folder: give a HEPilot output tree (data/processed/chunksets/ID)"))
    n = sum(1 for p in root.rglob("*.json") if schema_for_file(p.name) is not None)
    if not n:
        msg = f"no HEPilot JSON files in {root}; give a chunk-set folder (data/processed/chunksets/ID)"
        raise ConfigError(msg)
    fails = validate_tree(root, schemas or shared_dir() / defaults.SCHEMA_FOLDER)
    for path, errs in fails.items():
        typer.secho(f"{path}: {plain(errs[0])}", fg=typer.colors.RED)
    total = sum(1 for _ in root.rglob("*.json"))
    links = sum(", not read:" in errs[0] for errs in fails.values())  # links out of the tree (listed above)
    read = f"all read but {links} link(s) out of the tree" if links else "all read"
    typer.echo(
        f"{total - len(fails)}/{total} JSON files valid ({read}; the {n} with a HEPilot schema checked)"
    )
    if fails:
        raise typer.Exit(1)


@app.command()
def sql(
    query: Annotated[str, typer.Argument(help="SQL over the catalog tables (runs, metrics, chunks, …).")],
    lance: Annotated[
        bool,
        typer.Option(
            "--lance/--no-lance", help="Also expose every LanceDB chunk table as a view lance_<table>."
        ),
    ] = True,
    write: Annotated[
        bool, typer.Option("--write", help="Allow changes to the catalog (read-only without it).")
    ] = False,
    timeout_s: Annotated[
        float,
        typer.Option(
            min=limits.SQL_MIN_TIMEOUT_S,
            max=limits.SQL_MAX_TIMEOUT_S,
            help="Stop the statement after this many seconds.",
        ),
    ] = limits.SQL_TIMEOUT_S,
    max_rows: Annotated[
        int, typer.Option(min=1, max=limits.SQL_ROWS_CAP, help="Fetch and print at most this many rows.")
    ] = limits.SQL_MAX_ROWS,
    memory_mb: Annotated[
        int,
        typer.Option(
            min=limits.SQL_MIN_MEMORY_MB,
            max=limits.SQL_MAX_MEMORY_MB,
            help="DuckDB memory (MiB) of the statement; SQL cannot raise it (SET).",
        ),
    ] = limits.SQL_MEMORY_MB,
) -> None:
    """Query the DuckDB catalog (reports/catalog.duckdb), joined with LanceDB tables if wanted.

    Read-only unless --write; other files and DuckDB extensions are never reachable from here. A statement
    is stopped after --timeout-s, at most --max-rows rows are fetched, and DuckDB uses at most --memory-mb
    MiB and 2 threads (locked: SET memory_limit inside the query is refused).
    """
    import duckdb

    layout = Layout.default()
    try:
        df, more = Catalog(layout.catalog).sql_bounded(
            query,
            lancedb=layout.lancedb if lance else None,
            write=write,
            timeout_s=timeout_s,
            max_rows=max_rows,
            memory_mb=memory_mb,
        )
    except (duckdb.InvalidInputException, duckdb.PermissionException) as exc:
        hint = (
            "pass --write to change the catalog" if "read-only" in str(exc) else "use DuckDB itself for files"
        )
        fail(ValueError(f"{str(exc).splitlines()[0]} ({hint})"))
    except HepwbError as exc:
        fail(exc)
    except Exception as exc:  # other duckdb errors are user errors here
        fail(exc)
    notes = result_notes(df, more, max_rows)
    # cells hold corpus text: no escape sequence (clipboard writes, hyperlinks, CSI) reaches the terminal
    df = df.rename(columns=lambda c: plain(str(c))).map(lambda v: plain(v) if isinstance(v, str) else v)
    typer.echo(plain(df.to_string(index=False)))
    for note in notes:
        typer.echo(note)
