"""``hepwb search``, ``hepwb retrievers`` and ``hepwb testset`` (registered on :data:`hepwb.cli.base.app`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from hepwb import defaults
from hepwb.cli.base import Corpus, Latex, MaxDocs, Overlap, Retrievers, app, fail, parse_words
from hepwb.components.callspec import named
from hepwb.evaluation import locate_all
from hepwb.evaluation.testset import ragas_questions, save_questions, structural_questions
from hepwb.exceptions import ConfigError
from hepwb.experiment import ingest
from hepwb.experiment.search import Searcher
from hepwb.ragmd.index import RagmdIndex
from hepwb.report.pin import checked_defaults
from hepwb.retrieval.base import check_retriever_options
from hepwb.retrieval.explain import citation, snippet
from hepwb.runtime.llm import LLMEndpoint
from hepwb.text.plaintext import plain
from hepwb.types import Hit


@app.command()
def search(
    question: Annotated[str, typer.Argument(help="The question to search for.")],
    retrievers: Retrievers = defaults.SEARCH_RETRIEVER,
    k: Annotated[int, typer.Option("--k", "-k", help="Hits per retriever.")] = defaults.SEARCH_K,
    chunker: Annotated[
        str, typer.Option(help="Chunking strategy of the chunk set searched.")
    ] = defaults.CHUNKER,
    chunk_size: Annotated[
        int | None,
        typer.Option(help="Chunk size in tokens (the default: `hepwb defaults show`).", show_default=False),
    ] = None,
    overlap: Overlap = defaults.CHUNK_OVERLAP,
    corpus: Corpus = None,
    max_docs: MaxDocs = None,
    latex: Latex = True,
    as_json: Annotated[bool, typer.Option("--json", help="Print the hits as JSON lines.")] = False,
    ragmd: Annotated[
        Path | None, typer.Option(help="Search this .ragmd file alone (retrievers dense, bm25, hybrid).")
    ] = None,
    table: Annotated[
        str | None, typer.Option(help="Search this LanceDB table (e.g. an imported .ragmd).")
    ] = None,
    collaboration: Annotated[
        str | None,
        typer.Option(help="Only papers of this collaboration (front matter or metadata), e.g. HERMES."),
    ] = None,
    author: Annotated[str | None, typer.Option(help="Only papers with this author, e.g. Airapetian.")] = None,
) -> None:
    """Search a chunk set with one or more retrievers; print citations, why, a snippet and links.

    The links are what a hit mentions: figures (with their captions), tables, equations,
    sections and bibliography entries (with arXiv id or DOI). Corpus files that cannot be converted are
    named after the hits and the exit status is 2 (as grep's when a file could not be read).
    """
    import dataclasses
    from collections.abc import Callable

    pinned = checked_defaults()  # a damaged hepwb-defaults.json is one line, not silently the package's
    chunk_size = pinned.chunk_size if chunk_size is None else chunk_size
    run: Callable[[str], list[Hit]]
    not_converted: list[tuple[str, str]] = []
    for name in parse_words(retrievers):  # options (a saved fit among them) checked before any chunking
        check_retriever_options(*named(name))
    if ragmd is not None and table is not None:
        fail(ConfigError("give --ragmd FILE or --table NAME, not both: each names the index to search"))
    if ragmd is not None:
        idx = RagmdIndex.load(ragmd)
        label, run = str(ragmd), lambda name: idx.search(question, name, k)
        links: Callable[[Hit], list[str]] = lambda _h: []  # noqa: E731
    else:
        s = (
            Searcher.at_table(table)
            if table
            else Searcher.open(corpus, chunker, chunk_size, overlap, max_docs=max_docs, prefer_latex=latex)
        )
        label, links, not_converted = s.name, s.links, s.not_converted
        run = lambda name: s.search(question, name, k, collaboration=collaboration, author=author)  # noqa: E731

    for name in parse_words(retrievers):
        hits = run(name)
        if as_json:
            for h in hits:
                typer.echo(json.dumps({**dataclasses.asdict(h), "citation": citation(h), "links": links(h)}))
            continue
        typer.secho(f"== {name} ({label})", bold=True)
        for h in hits:
            typer.echo(citation(h))
            typer.echo(f"    why: {plain(h.why)}")
            typer.echo(f"    {snippet(h, 240)}")
            for link in links(h):
                typer.echo(f"    links: {plain(link)}")
    if not_converted:  # like grep: the hits of the files that could be read, then exit 2 naming the others
        typer.echo(
            f"{len(not_converted)} corpus file(s) could not be converted and were not searched:", err=as_json
        )
        for path, reason in not_converted:
            line = reason if reason.startswith(path) else f"{path}: {reason}"
            typer.echo(f"  {plain(line)}", err=as_json)
        raise typer.Exit(2)


@app.command("retrievers")
def list_retrievers(
    chunk_size: Annotated[
        int, typer.Option(help="Chunk size of the chunk set used for the check.")
    ] = defaults.CHUNK_SIZE,
    corpus: Corpus = None,
    max_docs: MaxDocs = defaults.AVAILABILITY_MAX_DOCS,
) -> None:
    """List the retrievers and whether each can run here (cross-encoder, LLM endpoint …)."""
    s = Searcher.open(corpus, defaults.CHUNKER, chunk_size, max_docs=max_docs)
    for name, state in s.availability().items():
        colour = typer.colors.GREEN if state == "ok" else typer.colors.YELLOW
        typer.secho(f"{name:14s} {state}", fg=colour)


@app.command()
def testset(
    out: Annotated[Path, typer.Argument(help="JSONL file to write (hepqa format).")],
    corpus: Corpus = None,
    max_docs: MaxDocs = None,
    max_per_doc: Annotated[
        int, typer.Option(help="Questions per paper at most.")
    ] = defaults.TESTSET_MAX_PER_DOC,
    llm: Annotated[
        int, typer.Option(help="Also N questions from ragas' generator (needs HEPWB_LLM_URL/MODEL).")
    ] = 0,
    latex: Latex = True,
) -> None:
    """Generate a test set for a corpus: section- and caption-based questions with verbatim evidence."""
    docs = ingest(corpus, max_docs=max_docs, prefer_latex=latex, progress=False)
    questions = structural_questions(docs, max_per_doc=max_per_doc)
    if llm:
        questions += ragas_questions(docs, LLMEndpoint.from_env(), size=llm)
    located, unlocated = locate_all(questions, docs)
    save_questions(questions, out)
    typer.echo(f"{len(questions)} questions from {len(docs)} papers -> {out}")
    typer.echo(f"evidence located: {len(located)}; not located: {len(unlocated)}")
