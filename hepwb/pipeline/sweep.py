"""Sweeps: every grid cell is a papermill run of the parameterized evaluation notebook.

Each cell writes its executed notebook and results into ``reports/runs/<cell_id>/`` and is loaded into
the DuckDB catalog right after it finishes, tagged with the sweep's id so the report can show one
sweep at a time. Parameters are validated before the first cell; cells are independent, so a failed
cell is reported (its old results removed) and the others still run.
"""

from __future__ import annotations

import itertools
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hepwb.exceptions import ConfigError, HepwbError
from hepwb.ids import short_hash
from hepwb.io import write_json
from hepwb.paths import Layout
from hepwb.pipeline.catalog import Catalog

__all__ = [
    "CellResult",
    "grid_cells",
    "notebook_path",
    "run_notebook",
    "run_sweep",
    "sweep_id",
    "validate_grid",
]

_log = logging.getLogger("hepwb.sweep")
EVALUATE_NOTEBOOK = "20-evaluate.ipynb"


@dataclass(frozen=True)
class CellResult:
    """Outcome of one sweep cell."""

    cell_id: str
    run_dir: Path
    parameters: dict[str, Any]
    ok: bool
    error: str | None = None


def notebook_path(name: str, layout: Layout | None = None) -> Path:
    """Path of a project notebook (artefact root first, then the source tree), with a clear error."""
    cands = [
        (layout or Layout.default()).root / "notebooks" / name,
        Path(__file__).resolve().parents[2] / "notebooks" / name,
    ]
    for path in cands:
        if path.is_file():
            return path
    msg = f"notebook {cands[0]} not found; run hepwb from the project folder or set HEPWB_HOME to it"
    raise ConfigError(msg)


def run_notebook(name: str, output: Path, parameters: dict[str, Any], layout: Layout | None = None) -> Path:
    """Execute notebook ``name`` with papermill into ``output`` (cwd: the notebooks folder).

    The notebook receives ``home`` (the artefact root of ``layout``) on top of ``parameters``.
    """
    import papermill as pm

    layout = layout or Layout.default()
    parameters = {"home": str(layout.root), **parameters}
    src = notebook_path(name, layout)
    output.parent.mkdir(parents=True, exist_ok=True)
    pm.execute_notebook(
        str(src),
        str(output),
        parameters=parameters,
        cwd=str(src.parent),
        progress_bar=False,
        kernel_name="python3",
    )
    return output


def grid_cells(chunk_sizes: list[int], retrievers: list[str], **common: Any) -> list[dict[str, Any]]:
    """Parameter dicts of the chunker × chunk_size × retriever grid (retriever innermost: caches are reused).

    ``common`` may hold ``chunkers`` (a list of strategy names) or a single ``chunker``.

    Example:
        >>> [(c["chunk_size"], c["retriever"]) for c in grid_cells([256, 512], ["dense", "bm25"])]
        [(256, 'dense'), (256, 'bm25'), (512, 'dense'), (512, 'bm25')]
        >>> [c["chunker"] for c in grid_cells([256], ["bm25"], chunkers=["hepilot", "token"])]
        ['hepilot', 'token']
    """
    common = dict(common)
    chunkers = list(common.pop("chunkers", None) or [common.pop("chunker", "hepilot")])
    common.pop("chunker", None)
    if not chunk_sizes or not retrievers or not chunkers:
        msg = "a sweep needs at least one chunker, one chunk size and one retriever"
        raise ConfigError(msg)
    return [
        {**common, "chunker": c, "chunk_size": s, "retriever": r}
        for c, s, r in itertools.product(chunkers, chunk_sizes, retrievers)
    ]


def validate_grid(chunk_sizes: list[int], retrievers: list[str], **common: Any) -> None:
    """Check every cell's parameters before any work starts (names the bad option and the fix)."""
    from hepwb.chunking import get_chunker
    from hepwb.pipeline.experiment import ExperimentConfig, questions_path
    from hepwb.retrieval import RETRIEVERS

    for r in retrievers:
        RETRIEVERS.get(r)
    for params in grid_cells(chunk_sizes, retrievers, **common):
        cfg = ExperimentConfig.from_params(**params)
        get_chunker(
            cfg.chunker, chunk_size=cfg.chunk_size, chunk_overlap=cfg.chunk_overlap, tokenizer=cfg.tokenizer
        )
    questions_path(common.get("questions"))


def sweep_id(chunk_sizes: list[int], retrievers: list[str], **common: Any) -> str:
    """Deterministic id of a sweep: the same grid and parameters give the same id."""
    return "sweep-" + short_hash({"chunk_sizes": chunk_sizes, "retrievers": retrievers, **common}, 10)


def _clear_results(run_dir: Path) -> None:
    # a failed re-run must not leave the previous run's numbers behind for the report
    for name in ("metrics.json", "per_question.parquet", "hits.parquet", "sweep.json"):
        (run_dir / name).unlink(missing_ok=True)


def run_sweep(
    chunk_sizes: list[int],
    retrievers: list[str],
    *,
    layout: Layout | None = None,
    **common: Any,
) -> list[CellResult]:
    """Run the grid cell by cell with papermill and record every finished run in the catalog.

    Parameters are validated first; a cell that fails is logged and reported, and the others still run.
    """
    from papermill.exceptions import PapermillException
    from tqdm.auto import tqdm

    validate_grid(chunk_sizes, retrievers, **common)
    layout = layout or Layout.default()
    catalog = Catalog(layout.catalog)
    sid = sweep_id(chunk_sizes, retrievers, **common)
    catalog.record_sweep(sid, {"chunk_sizes": chunk_sizes, "retrievers": retrievers, **common})
    results: list[CellResult] = []
    for params in tqdm(grid_cells(chunk_sizes, retrievers, **common), desc="sweep", unit="cell"):
        tag = short_hash({k: v for k, v in params.items() if k not in ("retriever", "chunk_size")}, 6)
        cell_id = (
            f"{params.get('chunker', 'hepilot')}-cs{params['chunk_size']}-"
            f"ov{params.get('chunk_overlap', 0.1):g}-{params['retriever']}-{tag}"
        )
        run_dir = layout.runs / cell_id
        cell = {**params, "run_dir": str(run_dir)}
        _clear_results(run_dir)
        try:
            run_notebook(EVALUATE_NOTEBOOK, run_dir / EVALUATE_NOTEBOOK, cell, layout)
            write_json(run_dir / "sweep.json", {"sweep_id": sid, "cell_id": cell_id})
            catalog.record_run(run_dir)
            results.append(CellResult(cell_id, run_dir, cell, ok=True))
        except (HepwbError, PapermillException, OSError) as exc:
            _log.error("sweep cell %s failed: %s", cell_id, exc)
            results.append(CellResult(cell_id, run_dir, cell, ok=False, error=str(exc)[-2000:]))
    return results
