"""The serial executor: every task in this process, one after another, exceptions kept in the future."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future
from typing import Any

from hepwb.sweep.executors.base import register_executor

__all__ = ["SerialExecutor"]


def _resolve(value: Any) -> Any:
    return value.result() if isinstance(value, Future) else value


@register_executor("serial")
class SerialExecutor:
    """Runs tasks at submission, in this process (for debugging: breakpoints and tracebacks work).

    Example:
        >>> with SerialExecutor() as ex:
        ...     f = ex.submit(pow, 2, 10)
        ...     ex.result(ex.submit(divmod, f, 7))
        (146, 2)
    """

    name = "serial"

    def __init__(self, **_: Any) -> None:
        pass

    def submit(
        self, fn: Callable[..., Any], *args: Any, key: str | None = None, **kwargs: Any
    ) -> Future[Any]:
        """Run ``fn`` now; the returned future holds its result or exception."""
        fut: Future[Any] = Future()
        try:
            value = fn(*[_resolve(a) for a in args], **{k: _resolve(v) for k, v in kwargs.items()})
        except BaseException as exc:  # kept in the future, raised by result() like a remote task's
            if isinstance(exc, KeyboardInterrupt | SystemExit):
                raise
            fut.set_exception(exc)
        else:
            fut.set_result(value)
        return fut

    def as_completed(self, futures: Iterable[Future[Any]]) -> Iterator[Future[Any]]:
        """The futures in submission order (all are already done)."""
        return iter(list(futures))

    def result(self, future: Future[Any]) -> Any:
        """The task's result."""
        return future.result()

    def describe(self) -> str:
        """Where tasks run."""
        return "serial executor: this process, one task at a time"

    def n_workers(self) -> int:
        """One task at a time."""
        return 1

    def __enter__(self) -> SerialExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        return None
