"""``hepwb export-ragmd``, ``import-ragmd`` and ``validate-ragmd`` (on :data:`hepwb.cli.base.app`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from hepwb import defaults
from hepwb.cli.base import app
from hepwb.paths import Layout
from hepwb.ragmd.reader import RagmdError, load_searchable
from hepwb.ragmd.tables import export_table, import_file

Model = Annotated[
    str, typer.Option(help="Embedding model of the table exported.", show_default=defaults.EMBEDDING_MODEL)
]


@app.command("export-ragmd")
def export_ragmd(
    chunkset: Annotated[
        str, typer.Argument(help="Chunk set id (hepwb sql 'FROM chunksets') or a table name.")
    ],
    out: Annotated[Path, typer.Argument(help="The .ragmd file to write.")],
    model: Model = "",
) -> None:
    """Write one indexed chunk set x embedding model as one .ragmd file (byte-identical when unchanged)."""
    path = export_table(Layout.default().lancedb, chunkset, model or defaults.EMBEDDING_MODEL, out)
    typer.echo(f"wrote {path} ({path.stat().st_size / 1e6:.1f} MB)")


@app.command("import-ragmd")
def import_ragmd(
    file: Annotated[Path, typer.Argument(help="The .ragmd file.")],
    table: Annotated[
        str | None, typer.Option(help="LanceDB table name (default ragmd-<stem>__<model>).")
    ] = None,
) -> None:
    """Load a .ragmd file into LanceDB (checked whole first), for every retriever: search --table NAME."""
    name, rows = import_file(file, Layout.default().lancedb, table=table)
    typer.echo(f"{rows} chunks in table {name}; search it with: hepwb search QUESTION --table {name}")


@app.command("validate-ragmd")
def validate_ragmd(file: Annotated[Path, typer.Argument(help="The .ragmd file.")]) -> None:
    """Check a .ragmd file as the loaders read it: counts, ids, text, vectors, model (exit 1 if bad)."""
    try:
        rf = load_searchable(file)  # what import-ragmd and search --ragmd load
    except RagmdError as exc:
        typer.secho(str(exc), fg=typer.colors.RED, err=True)
        raise typer.Exit(1) from None
    typer.echo(
        f"{file}: valid ({len(rf.documents)} documents, {len(rf.chunks)} vectors of {rf.embedding_dim}, "
        f"{rf.model_name})"
    )
