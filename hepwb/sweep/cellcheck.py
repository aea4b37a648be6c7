"""One raw cell of a sweep file → a validated configuration, or every problem placed in the file.

A raw cell (a dict of a grid combination or an ``include`` entry, with the fixed settings) is validated
through :class:`~hepwb.experiment.config.ExperimentConfig`; each problem names where its value came from
(``grid.chunk_size[1]``), the value and the fix, in the configuration's own words. Corpus folders and
question files are resolved to absolute paths once per distinct value.

Example:
    >>> cfg, problems = to_config({"chunk_size": 0}, {"chunk_size": "grid.chunk_size[1]"}, "s.yaml", None)
    >>> cfg is None, problems[0].startswith("s.yaml: grid.chunk_size[1] = 0: ")
    (True, True)
"""

from __future__ import annotations

import reprlib
from pathlib import Path
from typing import Any, TypeAlias

from hepwb.acquisition.folder import corpus_files, resolve_corpus
from hepwb.exceptions import HepwbError
from hepwb.experiment.config import DIMENSIONS, ExperimentConfig, validated
from hepwb.experiment.stages import questions_path
from hepwb.types import JSONObject

__all__ = ["InputCache", "short", "to_config"]

InputCache: TypeAlias = dict[tuple[str, str], tuple[str | None, str | None]]
"""``{(key, value): (absolute path, problem)}`` of the corpus folders and question files resolved so far."""


def short(value: Any) -> str:
    """A value for a message, cut short without building its whole repr first.

    Example:
        >>> short(list(range(10**6)))
        '[0, 1, 2, 3, 4, 5, ...]'
    """
    return reprlib.repr(value)


def _resolve_input(key: str, value: Any) -> tuple[str | None, str | None]:
    """The absolute path of a cell's corpus folder or question file, or its problem."""
    try:
        if key == "corpus":
            folder = resolve_corpus(value)
            corpus_files(folder)
            return str(folder.resolve()), None
        return str(questions_path(value).resolve()), None
    except HepwbError as exc:
        return None, str(exc)


def _resolve_inputs(values: JSONObject, seen: InputCache) -> dict[str, str]:
    """Resolve the cell's corpus folder and question file in place; their problems by key.

    Each distinct value is resolved once, in ``seen``.
    """
    problems: dict[str, str] = {}
    for key in ("corpus", "questions"):
        value = values.get(key)
        if value is not None and not isinstance(value, str | Path):
            continue  # the configuration reports the type
        ident = (key, str(value) if value is not None else "")
        if ident not in seen:
            seen[ident] = _resolve_input(key, value)
        path, problem = seen[ident]
        if problem is not None:
            problems[key] = problem
        else:
            values[key] = path
    return problems


def to_config(
    raw: JSONObject,
    origin: dict[str, str],
    source: str,
    inputs: InputCache | None,
) -> tuple[ExperimentConfig | None, list[str]]:
    """Validate one raw cell through :class:`ExperimentConfig`; the config, or every problem at once.

    Each problem names where the value came from in the file (``grid.chunk_size[1]``), the value and
    the fix; the message itself is the configuration's (one source per bound). ``inputs`` caches
    resolved corpus folders and question files (``None``: they are not checked).
    """
    values = dict(raw)
    found = _resolve_inputs(values, inputs) if inputs is not None else {}
    config, problems = validated(values)
    problems = {**problems, **found}
    if config is not None and not problems:
        return config, []
    order = {d: i for i, d in enumerate(DIMENSIONS)}
    errs = [
        f"{source}: {origin.get(key, key)} = {short(raw.get(key))}: {text}"
        for key, text in sorted(problems.items(), key=lambda kv: order.get(kv[0], len(order)))
    ]
    return None, errs
