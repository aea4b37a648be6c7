"""Run coroutines without touching the caller's event loop (Jupyter kernels run one).

ipykernel 7 executes every cell inside its own running asyncio loop. Libraries that need to run a
coroutine from synchronous code either fail there (``asyncio.run`` refuses a running loop) or
patch that loop with ``nest_asyncio`` (ragas' synchronous ``single_turn_score`` and its executor
do). Patching the kernel's loop breaks its message handling: with *Run All* queued, the kernel
raises ``cannot enter context … is already entered`` and the cells after it never run.

:func:`run_isolated` runs a coroutine on a fresh loop, in a short-lived worker thread whenever
the calling thread already has a running loop, so no library ever sees (or patches) the kernel's;
:func:`off_loop` does the same for a synchronous library call that runs its own coroutines.

Example:
    >>> async def answer() -> int:
    ...     return 42
    >>> run_isolated(answer())
    42
    >>> async def inside_a_running_loop() -> int:
    ...     return run_isolated(answer())  # as in a notebook cell under ipykernel 7
    >>> run_isolated(inside_a_running_loop())
    42
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

__all__ = ["loop_is_running", "off_loop", "run_isolated"]

T = TypeVar("T")
P = ParamSpec("P")


def loop_is_running() -> bool:
    """Whether the calling thread is inside a running asyncio loop (a Jupyter cell is).

    Example:
        >>> async def cell() -> bool:
        ...     return loop_is_running()
        >>> run_isolated(cell())
        True
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def run_isolated(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to completion on a new event loop that no other code shares.

    Without a running loop in this thread it is ``asyncio.run``; inside one (a notebook cell) the
    new loop lives in a worker thread and this call blocks until it is done. Exceptions propagate.
    """
    return off_loop(asyncio.run, coro)


def off_loop(fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """Call ``fn(*args, **kwargs)`` where no event loop is running, so it cannot patch one.

    Directly when this thread has no running loop; otherwise in a worker thread, blocking until it
    returns. For synchronous library calls that drive their own coroutines (ragas' test-set
    generator applies ``nest_asyncio`` to any loop it finds running).

    Example:
        >>> off_loop(loop_is_running)
        False
        >>> async def in_a_cell() -> bool:
        ...     return off_loop(loop_is_running)
        >>> run_isolated(in_a_cell())
        False
    """
    if not loop_is_running():
        return fn(*args, **kwargs)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="hepwb-aio") as pool:
        return pool.submit(fn, *args, **kwargs).result()
