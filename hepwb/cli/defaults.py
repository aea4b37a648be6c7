"""``hepwb defaults``: the default retriever and chunk size in force, and pinning the project's own."""

from __future__ import annotations

from typing import Annotated

import typer

from hepwb.cli.base import App, app, fail
from hepwb.paths import Layout
from hepwb.project_defaults import current_defaults, unpin_defaults
from hepwb.report.pin import checked_defaults, pin_defaults, pin_from_report

__all__ = ["defaults_app"]

defaults_app = App(
    name="defaults",
    help="The default retriever and chunk size: show them, pin your project's own (from its report), unpin.",
    no_args_is_help=True,
)
app.add_typer(defaults_app)


@defaults_app.command("show")
def show() -> None:
    """Print the default retriever and chunk size in force in this project, and where they come from."""
    d = checked_defaults()
    typer.echo(
        f"retriever:  {d.retriever}\nchunk size: {d.chunk_size}\nfrom:       {d.pinned_in or d.source}"
    )
    if d.pinned_in:
        typer.echo(f"            {d.source}")


@defaults_app.command("pin")
def pin(
    retriever: Annotated[
        str | None, typer.Argument(help="NAME or NAME(KEY=VALUE, ...), e.g. 'hybrid(weight=0.2)'.")
    ] = None,
    chunk_size: Annotated[int | None, typer.Argument(help="Chunk size in tokens.")] = None,
    from_report: Annotated[
        bool,
        typer.Option("--from-report", help="Pin the configuration your report's verdict recommends."),
    ] = False,
    sweep: Annotated[str, typer.Option(help="With --from-report: a sweep id, or latest.")] = "latest",
) -> None:
    """Pin this project's defaults in hepwb-defaults.json at the project root (CLI, Python and notebooks)."""
    if from_report == (retriever is not None or chunk_size is not None) or (
        not from_report and (retriever is None or chunk_size is None)
    ):
        fail(ValueError("give RETRIEVER and CHUNK_SIZE, or --from-report (not both)"))
    if from_report:
        path, sentence = pin_from_report(Layout.default(), sweep=sweep)
        typer.echo(sentence)
    else:
        path = pin_defaults(str(retriever), int(str(chunk_size)))
    d = current_defaults()
    typer.echo(f"pinned in {path}: {d.retriever} at {d.chunk_size} tokens (`hepwb defaults unpin` undoes it)")


@defaults_app.command("unpin")
def unpin() -> None:
    """Remove this project's pinned defaults: the package's apply again."""
    removed = unpin_defaults()
    d = current_defaults()
    typer.echo(
        f"{'unpinned' if removed else 'nothing was pinned'}; defaults: {d.retriever} at {d.chunk_size} tokens"
    )
