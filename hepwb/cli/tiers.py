"""``hepwb tiers``: the two memory tiers from the command line (registered on :data:`hepwb.cli.base.app`)."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from hepwb import defaults
from hepwb.cli.base import App, Corpus, app, fail, parse_words
from hepwb.exceptions import ConfigError
from hepwb.text.plaintext import plain
from hepwb.tiers.query import tier_hits_frame
from hepwb.tiers.settings import TierConfig, load_config
from hepwb.tiers.store import Tiers

_F = TierConfig.model_fields


def _opt(name: str) -> Any:
    """The option of tunable ``name``: its description, and its default shown from the config."""
    return typer.Option(
        help=str(_F[name].description),
        show_default=f"{_F[name].default:g}"
        if isinstance(_F[name].default, float)
        else str(_F[name].default),
    )


tiers_app = App(
    name="tiers",
    help="Two-tier memory: a governed long-term (LT) table and a TTL-bounded HOT table, warmed by the "
    "entities of recent questions, with audited promotion HOT → LT. Tunables below (or --config FILE).",
    no_args_is_help=True,
)
app.add_typer(tiers_app)


@tiers_app.callback()
def _tiers(
    ctx: typer.Context,
    name: Annotated[str, typer.Option(help="Tier folder: data/processed/tiers/NAME.")] = "default",
    config: Annotated[str | None, typer.Option(help="YAML file of the tunables below.")] = None,
    ttl_s: Annotated[float | None, _opt("ttl_s")] = None,
    warm_max_docs: Annotated[int | None, _opt("warm_max_docs")] = None,
    warm_max_rows: Annotated[int | None, _opt("warm_max_rows")] = None,
    recency_s: Annotated[float | None, _opt("recency_s")] = None,
    promote_min_questions: Annotated[int | None, _opt("promote_min_questions")] = None,
    job_max_rows: Annotated[int | None, _opt("job_max_rows")] = None,
    job_min_interval_s: Annotated[float | None, _opt("job_min_interval_s")] = None,
    lt_table: Annotated[str | None, _opt("lt_table")] = None,
    hot_table: Annotated[str | None, _opt("hot_table")] = None,
) -> None:
    overrides = {k: v for k, v in locals().items() if k in _F}
    ctx.obj = (name, load_config(config, **overrides))


def _open(ctx: typer.Context) -> Any:
    name, cfg = ctx.obj
    return Tiers.open(name, config=cfg)


def _existing(ctx: typer.Context) -> Any:
    """The tier folder of a command that only reads: one that does not exist is an error, never created."""
    name, cfg = ctx.obj
    root = Tiers.folder(name)
    if not root.is_dir():
        fail(ConfigError(f"no tier named {name!r} ({root}): create it with `hepwb tiers --name {name} init`"))
    tiers = Tiers.open(name, config=cfg)
    if tiers.meta:  # initialised: its audit trail and tables must be there (a deleted one is not "empty")
        for part in ("audit.duckdb", "lancedb"):
            if not (root / part).exists():
                msg = (
                    f"the tiers in {root} are damaged: {part} is missing (tiers.json says they were "
                    f"initialised); rebuild them with `hepwb tiers --name {name} init CORPUS` "
                    "(the history is lost)"
                )
                fail(ConfigError(msg))
    return tiers


def _table(frame: Any) -> str:
    """``frame`` as text for the terminal, its strings without control sequences (corpus text)."""
    return str(frame.map(lambda v: plain(v) if isinstance(v, str) else v).to_string(index=False))


def _echo(obj: Any) -> None:
    import dataclasses

    data = dataclasses.asdict(obj) if dataclasses.is_dataclass(obj) and not isinstance(obj, type) else obj
    typer.echo(json.dumps(data, indent=2, default=str))


Actor = Annotated[str, typer.Option(help="Who runs the job (recorded in the audit trail).")]
Only = Annotated[str | None, typer.Option(help="Comma-separated labels, e.g. P01,P02 (default: all).")]


@tiers_app.command("init")
def init(
    ctx: typer.Context,
    corpus: Corpus = None,
    only: Only = None,
    chunk_size: Annotated[
        int | None,
        typer.Option(
            help="Chunk size in tokens, fixed at the first init.", show_default=str(defaults.CHUNK_SIZE)
        ),
    ] = None,
    actor: Actor = "hepwb",
) -> None:
    """Ingest the curated corpus into LT (again: changed papers replace theirs, doc_version + 1)."""
    _echo(
        _open(ctx).init_lt(
            corpus, only=parse_words(only) if only else None, chunk_size=chunk_size, actor=actor
        )
    )


@tiers_app.command("acquire")
def acquire(
    ctx: typer.Context,
    folder: Annotated[str, typer.Argument(help="Folder of papers, e.g. `hepwb acquire OUT`'s OUT/pdf.")],
    only: Only = None,
    actor: Actor = "hepwb",
) -> None:
    """Put newly acquired papers into HOT (stamped now; they expire after the TTL unless promoted)."""
    _echo(_open(ctx).acquire(folder, only=parse_words(only) if only else None, actor=actor))


@tiers_app.command("status")
def status(ctx: typer.Context) -> None:
    """Rows, documents and versions per tier, HOT rows past the TTL, audit and signal counts."""
    _echo(_existing(ctx).status())


@tiers_app.command("search")
def search(
    ctx: typer.Context,
    question: Annotated[str, typer.Argument(help="The question.")],
    k: Annotated[int, typer.Option("--k", "-k", help="Hits.")] = defaults.SEARCH_K,
    which: Annotated[str, typer.Option(help="Tiers searched: lt, hot or lt,hot.")] = "lt,hot",
    strict: Annotated[bool, typer.Option(help="Only chunks holding every entity of the question.")] = False,
    record: Annotated[
        bool, typer.Option(help="Record the question (warming and promotion evidence).")
    ] = True,
) -> None:
    """Search both tiers in parallel; each hit says its tier, its matched entities and why."""
    hits = _open(ctx).search(question, k, which=parse_words(which), strict=strict, record=record)
    typer.echo(_table(tier_hits_frame(hits).drop(columns=["snippet"])))


@tiers_app.command("warm")
def warm(
    ctx: typer.Context,
    question: Annotated[
        list[str] | None,
        typer.Option(help="Warm for these questions (default: those asked in the recency window)."),
    ] = None,
    actor: Actor = "hepwb",
) -> None:
    """Copy LT chunks holding any entity of recent questions into HOT (capped per call)."""
    _echo(_open(ctx).warm(question or None, actor=actor))


@tiers_app.command("evict")
def evict(
    ctx: typer.Context,
    dry_run: Annotated[bool, typer.Option(help="Say what would be evicted; change nothing.")] = False,
    actor: Actor = "hepwb",
) -> None:
    """Delete HOT rows older than the TTL (never LT rows); report what was removed."""
    _echo(_open(ctx).evict(actor=actor, dry_run=dry_run))


@tiers_app.command("mark")
def mark(
    ctx: typer.Context,
    chunk_id: Annotated[str, typer.Argument(help="The chunk (a hit's chunk_id).")],
    kind: Annotated[str, typer.Option(help="useful, cited or approved (a human approval).")] = "useful",
    note: Annotated[str, typer.Option(help="Free text kept with the signal.")] = "",
    actor: Actor = "hepwb",
) -> None:
    """Record reinforcement for a chunk: the evidence promotion needs."""
    _open(ctx).mark(chunk_id, kind, actor=actor, note=note)
    typer.echo(plain(f"recorded {kind} for {chunk_id} by {actor}"))


@tiers_app.command("promote")
def promote(
    ctx: typer.Context,
    dry_run: Annotated[bool, typer.Option(help="List the candidates and what would be copied.")] = False,
    actor: Actor = "hepwb",
) -> None:
    """Promote HOT documents that earned it into LT: one commit, audited, idempotent, reversible."""
    t = _open(ctx)
    cands = t.candidates()
    if not cands.empty:
        typer.echo(_table(cands.drop(columns=["entered_hot_ms"])))
    _echo(t.promote(actor=actor, dry_run=dry_run))


@tiers_app.command("revert")
def revert(
    ctx: typer.Context,
    event_id: Annotated[str, typer.Argument(help="The promotion's event_id (hepwb tiers history).")],
    actor: Actor = "hepwb",
) -> None:
    """Undo a promotion: LT's rows of its documents as of the version before it (one commit, audited)."""
    _echo(_open(ctx).revert(event_id, actor=actor))


@tiers_app.command("history")
def history(
    ctx: typer.Context,
    chunk: Annotated[str | None, typer.Option(help="Why is this chunk in LT, and since when?")] = None,
    limit: Annotated[int, typer.Option(help="Events shown, newest first.")] = defaults.HISTORY_LIMIT,
) -> None:
    """The audit trail (init, ingest, acquire, warm, evict, promote, revert) or one chunk's story."""
    t = _existing(ctx)
    if chunk:
        info = t.why(chunk)
        typer.echo(plain(str(info["reason"])))
        return
    frame = t.history(limit=limit)
    cols = ["when", "action", "actor", "status", "rows", "lt_version_before", "lt_version_after", "event_id"]
    typer.echo(_table(frame[cols]))
