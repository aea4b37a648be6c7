"""The CLI never shows a traceback (issue #38 item 2): input problems are one line and exit 2, anything
unexpected one line naming the exception and a saved traceback file, exit 3. Command-line mistakes, arguments
that are no UTF-8 and messages holding a lone surrogate are one line too; a saved traceback holds no secret
from the command line, and only its owner can read it."""

from __future__ import annotations

import errno
import stat
import sys

import pytest
from typer.testing import CliRunner

import hepwb.cli
import hepwb.cli.core
import hepwb.cli.ner
from hepwb.cli import app, main
from hepwb.cli.crash import save_traceback
from hepwb.exceptions import ConfigError
from tests.helpers import run_hepwb


def _one_error_line(output: str) -> str:
    lines = [line for line in output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), output
    assert "Traceback" not in output
    return lines[0]


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("HEPWB_HOME", str(tmp_path))
    return tmp_path


@pytest.mark.parametrize(
    ("address", "expect"),
    [
        ("inproc://x", "inproc:// addresses exist only inside one Python process"),
        ("tls://127.0.0.1:1", "needs client TLS credentials"),
        ("tcp://127.0.0.1", "missing port number"),
        ("tcp://127.0.0.1:0", "a port in 1-65535"),
        ("ucx://h:1", "protocol ucx:// is not supported"),
    ],
)
def test_bad_scheduler_address_is_one_line_before_any_work(home, address, expect):
    r = CliRunner().invoke(app, ["sweep", "--scheduler", address, "--max-docs", "1"])
    assert r.exit_code == 2, r.output
    line = _one_error_line(r.output)
    assert expect in line and "give tcp://host:port" in line and repr(address) in line
    assert not (home / "reports").exists()  # refused before the sweep file was read or a catalog opened


def test_malformed_ner_url_is_one_line(home):
    r = CliRunner().invoke(app, ["--ner-url", "http://[::1", "retrievers"])
    assert r.exit_code == 2, r.output
    assert "'http://[::1' is malformed" in _one_error_line(r.output)


def test_option_value_like_a_date_is_one_line(home):
    r = CliRunner().invoke(
        app, ["evaluate", "--retriever", "hybrid", "--option", "fetch=2001-13-45", "--show-config"]
    )
    assert r.exit_code == 2, r.output
    assert "fetch" in _one_error_line(r.output)


def test_option_the_yaml_reader_cannot_read_is_one_line(home, monkeypatch):
    def broken(*_a, **_k):
        raise ValueError("month must be in 1..12")

    monkeypatch.setattr(hepwb.cli.base, "load_yaml", broken)
    r = CliRunner().invoke(app, ["evaluate", "--option", "fetch=2001-13-45", "--show-config"])
    assert r.exit_code == 2, r.output
    assert "--option fetch: cannot read the value '2001-13-45'" in _one_error_line(r.output)


def test_option_given_twice_in_the_call_form_is_refused(home):
    r = CliRunner().invoke(
        app, ["evaluate", "--retriever", "hybrid(weight=0.1, weight=0.9)", "--show-config"]
    )
    assert r.exit_code == 2, r.output
    assert "option weight is given twice" in _one_error_line(r.output)


def test_option_conflicting_with_the_call_form_is_refused_naming_both(home):
    args = ["evaluate", "--retriever", "hybrid(weight=0.1)", "--option", "weight=0.9", "--show-config"]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 2, r.output
    line = _one_error_line(r.output)
    assert "weight=0.1 in retriever 'hybrid(weight=0.1)'" in line and "weight=0.9" in line, line


def test_same_option_in_both_places_is_accepted(home):
    args = ["evaluate", "--retriever", "hybrid(weight=0.1)", "--option", "weight=0.1", "--show-config"]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    assert '"weight": 0.1' in r.output


def _main(monkeypatch, capsys, *argv: str) -> tuple[int, str]:
    monkeypatch.setattr(sys, "argv", ["hepwb", *argv])
    with pytest.raises(SystemExit) as info:
        hepwb.cli.main()
    return int(info.value.code or 0), capsys.readouterr().err


def test_unexpected_error_is_one_line_exit_3_with_a_saved_traceback(home, monkeypatch, capsys):
    def boom(*_a, **_k):
        raise RuntimeError("boom\nsecond line")

    monkeypatch.setattr(hepwb.cli.core, "render_report", boom)
    code, err = _main(monkeypatch, capsys, "report")
    assert code == 3
    line = _one_error_line(err)
    (saved,) = (home / "reports" / "tracebacks").glob("*-report.txt")
    assert line.startswith("error: unexpected RuntimeError: boom second line — a bug:")
    assert f"the traceback is saved in {saved}; please report it" in line
    text = saved.read_text()
    assert (
        "Traceback (most recent call last)" in text and "in boom" in text and "command: hepwb report" in text
    )


def test_traceback_goes_to_the_temporary_folder_when_reports_cannot_be_written(
    home, monkeypatch, capsys, tmp_path_factory
):
    (home / "reports").write_text("not a folder")
    tmp = tmp_path_factory.mktemp("tmp")
    monkeypatch.setattr("tempfile.tempdir", str(tmp))
    monkeypatch.setattr(hepwb.cli.core, "render_report", lambda *_a, **_k: 1 / 0)
    code, err = _main(monkeypatch, capsys, "report")
    assert code == 3
    (saved,) = (tmp / "hepwb-tracebacks").glob("*-report.txt")
    assert f"unexpected ZeroDivisionError: division by zero — a bug: the traceback is saved in {saved}" in err


def test_disk_full_is_still_exit_2(home, monkeypatch, capsys):
    def full(*_a, **_k):
        raise OSError(errno.ENOSPC, "No space left on device", str(home / "x"))

    monkeypatch.setattr(hepwb.cli.core, "render_report", full)
    code, err = _main(monkeypatch, capsys, "report")
    assert code == 2
    assert "Free disk space" in _one_error_line(err)
    assert not (home / "reports" / "tracebacks").exists()


def test_input_problem_through_main_is_exit_2(home, monkeypatch, capsys):
    code, err = _main(monkeypatch, capsys, "sweep", "--scheduler", "inproc://x")
    assert code == 2
    assert "inproc://" in _one_error_line(err)


@pytest.mark.parametrize(
    "args",
    [
        [b"tiers", b"mark", b"x", b"--actor", b"\xed\xa0\x80"],
        [b"tiers", b"history", b"--limit", b"-1", b"--chunk", b"\xff"],
        [b"ner-serve", b"--port", b"70000", b"--token", b"\xff"],
    ],
)
def test_an_argument_that_is_no_utf8_is_one_line_and_exit_2(home, args):
    res = run_hepwb(home, *args)
    err = res.stderr.decode("utf-8")
    assert res.returncode == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "is not UTF-8 text" in err and "\\x" in err
    assert not (home / "reports" / "tracebacks").exists()


def test_the_traceback_saver_writes_what_is_no_utf8_escaped(home, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["hepwb", "tiers", "mark", "x", "--actor", "ev\udced\udca0\udc80"])
    try:
        raise RuntimeError("boom \udcff")
    except RuntimeError as exc:
        saved = save_traceback(exc, "hepwb tiers mark")
    assert saved is not None and saved.parent == home / "reports" / "tracebacks"
    text = saved.read_text(encoding="utf-8")
    assert "command: hepwb tiers mark x --actor ev\\udced\\udca0\\udc80" in text
    assert "RuntimeError: boom \\udcff" in text


def test_a_message_with_a_lone_surrogate_still_prints(home, monkeypatch, capsys):
    def boom(*_a, **_k):
        raise ConfigError("bad title 'Evil \ud800 title' in x.ragmd")

    monkeypatch.setattr(hepwb.cli.core, "render_report", boom)
    code, err = _main(monkeypatch, capsys, "report")
    assert code == 2 and err == "error: bad title 'Evil \ufffd title' in x.ragmd\n"


def test_a_saved_traceback_holds_no_secret_and_only_its_owner_reads_it(home, monkeypatch, capsys):
    def boom(*_a, **_k):
        raise RuntimeError("cannot serve")

    monkeypatch.setattr(hepwb.cli.ner, "NERService", boom)
    argv = ["ner-serve", "--port", "0", "--host", "127.0.0.1", "--token", "s3cret-TOKEN"]
    code, err = _main(monkeypatch, capsys, *argv)
    assert code == 3 and "s3cret" not in err
    (saved,) = (home / "reports" / "tracebacks").glob("*-ner-serve.txt")
    text = saved.read_text(encoding="utf-8")
    assert "s3cret" not in text
    assert "command: hepwb ner-serve --port 0 --host 127.0.0.1 --token ***" in text
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600


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
