"""Findings of the fifth hostile-input probe (issue 38), part A: the CLI, tiers, the sweep's scheduler
connection, ``hepwb sql``, ``hepwb validate`` and configuration bounds. Each reproduces the probe's input."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import hepwb.cli
import hepwb.cli_ner
from hepwb.cli_crash import save_traceback
from hepwb.exceptions import ConfigError

runner = CliRunner()
HEPWB = str(Path(sys.executable).with_name("hepwb"))


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("HEPWB_HOME", str(tmp_path))
    return tmp_path


def _hepwb(home: Path, *args: str | bytes) -> subprocess.CompletedProcess[bytes]:
    """The installed console script, run as a user runs it (``args`` may hold bytes that are no UTF-8)."""
    env = {**os.environ, "HEPWB_HOME": str(home)}
    return subprocess.run([HEPWB, *args], capture_output=True, env=env, timeout=300, check=False)


def _main(monkeypatch, capsys, *argv: str) -> tuple[int, str]:
    monkeypatch.setattr(sys, "argv", ["hepwb", *argv])
    with pytest.raises(SystemExit) as info:
        hepwb.cli.main()
    return int(info.value.code or 0), capsys.readouterr().err


# F1: a byte that is no UTF-8 on the command line crashed the traceback saver (raw traceback, exit 1)


@pytest.mark.parametrize(
    "args",
    [
        [b"tiers", b"mark", b"x", b"--actor", b"\xed\xa0\x80"],
        [b"tiers", b"history", b"--limit", b"-1", b"--chunk", b"\xff"],
        [b"ner-serve", b"--port", b"70000", b"--token", b"\xff"],
    ],
)
def test_an_argument_that_is_no_utf8_is_one_line_and_exit_2(home, args):
    res = _hepwb(home, *args)
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

    monkeypatch.setattr(hepwb.cli, "render_report", boom)
    code, err = _main(monkeypatch, capsys, "report")
    assert code == 2 and err == "error: bad title 'Evil \ufffd title' in x.ragmd\n"


# F2: saved traceback files recorded secrets from the command line, readable by everyone


def test_a_saved_traceback_holds_no_secret_and_only_its_owner_reads_it(home, monkeypatch, capsys):
    def boom(*_a, **_k):
        raise RuntimeError("cannot serve")

    monkeypatch.setattr(hepwb.cli_ner, "NERService", boom)
    argv = ["ner-serve", "--port", "0", "--host", "127.0.0.1", "--token", "s3cret-TOKEN"]
    code, err = _main(monkeypatch, capsys, *argv)
    assert code == 3 and "s3cret" not in err
    (saved,) = (home / "reports" / "tracebacks").glob("*-ner-serve.txt")
    text = saved.read_text(encoding="utf-8")
    assert "s3cret" not in text
    assert "command: hepwb ner-serve --port 0 --host 127.0.0.1 --token ***" in text
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600
