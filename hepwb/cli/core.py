"""The core commands of ``hepwb``: ``ingest``, ``prepare``, ``evaluate``, ``report`` and ``main``.

The application and its shared options live in :mod:`hepwb.cli.base`; the other command groups have a
module each in :mod:`hepwb.cli`, which registers them all, so ``hepwb.cli:app`` is the full command line.
"""

from __future__ import annotations

import os
from typing import Annotated, NoReturn

import typer

from hepwb import defaults
from hepwb.catalog import Catalog
from hepwb.chunking.prepare import prepare
from hepwb.cli.args import repeated_option
from hepwb.cli.base import (
    Background,
    Corpus,
    Latex,
    MaxDocs,
    Overlap,
    Questions,
    Sizes,
    TopK,
    app,
    current_command,
    one_line,
    parse_ints,
    parse_options,
)
from hepwb.cli.crash import not_utf8, save_traceback
from hepwb.cli.evaluate_options import (
    AcceptUnscored,
    AllMetrics,
    Chunker,
    ChunkSize,
    EmbeddingModel,
    IndexOption,
    RagasLlm,
    Retriever,
    RetrieverOption,
    ShowConfig,
    VectorIndex,
)
from hepwb.cli.runfile import Baseline, LevelOption, RunFileOption, SweepOption, outside_run_lines
from hepwb.cli.show import run_lines
from hepwb.corpus.haystack import haystack
from hepwb.exceptions import HepwbError
from hepwb.experiment.config import ExperimentConfig
from hepwb.experiment.run import run_experiment
from hepwb.limits import HEPILOT_CHUNK_SIZE
from hepwb.paths import Layout
from hepwb.report.pin import checked_defaults
from hepwb.report.render import render_report
from hepwb.text.plaintext import plain

__all__ = ["app", "main"]


@app.command()
def ingest(
    corpus: Corpus = None,
    max_docs: MaxDocs = None,
    latex: Latex = True,
    chunk_sizes: Sizes = str(defaults.CHUNK_SIZE),
    chunk_overlap: Overlap = defaults.CHUNK_OVERLAP,
    chunker: Annotated[str, typer.Option(help="Chunking strategy name.")] = defaults.CHUNKER,
    hepilot_compliant: Annotated[
        bool,
        typer.Option(
            help="HEPilot-compliant mode: refuse chunk sizes outside "
            f"{HEPILOT_CHUNK_SIZE.low:g}-{HEPILOT_CHUNK_SIZE.high:g} tokens (the specification's range)."
        ),
    ] = False,
) -> None:
    """Convert a corpus and write one HEPilot output tree per chunk size (data/processed/chunksets/)."""
    prep = prepare(
        corpus,
        max_docs=max_docs,
        prefer_latex=latex,
        chunker=chunker,
        require_compliant=hepilot_compliant,
        chunk_sizes=parse_ints(chunk_sizes),
        chunk_overlap=chunk_overlap,
    )
    cat = Catalog(Layout.default().catalog)
    for cs in prep.chunksets:
        cat.record_chunkset(cs)
    typer.echo(prep.chunksets_frame().to_string(index=False))
    for e in prep.log.errors:
        typer.secho(f"{e.error_code}: {e.message}", fg=typer.colors.YELLOW, err=True)


@app.command()
def evaluate(
    corpus: Corpus = None,
    questions: Questions = None,
    max_docs: MaxDocs = None,
    background: Background = None,
    latex: Latex = True,
    chunk_size: ChunkSize = None,
    chunk_overlap: Overlap = defaults.CHUNK_OVERLAP,
    retriever: Retriever = None,
    k: TopK = defaults.EVAL_K,
    chunker: Chunker = defaults.CHUNKER,
    embedding_model: EmbeddingModel = defaults.EMBEDDING_MODEL,
    option: RetrieverOption = None,
    ragas_llm: RagasLlm = False,
    vector_index: VectorIndex = defaults.VECTOR_INDEX,
    index_option: IndexOption = None,
    accept_unscored: AcceptUnscored = False,
    all_metrics: AllMetrics = False,
    show_config: ShowConfig = False,
    run_file: RunFileOption = None,
    level: LevelOption = "chunk",
    baseline: Baseline = None,
    sweep: SweepOption = None,
) -> None:
    """Evaluate one chunker × retriever configuration in this process.

    Prints the headline metrics with 95 % intervals, then every question that could not be scored (its
    evidence not located) with the reason, then where the run folder is. With --run-file, an outside
    system's TREC run is scored instead of a hepwb retriever, and recorded beside hepwb's runs.
    """
    checked_defaults()  # a damaged hepwb-defaults.json is one line here, not silently the package's defaults
    if background is not None:  # your papers among the background's: an ordinary corpus folder
        corpus = str(haystack(corpus, background))
    cfg = ExperimentConfig.from_params(
        corpus=corpus,
        questions=questions,
        max_docs=max_docs,
        prefer_latex=latex,
        chunk_size=chunk_size,
        chunk_overlap=chunk_overlap,
        retriever=retriever,
        k=k,
        chunker=chunker,
        embedding_model=embedding_model,
        retriever_options=parse_options(option or []),
        ragas_llm=ragas_llm,
        vector_index=vector_index,
        vector_index_options=parse_options(index_option or [], "--index-option"),
        accept_unscored=accept_unscored,
    )
    if show_config:
        typer.echo(cfg.model_dump_json(indent=2))
        return
    outside = outside_run_lines(cfg, run_file, level=level, baseline=baseline, sweep=sweep)
    if outside is not None:  # an outside system's run file, scored on these questions (hepwb.interop)
        typer.echo("\n".join(outside))
        return
    res = run_experiment(cfg)
    for line in run_lines(res.record, all_metrics=all_metrics):
        typer.echo(line)
    typer.echo(f"run: {res.run_name}\nresults: {res.run_dir}")


@app.command()
def report() -> None:
    """Render reports/report.html from the DuckDB catalog (notebooks/30-report.ipynb).

    A run folder whose tables are damaged is skipped with one line naming it and its rebuild command (here
    and in the report); the other runs are reported.
    """
    path = render_report()
    typer.echo(f"report: {path}")


_WRITE_ERRORS = {"ENOSPC", "EFBIG", "EDQUOT", "EROFS", "EIO"}


def main() -> None:
    """The console script: :data:`app`, never with a traceback on the terminal.

    * A :class:`HepwbError` (an input problem) is one ``error: …`` line and exit status 2; so is a full
      disk or a failed write (the message says to free space and rerun).
    * An argument that is no UTF-8 text, or an option given twice, is one line and exit status 2.
    * Anything else is a bug: one line naming the exception and the file its traceback is saved in
      (``reports/tracebacks/<time>-<command>.txt``, else the temporary folder; secrets redacted,
      :func:`hepwb.cli.crash.save_traceback`), exit status 3.
    * Ctrl-C is one line and exit status 130.
    """
    import sys

    bad = not_utf8(sys.argv[1:])
    problem = (
        f"the argument {bad!r} is not UTF-8 text: hepwb reads every argument as UTF-8; retype it (or rename "
        "the file it names)"
        if bad is not None
        else repeated_option(typer.main.get_command(app), sys.argv[1:])
    )
    if problem:
        typer.secho(f"error: {plain(problem)}", fg=typer.colors.RED, err=True)
        raise SystemExit(2)
    try:
        code = app(standalone_mode=False)  # click's usage errors come back here, to be said in one line
    except KeyboardInterrupt:
        typer.secho("error: interrupted", fg=typer.colors.RED, err=True)
        raise SystemExit(130) from None
    except HepwbError as exc:  # raised outside a command's own boundary (e.g. by a parameter callback)
        typer.secho(f"error: {one_line(exc)}", fg=typer.colors.RED, err=True)
        raise SystemExit(2) from None
    except Exception as exc:
        usage = _usage_error(exc)
        if usage is None:
            _unexpected(exc)
        typer.secho(f"error: {usage}", fg=typer.colors.RED, err=True)
        raise SystemExit(2) from None
    raise SystemExit(code if isinstance(code, int) else 0)


def _usage_error(exc: Exception) -> str | None:
    """Click's complaint about the command line (a bad option value, a missing argument) in one line."""
    if type(exc).__name__ not in {"UsageError", "BadParameter", "MissingParameter", "NoSuchOption",
                                  "BadOptionUsage", "BadArgumentUsage", "NoArgsIsHelpError"}:  # fmt: skip
        return None
    if type(exc).__name__ == "NoArgsIsHelpError":
        return "no command given; `hepwb --help` lists them"
    ctx = getattr(exc, "ctx", None)
    where = f" (`{ctx.command_path} --help` lists the options)" if ctx is not None else ""
    formatted = getattr(exc, "format_message", None)
    text = " ".join(str(formatted() if callable(formatted) else exc).split())
    return f"{plain(text[:300])}{where}"


def _unexpected(exc: Exception) -> NoReturn:
    """A full disk, a damaged table (one line, exit 2) or a bug (one line, traceback saved, exit 3)."""
    write_failure = _write_failure(exc) or _damaged_table(exc) or _notebook_error(exc)
    if write_failure:
        typer.secho(f"error: {write_failure}", fg=typer.colors.RED, err=True)
        raise SystemExit(2) from None
    saved = save_traceback(exc, current_command[0])
    where = f"the traceback is saved in {saved}" if saved else "its traceback could not be saved"
    line = f"unexpected {type(exc).__name__}: {one_line(exc, 300)} — a bug: {where}; please report it"
    typer.secho(f"error: {line}", fg=typer.colors.RED, err=True)
    raise SystemExit(3) from None


def _notebook_error(exc: Exception) -> str | None:
    """The one line of a hepwb error a notebook stopped on (papermill wraps it: a damaged catalog), else None.

    Papermill wraps what the kernel raised; an input problem found there is still an input problem (exit 2).
    """
    if type(exc).__name__ != "PapermillExecutionError":
        return None
    known, todo = set(), [HepwbError]
    while todo:  # HepwbError and every subclass of it
        cls = todo.pop()
        known.add(cls.__name__)
        todo.extend(cls.__subclasses__())
    if str(getattr(exc, "ename", "")) not in known:
        return None
    return " ".join(plain(str(getattr(exc, "evalue", ""))).split())[:600]


def _damaged_table(exc: Exception) -> str | None:
    """The message for a LanceDB table that cannot be read (a damaged or cut-short file), else ``None``."""
    text = str(exc)
    if not isinstance(exc, RuntimeError) or "lance error" not in text.lower():
        return None
    first = one_line(exc, 200)
    return (
        f"a LanceDB table is damaged or unreadable ({first}); delete the table's folder named there and run "
        "the command that builds it again (`hepwb ingest`, `hepwb evaluate` or `hepwb tiers init`)"
    )


def _write_failure(exc: Exception) -> str | None:
    """The message for a full disk or failed write (``ENOSPC``, ``EDQUOT``, …), else ``None``."""
    import errno
    import re

    if not isinstance(exc, (OSError, RuntimeError)):
        return None
    # LanceDB reports I/O failures from Rust as RuntimeError("... (os error 28) ...")
    code = exc.errno if isinstance(exc, OSError) else None
    found = None if isinstance(exc, OSError) else re.search(r"os error (\d+)", str(exc))
    code = int(found.group(1)) if found else code
    name = errno.errorcode.get(code or 0, "")
    if name not in _WRITE_ERRORS:
        return None
    where = getattr(exc, "filename", None) or ("the LanceDB store" if found else "a file")
    return (
        f"could not write {where}: {os.strerror(code or 0)} ({name}). Free disk space (or raise "
        "the quota / file-size limit) and run the same command again: finished artefacts are kept and "
        "the interrupted one is redone."
    )
