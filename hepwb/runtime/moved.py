"""Modules that moved in 0.x, importable under their old names for one release (with a warning).

``import hepwb.io`` still works and is :mod:`hepwb.files.io` itself (one module object, so a patch through
either name is seen through both); the first import under the old name warns with the new one.

Example:
    >>> import sys, warnings
    >>> _ = sys.modules.pop("hepwb.textkey", None)  # imported under its old name before: import it again
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     import hepwb.textkey as old
    >>> import hepwb.text.textkey as new
    >>> old is new, "hepwb.text.textkey" in str(caught[-1].message)
    (True, True)
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from types import ModuleType

GROUPS: dict[str, tuple[str, ...]] = {
    "files": ("io", "readers", "parsers", "yamlio", "dbfile", "locks", "publish"),
    "text": ("textkey", "plaintext", "names", "labels", "ids"),
    "components": ("registry", "callspec", "options"),
    "runtime": ("env", "deps", "aio", "jsonpost", "urls", "llm"),
}
_CLI: tuple[str, ...] = (
    "acquire",
    "adapt",
    "args",
    "crash",
    "defaults",
    "evaluate_options",
    "export",
    "inspect",
    "ner",
)
_CLI += ("questions", "ragmd", "runfile", "search", "show", "sweep", "sweep_options", "tiers")

_PIPELINE = {
    "chunk_table": "chunking.table",
    "chunksets": "chunking.chunksets",
    "prepare": "chunking.prepare",
    "runfolder": "runs.folder",
    "record": "runs.record",
    "misses": "report.misses",
    "config": "experiment.config",
    "keys": "experiment.keys",
    "stages": "experiment.stages",
    "cell": "experiment.cell",
    "scoring": "experiment.scoring",
    "experiment": "experiment.run",
    "compare": "experiment.compare",
    "curve": "experiment.curve",
    "search": "experiment.search",
    "fusion_fit": "experiment.fusion_fit",
    "notebook": "experiment.notebook",
    "questions_check": "experiment.questions_check",
}

#: old dotted name -> new dotted name
MOVED: dict[str, str] = {
    **{f"hepwb.{m}": f"hepwb.{pkg}.{m}" for pkg, mods in GROUPS.items() for m in mods},
    **{f"hepwb.cli_{c}": f"hepwb.cli.{c}" for c in _CLI},
    "hepwb.cli_app": "hepwb.cli.base",
    **{f"hepwb.pipeline.{old}": f"hepwb.{new}" for old, new in _PIPELINE.items()},
}


class _Alias(importlib.abc.Loader):
    """Loads an old name as the module of its new name (the same object)."""

    def __init__(self, new: str) -> None:
        self.new = new

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        self.old = spec.name
        module = importlib.import_module(self.new)
        self.real_spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        module.__spec__ = self.real_spec  # the import system set the old name's spec on it
        warnings.warn(
            f"{self.old} was imported under its old name; it is {self.new} now "
            "(the old name goes in the next release)",
            DeprecationWarning,
            stacklevel=2,
        )


class _MovedFinder(importlib.abc.MetaPathFinder):
    """Finds the old names of :data:`MOVED`."""

    def find_spec(
        self, fullname: str, path: object = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        new = MOVED.get(fullname)
        if new is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Alias(new))


def install() -> None:
    """Let the old names of moved modules import (once per process)."""
    if not any(isinstance(f, _MovedFinder) for f in sys.meta_path):
        sys.meta_path.append(_MovedFinder())
