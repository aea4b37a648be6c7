"""The ``hepwb`` command line: one command per pipeline stage, plus ``run`` for the whole path."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated

import typer

from hepwb.env import configure_runtime
from hepwb.exceptions import HepwbError

app = typer.Typer(
    name="hepwb",
    help="Measure how chunking and retrieval strategies find evidence in High-Energy-Physics papers.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)

Corpus = Annotated[
    str | None,
    typer.Option(
        help="Folder of PDF/markdown files (default: $HEPWB_CORPUS or ../shared/corpus/papers/pdf)."
    ),
]
Questions = Annotated[
    str | None,
    typer.Option(
        help="hepqa-style JSONL test set (default: $HEPWB_QUESTIONS or ../shared/eval/hepqa-dev.jsonl)."
    ),
]
MaxDocs = Annotated[int | None, typer.Option(help="Only the first N files of the corpus (default: all).")]
Sizes = Annotated[str, typer.Option(help="Comma-separated chunk sizes in tokens.")]
Overlap = Annotated[
    float, typer.Option(help="Overlap as a fraction of the chunk size (HEPilot: 0 <= x < 1).")
]
Retrievers = Annotated[
    str,
    typer.Option(
        help="Comma-separated retriever names (dense, bm25, bm25_plain, hybrid, hybrid_linear, entity, "
        "rerank, multi_query, hyde, parent; `hepwb retrievers` says which can run here)."
    ),
]
TopK = Annotated[int, typer.Option(help="Chunks retrieved per question.")]
Chunkers = Annotated[
    str,
    typer.Option(
        help="Comma-separated chunking strategies (hepwb.chunking.CHUNKERS), e.g. hepilot,recursive."
    ),
]
Latex = Annotated[
    bool,
    typer.Option(
        "--latex/--pdf-only", help="Use a paper's LaTeX source (named in papers.json) over its PDF."
    ),
]


def _ints(text: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        msg = f"expected comma-separated integers such as 256,512,1024, got {text!r}"
        raise typer.BadParameter(msg) from None


def _words(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


def _options(items: list[str]) -> dict[str, object]:
    """``["read=max", "weight=0.3"]`` → ``{"read": "max", "weight": 0.3}`` (values parsed as YAML scalars)."""
    import yaml

    out: dict[str, object] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            msg = f"option {item!r}: write KEY=VALUE, e.g. read=max"
            raise typer.BadParameter(msg)
        out[key.strip()] = yaml.safe_load(value)
    return out


def _fail(exc: Exception) -> None:
    typer.secho(f"error: {exc}", fg=typer.colors.RED, err=True)
    raise typer.Exit(2)


@app.callback()
def _main(
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log debug messages.")] = False,
    ner_url: Annotated[
        str,
        typer.Option(
            envvar="HEPWB_NER_URL",
            help="NER service (`hepwb ner-serve`) giving entities at ingest and query time; "
            "empty: the in-process HEP dictionary.",
        ),
    ] = "",
    ner_fail_soft: Annotated[
        bool,
        typer.Option(
            "--ner-fail-soft",
            envvar="HEPWB_NER_FAIL_SOFT",
            help="When the NER service fails, index with empty entities (logged) instead of stopping.",
        ),
    ] = False,
) -> None:
    import os

    if ner_url:  # read by hepwb.ner.source.ner_source, here and in worker processes
        os.environ["HEPWB_NER_URL"] = ner_url
    if ner_fail_soft:
        os.environ["HEPWB_NER_FAIL_SOFT"] = "1"
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO, format="%(levelname)s %(name)s: %(message)s"
    )
    configure_runtime()


@app.command()
def ingest(
    corpus: Corpus = None,
    max_docs: MaxDocs = None,
    latex: Latex = True,
    chunk_sizes: Sizes = "512",
    chunk_overlap: Overlap = 0.1,
    chunker: Annotated[str, typer.Option(help="Chunking strategy name.")] = "hepilot",
    hepilot_compliant: Annotated[
        bool, typer.Option(help="HEPilot-compliant mode: refuse chunk sizes outside 512-4096 tokens.")
    ] = False,
) -> None:
    """Convert a corpus and write one HEPilot output tree per chunk size (data/processed/chunksets/)."""
    from hepwb.pipeline.prepare import prepare

    try:
        prep = prepare(
            corpus,
            max_docs=max_docs,
            prefer_latex=latex,
            chunker=chunker,
            require_compliant=hepilot_compliant,
            chunk_sizes=_ints(chunk_sizes),
            chunk_overlap=chunk_overlap,
        )
    except HepwbError as exc:
        _fail(exc)
    typer.echo(prep.chunksets_frame().to_string(index=False))
    for e in prep.log.errors:
        typer.secho(f"{e.error_code}: {e.message}", fg=typer.colors.YELLOW, err=True)


@app.command()
def evaluate(
    corpus: Corpus = None,
    questions: Questions = None,
    max_docs: MaxDocs = None,
    latex: Latex = True,
    chunk_size: Annotated[int, typer.Option(help="Chunk size in tokens.")] = 512,
    chunk_overlap: Overlap = 0.1,
    retriever: Annotated[str, typer.Option(help="Retriever name (see `hepwb retrievers`).")] = "dense",
    k: TopK = 10,
    chunker: Annotated[str, typer.Option(help="Chunking strategy.")] = "hepilot",
    embedding_model: Annotated[
        str, typer.Option(help="Embedding model: a name, a folder, or a model adapted with `hepwb adapt`.")
    ] = "all-MiniLM-L6-v2",
    option: Annotated[
        list[str] | None,
        typer.Option(
            help="Retriever option KEY=VALUE (repeatable), e.g. read=max, weight=0.3, fields=context."
        ),
    ] = None,
    ragas_llm: Annotated[
        bool, typer.Option("--ragas-llm", help="Also LLM-judged ragas metrics (needs HEPWB_LLM_URL/MODEL).")
    ] = False,
) -> None:
    """Evaluate one chunker × retriever configuration in this process; print metrics with 95 % intervals."""
    from hepwb.pipeline import ExperimentConfig, run_experiment

    try:
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
            retriever_options=_options(option or []),
            ragas_llm=ragas_llm,
        )
        res = run_experiment(cfg)
    except HepwbError as exc:
        _fail(exc)
    ci = res.record.summary_ci95
    for name, value in res.summary.items():
        low_high = f"  [{ci[name][0]:.3f}, {ci[name][1]:.3f}]" if name in ci else ""
        typer.echo(f"{name:28s} {value:10.4f}{low_high}")
    typer.echo(f"results: {res.run_dir}")


@app.command()
def report() -> None:
    """Render reports/report.html from the DuckDB catalog (notebooks/30-report.ipynb)."""
    from hepwb.pipeline.report import render_report

    try:
        path = render_report()
    except HepwbError as exc:
        _fail(exc)
    typer.echo(f"report: {path}")


@app.command()
def validate(
    root: Annotated[Path, typer.Argument(help="A HEPilot output tree (a chunk set folder).")],
    schemas: Annotated[
        str | None, typer.Option(help="Folder of HEPilot *.schema.json (default ../shared/hepilot).")
    ] = None,
) -> None:
    """Validate every JSON file of an output tree against the HEPilot schemas."""
    from hepwb.hepilot.schemas import validate_tree
    from hepwb.paths import shared_dir

    try:
        fails = validate_tree(root, schemas or shared_dir() / "hepilot")
    except HepwbError as exc:
        _fail(exc)
    for path, errs in fails.items():
        typer.secho(f"{path}: {errs[0]}", fg=typer.colors.RED)
    n = sum(1 for _ in root.rglob("*.json"))
    typer.echo(f"{n - len(fails)}/{n} JSON files valid")
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
) -> None:
    """Query the DuckDB catalog (reports/catalog.duckdb), joined with LanceDB tables if wanted.

    Read-only unless --write; other files and DuckDB extensions are never reachable from here.
    """
    import duckdb

    from hepwb.paths import Layout
    from hepwb.pipeline import Catalog

    layout = Layout.default()
    try:
        df = Catalog(layout.catalog).sql(query, lancedb=layout.lancedb if lance else None, write=write)
    except (duckdb.InvalidInputException, duckdb.PermissionException) as exc:
        hint = (
            "pass --write to change the catalog" if "read-only" in str(exc) else "use DuckDB itself for files"
        )
        _fail(ValueError(f"{str(exc).splitlines()[0]} ({hint})"))
    except Exception as exc:  # other duckdb errors are user errors here
        _fail(exc)
    typer.echo(df.to_string(index=False))


from hepwb import cli_acquire as _cli_acquire  # noqa: E402, F401  (registers acquire)
from hepwb import cli_adapt as _cli_adapt  # noqa: E402, F401  (registers adapt, fit-fusion)
from hepwb import cli_ner as _cli_ner  # noqa: E402, F401  (registers ner-serve)
from hepwb import cli_ragmd as _cli_ragmd  # noqa: E402, F401  (registers export-/import-/validate-ragmd)
from hepwb import cli_search as _cli_search  # noqa: E402, F401  (registers search, retrievers, testset)
from hepwb import cli_sweep as _cli_sweep  # noqa: E402, F401  (registers sweep, run)
from hepwb import cli_tiers as _cli_tiers  # noqa: E402, F401  (registers tiers)
