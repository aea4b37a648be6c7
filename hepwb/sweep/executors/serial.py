"""The serial executor: every task in this process, one after another, exceptions kept in the future."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future
from typing import Any

from hepwb.sweep.executors.base import register_executor

__all__ = ["SerialExecutor"]


@register_executor("serial")
class SerialExecutor:
    """Runs tasks in this process, one after another (for debugging: breakpoints and tracebacks work).

    A task runs when its result is first needed: when :meth:`as_completed` reaches it, when
    :meth:`result` asks for it, or when a later task takes it as an argument. Submitting a batch
    therefore returns at once, and a progress bar opened after the submissions advances task by task.

    Example:
        >>> with SerialExecutor() as ex:
        ...     f = ex.submit(pow, 2, 10)
        ...     ex.result(ex.submit(divmod, f, 7))
        (146, 2)
    """

    name = "serial"

    def __init__(self, **_: Any) -> None:
        self._pending: dict[Future[Any], tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]] = {}

    def submit(
        self, fn: Callable[..., Any], *args: Any, key: str | None = None, gpu: bool = False, **kwargs: Any
    ) -> Future[Any]:
        """Queue ``fn``; it runs here when its result is needed, in submission order per request."""
        fut: Future[Any] = Future()
        self._pending[fut] = (fn, args, kwargs)
        return fut

    def _resolve(self, value: Any) -> Any:
        if isinstance(value, Future):
            self._run(value)
            return value.result()
        return value

    def _run(self, fut: Future[Any]) -> None:
        task = self._pending.pop(fut, None)
        if task is None:
            return
        fn, args, kwargs = task
        try:
            value = fn(*[self._resolve(a) for a in args], **{k: self._resolve(v) for k, v in kwargs.items()})
        except BaseException as exc:  # kept in the future, raised by result() like a remote task's
            if isinstance(exc, KeyboardInterrupt | SystemExit):
                raise
            fut.set_exception(exc)
        else:
            fut.set_result(value)

    def as_completed(self, futures: Iterable[Future[Any]]) -> Iterator[Future[Any]]:
        """The futures in submission order, each run as it is reached."""
        for fut in list(futures):
            self._run(fut)
            yield fut

    def result(self, future: Future[Any]) -> Any:
        """The task's result (running it first if it has not run)."""
        self._run(future)
        return future.result()

    def describe(self) -> str:
        """Where tasks run."""
        return "serial executor: this process, one task at a time"

    def n_workers(self) -> int:
        """One task at a time."""
        return 1

    def __enter__(self) -> SerialExecutor:
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        if exc_type is None:  # tasks nobody asked for still run, as on an eager executor
            for fut in list(self._pending):
                self._run(fut)
