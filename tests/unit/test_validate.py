"""``hepwb validate`` reads every JSON file of a HEPilot tree with the bounded reader, holds it to RFC 8259,
and refuses a folder that holds no HEPilot files."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from hepwb.cli import app
from tests.helpers import assert_one_line_exit_2

runner = CliRunner()


def test_validate_reads_every_json_file_of_the_tree(tmp_path):
    (tmp_path / "documents" / "x").mkdir(parents=True)
    (tmp_path / "catalog.json").write_text("{}", encoding="utf-8")
    (tmp_path / "documents" / "x" / "front_matter.json").write_text("[" * 100_000, encoding="utf-8")
    (tmp_path / "zz.json").symlink_to("/dev/zero")
    res = runner.invoke(app, ["validate", str(tmp_path)])
    assert res.exit_code == 1, res.output
    assert "front_matter.json" in res.output and "nested deeper" in res.output
    assert "zz.json: a link to /dev/zero, outside the folder validated, not read" in res.output
    assert "0/3 JSON files valid" in res.output


def test_validate_holds_files_to_rfc_8259_json(tmp_path):
    doc = tmp_path / "documents" / "P00"
    doc.mkdir(parents=True)
    (tmp_path / "catalog.json").write_text("{}", encoding="utf-8")
    (doc / "references.json").write_text('{"x": NaN, "y": -Infinity}', encoding="utf-8")
    (doc / "figures.json").write_text('{"x": 1e999999}', encoding="utf-8")
    (doc / "tables.json").write_text('{"x": 1.5e300, "y": [1, -2.5]}', encoding="utf-8")
    res = runner.invoke(app, ["validate", str(tmp_path)])
    assert res.exit_code == 1, res.output
    lines = res.output.splitlines()
    refs = next(line for line in lines if line.startswith("documents/P00/references.json: "))
    figs = next(line for line in lines if line.startswith("documents/P00/figures.json: "))
    assert "NaN is not a JSON number (RFC 8259)" in refs
    assert "the number 1e999999 is beyond the range of a float" in figs
    assert not any(line.startswith("documents/P00/tables.json") for line in lines)


@pytest.mark.parametrize("files", [[], ["notes.json"]])
def test_validate_refuses_a_folder_without_hepilot_files(home, files):
    (home / "empty").mkdir()
    for name in files:
        (home / "empty" / name).write_text("{}")
    res = runner.invoke(app, ["validate", "empty"])
    assert_one_line_exit_2(res, "no HEPilot JSON files in empty", "data/processed/chunksets/ID")
