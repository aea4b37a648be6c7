"""An option given twice on one command line, or two that contradict each other, is refused before any work
(issue 38 item 2); an option's message names the option it came from."""

from __future__ import annotations

import sys

import pytest
from typer.testing import CliRunner

from hepwb.cli import app, main
from hepwb.exceptions import ConfigError

runner = CliRunner()


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["evaluate", "--k", "3", "--k", "5"], "--k given twice (3 and 5); keep one"),
        (
            ["evaluate", "--retriever", "hybrid", "--retriever=dense"],
            "--retriever given twice (hybrid and dense)",
        ),
        (["evaluate", "--latex", "--pdf-only"], "--latex and --pdf-only contradict each other"),
        (["tiers", "--ttl-s", "10", "--ttl-s", "20", "status"], "--ttl-s given twice (10 and 20)"),
        (["search", "q", "-k", "1", "--k", "2"], "--k given twice (1 and 2)"),
    ],
)
def test_an_option_given_twice_is_one_line_and_exit_2(monkeypatch, capsys, tmp_path, args, words):
    monkeypatch.setenv("HEPWB_HOME", str(tmp_path))
    monkeypatch.setattr(sys, "argv", ["hepwb", *args])
    with pytest.raises(SystemExit) as info:
        main()
    err = capsys.readouterr().err
    assert info.value.code == 2 and words in err and err.count("\n") == 1, err


def test_repeatable_options_may_repeat(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("HEPWB_HOME", str(tmp_path))
    argv = ["hepwb", "evaluate", "--option", "fields=context", "--option", "acronyms=true", "--show-config"]
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit) as info:
        main()
    out = capsys.readouterr()
    assert info.value.code in (0, None), out.err
    assert '"acronyms": true' in out.out and '"fields": "context"' in out.out, out.out


def test_option_messages_name_the_option_they_came_from():
    from hepwb.cli.base import parse_options

    with pytest.raises(ConfigError, match="--index-option nprobes is given twice"):
        parse_options(["nprobes=1", "nprobes=2"], "--index-option")
    with pytest.raises(ConfigError, match="write a number, a word or true/false") as info:
        parse_options(["fields=\x1b[31m"])
    assert "re-save the file" not in str(info.value) and "\x1b" not in str(info.value)


def test_search_refuses_two_indexes(monkeypatch, tmp_path):
    monkeypatch.setenv("HEPWB_HOME", str(tmp_path))
    res = runner.invoke(app, ["search", "q", "--ragmd", str(tmp_path / "x.ragmd"), "--table", "t"])
    assert res.exit_code == 2 and "not both" in res.output
