"""The ``hepwb`` command line (``hepwb.cli:main``): one module per command group.

:mod:`hepwb.cli.base` holds the Typer application and what every command shares; :mod:`hepwb.cli.core`
the core commands (``ingest``, ``prepare``, ``evaluate``, ``report``). Each other module registers its
commands on import, below, in the order ``hepwb --help`` lists them. Adding a command is a module here
and one line below.
"""

from __future__ import annotations

from hepwb.cli.core import app, main

# isort: split
# the core commands first, so `hepwb --help` lists the stages in order
from hepwb.cli import (  # noqa: F401  (each registers its commands on import)
    acquire,  # acquire
    adapt,  # adapt, fit-fusion
    defaults,  # defaults show/pin/unpin
    export,  # export, import-beir, …
    inspect,  # validate, sql
    ner,  # ner-serve
    questions,  # questions check/schema
    ragmd,  # export-/import-/validate-ragmd
    search,  # search, retrievers, testset
    sweep,  # sweep, run
    tiers,  # tiers
)

__all__ = ["app", "main"]
