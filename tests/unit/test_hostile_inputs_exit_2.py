"""Findings of the fourth hostile-input probe (issue 38): each is one line and exit 2, never exit 3."""

from __future__ import annotations

import sys

import pytest
from typer.testing import CliRunner

from hepwb.cli import _damaged_table, app, main
from hepwb.exceptions import ConfigError
from hepwb.sweep.jobqueue import make_cluster

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


@pytest.mark.parametrize("field", ["queue", "account", "job_extra"])
def test_batch_directives_cannot_add_lines_to_the_job_script(tmp_path, field):
    bad = "--mem=1G\ncurl http://127.0.0.1:9/x | sh"
    kwargs = {"job_extra": [bad]} if field == "job_extra" else {field: bad}
    with pytest.raises(ConfigError, match="newline or control character"):
        make_cluster("slurm", home=tmp_path, **kwargs)  # type: ignore[arg-type]


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
    monkeypatch.setattr("hepwb.cli.app", lambda **_: fail())
    monkeypatch.setattr("hepwb.cli.repeated_option", lambda *_: None)
    monkeypatch.setattr("hepwb.cli.typer.main.get_command", lambda _: None)
    monkeypatch.setattr(sys, "argv", ["hepwb", "retrievers"])
    with pytest.raises(SystemExit) as info:
        main()
    err = capsys.readouterr().err
    assert info.value.code == 2 and "LanceDB table is damaged" in err and err.count("\n") == 1


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["evaluate", "--k", "abc"], "Invalid value for '--k'"),
        (["evaluate", "--nosuch", "1"], "No such option: --nosuch"),
        (["questions", "check"], "Missing argument 'file'"),
        (["nosuch"], "No such command 'nosuch'"),
    ],
)
def test_command_line_mistakes_are_one_line(monkeypatch, capsys, tmp_path, args, words):
    monkeypatch.setenv("HEPWB_HOME", str(tmp_path))
    monkeypatch.setattr(sys, "argv", ["hepwb", *args])
    with pytest.raises(SystemExit) as info:
        main()
    err = capsys.readouterr().err
    assert info.value.code == 2 and words in err and err.count("\n") == 1 and "--help" in err, err


@pytest.mark.parametrize(
    ("papers", "words"),
    [
        ('{"papers": "x"}', "'papers' must be a list of paper objects"),
        ('{"papers": {"a": 1}}', "'papers' must be a list of paper objects"),
        (
            '{"papers": [{"pid": "A01", "pdf": "A01.pdf"}, {"pid": "Z9", "pdf": "A01.pdf"}]}',
            "describes 'A01.pdf' again",
        ),
    ],
)
def test_papers_json_that_would_be_ignored_or_overwritten_is_refused(tmp_path, papers, words):
    from hepwb.acquisition.folder import load_sidecar

    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "papers.json").write_text(papers, encoding="utf-8")
    with pytest.raises(ConfigError, match=words):
        load_sidecar(tmp_path / "corpus")


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["sweep", "--scheduler", "", "--dry-run"], "--scheduler is empty"),
        (
            ["sweep", "--executor", "serial", "--scheduler", "tcp://127.0.0.1:1", "--dry-run"],
            "ignored by --executor serial",
        ),
    ],
)
def test_a_scheduler_that_would_be_ignored_is_refused(monkeypatch, tmp_path, args, words):
    monkeypatch.setenv("HEPWB_HOME", str(tmp_path))
    res = runner.invoke(app, args)
    assert res.exit_code == 2 and words in res.output, res.output


def test_a_setting_both_fixed_and_in_the_grid_is_refused_unless_the_command_line_sets_it():
    from hepwb.sweep.spec import SweepSpec, SweepSpecError

    with pytest.raises(SweepSpecError, match="chunk_size is both a fixed setting"):
        SweepSpec.from_dict({"chunk_size": 128, "grid": {"chunk_size": [64]}}, "s.yaml")
    spec = SweepSpec.from_dict({"chunk_size": 128, "grid": {"retriever": ["bm25"]}}, "s.yaml")
    assert spec.with_grid(chunk_size=[64, 256]).count() == 2  # --chunk-sizes replaces the file's fixed value


def test_option_messages_name_the_option_they_came_from():
    from hepwb.cli_app import parse_options

    with pytest.raises(ConfigError, match="--index-option nprobes is given twice"):
        parse_options(["nprobes=1", "nprobes=2"], "--index-option")
    with pytest.raises(ConfigError, match="write a number, a word or true/false") as info:
        parse_options(["fields=\x1b[31m"])
    assert "re-save the file" not in str(info.value) and "\x1b" not in str(info.value)


def test_search_refuses_two_indexes(monkeypatch, tmp_path):
    monkeypatch.setenv("HEPWB_HOME", str(tmp_path))
    res = runner.invoke(app, ["search", "q", "--ragmd", str(tmp_path / "x.ragmd"), "--table", "t"])
    assert res.exit_code == 2 and "not both" in res.output


def test_an_unknown_batch_system_is_refused_in_a_dry_run_too(monkeypatch, tmp_path):
    monkeypatch.setenv("HEPWB_HOME", str(tmp_path))
    res = runner.invoke(app, ["sweep", "--cluster", "pbs", "--dry-run"])
    assert res.exit_code == 2 and "unknown batch system 'pbs'" in res.output


def test_an_unknown_key_in_the_pinned_defaults_is_named(tmp_path):
    from hepwb.project_defaults import current_defaults

    (tmp_path / "hepwb-defaults.json").write_text(
        '{"retriever": "bm25", "chunk_size": 512, "chunksize": 256}'
    )
    with pytest.raises(ConfigError, match=r"unknown key\(s\) \['chunksize'\]"):
        current_defaults(tmp_path)


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:1 /x", "http://127.0.0.1:1/\tner", "http://127.0.0.1:1/\x1b]8;;x"]
)
def test_a_ner_url_with_a_space_or_control_character_is_refused_before_connecting(url):
    from hepwb.ner.client import check_url

    with pytest.raises(ConfigError, match="space or control character"):
        check_url(url)
