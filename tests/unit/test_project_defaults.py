"""Pinned project defaults (``hepwb-defaults.json``, ``hepwb defaults``): a damaged, hostile or misplaced pin
is one line naming the file and ``hepwb defaults unpin`` (exit 2) in every command that reads it; ``--help``
still works; hepwb's own pin reads back."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from hepwb.cli import app
from hepwb.exceptions import ConfigError
from hepwb.project_defaults import ProjectDefaults, current_defaults, write_defaults
from tests.helpers import assert_one_line_exit_2, run_main

runner = CliRunner()


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A scratch project (``HEPWB_HOME`` and the working directory) with a two-paper markdown corpus."""
    monkeypatch.setenv("HEPWB_HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "corpus").mkdir()
    quote = "An average value of -0.23"
    (tmp_path / "corpus" / "P01.md").write_text(f"# A\n\n{quote} plus or minus 0.04 is obtained.\n")
    (tmp_path / "corpus" / "P02.md").write_text("# B\n\nThe t-slope parameter b was found to be 6.02.\n")
    return tmp_path


@pytest.mark.parametrize("source", ["\u001b]52;c;aGk=\u0007 evil", "\u009b2J clear", "x" * 20_000, 7])
def test_project_defaults_with_control_codes_in_source_are_refused(home, monkeypatch, capsys, source):
    pinned = home / "hepwb-defaults.json"
    pinned.write_text(json.dumps({"retriever": "bm25", "chunk_size": 64, "source": source}))
    code, out, err = run_main(monkeypatch, capsys, "defaults", "show")
    assert code == 2 and "\x1b" not in out + err and "\x9b" not in out + err
    line = err.strip()
    assert "\n" not in line and "hepwb-defaults.json: source" in line and "hepwb defaults unpin" in line


def test_project_defaults_with_a_plain_source_are_shown(home, monkeypatch, capsys):
    pinned = home / "hepwb-defaults.json"
    pinned.write_text(json.dumps({"retriever": "bm25", "chunk_size": 64, "source": "my report"}))
    code, out, _ = run_main(monkeypatch, capsys, "defaults", "show")
    assert code == 0 and "bm25" in out and "64" in out


def test_an_unknown_key_in_the_pinned_defaults_is_named(tmp_path):
    (tmp_path / "hepwb-defaults.json").write_text(
        '{"retriever": "bm25", "chunk_size": 512, "chunksize": 256}'
    )
    with pytest.raises(ConfigError, match=r"unknown key\(s\) \['chunksize'\]"):
        current_defaults(tmp_path)


def test_a_repeated_key_in_the_pinned_defaults_is_named(home):
    (home / "hepwb-defaults.json").write_text('{"retriever": "bm25", "chunk_size": 256, "chunk_size": 512}')
    with pytest.raises(ConfigError, match="key 'chunk_size' appears twice"):
        current_defaults(home)


def test_a_bool_chunk_size_is_refused(home):
    (home / "hepwb-defaults.json").write_text('{"retriever": "bm25", "chunk_size": false}')
    with pytest.raises(ConfigError, match=r"chunk_size: .*got False"):
        current_defaults(home)


def test_hepwbs_own_pin_still_reads(home):
    write_defaults(ProjectDefaults("bm25", 256, "test"), home)
    assert current_defaults(home).chunk_size == 256


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ('{"retriever": "bm', "invalid JSON"),
        ('{"retriever": "bm25", "chunk_size": true}', "got True"),
        ('{"retriever": "nosuch", "chunk_size": 256}', "unknown retriever 'nosuch'"),
    ],
)
@pytest.mark.parametrize(
    "argv",
    [
        ["evaluate", "--corpus", "corpus", "--questions", "q.jsonl"],
        [
            "evaluate",
            "--corpus",
            "corpus",
            "--questions",
            "q.jsonl",
            "--retriever",
            "bm25",
            "--chunk-size",
            "64",
        ],
        ["search", "average value", "--corpus", "corpus"],
        ["defaults", "show"],
    ],
)
def test_a_damaged_pin_is_one_line(home, content, needle, argv):
    (home / "hepwb-defaults.json").write_text(content)
    res = runner.invoke(app, argv)
    assert_one_line_exit_2(res, "hepwb-defaults.json", needle, "hepwb defaults unpin")


def test_help_works_with_a_damaged_pin(home):
    (home / "hepwb-defaults.json").write_text("{")
    for argv in (["evaluate", "--help"], ["search", "--help"], ["defaults", "--help"]):
        res = runner.invoke(app, argv)
        assert res.exit_code == 0, res.output


def test_pinning_into_a_folder_is_one_line(home):
    (home / "hepwb-defaults.json").mkdir()
    res = runner.invoke(app, ["defaults", "pin", "bm25", "256"])
    assert_one_line_exit_2(res, "hepwb-defaults.json is a folder", "remove or rename it")


def test_unpinning_a_folder_is_one_line_and_leaves_it_alone(home):
    (home / "hepwb-defaults.json").mkdir()
    (home / "hepwb-defaults.json" / "keep.txt").write_text("mine", encoding="utf-8")
    res = runner.invoke(app, ["defaults", "unpin"])
    assert res.exit_code == 2 and res.output.count("\n") == 1, res.output
    assert "hepwb-defaults.json is a folder, not pinned defaults" in res.output
    assert (home / "hepwb-defaults.json" / "keep.txt").read_text(encoding="utf-8") == "mine"
