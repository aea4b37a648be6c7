"""Name-based registries, so papermill parameters and CLI options stay plain strings.

Example:
    >>> reg: Registry[type] = Registry("thing")
    >>> @reg.register("a")
    ... class A: ...
    >>> reg.get("a") is A, reg.names()
    (True, ['a'])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from hepwb.exceptions import ConfigError

__all__ = ["Registry"]

T = TypeVar("T")


class Registry(Generic[T]):
    """A mapping from names to implementations of one pipeline stage."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}

    def register(self, name: str) -> Callable[[T], T]:
        """Return a decorator that registers its argument under ``name``."""

        def deco(obj: T) -> T:
            old = self._items.get(name)
            if old is not None and _qualname(old) != _qualname(obj):
                msg = f"{self.kind} {name!r} is already registered; pick another name"
                raise ConfigError(msg)
            self._items[name] = obj
            return obj

        return deco

    def get(self, name: str) -> T:
        """Look ``name`` up; the error lists the valid names."""
        try:
            return self._items[name]
        except KeyError:
            msg = f"unknown {self.kind} {name!r}; choose one of {self.names()}"
            raise ConfigError(msg) from None

    def names(self) -> list[str]:
        """Registered names, sorted."""
        return sorted(self._items)


def _qualname(obj: object) -> str:
    return f"{getattr(obj, '__module__', '')}.{getattr(obj, '__qualname__', repr(obj))}"
