"""``hepwb export``, ``import-beir`` and ``import-ir-datasets`` (registered on :data:`hepwb.cli.base.app`).

The IR community's formats (:mod:`hepwb.interop`); ``hepwb evaluate --run-file`` is in
:mod:`hepwb.cli.runfile`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from hepwb.cli.base import app
from hepwb.exceptions import ConfigError
from hepwb.interop import export_runs, import_beir, import_local, resolve_runs
from hepwb.interop.export import Format
from hepwb.text.plaintext import plain

__all__ = ["export", "import_beir_command", "import_ir_datasets_command"]


@app.command()
def export(
    run_or_sweep: Annotated[
        str, typer.Argument(help="A run (folder, folder name or run id), a sweep id, or 'latest' (sweep).")
    ],
    out: Annotated[Path, typer.Argument(help="The folder to write the files into.")],
    fmt: Annotated[
        str, typer.Option("--format", help="trec (runs, qrels, topics) or beir (corpus, queries, qrels).")
    ] = "trec",
) -> None:
    """Write runs with hepwb's judgements as TREC files (run, qrels at paper and chunk level, topics) or BEIR.

    The files reproduce hepwb's chunk- and paper-level metrics in trec_eval, ir_measures or ranx
    (manifest.json lists hepwb's values beside them); docs/howto/ir-formats.md says how.
    """
    if fmt not in ("trec", "beir"):
        msg = f"--format {fmt!r}: choose trec or beir"
        raise ConfigError(msg)
    chosen: Format = "trec" if fmt == "trec" else "beir"
    done = export_runs(resolve_runs(run_or_sweep), out, chosen)
    typer.echo(done.summary())
    manifests = [p for p in done.files if p.name == "manifest.json"]
    listed = plain(", ".join(map(str, manifests)))
    typer.echo(f"manifest (which qrels go with which run, and hepwb's values): {listed}")


@app.command("import-beir")
def import_beir_command(
    folder: Annotated[
        Path, typer.Argument(help="A BEIR folder: corpus.jsonl, queries.jsonl, qrels/<split>.tsv.")
    ],
    out: Annotated[Path, typer.Argument(help="A new folder for the corpus (corpus/) and questions.")],
    split: Annotated[str, typer.Option(help="The qrels split to read (qrels/<split>.tsv).")] = "test",
) -> None:
    """Turn a BEIR folder into a hepwb corpus of markdown documents and a question set (files only)."""
    typer.echo(import_beir(folder, out, split).summary())


@app.command("import-ir-datasets")
def import_ir_datasets_command(
    out: Annotated[Path, typer.Argument(help="A new folder for the corpus (corpus/) and questions.")],
    docs: Annotated[Path, typer.Option(help="Documents, one 'doc_id<TAB>text' line each.")],
    queries: Annotated[Path, typer.Option(help="Queries, one 'query_id<TAB>text' line each.")],
    qrels: Annotated[Path, typer.Option(help="TREC qrels: 'query_id 0 doc_id relevance' lines.")],
) -> None:
    """Turn an ir_datasets collection of local files into a hepwb corpus and question set (files only)."""
    typer.echo(import_local(out, docs, queries, qrels).summary())
