"""The layout: a small root; every module that moved still imports under its old name for one release."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

import hepwb
from hepwb.runtime.moved import MOVED

ROOT = Path(hepwb.__file__).parent


def test_root_holds_only_what_every_layer_shares() -> None:
    modules = sorted(p.stem for p in ROOT.glob("*.py"))
    expected = ["__init__", "defaults", "exceptions", "limits", "paths", "project_defaults", "types"]
    assert modules == expected
    assert (ROOT / "cli" / "__init__.py").is_file()


@pytest.mark.parametrize("old", sorted(MOVED))
def test_old_name_is_the_moved_module_and_warns(old: str) -> None:
    new = importlib.import_module(MOVED[old])
    if old.startswith("hepwb.pipeline."):
        sys.modules.pop("hepwb.pipeline", None)
        with pytest.warns(DeprecationWarning):  # the old package itself warns too, once
            importlib.import_module("hepwb.pipeline")
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=MOVED[old].replace(".", r"\.")):
        module = importlib.import_module(old)
    assert module is new
    assert module.__spec__ is not None and module.__spec__.name == MOVED[old]  # the real spec kept


def test_moved_names_point_at_modules_that_exist() -> None:
    for new in MOVED.values():
        assert (ROOT.parent / (new.replace(".", "/") + ".py")).is_file(), new


def test_command_line_entry_point_unchanged() -> None:
    from hepwb.cli import app, main

    assert callable(main)
    names = [c.name or (c.callback.__name__ if c.callback else "") for c in app.registered_commands]
    assert names[0] == "ingest"  # the core commands first, as `hepwb --help` lists the stages
    assert {"acquire", "search", "sweep"} <= set(names)


def test_the_pipeline_package_warns_and_reexports_the_experiment_api() -> None:
    import hepwb.experiment

    sys.modules.pop("hepwb.pipeline", None)
    with pytest.warns(DeprecationWarning, match="hepwb.experiment"):
        pipeline = importlib.import_module("hepwb.pipeline")
    assert pipeline.run_experiment is hepwb.experiment.run_experiment
    assert sorted(pipeline.__all__) == sorted(hepwb.experiment.__all__)
    assert sorted(p.name for p in (ROOT / "pipeline").iterdir() if p.suffix == ".py") == ["__init__.py"]
