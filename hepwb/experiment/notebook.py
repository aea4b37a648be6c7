"""papermill: the project notebooks as parameterized records of a run.

Every run folder holds ``parameters.yaml`` and ``rerun.sh``, the exact papermill command that
re-executes that run alone as ``20-evaluate.ipynb`` (same parameters, same artefact root, so the
notebook reuses every cached stage and writes the same results into the same folder).
"""

from __future__ import annotations

import logging
import os
import shlex
import sys
from pathlib import Path

from hepwb import defaults
from hepwb.exceptions import ConfigError
from hepwb.files.io import atomic_write_text
from hepwb.paths import Layout
from hepwb.types import JSONObject

__all__ = [
    "EVALUATE_NOTEBOOK",
    "notebook_path",
    "papermill_command",
    "quick_look",
    "run_notebook",
    "write_rerun_files",
]

EVALUATE_NOTEBOOK = "20-evaluate.ipynb"

_log = logging.getLogger("hepwb")


def quick_look(corpus: str | None, max_docs: int | None, quick: bool = True) -> int | None:
    """The ``max_docs`` a project notebook runs with: yours when given; else all of a corpus you name.

    Given neither (``corpus=None`` without ``$HEPWB_CORPUS``, and ``max_docs=None``), a notebook takes a quick
    look at the first :data:`~hepwb.defaults.QUICK_LOOK_DOCS` papers of the shipped corpus, and says so in one
    line. A corpus named by the ``corpus`` parameter (papermill ``-p corpus DIR``) or ``$HEPWB_CORPUS`` is
    never cut short unless ``max_docs`` is given too. A sweep's notebook cell passes ``quick=False``: its
    ``None`` values mean every shipped paper, as in its configuration.

    Example:
        >>> quick_look("my-papers", None) is None
        True
        >>> quick_look("my-papers", 2)
        2
        >>> quick_look(None, None, quick=False) is None
        True
    """
    if not quick or max_docs is not None or corpus or os.environ.get("HEPWB_CORPUS"):
        return max_docs
    _log.info(
        "a quick look: the first %d papers of the shipped corpus (max_docs=None with corpus=None); name a "
        "corpus or give max_docs to read more",
        defaults.QUICK_LOOK_DOCS,
    )
    return defaults.QUICK_LOOK_DOCS


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


def run_notebook(name: str, output: Path, parameters: JSONObject, layout: Layout | None = None) -> Path:
    """Execute notebook ``name`` with papermill into ``output`` (cwd: the notebooks folder).

    The notebook receives ``home`` (the artefact root of ``layout``) on top of ``parameters``.
    """
    import papermill as pm
    from traitlets.config import Config

    layout = layout or Layout.default()
    parameters = {"home": str(layout.root), **parameters}
    _kernel_folders(layout)
    # CurveZMQ between papermill and the kernel (ipykernel's kernelspec declares support): without it every
    # kernel logs "Kernel is running over TCP without encryption"
    kernel_config = Config({"KernelManager": {"transport_encryption": "auto"}})
    src = notebook_path(name, layout)
    output.parent.mkdir(parents=True, exist_ok=True)
    pm.execute_notebook(
        str(src),
        str(output),
        parameters=parameters,
        cwd=str(src.parent),
        progress_bar=False,
        kernel_name="python3",
        config=kernel_config,
    )
    return output


def _kernel_folders(layout: Layout) -> None:
    """The kernel's IPython profile, connection files and matplotlib cache under ``data/interim/jupyter``.

    Not in ``$HOME``; only when the user has not chosen them (``IPYTHONDIR``, ``JUPYTER_RUNTIME_DIR``,
    ``MPLCONFIGDIR``); set for this process, whose kernels inherit them.
    """
    folder = layout.data / "interim" / "jupyter"
    for variable, sub in (
        ("IPYTHONDIR", "ipython"),
        ("JUPYTER_RUNTIME_DIR", "runtime"),
        ("MPLCONFIGDIR", "mpl"),
    ):
        if not os.environ.get(variable):
            (folder / sub).mkdir(parents=True, exist_ok=True)
            os.environ[variable] = str(folder / sub)


def notebook_parameters(config: JSONObject, run_dir: Path, layout: Layout) -> JSONObject:
    """The ``20-evaluate`` parameters that reproduce ``config`` into ``run_dir``."""
    resolved = {"run_dir": str(run_dir.resolve()), "home": str(layout.root.resolve())}
    return {**config, **resolved, "quick": False}  # None means every paper here, never a quick look


def papermill_command(run_dir: Path, layout: Layout) -> str:
    """The shell lines that re-execute the run in ``run_dir`` as a notebook (with ``$PYTHON`` if set)."""
    src = notebook_path(EVALUATE_NOTEBOOK, layout).resolve()
    out = (run_dir / EVALUATE_NOTEBOOK).resolve()
    params = (run_dir / "parameters.yaml").resolve()
    # every interpolated value is quoted, the interpreter too: a path holding $(…) or backticks stays a path
    return (
        f'PYTHON="${{PYTHON:-}}"\nif [ -z "$PYTHON" ]; then PYTHON={shlex.quote(sys.executable)}; fi\n'
        f'"$PYTHON" -m papermill {shlex.quote(str(src))} {shlex.quote(str(out))} '
        f"-f {shlex.quote(str(params))} --cwd {shlex.quote(str(src.parent))} -k python3"
    )


def write_rerun_files(run_dir: Path, config: JSONObject, layout: Layout) -> None:
    """Write ``parameters.yaml`` and ``rerun.sh`` (executable) into ``run_dir``."""
    import yaml

    params = notebook_parameters(config, run_dir, layout)
    atomic_write_text(
        run_dir / "parameters.yaml",
        "# parameters of notebooks/20-evaluate.ipynb for this run (see rerun.sh)\n"
        + yaml.safe_dump(params, sort_keys=True),
    )
    script = run_dir / "rerun.sh"
    atomic_write_text(
        script,
        "#!/usr/bin/env bash\n"
        "# Re-executes this run alone as a notebook (papermill); results are written back into this folder.\n"
        "set -euo pipefail\n" + papermill_command(run_dir, layout) + "\n",
    )
    script.chmod(0o755)
