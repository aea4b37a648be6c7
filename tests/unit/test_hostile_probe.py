"""Findings of a probe with hostile input: papers.json field types, corpus file names with escape
sequences, special files in a corpus, a corpus that is a device, escape sequences in ``hepwb sql`` cells,
a garbage ``HF_HUB_OFFLINE``, and passwords or bad ports in ``--ner-url``."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hepwb.acquisition.folder import corpus_files, load_sidecar, resolve_corpus
from hepwb.cli import app
from hepwb.corpus import labelled_files
from hepwb.env import OFFLINE_VARIABLES, hub_offline, online_requested
from hepwb.exceptions import ConfigError, CorpusNotFoundError
from hepwb.ner.client import NERClient, NERUnavailableError, check_url

ESC_FILE = "\x1b]52;c;SGk=\x07"


@pytest.fixture
def corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HEPWB_HOME", str(tmp_path / "home"))
    c = tmp_path / "corpus"
    c.mkdir()
    (c / "P01.md").write_text("# A\n\nAn average value of -0.23 plus or minus 0.04 is obtained.\n")
    (c / "P02.md").write_text("# B\n\nThe t-slope parameter b was found to be 6.02 GeV^-2.\n")
    return c


def _questions(tmp_path: Path) -> Path:
    q = tmp_path / "q.jsonl"
    row = {"qid": "Q1", "question": "average asymmetry", "answer": "x"}
    q.write_text(json.dumps({**row, "evidence": [{"doc": "P01", "quote": "An average value"}]}) + "\n")
    return q


def _one_error_line(output: str) -> str:
    lines = [line for line in output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), output
    return lines[0]


@pytest.mark.parametrize(
    ("entry", "expect"),
    [
        ({"pdf": 5}, "papers[0].pdf must be a file name (a string), got 5; fix it"),
        ({"pdf": ["x"]}, "papers[0].pdf must be a file name (a string), got ['x']; fix it"),
        ({"pdf": ".."}, "papers[0].pdf must be a file name (a string), got '..'; fix it"),
        (
            {"tex": "a\x00b"},
            "papers[0].tex must be a folder name under tex/ (a string), got 'a\\x00b' (it holds",
        ),
        ({"pid": 7}, "papers[0].pid must be a label (a string), got 7; fix it"),
        (
            {"pid": "P\x1b[2J"},
            "papers[0].pid must be a label (a string), got 'P\\x1b[2J' (it holds a control",
        ),
    ],
)
def test_papers_json_fields_of_the_wrong_type_are_one_line(corpus, tmp_path, entry, expect):
    (corpus / "papers.json").write_text(json.dumps({"papers": [{"pid": "P01", **entry}]}))
    with pytest.raises(ConfigError, match=r"papers\.json, papers"):
        load_sidecar(corpus)
    r = CliRunner().invoke(app, ["questions", "check", str(_questions(tmp_path)), "--corpus", str(corpus)])
    assert r.exit_code == 2, r.output
    line = _one_error_line(r.output)
    assert f"{corpus}/papers.json, " in line and expect in line


def test_the_shared_papers_json_layout_still_reads(corpus):
    papers = [{"pid": "P01", "pdf": "papers/pdf/P01.md", "tex": "P01_src"}, {"pid": "P02", "pdf": None}]
    (corpus / "papers.json").write_text(json.dumps({"papers": papers}))
    assert set(load_sidecar(corpus)) == {"P01.md", "P02"}


def test_a_file_name_with_escape_sequences_gets_a_plain_label_and_a_plain_warning(corpus, caplog):
    (corpus / f"P07{ESC_FILE}X.md").write_text("# A\n\ngluon\n")
    with caplog.at_level(logging.WARNING):
        labels = [label for _, _, label in labelled_files(corpus)]
    assert labels == ["P01", "P02", "P07X"]
    (warning,) = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert "\x1b" not in warning and "\x07" not in warning
    assert "file name 'P07X.md' (control characters removed) does not start with a plain label" in warning
    assert "labelled 'P07X' instead" in warning and "papers.json" in warning.split("instead")[1]
    assert "'pid'" not in warning.split("instead")[0]  # no papers.json is blamed


def test_two_such_files_get_distinct_plain_labels(corpus):
    (corpus / f"P07{ESC_FILE}.md").write_text("# A\n")
    (corpus / f"P07{ESC_FILE}\x1b[2J.md").write_text("# B\n")
    labels = [label for _, _, label in labelled_files(corpus)]
    assert len(set(labels)) == 4 and all(label.isascii() and label.isprintable() for label in labels)


def test_special_files_in_a_corpus_are_named_once_and_never_opened(corpus, caplog):
    os.mkfifo(corpus / "P03.md")  # opening it would block
    (corpus / "P04.md").symlink_to("/dev/zero")
    (corpus / "P05.md").mkdir()
    (corpus / "P06.pdf").symlink_to("nowhere")
    with caplog.at_level(logging.WARNING, logger="hepwb.corpus"):
        assert [p.name for p in corpus_files(corpus)] == ["P01.md", "P02.md"]
        assert [p.name for p in corpus_files(corpus)] == ["P01.md", "P02.md"]  # listed twice, said once
    said = [r.getMessage() for r in caplog.records]
    assert said == [
        f"{corpus}/P03.md is a FIFO, not a file: skipped",
        f"{corpus}/P04.md (a link to /dev/zero) is a character device, not a file: skipped",
        f"{corpus}/P05.md is a folder, not a file: skipped",
        f"{corpus}/P06.pdf (a link to nowhere) is a broken link, not a file: skipped",
    ]


def test_a_corpus_that_is_not_a_folder_says_what_it_is(corpus, tmp_path):
    with pytest.raises(
        CorpusNotFoundError, match=r"^/dev/zero is a character device, not a folder of papers"
    ):
        resolve_corpus("/dev/zero")
    with pytest.raises(CorpusNotFoundError, match=r"P01\.md is a file, not a folder of papers"):
        resolve_corpus(corpus / "P01.md")
    with pytest.raises(CorpusNotFoundError, match=r"corpus folder .*missing does not exist"):
        resolve_corpus(tmp_path / "missing")
    r = CliRunner().invoke(app, ["questions", "check", str(_questions(tmp_path)), "--corpus", "/dev/zero"])
    assert r.exit_code == 2 and "/dev/zero is a character device" in _one_error_line(r.output)


def test_sql_prints_no_escape_sequences(tmp_path, monkeypatch):
    monkeypatch.setenv("HEPWB_HOME", str(tmp_path))
    query = (
        "SELECT chr(27)||']52;c;SGk='||chr(7)||'x' AS a, chr(155)||'2Jy' AS b, "
        "chr(27)||']8;;http://e'||chr(27)||'\\z' AS c, [chr(27)||'[31mr'] AS d, 1 AS n"
    )
    r = CliRunner().invoke(app, ["sql", query, "--no-lance"])
    assert r.exit_code == 0, r.output
    assert not any(ch in r.output for ch in "\x1b\x07\x9b\x9d")
    # a list prints as DuckDB writes it as text (hepwb sql cuts long values in DuckDB, as text)
    assert r.output.split() == ["a", "b", "c", "d", "n", "x", "y", "z", "['r']", "1"]


@pytest.fixture
def hub_env(monkeypatch):
    for key in (*OFFLINE_VARIABLES, "HEPWB_ONLINE"):
        monkeypatch.delenv(key, raising=False)
    return monkeypatch


@pytest.mark.parametrize("value", ["garbage", "2", "", " "])
def test_a_garbage_hf_hub_offline_is_offline(hub_env, value):
    hub_env.setenv("HEPWB_ONLINE", "0")
    hub_env.setenv("HF_HUB_OFFLINE", value)
    assert not online_requested()
    assert hub_offline()
    assert [os.environ[k] for k in OFFLINE_VARIABLES] == ["1", "1", "1"]


@pytest.mark.parametrize("value", ["0", "false", "No", "OFF"])
def test_only_an_explicit_off_turns_the_hub_on(hub_env, value):
    hub_env.setenv("HF_HUB_OFFLINE", value)
    assert online_requested() and not hub_offline()
    assert os.environ["HF_HUB_OFFLINE"] == value


@pytest.mark.parametrize(
    ("value", "online"), [("1", True), ("Yes", True), ("on", True), ("2", False), ("x", False)]
)
def test_hepwb_online_is_on_only_for_an_explicit_yes(hub_env, value, online):
    hub_env.setenv("HEPWB_ONLINE", value)
    assert online_requested() is online
    hub_env.setenv("TRANSFORMERS_OFFLINE", "maybe")  # never left for the library to read as off
    hub_offline()
    assert os.environ["TRANSFORMERS_OFFLINE"] == "1"


def test_ner_url_password_is_never_shown(hub_env):
    with pytest.raises(ConfigError) as bad:
        check_url("http://user:s3cr3t@[::1")
    assert "s3cr3t" not in str(bad.value) and "'http://***@[::1' is malformed (Invalid port" in str(bad.value)
    client = NERClient("http://user:secretpw@127.0.0.1:1", attempts=1, timeout=2)
    with pytest.raises(NERUnavailableError) as down:
        client.entities(["LHCb"])
    assert "secretpw" not in str(down.value) and "cannot reach http://***@127.0.0.1:1/ner" in str(down.value)


def test_ner_url_with_a_bad_port_is_refused_before_connecting(hub_env):
    for url in ("http://127.0.0.1:99999", "http://u:s3cr3t@127.0.0.1:0/x"):
        with pytest.raises(ConfigError, match=r"has port \d+, outside 1-65535") as bad:
            check_url(url, "--ner-url (HEPWB_NER_URL)")
        assert "s3cr3t" not in str(bad.value)
    r = CliRunner().invoke(app, ["--ner-url", "http://user:s3cr3t@127.0.0.1:99999", "retrievers"])
    assert r.exit_code == 2
    line = _one_error_line(r.output)
    assert "'http://***@127.0.0.1:99999' has port 99999" in line and "s3cr3t" not in line


CANARY = "AKIACANARY0000SECRET"


def _leaked(home: Path, secret: bytes) -> list[str]:
    return [str(p) for p in home.rglob("*") if p.is_file() and secret in p.read_bytes()]


def test_corpus_links_leaving_the_folder_are_named_and_never_read_by_ingest(
    corpus, tmp_path, monkeypatch, capsys, caplog
):
    from tests.helpers import run_main

    home = tmp_path / "home"
    secret = tmp_path / "secret.md"
    secret.write_text(f"# Keys\n\naws_access_key_id = {CANARY}\n", encoding="utf-8")
    environ = Path("/proc/self/environ").read_bytes().split(b"\0")[0]  # what a link to it would leak
    (corpus / "P03.md").symlink_to("/proc/self/environ")
    (corpus / "P04.md").symlink_to(secret)
    os.mkfifo(corpus / "P05.md")
    (corpus / "P06.md").symlink_to("P01.md")  # a link staying inside the corpus folder is a paper
    with caplog.at_level(logging.WARNING, logger="hepwb.corpus"):  # the lines the CLI prints on stderr
        code, _, err = run_main(monkeypatch, capsys, "ingest", "--corpus", str(corpus))
    assert code == 0, err
    assert [r.getMessage() for r in caplog.records if r.name == "hepwb.corpus"] == [
        f"{corpus}/P03.md (a link to /proc/self/environ) leads into /proc (a kernel or device file): "
        "skipped, not read",
        f"{corpus}/P04.md (a link to {secret}) leads outside the folder {corpus}: skipped, not read",
        f"{corpus}/P05.md is a FIFO, not a file: skipped",
    ]
    labels = {p.name.split("-")[0] for p in (home / "data" / "interim" / "documents").iterdir()}
    assert labels == {"P01", "P02", "P06"}
    assert _leaked(home, CANARY.encode()) == []
    assert not environ or _leaked(home, environ) == []


@pytest.mark.parametrize("where", ["tex folder is a link out", "paper folder is a link out", "dotdot"])
def test_a_latex_folder_of_papers_json_leaving_the_corpus_is_not_read(corpus, tmp_path, caplog, where):
    outside = tmp_path / "outside"
    (outside / "P01_src").mkdir(parents=True)
    (outside / "P01_src" / "main.tex").write_text(f"\\documentclass{{article}}{CANARY}", encoding="utf-8")
    tex = corpus / "tex"
    if where == "tex folder is a link out":
        tex.symlink_to(outside)
    else:
        tex.mkdir()
        (tex / "P02_src").mkdir()
        (tex / "alias").symlink_to("P02_src")  # a link inside tex/ is a folder of it
        if where == "paper folder is a link out":
            (tex / "P01_src").symlink_to(outside / "P01_src")
    name = "../../outside/P01_src" if where == "dotdot" else "P01_src"
    papers = [{"pid": "P01", "pdf": "P01.md", "tex": name}, {"pid": "P02", "pdf": "P02.md", "tex": "alias"}]
    (corpus / "papers.json").write_text(json.dumps({"papers": papers}))
    with caplog.at_level(logging.WARNING, logger="hepwb.corpus"):
        sidecar = load_sidecar(corpus)
    assert "tex_dir" not in sidecar["P01.md"]
    (said,) = [r.getMessage() for r in caplog.records if " of P01: " in r.getMessage()]
    assert f"ignoring 'tex' {name!r} of P01: it lea" in said and "so it is not read" in said
    if where != "tex folder is a link out":
        assert sidecar["P02.md"]["tex_dir"] == str((tex / "P02_src").resolve())
