"""Root pytest configuration: isolate artefacts and skip shared-material tests when ../shared is absent."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from hepwb.paths import shared_dir

SHARED = shared_dir(Path(__file__).resolve().parent)
HAVE_SHARED = (SHARED / "corpus" / "papers" / "pdf").is_dir()
SKIP_REASON = f"needs the shared test material at {SHARED} (set HEPWB_SHARED to its folder)"


def pytest_configure(config: pytest.Config) -> None:
    """Offline, telemetry-free runs whose artefacts go to a throw-away home, never into the checkout."""
    if "HEPWB_HOME" not in os.environ:
        home = Path(tempfile.mkdtemp(prefix="hepwb-test-home-"))
        os.environ["HEPWB_HOME"] = str(home)
    os.environ.setdefault("HEPWB_SHARED", str(SHARED))
    for key, value in {"HF_HUB_OFFLINE": "1", "RAGAS_DO_NOT_TRACK": "true", "ORT_DISABLE_TELEMETRY": "1",
                       "TOKENIZERS_PARALLELISM": "false", "HF_HUB_DISABLE_TELEMETRY": "1"}.items():
        os.environ.setdefault(key, value)


_BY_FOLDER = {"integration": pytest.mark.integration, "browser": pytest.mark.browser}
SLOW_NOTEBOOKS = {"04-batch-sweep-and-catalog.ipynb"}
"""Notebooks nbval runs in ``make test-slow`` (``.ci/run`` runs it too), keeping ``make test`` in its budget:
tutorial 4's sweep of four executed notebooks (about a minute) is what
``tests/integration/test_sweep_dask.py::test_notebooks_are_the_record`` runs in ``make test``."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark tests by folder (integration, browser) and notebooks; skip shared-material tests without it."""
    for item in items:
        for folder, mark in _BY_FOLDER.items():
            if folder in item.path.parts:
                item.add_marker(mark)
        if item.path.suffix == ".ipynb":
            item.add_marker(pytest.mark.notebook)
            item.add_marker(pytest.mark.shared)
            if item.path.name in SLOW_NOTEBOOKS:
                item.add_marker(pytest.mark.slow)
        if "shared" in item.keywords and not HAVE_SHARED:
            item.add_marker(pytest.mark.skip(reason=SKIP_REASON))
