"""The executor protocol and registry: where a sweep's tasks run.

An executor takes plain functions with picklable arguments (``submit``) and hands back futures; a
future passed as an argument to ``submit`` is a dependency (its result is passed in its place).
``serial`` runs everything in this process, one task at a time (for debugging); ``dask`` runs on a
:class:`distributed.LocalCluster` sized to the machine, on any running Dask cluster
(``scheduler="tcp://host:8786"``) or on an HTCondor/Slurm cluster from dask-jobqueue.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol, runtime_checkable

from hepwb.components.registry import Registry
from hepwb.exceptions import HepwbError

__all__ = ["EXECUTORS", "ClusterLostError", "Executor", "register_executor"]


class ClusterLostError(HepwbError, ConnectionError):
    """The cluster a sweep runs on went away mid-sweep: no cell's fault; the sweep stops, rerun resumes it."""


@runtime_checkable
class Executor(Protocol):
    """What every executor provides (a context manager closing what it started)."""

    name: str

    def submit(
        self, fn: Callable[..., Any], *args: Any, key: str | None = None, gpu: bool = False, **kwargs: Any
    ) -> Any:
        """Schedule ``fn(*args, **kwargs)``; future arguments are waited for and replaced by their result.

        ``gpu``: a model task (embedding) that runs on a GPU worker when the executor has any.
        """
        ...

    def as_completed(self, futures: Iterable[Any]) -> Iterator[Any]:
        """The futures in the order they finish."""
        ...

    def result(self, future: Any) -> Any:
        """The result of ``future`` (raising the task's error, or the worker's loss)."""
        ...

    def describe(self) -> str:
        """One line saying where tasks run (workers, threads, dashboard)."""
        ...

    def n_workers(self) -> int:
        """How many tasks can run at once."""
        ...

    def __enter__(self) -> Executor: ...

    def __exit__(self, *exc: object) -> None: ...


EXECUTORS: Registry[type] = Registry("executor")


def register_executor(name: str) -> Any:
    """Class decorator registering an executor under ``name``."""
    return EXECUTORS.register(name)
