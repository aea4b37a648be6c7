"""One rule for every user-given name that becomes a path: nothing is written outside its folder."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from hepwb.cli import app
from hepwb.exceptions import ConfigError
from hepwb.sweep.spec import SweepSpec, SweepSpecError
from hepwb.text.names import check_name, under
from hepwb.tiers.store import Tiers

HOSTILE = ["../../x", "/tmp/abs", "a/b", ".hidden", "", "x" * 129, "a..b", "a b", "tab\tname"]


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_names_are_refused_everywhere(tmp_path, monkeypatch, name):
    monkeypatch.setenv("HEPWB_HOME", str(tmp_path))
    before = set(tmp_path.parent.iterdir())
    with pytest.raises(ConfigError, match="is not a plain name"):
        check_name(name, "tier")
    with pytest.raises(ConfigError, match=r"tier name .* is not a plain name"):
        Tiers.open(name)
    with pytest.raises(SweepSpecError, match=r"sweep name .* is not a plain name"):
        SweepSpec.from_dict({"name": name})
    out = CliRunner().invoke(app, ["tiers", "--name", name, "status"])
    assert out.exit_code == 2 and "tier name" in out.output and out.output.count("\n") == 1
    assert set(tmp_path.parent.iterdir()) == before  # nothing created beside the project
    assert not (tmp_path / "data").exists() or not any((tmp_path / "data").rglob("*.duckdb"))


def test_plain_names_resolve_inside_their_folder(tmp_path):
    assert under(tmp_path, "hep-fusion", "fusion fit", ".json") == (tmp_path / "hep-fusion.json").resolve()
    (tmp_path / "link").symlink_to("/tmp")
    with pytest.raises(ConfigError, match="outside"):
        under(tmp_path, "link", "tier")


@pytest.mark.parametrize("command", [["status"], ["history"], ["history", "--chunk", "c1"]])
def test_reading_a_tier_that_does_not_exist_creates_nothing(tmp_path, monkeypatch, command):
    monkeypatch.setenv("HEPWB_HOME", str(tmp_path))
    out = CliRunner().invoke(app, ["tiers", "--name", "never-made", *command])
    assert out.exit_code == 2, out.output
    assert "no tier named 'never-made'" in out.output and "hepwb tiers --name never-made init" in out.output
    assert not (tmp_path / "data").exists()
