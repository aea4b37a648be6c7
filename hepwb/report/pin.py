"""Pin a project's default retriever and chunk size: by hand, or from its own report's recommendation.

:func:`pin_from_report` takes the configuration the verdict of a sweep recommends (the cheapest that
cannot be told apart from the best, :mod:`hepwb.report.verdict`) and writes it to the project's
``hepwb-defaults.json`` (:mod:`hepwb.project_defaults`); :func:`pin_defaults` writes one given by name.
Both validate it as every configuration is validated (:class:`~hepwb.experiment.config.ExperimentConfig`).

Example:
    >>> import tempfile
    >>> root = tempfile.mkdtemp()
    >>> path = pin_defaults("bm25(fields=context)", 1024, root=root)
    >>> current_defaults(root).retriever, current_defaults(root).chunk_size
    ('bm25(fields=context)', 1024)
"""

from __future__ import annotations

from pathlib import Path

from hepwb import defaults
from hepwb.catalog import Catalog
from hepwb.exceptions import ConfigError
from hepwb.experiment.config import ExperimentConfig
from hepwb.paths import Layout
from hepwb.project_defaults import ProjectDefaults, current_defaults, write_defaults
from hepwb.report.verdict import verdict

__all__ = ["checked_defaults", "current_defaults", "pin_defaults", "pin_from_report"]


def checked_defaults(root: str | Path | None = None) -> ProjectDefaults:
    """:func:`current_defaults`, a pinned retriever and size validated as every configuration is.

    Commands call it first, so a damaged or invalid ``hepwb-defaults.json`` is one line naming it, not a
    silent fall-back to the package's defaults nor an error that does not say where the value came from.

    Raises:
        ConfigError: The file is damaged, or pins a retriever or chunk size no configuration takes.
    """
    d = current_defaults(root)
    if d.pinned_in:
        try:
            ExperimentConfig.from_params(retriever=d.retriever, chunk_size=d.chunk_size)
        except ConfigError as exc:
            problem = " ".join(str(exc).split())
            msg = (
                f"{d.pinned_in} pins {d.retriever!r} at {d.chunk_size} tokens, which is no valid "
                f"configuration ({problem}); pin another with `hepwb defaults pin`, or remove it with "
                "`hepwb defaults unpin`"
            )
            raise ConfigError(msg) from None
    return d


def pin_defaults(
    retriever: str, chunk_size: int, *, root: str | Path | None = None, source: str = ""
) -> Path:
    """Validate ``retriever`` (``NAME`` or ``NAME(KEY=VALUE, ...)``) and ``chunk_size``, and pin them.

    Returns:
        The file written (``hepwb-defaults.json`` at the project root).
    """
    cfg = ExperimentConfig.from_params(retriever=retriever, chunk_size=chunk_size)
    return write_defaults(
        ProjectDefaults(cfg.retriever_spec, cfg.chunk_size, source or "pinned by hand"), root
    )


def pin_from_report(
    layout: Layout | None = None, sweep: str = "latest", metric: str = defaults.DECISION_METRIC
) -> tuple[Path, str]:
    """Pin the configuration the verdict of ``sweep`` recommends; returns the file and the verdict sentence.

    Raises:
        ConfigError: The catalog holds no finished run of that sweep (run ``hepwb run`` or ``hepwb sweep``).
    """
    layout = layout or Layout.default()
    cat = Catalog(layout.catalog)
    cat.sync_runs(layout.runs)
    sweep_id = cat.latest_sweep() if sweep == "latest" else sweep
    wide = cat.metrics_wide(sweep_id)
    if wide.empty or metric not in wide.columns:
        msg = f"no finished run of sweep {sweep_id!r} in {layout.catalog}: run `hepwb run` or `hepwb sweep`"
        raise ConfigError(msg)
    decision = verdict(wide, cat.per_question, metric)
    row = wide.set_index("run_id").loc[decision.recommended]
    source = f"verdict of sweep {sweep_id} in {layout.catalog.name}: recommended by {metric}"
    path = pin_defaults(str(row["retriever"]), int(str(row["chunk_size"])), root=layout.root, source=source)
    return path, decision.sentence()
