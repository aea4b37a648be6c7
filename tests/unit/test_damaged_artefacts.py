"""Damaged artefacts hepwb wrote itself are named, not crashed on (issue 38 item 3).

A catalog, a tiers' audit file or tier state that does not parse: one line saying which file, that it is
damaged, and the command that rebuilds it; exit status 2, never a traceback.
"""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from hepwb.cli import app
from hepwb.paths import Layout
from hepwb.tiers.store import Tiers

runner = CliRunner()


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("HEPWB_HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    return Layout(tmp_path)


@pytest.mark.parametrize("content", [b"", b"\x00" * 4096, bytes(range(256)) * 64])
def test_a_damaged_catalog_names_itself_and_the_rebuild(home, content):
    home.catalog.parent.mkdir(parents=True, exist_ok=True)
    home.catalog.write_bytes(content)
    res = runner.invoke(app, ["sql", "SELECT 1"])
    assert res.exit_code == 2, res.output
    assert str(home.catalog) in res.output and "is damaged" in res.output and "hepwb report" in res.output
    assert res.output.count("\n") == 1


@pytest.mark.parametrize("content", [b"", b"{", b"[1, 2]", b"\xff\xfe"])
def test_damaged_tier_state_names_itself_and_the_rebuild(home, content):
    folder = Tiers.folder("default", home)
    folder.mkdir(parents=True)
    (folder / "tiers.json").write_bytes(content)
    res = runner.invoke(app, ["tiers", "status"])
    assert res.exit_code == 2, res.output
    assert "tiers.json" in res.output and "hepwb tiers init" in res.output, res.output


def test_a_damaged_audit_file_names_itself_and_the_rebuild(home):
    folder = Tiers.folder("default", home)
    folder.mkdir(parents=True)
    (folder / "audit.duckdb").write_bytes(bytes(range(256)) * 64)
    res = runner.invoke(app, ["tiers", "history"])
    assert res.exit_code == 2, res.output
    assert "audit.duckdb is damaged" in res.output and "hepwb tiers init" in res.output, res.output


def test_an_audit_file_cut_short_names_itself_and_the_rebuild(home):
    import duckdb

    folder = Tiers.folder("default", home)
    folder.mkdir(parents=True)
    path = folder / "audit.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE filler AS SELECT range AS x FROM range(100000)")
    con.close()
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    res = runner.invoke(app, ["tiers", "history"])
    assert res.exit_code == 2, res.output
    assert "audit.duckdb is damaged" in res.output and "hepwb tiers init" in res.output, res.output


@pytest.mark.parametrize(
    ("meta", "words"),
    [
        ({"embedding_model": "all-MiniLM-L6-v2", "sources": []}, "'chunking' is missing"),
        ({"chunking": {"name": "hepilot", "chunk_size": "x", "chunk_overlap": 0.1},
          "embedding_model": "all-MiniLM-L6-v2", "sources": []}, "'chunking.chunk_size'"),
        ({"chunking": {"name": "hepilot", "chunk_size": 512, "chunk_overlap": 0.1}, "sources": []},
         "'embedding_model'"),
    ],
)  # fmt: skip
def test_tier_state_with_broken_fields_is_named_as_damaged(home, meta, words):
    import json

    folder = Tiers.folder("default", home)
    folder.mkdir(parents=True)
    (folder / "tiers.json").write_text(json.dumps(meta), encoding="utf-8")
    res = runner.invoke(app, ["tiers", "status"])
    assert res.exit_code == 2, res.output
    assert "tiers.json is damaged" in res.output and words in res.output and "hepwb tiers init" in res.output


@pytest.mark.parametrize("missing", ["audit.duckdb", "lancedb"])
def test_initialised_tiers_missing_their_audit_or_tables_are_named(home, missing):
    import json

    folder = Tiers.folder("default", home)
    folder.mkdir(parents=True)
    meta = {"chunking": {"name": "hepilot", "chunk_size": 512, "chunk_overlap": 0.1},
            "embedding_model": "all-MiniLM-L6-v2", "sources": []}  # fmt: skip
    (folder / "tiers.json").write_text(json.dumps(meta), encoding="utf-8")
    for part in {"audit.duckdb", "lancedb"} - {missing}:
        (folder / part).mkdir() if part == "lancedb" else (folder / part).write_bytes(b"")
    res = runner.invoke(app, ["tiers", "history"])
    assert res.exit_code == 2, res.output
    assert f"{missing} is missing" in res.output and "hepwb tiers --name default init" in res.output
