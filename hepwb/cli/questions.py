"""``hepwb questions``: check a question file against a corpus, and print the file format's JSON Schema."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from hepwb.cli.base import App, Corpus, Latex, app
from hepwb.cli.show import check_lines
from hepwb.evaluation.questions import question_schema
from hepwb.experiment.questions_check import check_questions

__all__ = ["questions_app"]

questions_app = App(
    name="questions",
    help="Question files: check one against a corpus (every quote located?), or print the format's schema.",
    no_args_is_help=True,
)
app.add_typer(questions_app)


@questions_app.command("check")
def check(
    file: Annotated[str, typer.Argument(help="The question file (.jsonl, or .csv with one row per quote).")],
    corpus: Corpus = None,
    latex: Latex = True,
) -> None:
    """Validate FILE and locate every quote in the corpus, without retrieving anything.

    Prints one line per quote (located / ambiguous / not_found / no_document, the page where it was found,
    and the reason), then how many questions a run can score. Exit status 0 when every quote is located,
    1 when some are not, 2 when the file itself is malformed (one line naming file, line and field).
    """
    result = check_questions(file, corpus, prefer_latex=latex, progress=True)
    typer.echo(f"{'evidence':14s} {'doc':8s} {'page':>4s}  {'status':11s} {'on page':>7s}  reason")
    for line in check_lines(result.rows()):
        typer.echo(line)
    typer.echo(result.summary())
    if result.unlocated:
        raise typer.Exit(1)


@questions_app.command("schema")
def schema() -> None:
    """Print the JSON Schema of one question (one line of a .jsonl file): required and optional fields."""
    typer.echo(json.dumps(question_schema(), indent=2, ensure_ascii=False))
