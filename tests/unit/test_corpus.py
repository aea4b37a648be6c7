"""Corpus folders: what ingest converts, caches and labels, and what it refuses or skips.

Bad files are logged and the others converted; file names with escape sequences get plain labels; special
files (FIFO, device, folder, broken link) and links leading out of the folder are named once and never read;
a corpus that is not a folder says what it is. ``papers.json`` fields of the wrong type, entries that would be
ignored or overwritten, a ``tex_dir`` of its own and LaTeX folders leaving the corpus are refused.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hepwb.acquisition.folder import corpus_files, load_sidecar, resolve_corpus
from hepwb.cli import app
from hepwb.corpus import ingest, labelled_files
from hepwb.exceptions import ConfigError, CorpusNotFoundError
from hepwb.hepilot import ProcessingLog
from hepwb.paths import Layout
from tests.helpers import HAVE_SHARED_PDFS, PDF_DIR, one_error_line, run_main, three_notes


def _pdf(path, text):
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 72), text, fontsize=11)
    doc.save(str(path))
    doc.close()


def test_missing_corpus_names_the_option(monkeypatch, tmp_path):
    monkeypatch.delenv("HEPWB_CORPUS", raising=False)
    monkeypatch.setenv("HEPWB_SHARED", str(tmp_path / "nowhere"))
    with pytest.raises(CorpusNotFoundError, match="--corpus"):
        resolve_corpus(None)
    with pytest.raises(CorpusNotFoundError, match="does not exist"):
        resolve_corpus(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(CorpusNotFoundError, match=r"no \.pdf or \.md"):
        ingest(tmp_path / "empty", layout=Layout(tmp_path / "home"), progress=False)


def test_bad_files_are_logged_and_others_continue(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    _pdf(corpus / "A01_good.pdf", "The beam-spin asymmetry was measured at HERMES.")
    (corpus / "B02_fake.pdf").write_bytes(b"this is not a pdf")
    (corpus / "C03_notes.md").write_text("# Notes\n\nMarkdown documents are accepted too.", encoding="utf-8")
    (corpus / "papers.json").write_text(
        json.dumps({"papers": [{"pid": "A01", "pdf": "x/A01_good.pdf", "title": "Good paper"}]})
    )
    log = ProcessingLog()
    docs = ingest(corpus, layout=Layout(tmp_path / "home"), log=log, progress=False)
    assert [d.label for d in docs] == ["A01", "C03"]
    assert docs[0].title == "Good paper"
    (err,) = log.errors
    assert err.error_code == "PROC_NOT_PDF" and "B02_fake.pdf" in err.message
    assert err.recovery_action and err.context["file_path"].endswith("B02_fake.pdf")


def test_second_ingest_reuses_the_cache(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    _pdf(corpus / "A01_good.pdf", "Cached conversion.")
    lay = Layout(tmp_path / "home")
    first = ingest(corpus, layout=lay, progress=False)
    log = ProcessingLog()
    second = ingest(corpus, layout=lay, progress=False, log=log)
    assert first[0].meta["processing_timestamp"] == second[0].meta["processing_timestamp"]
    assert first[0].markdown == second[0].markdown and first[0].blocks == second[0].blocks
    assert not log.entries  # nothing converted again


def test_colliding_labels_fall_back_to_the_file_name(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    _pdf(corpus / "my_first.pdf", "First paper text.")
    _pdf(corpus / "my_second.pdf", "Second paper text.")
    (corpus / "papers.json").write_text(
        json.dumps({"papers": ["not an object", {"pid": "X", "pdf": "x.pdf"}]})
    )
    log = ProcessingLog()
    docs = ingest(corpus, layout=Layout(tmp_path / "home"), log=log, progress=False)
    assert [d.label for d in docs] == ["my", "my_second"]
    assert any(e.level == "warning" and "already used" in e.message for e in log.entries)


def test_converted_papers_stay_on_disk_until_their_text_is_read(tmp_path, monkeypatch):
    """ingest() holds ids, labels and scalar metadata; text, blocks and the rest are read on use."""
    import pickle

    from hepwb import defaults
    from hepwb.chunking.chunksets import build_chunkset
    from hepwb.corpus.stored import StoredDocument
    from hepwb.types import Document
    from tests.helpers import tiny_corpus

    corpus, _ = tiny_corpus(tmp_path)
    layout = Layout(tmp_path / "home")
    monkeypatch.setattr(defaults, "RESIDENT_DOCUMENT_BYTES", 0)  # a corpus larger than the budget
    first = ingest(corpus, layout=layout, progress=False)
    again = ingest(corpus, layout=layout, progress=False)
    assert all(isinstance(d, StoredDocument) and not d.loaded for d in first + again)
    assert [d.title for d in again] == [d.meta["title"] for d in first]  # the title needs no read
    assert not again[0].loaded
    assert again[0] == first[0] and again[0].markdown.startswith("#") and again[0].loaded
    plain = pickle.loads(pickle.dumps(again[0]))  # what a Dask worker receives: the whole document
    assert type(plain) is Document and plain == again[0]
    cs = build_chunkset(again, "hepilot", chunk_size=64, layout=layout, progress=False)
    assert cs.chunks and not any(d.loaded for d in again)  # each paper released after chunking
    monkeypatch.setattr(defaults, "RESIDENT_DOCUMENT_BYTES", 256 * 2**20)  # a corpus under the budget
    kept = ingest(corpus, layout=layout, progress=False)
    assert all(d.loaded for d in kept)  # read once, when opened, and kept
    cs = build_chunkset(kept, "hepilot", chunk_size=128, layout=layout, progress=False)
    assert cs.chunks and all(d.loaded for d in kept)
    c = cs.chunks[0]
    assert cs.documents[c.document_id].markdown[c.start : c.end] == c.text


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
    assert r.exit_code == 2 and "/dev/zero is a character device" in one_error_line(r.output)


CANARY = "AKIACANARY0000SECRET"


def _leaked(home: Path, secret: bytes) -> list[str]:
    return [str(p) for p in home.rglob("*") if p.is_file() and secret in p.read_bytes()]


def test_corpus_links_leaving_the_folder_are_named_and_never_read_by_ingest(
    corpus, tmp_path, monkeypatch, capsys, caplog
):
    home = tmp_path / "home"
    secret = tmp_path / "secret.md"
    secret.write_text(f"# Keys\n\naws_access_key_id = {CANARY}\n", encoding="utf-8")
    environ = Path("/proc/self/environ").read_bytes().split(b"\0")[0]  # what a link to it would leak
    (corpus / "P03.md").symlink_to("/proc/self/environ")
    (corpus / "P04.md").symlink_to(secret)
    os.mkfifo(corpus / "P05.md")
    (corpus / "P06.md").symlink_to("P01.md")  # a second name for a paper of the folder: read once
    with caplog.at_level(logging.WARNING, logger="hepwb.corpus"):  # the lines the CLI prints on stderr
        code, _, err = run_main(monkeypatch, capsys, "ingest", "--corpus", str(corpus))
    assert code == 0, err
    assert [r.getMessage() for r in caplog.records if r.name == "hepwb.corpus"] == [
        f"{corpus}/P03.md (a link to /proc/self/environ) leads into /proc (a kernel or device file): "
        "skipped, not read",
        f"{corpus}/P04.md (a link to {secret}) leads outside the folder {corpus}: skipped, not read",
        f"{corpus}/P05.md is a FIFO, not a file: skipped",
        f"{corpus}/P06.md (a link to P01.md) is a second name of a paper of the corpus: read once, as P01",
    ]
    labels = {p.name.split("-")[0] for p in (home / "data" / "interim" / "documents").iterdir()}
    assert labels == {"P01", "P02"}
    assert _leaked(home, CANARY.encode()) == []
    assert not environ or _leaked(home, environ) == []


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
    line = one_error_line(r.output)
    assert f"{corpus}/papers.json, " in line and expect in line


def test_the_shared_papers_json_layout_still_reads(corpus):
    papers = [{"pid": "P01", "pdf": "papers/pdf/P01.md", "tex": "P01_src"}, {"pid": "P02", "pdf": None}]
    (corpus / "papers.json").write_text(json.dumps({"papers": papers}))
    assert set(load_sidecar(corpus)) == {"P01.md", "P02"}


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


@pytest.mark.parametrize("target", ["/tmp", "/proc/self", "/usr"])
def test_papers_json_may_not_set_tex_dir(home, monkeypatch, capsys, target):
    corpus = three_notes(home)
    (corpus / "papers.json").write_text(
        json.dumps({"papers": [{"pid": "P00", "pdf": "P00_doc.md", "tex_dir": target}]})
    )
    code, _, err = run_main(
        monkeypatch, capsys, "search", "W boson", "--corpus", str(corpus), "--retrievers", "bm25"
    )
    assert code == 2 and "sets 'tex_dir', hepwb's own field" in err and len(err.strip().splitlines()) == 1


def test_a_latex_folder_beyond_the_bounds_is_refused(tmp_path, monkeypatch):
    from hepwb import limits
    from hepwb.corpus import sources

    folder = tmp_path / "tex"
    folder.mkdir()
    for i in range(4):
        (folder / f"f{i}.tex").write_text("x")
    monkeypatch.setattr(limits, "MAX_TEX_FILES", 3)
    with pytest.raises(ConfigError, match="holds more than 3 files"):
        sources._tree_sha256(folder)


@pytest.mark.skipif(not HAVE_SHARED_PDFS, reason="needs ../shared")
def test_a_checked_tex_folder_still_converts(tmp_path):
    from hepwb.acquisition.folder import load_sidecar

    meta = load_sidecar(PDF_DIR)
    assert any(m.get("tex_dir") for m in meta.values())  # the shared corpus names its LaTeX with 'tex'


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
