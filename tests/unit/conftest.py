"""Fixtures shared by the unit tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A scratch folder as the working directory, with the project (``HEPWB_HOME``) in ``proj/`` under it."""
    monkeypatch.setenv("HEPWB_HOME", str(tmp_path / "proj"))
    (tmp_path / "proj").mkdir(exist_ok=True)
    monkeypatch.chdir(tmp_path)
    return tmp_path
