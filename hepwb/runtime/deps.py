"""Optional dependencies: which extra installs which package, and one error naming the fix.

The base install runs every stage from the command line; the extras add JupyterLab and widgets
(``lab``), Dask sweeps (``sweep``), Dask Gateway clusters and object storage (``facility``), ragas
metrics and test sets (``ragas``) and model adaptation (``adapt``). Code that needs one imports it under
:func:`extra`, so a missing package says what to install instead of raising a bare ``ModuleNotFoundError``.

Example:
    >>> import sys
    >>> sys.modules["dask_jobqueue"] = None  # as if the `sweep` extra were not installed
    >>> with extra("sweep", "an HTCondor cluster"):
    ...     import dask_jobqueue
    Traceback (most recent call last):
    ...
    hepwb.exceptions.DependencyError: an HTCondor cluster needs dask_jobqueue: pip install 'hepwb[sweep]'
    >>> del sys.modules["dask_jobqueue"]
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from hepwb.exceptions import DependencyError

__all__ = ["EXTRAS", "extra"]

EXTRAS: dict[str, tuple[str, ...]] = {
    "lab": ("jupyterlab", "ipywidgets", "anywidget", "altair"),
    "sweep": ("dask", "distributed", "dask_jobqueue", "bokeh", "cryptography"),
    # fsspec itself is not listed: torch and huggingface_hub install it with the base package
    "facility": ("dask_gateway", "s3fs", "aiobotocore", "botocore"),
    "ragas": ("ragas", "langchain_community", "langchain_core", "openai"),
    "adapt": ("datasets", "accelerate", "sklearn"),
}
"""The top-level modules each extra of ``pyproject.toml`` installs."""


@contextmanager
def extra(name: str, what: str) -> Iterator[None]:
    """Imports inside this block that fail for a package of extra ``name`` raise :class:`DependencyError`.

    Args:
        name: The extra (a key of :data:`EXTRAS`).
        what: What needs it, for the message (``"ragas metrics"``).
    """
    try:
        yield
    except ModuleNotFoundError as exc:
        missing = (exc.name or "").split(".")[0]
        if missing not in EXTRAS[name]:
            raise
        msg = f"{what} needs {missing}: pip install 'hepwb[{name}]'"
        raise DependencyError(msg) from None
