"""Fixtures shared by the unit tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from hepwb.runtime.env import OFFLINE_VARIABLES


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A scratch folder as the working directory, with the project (``HEPWB_HOME``) in ``proj/`` under it."""
    monkeypatch.setenv("HEPWB_HOME", str(tmp_path / "proj"))
    (tmp_path / "proj").mkdir(exist_ok=True)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def hub_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """``monkeypatch``, with the hub's offline variables and ``HEPWB_ONLINE`` unset (and restored after)."""
    for key in (*OFFLINE_VARIABLES, "HEPWB_ONLINE"):
        monkeypatch.delenv(key, raising=False)
    return monkeypatch
