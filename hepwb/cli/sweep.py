"""``hepwb sweep`` and ``hepwb run`` (the main job), registered on :data:`hepwb.cli.base.app`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from hepwb import defaults
from hepwb.acquisition.acquire_corpus import acquire_corpus
from hepwb.cli.base import Background, Corpus, Latex, MaxDocs, Questions, app, fail, parse_ints, parse_words
from hepwb.cli.sweep_options import (
    Account,
    AdaptMax,
    AdaptMin,
    Cluster,
    DryRun,
    Executor,
    Force,
    GatewayAddress,
    GatewayAuth,
    GpusPerJob,
    GpuWorkers,
    GridChunkers,
    GridK,
    GridOverlaps,
    GridRetrievers,
    GridSizes,
    Image,
    JobExtra,
    JobScript,
    MaxCells,
    Notebooks,
    Queue,
    Scheduler,
    Search,
    SpecFile,
    Store,
    TlsCa,
    TlsCert,
    TlsKey,
    WorkerCores,
    WorkerMemory,
    Workers,
)
from hepwb.corpus.haystack import haystack
from hepwb.exceptions import ConfigError, HepwbError
from hepwb.paths import Layout
from hepwb.report.render import render_report
from hepwb.store import resolve_store
from hepwb.sweep import SweepResult, load_spec, run_sweep
from hepwb.sweep.dryrun import dry_run as plan_summary
from hepwb.sweep.executors.connect import check_scheduler_address, scheduler_security
from hepwb.sweep.gateway import check_gateway_options, make_gateway_cluster
from hepwb.sweep.halving import run_halving
from hepwb.sweep.jobqueue import KINDS, make_cluster
from hepwb.text.ids import short_hash
from hepwb.types import JSONObject


def _spec(file: Path | None, **overrides: Any) -> Any:
    spec = load_spec(file)
    grid = {k: v for k, v in overrides.pop("grid").items() if v is not None}
    return spec.with_overrides(**overrides).with_grid(**grid)


def _grid(
    chunk_sizes: str | None, retrievers: str | None, chunkers: str | None, overlaps: str | None, k: int | None
) -> JSONObject:
    return {
        "chunk_size": parse_ints(chunk_sizes) if chunk_sizes else None,
        "retriever": _named(retrievers, "--retrievers", "bm25,dense") if retrievers else None,
        "chunker": _named(chunkers, "--chunkers", "hepilot,recursive") if chunkers else None,
        "chunk_overlap": _overlaps(overlaps) if overlaps else None,
        "k": k,
    }


def _named(text: str, flag: str, example: str) -> list[str]:
    """The comma-separated names of ``flag``; none at all is one line naming the option."""
    names = parse_words(text)
    if not names:
        msg = f"{flag} {text[:60]!r} names nothing: give comma-separated values such as {example}"
        raise ConfigError(msg)
    return names


def _overlaps(text: str) -> list[float]:
    """The comma-separated overlaps of ``--overlaps`` (fractions); none or a non-number is one line."""
    try:
        return [float(x) for x in _named(text, "--overlaps", "0,0.1,0.25")]
    except ValueError:
        msg = f"--overlaps {text[:60]!r}: expected comma-separated fractions such as 0,0.1,0.25"
        raise ConfigError(msg) from None


def _check_where(executor: str, scheduler: str | None, security: Any = None) -> None:
    """Refuse a scheduler address that would be ignored or is empty, then check it (one line each)."""
    if scheduler is None:
        if security is not None:
            fail(
                ConfigError(
                    "--tls-ca-file/--tls-cert/--tls-key are for --scheduler tls://...; give one or drop them"
                )
            )
        return
    if not scheduler.strip():
        fail(
            ConfigError(
                "--scheduler is empty; give a running scheduler's address (tcp://host:8786) or drop it"
            )
        )
    if executor == "serial":  # local (the default) with a scheduler means dask; serial would ignore it
        msg = (
            f"--scheduler {scheduler} is ignored by --executor serial: drop --executor serial to run the "
            "cells there, or drop --scheduler"
        )
        fail(ConfigError(msg))
    check_scheduler_address(scheduler, security)


def _cluster(
    kind: str | None,
    queue: str | None,
    account: str | None,
    job_extra: list[str] | None,
    gpus: int = 0,
    gateway: JSONObject | None = None,
) -> Any:
    if not kind:
        return None
    if kind == "gateway":  # started by the sweep only when some cell is to run
        options = dict(gateway or {})
        return lambda: make_gateway_cluster(**options)
    return make_cluster(
        kind, home=Layout.default().root, queue=queue, account=account, job_extra=job_extra, gpus_per_job=gpus
    )


@app.command()
def sweep(
    file: SpecFile = None,
    dry_run: DryRun = False,
    executor: Executor = "local",
    scheduler: Scheduler = None,
    workers: Workers = None,
    cluster: Cluster = None,
    queue: Queue = None,
    account: Account = None,
    job_extra: JobExtra = None,
    job_script: JobScript = False,
    notebooks: Notebooks = False,
    force: Force = False,
    search: Search = "",
    corpus: Corpus = None,
    questions: Questions = None,
    max_docs: MaxDocs = None,
    background: Background = None,
    chunk_sizes: GridSizes = None,
    retrievers: GridRetrievers = None,
    chunkers: GridChunkers = None,
    overlaps: GridOverlaps = None,
    k: GridK = None,
    gpu_workers: GpuWorkers = 0,
    gpus_per_job: GpusPerJob = 0,
    max_cells: MaxCells = None,
    gateway_address: GatewayAddress = None,
    gateway_auth: GatewayAuth = None,
    worker_cores: WorkerCores = None,
    worker_memory: WorkerMemory = None,
    image: Image = None,
    adapt_min: AdaptMin = None,
    adapt_max: AdaptMax = None,
    tls_ca_file: TlsCa = None,
    tls_cert: TlsCert = None,
    tls_key: TlsKey = None,
    store: Store = None,
) -> None:
    """Run a sweep: every cell of a YAML grid, each stage computed once, cells on Dask (or --executor serial).

    Finished cells with the same configuration and inputs are skipped, so a killed sweep resumes and an
    unchanged one reruns in about a second. Results go to reports/runs/<cell>/ and the DuckDB catalog.
    """
    security = scheduler_security(tls_ca_file, tls_cert, tls_key)
    _check_where(executor, scheduler, security)  # before the sweep file is read or anything planned
    in_force = resolve_store(store)  # a malformed URL or project setting is one line now
    gateway = _gateway_options(  # and the --cluster kind: a --dry-run says so too
        cluster,
        gateway_address,
        gateway_auth,
        worker_cores=worker_cores,
        worker_memory=worker_memory,
        image=image,
        workers=workers,
        adapt_min=adapt_min,
        adapt_max=adapt_max,
    )
    if background is not None:  # your papers among the background's: an ordinary corpus folder
        corpus = str(haystack(corpus, background))
    spec = _spec(
        file,
        corpus=corpus,
        questions=questions,
        max_docs=max_docs,
        max_cells=max_cells,
        grid=_grid(chunk_sizes, retrievers, chunkers, overlaps, k),
    )
    if job_script:
        _print_job_script(cluster, queue, account, job_extra, gpus_per_job)
        return
    if dry_run:
        _print_plan(spec, notebooks)
        return
    opts = _where_options(executor, scheduler, workers, gpu_workers, security)
    opts["cluster"] = _cluster(cluster, queue, account, job_extra, gpus_per_job, gateway)
    if (search or spec.search) == "halving":
        if in_force is not None:
            fail(ConfigError("--search halving keeps its artefacts on local disk: add --store local"))
        typer.echo(run_halving(spec, **opts).frame().to_string(index=False))  # the winner's line is logged
        return
    result = run_sweep(spec, notebooks=notebooks, force=force, store=store, **opts)
    _print_result(result, spec.metric)
    if result.failed:
        raise typer.Exit(1)


def _where_options(
    executor: str, scheduler: str | None, workers: int | None, gpu_workers: int, security: Any
) -> dict[str, Any]:
    """The keyword arguments of :func:`run_sweep` and :func:`run_halving` that say where cells run."""
    opts = {"executor": executor, "scheduler": scheduler, "n_workers": workers, "gpu_workers": gpu_workers}
    return opts if security is None else {**opts, "security": security}


def _print_job_script(
    kind: str | None, queue: str | None, account: str | None, job_extra: list[str] | None, gpus: int
) -> None:
    """The batch job script a --cluster (Slurm by default) would submit; a gateway has none."""
    if kind == "gateway":
        fail(ConfigError("--job-script prints a batch job script: a gateway cluster has none"))
    c = _cluster(kind or "slurm", queue, account, job_extra, gpus)
    typer.echo(c.job_script())
    c.close()


def _print_plan(spec: Any, notebooks: bool) -> None:
    """The cells of ``spec`` and what of them is cached (``--dry-run``)."""
    summary = plan_summary(spec, notebooks=notebooks)
    typer.echo(summary.frame().to_string(index=False))
    typer.echo(f"\n{summary.summary()}")


def _print_result(result: SweepResult, metric: str) -> None:
    """The cells' table, what was computed, reused and moved, and one red line per failed cell."""
    typer.echo(result.frame(metric).drop(columns=["error"]).to_string(index=False))
    reused = len(result.cells) - len(result.computed) - len(result.failed)
    typer.echo(
        f"{result.sweep_id}: {len(result.computed)} computed, {reused} reused, {len(result.failed)} failed "
        f"in {result.wall_s:.1f} s"
    )
    if result.moved:  # a store-backed sweep: what it cost in transfers
        sent, received = (sum(m[k] for m in result.moved.values()) / 2**20 for k in ("sent", "received"))
        typer.echo(f"artefact store: {sent:.1f} MiB sent, {received:.1f} MiB received")
    for c in result.failed:
        typer.secho(
            f"FAILED {c.key}: {c.stage}: {c.error} (see {c.detail.get('run_dir', '')})",
            fg=typer.colors.RED,
            err=True,
        )


def _gateway_options(kind: str | None, address: str | None, auth: str | None, **options: Any) -> JSONObject:
    """The arguments of :func:`make_gateway_cluster` (checked now); gateway options without it are refused.

    An unknown ``--cluster`` kind is refused here too, before anything is planned.
    """
    if kind is not None and kind not in (*KINDS, "gateway"):
        choices = [*KINDS, "gateway"]
        fail(ConfigError(f"unknown batch system {kind!r} for --cluster; choose one of {choices}"))
    given = {k: v for k, v in {"address": address, "auth": auth, **options}.items() if v is not None}
    if kind != "gateway":
        only = [k for k in given if k not in ("workers",)]
        if only:
            flag = "--" + only[0].replace("_", "-").replace("address", "gateway-address").replace(
                "auth", "gateway-auth"
            )
            fail(ConfigError(f"{flag} is an option of --cluster gateway; add --cluster gateway or drop it"))
        return {}
    check_gateway_options(  # said before anything is planned, even when every cell is done already
        address,
        auth,
        adapt_min=options.get("adapt_min"),
        adapt_max=options.get("adapt_max"),
        image=options.get("image"),
    )
    return given


@app.command()
def run(
    file: SpecFile = None,
    corpus: Corpus = None,
    questions: Questions = None,
    max_docs: MaxDocs = None,
    background: Background = None,
    latex: Latex = True,
    chunk_sizes: GridSizes = None,
    retrievers: GridRetrievers = None,
    chunkers: GridChunkers = None,
    overlaps: GridOverlaps = None,
    k: GridK = None,
    executor: Executor = "local",
    scheduler: Scheduler = None,
    workers: Workers = None,
    arxiv_ids: Annotated[str, typer.Option(help="Start from these arXiv ids (comma-separated).")] = "",
    arxiv_query: Annotated[str, typer.Option(help="Start from an arXiv search (online).")] = "",
    inspire_query: Annotated[str, typer.Option(help="Start from an INSPIRE search (online).")] = "",
    max_results: Annotated[
        int, typer.Option(help="Papers to acquire for a query.")
    ] = defaults.ACQUIRE_MAX_RESULTS,
) -> None:
    """The main job: (acquire,) the sweep of sweeps/default.yaml (or FILE), then reports/report.html.

    With --arxiv-ids/--arxiv-query/--inspire-query the corpus is first acquired into
    data/raw/<source>-<hash>/ (see `hepwb acquire`); otherwise --corpus (or the default) is used.
    """
    from papermill.exceptions import PapermillException

    layout = Layout.default()
    try:
        _check_where(executor, scheduler)  # before anything is acquired or planned
        if arxiv_ids or arxiv_query or inspire_query:
            corpus = str(_acquire_for_run(layout, arxiv_ids, arxiv_query, inspire_query, max_results))
        if background is not None:  # your papers among the background's: an ordinary corpus folder
            corpus = str(haystack(corpus, background, layout=layout))
        spec = _spec(
            file,
            corpus=corpus,
            questions=questions,
            max_docs=max_docs,
            prefer_latex=latex,
            grid=_grid(chunk_sizes, retrievers, chunkers, overlaps, k),
        )
        cells = spec.cells()  # fail fast on bad options, before any work
        typer.echo(f"corpus: {cells[0].corpus}\nquestions: {cells[0].questions}\n{len(cells)} cells")
        result = run_sweep(spec, layout=layout, executor=executor, scheduler=scheduler, n_workers=workers)
        path = render_report(layout, sweep=result.sweep_id, metric=spec.metric)
    except (HepwbError, PapermillException) as exc:
        fail(exc)
    n = len(result.cells)
    typer.echo(
        f"{n - len(result.failed)}/{n} sweep cells ok ({len(result.computed)} computed) in "
        f"{result.wall_s:.0f} s; report: {path}"
    )
    if result.failed:
        for c in result.failed:
            typer.secho(f"FAILED {c.key}: {c.stage}: {c.error}", fg=typer.colors.RED, err=True)
        raise typer.Exit(1)


def _acquire_for_run(layout: Any, ids: str, arxiv_query: str, inspire_query: str, max_results: int) -> Path:
    source = "inspire" if inspire_query else "arxiv"
    query = inspire_query or arxiv_query
    params = {"source": source, "query": query, "ids": ids, "max_results": max_results}
    folder = layout.data / "raw" / f"{source}-{short_hash(params, 8)}"
    res = acquire_corpus(folder, source=source, query=query, ids=ids, max_results=max_results)
    typer.echo(f"acquired {res.n_ok}/{len(res.entries)} papers into {res.corpus}")
    return res.corpus
