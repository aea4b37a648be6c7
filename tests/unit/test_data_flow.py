"""The path a sweep cell's configuration takes to its metrics stays short (issues #39, #49).

The tracer follows the configuration and its values: every hepwb function that receives the cell's dict, its
validated :class:`~hepwb.experiment.config.ExperimentConfig`, its chunk size (an unusual number, so that no
other argument equals it) or its retriever's name while the cell's chunk-set, index and cell tasks run, in
the order first called. Two numbers measure the path:

- *calls*: how many distinct functions the configuration passes through;
- *returns to a higher layer*: how often the next function on the path lies in a higher layer than the one
  before it (the layers of import-linter's contract in ``pyproject.toml``): the path went down into a
  stage and came back up to be handed on, instead of flowing down once.

A run resolves its configuration once (the sweep's plan validates it, the tasks receive the validated
object, the run folder comes from the plan), so neither number grows when a stage is added below.
"""

from __future__ import annotations

import sys
import threading
import tomllib
from pathlib import Path
from types import FrameType
from typing import Any

from hepwb.experiment.config import ExperimentConfig
from hepwb.paths import Layout
from hepwb.sweep import SweepSpec, run_sweep
from tests.helpers import tiny_corpus

ROOT = Path(__file__).resolve().parents[2]
TASKS = {"chunkset_task", "index_task", "cell_task"}
# Following the values (not only the configuration object): 30 calls and 3 returns up today (36 and 5 before
# the loaders took the corpus fields alone and a run stopped checking again the options its configuration
# checked). Issue #49 asks for 18 calls; the bounds hold today's path so that it can only get shorter.
MAX_CALLS = 30
MAX_RETURNS_UP = 4
CHUNK_SIZE = 67  # no other argument on the path is 67
RETRIEVER = "bm25_plain"


def _layers() -> list[list[str]]:
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    layers = contracts[0]["layers"]
    return [[n.strip() for n in line.replace(":", "|").split("|")] for line in layers]


def layer_of(module: str, layers: list[list[str]]) -> int:
    """The index of ``module``'s layer (0 the highest): its longest matching name in the contract."""
    best, length = len(layers), -1
    for i, names in enumerate(layers):
        for name in names:
            if (module == name or module.startswith(name + ".")) and len(name) > length:
                best, length = i, len(name)
    return best


def _carries_config(frame: FrameType) -> bool:
    code = frame.f_code
    for name in code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]:
        value = frame.f_locals.get(name)
        if isinstance(value, ExperimentConfig):
            return True
        if isinstance(value, dict) and "chunk_size" in value and "retriever" in value:
            return True
        if (type(value) is int and value == CHUNK_SIZE) or (isinstance(value, str) and value == RETRIEVER):
            return True  # the values themselves, handed on without the configuration
    return False


def _in_a_task(frame: FrameType | None) -> bool:
    while frame is not None:
        if frame.f_code.co_name in TASKS and frame.f_globals.get("__name__") == "hepwb.sweep.tasks":
            return True
        frame = frame.f_back
    return False


def trace_cell(spec: SweepSpec, layout: Layout) -> list[tuple[str, str]]:
    """``(module, function)`` of every hepwb function the configuration passes through, in order."""
    path: list[tuple[str, str]] = []

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        module = frame.f_globals.get("__name__", "")
        if not module.startswith("hepwb.") or module.startswith("hepwb.sweep.executors"):
            return
        step = (module, frame.f_code.co_qualname)
        if step not in path and _carries_config(frame) and _in_a_task(frame):
            path.append(step)

    sys.setprofile(profile)
    threading.setprofile(profile)
    try:
        result = run_sweep(spec, layout=layout, executor="serial", progress=False)
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
    assert not result.failed, [c.error for c in result.failed]
    return path


def returns_up(path: list[tuple[str, str]], layers: list[list[str]]) -> list[str]:
    """The steps of ``path`` that lie in a higher layer than the step before them.

    Example:
        >>> layers = [["hepwb.sweep"], ["hepwb.experiment"], ["hepwb.text.ids"]]
        >>> returns_up([("hepwb.sweep.tasks", "a"), ("hepwb.experiment.cell", "b"), ("hepwb.text.ids", "c"),
        ...             ("hepwb.experiment.cell", "d"), ("hepwb.sweep.tasks", "e")], layers)
        ['hepwb.experiment.cell.d', 'hepwb.sweep.tasks.e']
    """
    out, before = [], None
    for module, function in path:
        level = layer_of(module, layers)
        if before is not None and level < before:
            out.append(f"{module}.{function}")
        before = level
    return out


def test_a_cells_configuration_reaches_its_metrics_in_few_calls(tmp_path):
    corpus, questions = tiny_corpus(tmp_path)
    spec = SweepSpec.from_dict(
        {
            "corpus": str(corpus),
            "questions": str(questions),
            "tokenizer": "words",
            "chunk_size": CHUNK_SIZE,
            "retriever": RETRIEVER,
        }
    )
    path = trace_cell(spec, Layout(tmp_path / "home"))
    steps = [f"{m}.{f}" for m, f in path]
    assert "hepwb.experiment.cell.run_cell" in steps  # the tracer saw the run (never passes on nothing)
    assert len(path) <= MAX_CALLS, f"{len(path)} calls on the configuration's path: {steps}"
    up = returns_up(path, _layers())
    assert len(up) <= MAX_RETURNS_UP, f"{len(up)} returns to a higher layer: {up} on {steps}"
