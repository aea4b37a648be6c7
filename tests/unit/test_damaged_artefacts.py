"""Damaged artefacts hepwb wrote itself are named, not crashed on (issue 38 item 3).

A catalog, a tiers' audit file or tier state that does not parse (or a DuckDB file with a corrupt block, an
audit file that is a folder, a damaged LanceDB table): one line saying which file, that it is damaged, and the
command that rebuilds it; exit status 2, never a traceback. Cached conversions and chunk-set manifests under
``data/`` that cannot be read (a FIFO, a device, a size its record does not say, a list) are named and
rebuilt.
"""

from __future__ import annotations

import json
import os
import sys

import pytest
from typer.testing import CliRunner

from hepwb.cli import app, main
from hepwb.cli.core import _damaged_table
from hepwb.paths import Layout
from hepwb.tiers.audit import AuditLog
from hepwb.tiers.store import Tiers
from tests.helpers import one_error_line, run_hepwb, run_main

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


def _corrupt_blocks(path, start: int = 12_288) -> None:
    """Overwrite every byte of the DuckDB file ``path`` from ``start`` (default: after its 3 headers)."""
    size = path.stat().st_size
    with path.open("r+b") as fh:
        fh.seek(start)
        fh.write(os.urandom(size - start))


def test_a_corrupt_block_of_the_catalog_is_named_by_report_and_sql(home, monkeypatch, capsys):
    from hepwb.catalog import Catalog

    catalog = Layout.default().catalog
    cat = Catalog(catalog)
    with cat._connect() as con:
        con.execute("CREATE TABLE filler AS SELECT range AS x, md5(range::VARCHAR) AS pad FROM range(100000)")
    assert catalog.stat().st_size > 500_000
    # 200 kB in the middle (the table's data, not the first block's metadata): the catalog
    # opens, and the query reading that block fails
    with catalog.open("r+b") as fh:
        fh.seek(300_000)
        fh.write(os.urandom(200_000))
    code, _, err = run_main(monkeypatch, capsys, "sql", "SELECT sum(length(pad)) FROM filler")
    line = one_error_line(err)
    assert code == 2 and f"the catalog {catalog} is damaged (Corrupt database file" in line
    assert "delete it and run `hepwb report`" in line
    _corrupt_blocks(catalog)  # the first block too (the tables' metadata): opening the catalog fails
    code, _, err = run_main(monkeypatch, capsys, "report")
    line = one_error_line(err)
    assert code == 2 and f"the catalog {catalog} is damaged" in line and "hepwb report" in line


def test_a_corrupt_block_of_the_audit_file_is_named_by_tiers_history(home, monkeypatch, capsys):
    layout = Layout.default()
    path = Tiers.folder("default", layout) / "audit.duckdb"
    log = AuditLog(path)
    with log.connect() as con:
        con.execute(
            "INSERT INTO audit SELECT uuid()::VARCHAR, range, 'mark', 'alice', 'done', 1, [], [], '', "
            "0, 0, 0, 0, json_object('n', md5(range::VARCHAR)), range FROM range(20000)"
        )
    assert path.stat().st_size > 500_000
    # every block after the first (its metadata): history reads only the newest rows' blocks, so all are hit
    _corrupt_blocks(path, start=12_288 + 262_144)
    code, _, err = run_main(monkeypatch, capsys, "tiers", "history")
    line = one_error_line(err)
    assert code == 2 and f"the tiers' audit file {path} is damaged (Corrupt database file" in line
    assert "hepwb tiers init" in line


def test_an_audit_file_that_is_a_folder_is_named_as_damaged(tmp_path, monkeypatch):
    from hepwb.paths import Layout
    from hepwb.tiers.store import Tiers

    monkeypatch.setenv("HEPWB_HOME", str(tmp_path))
    folder = Tiers.folder("default", Layout(tmp_path))
    (folder / "audit.duckdb").mkdir(parents=True)
    res = runner.invoke(app, ["tiers", "history"])
    assert (
        res.exit_code == 2
        and "is a folder, not a DuckDB file" in res.output
        and "hepwb tiers init" in res.output
    )


def test_a_damaged_lance_table_is_one_line(monkeypatch, capsys, tmp_path):
    boom = RuntimeError("lance error: Corrupt file /x/lt.lance/_versions/1.manifest: not enough bytes")
    assert "damaged or unreadable" in str(_damaged_table(boom))

    def fail() -> None:
        raise boom

    monkeypatch.setenv("HEPWB_HOME", str(tmp_path))
    monkeypatch.setattr("hepwb.cli.core.app", lambda **_: fail())
    monkeypatch.setattr("hepwb.cli.core.repeated_option", lambda *_: None)
    monkeypatch.setattr("hepwb.cli.core.typer.main.get_command", lambda _: None)
    monkeypatch.setattr(sys, "argv", ["hepwb", "retrievers"])
    with pytest.raises(SystemExit) as info:
        main()
    err = capsys.readouterr().err
    assert info.value.code == 2 and "LanceDB table is damaged" in err and err.count("\n") == 1


@pytest.mark.heavy
def test_damaged_cached_documents_and_chunk_set_manifests_are_named_and_rebuilt(tmp_path):
    """Hostile-input probe 5 (issue 38), F3 (``full_document.md`` a FIFO: a hang; a link to /dev/zero or 2 GB
    sparse: read whole, MemoryError) and M2 (``chunkset.json`` = ``[]``: exit 3), all in one search."""
    from tests.helpers import tiny_corpus

    corpus, _ = tiny_corpus(tmp_path)
    home = tmp_path / "home"
    res = CliRunner().invoke(
        app, ["ingest", "--corpus", str(corpus), "--chunk-sizes", "48"], env={"HEPWB_HOME": str(home)}
    )
    assert res.exit_code == 0, res.output
    folders = sorted((home / "data" / "interim" / "documents").glob("[ABC]0*"))
    texts = [f / "full_document.md" for f in folders]
    good = [t.read_bytes() for t in texts]
    for t in texts:
        t.unlink()
    os.mkfifo(texts[0])
    texts[1].symlink_to("/dev/zero")
    with texts[2].open("wb") as fh:
        fh.truncate(2 * 1024**3)
    (manifest,) = (home / "data" / "processed" / "chunksets").glob("*/chunkset.json")
    fingerprint = json.loads(manifest.read_text(encoding="utf-8"))["fingerprint"]
    manifest.write_text("[]", encoding="utf-8")

    res = run_hepwb(home, "search", "Compton scattering", "--corpus", str(corpus), "--chunk-size", "48")
    code, out = res.returncode, (res.stdout + res.stderr).decode()
    assert code == 0 and "[1] A01" in out, out
    whys = ("is a FIFO", "is a character device", "has 2,147,483,648 bytes, its record says")
    for folder, text, why in zip(folders, texts, whys, strict=True):
        line = next(ln for ln in out.splitlines() if f"cached conversion {folder} is unreadable" in ln)
        assert f"cached conversion text {text} {why}" in line and "again" in line, line
    assert f"chunk set manifest {manifest} holds a list, not a JSON object" in out, out
    assert out.count("is unreadable") == 4, out  # each logged once, not by two loggers
    assert [t.read_bytes() for t in texts] == good  # converted again
    assert json.loads(manifest.read_text(encoding="utf-8"))["fingerprint"] == fingerprint
