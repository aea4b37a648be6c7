"""``hepwb acquire`` (registered on :data:`hepwb.cli.base.app`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from hepwb import defaults
from hepwb.acquisition.acquire_corpus import AcquireConfig, acquire_corpus
from hepwb.cli.base import app


@app.command()
def acquire(
    out: Annotated[
        Path, typer.Argument(help="Output folder (pdf/, tex/, papers.json, HEPilot JSON outputs).")
    ],
    source: Annotated[
        str, typer.Option(help="arxiv (REST API), oai (OAI-PMH set/dates), inspire or local.")
    ] = "arxiv",
    folder: Annotated[str, typer.Option(help="Folder of PDFs (source local).")] = "",
    query: Annotated[
        str, typer.Option(help="arXiv search query or INSPIRE query ('t dvcs and cn hermes').")
    ] = "",
    ids: Annotated[str, typer.Option(help="Comma-separated arXiv ids (source arxiv).")] = "",
    oai_set: Annotated[str, typer.Option(help="OAI-PMH set, e.g. physics:hep-ex.")] = "",
    date_from: Annotated[str, typer.Option("--from", help="OAI-PMH from date (YYYY-MM-DD).")] = "",
    date_until: Annotated[str, typer.Option("--until", help="OAI-PMH until date (YYYY-MM-DD).")] = "",
    max_results: Annotated[int, typer.Option(help="Documents at most.")] = defaults.ACQUIRE_MAX_RESULTS,
    sources: Annotated[
        bool, typer.Option("--sources/--pdf-only", help="Also fetch LaTeX source tarballs.")
    ] = True,
    min_interval: Annotated[
        float, typer.Option(help="Seconds between requests to one host (arXiv asks 3).")
    ] = defaults.ACQUIRE_MIN_INTERVAL_S,
    arxiv_url: Annotated[
        str, typer.Option(help="arXiv API base URL.", envvar="HEPWB_ARXIV_API_URL")
    ] = "https://export.arxiv.org/api/query",
    oai_url: Annotated[
        str, typer.Option(help="arXiv OAI-PMH base URL.", envvar="HEPWB_ARXIV_OAI_URL")
    ] = "https://oaipmh.arxiv.org/oai",
    inspire_url: Annotated[
        str, typer.Option(help="INSPIRE API base URL.", envvar="HEPWB_INSPIRE_URL")
    ] = "https://inspirehep.net/api",
    pdf_base: Annotated[
        str,
        typer.Option(
            help="Where PDFs (/pdf/<id>) and sources (/e-print/<id>) live.", envvar="HEPWB_ARXIV_PDF_BASE"
        ),
    ] = "https://arxiv.org",
    credentials: Annotated[Path | None, typer.Option(help="credentials.json (git-ignored).")] = None,
    credential_id: Annotated[str, typer.Option(help="Credential id in the credentials file.")] = "",
) -> None:
    """Discover papers (arXiv, OAI-PMH, INSPIRE) and download, verify and describe them for processing."""
    cfg = AcquireConfig(
        source=source, query=query, ids=tuple(i.strip() for i in ids.split(",") if i.strip()),
        oai_set=oai_set, date_from=date_from, date_until=date_until, max_results=max_results,
        sources=sources, arxiv_url=arxiv_url, oai_url=oai_url, inspire_url=inspire_url,
        pdf_base=pdf_base, min_interval_s=min_interval, credential_id=credential_id, folder=folder,
    )  # fmt: skip
    res = acquire_corpus(out, cfg, credentials=credentials)
    failed = len(res.entries) - res.n_ok
    typer.echo(f"{len(res.entries)} discovered, {res.n_ok} acquired and verified, {failed} failed -> {out}")
    for e in res.log.errors:
        typer.secho(f"{e.error_code}: {e.message}", fg=typer.colors.YELLOW, err=True)
    typer.echo(f"next: hepwb run --corpus {res.corpus}")
    if failed and not res.n_ok:
        raise typer.Exit(1)
