"""Findings of the fifth hostile-input probe (issue 38), part B: each reproduced as the probe did it.

Stored documents and chunk sets in ``data/``, corpus files read whole, the NER service's bodies and slow
clients, fusion fits with damaged folds, published folders with unlisted files, ``validate-ragmd`` agreeing
with the loaders, CSV question rows sharing a qid. Servers bind 127.0.0.1 only.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from hepwb import limits
from hepwb.cli import app
from hepwb.ner.service import NERService

HEPWB = str(Path(sys.executable).with_name("hepwb"))


def _post_raw(url: str, body: bytes) -> tuple[int, str]:
    """POST ``body`` to ``url``/ner on a raw socket: the status and the reply's JSON ``error``."""
    port = int(url.rsplit(":", 1)[1])
    head = f"POST /ner HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n".encode()
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(head + body)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    status = int(data.split(b" ", 2)[1])
    return status, json.loads(data.split(b"\r\n\r\n", 1)[1]).get("error", "")


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (b'{"texts":' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nested deeper than 100 levels"),
        (b'{"texts": ["a"], "texts": ["b"]}', "key 'texts' appears twice in one object"),
        (b'{"texts": ["a"], "x": NaN}', "NaN is not a JSON number"),
        (b'{"texts": ["a"], "x": 1e999}', "beyond the range of a float"),
        (b'{"texts": ["caf\xe9"]}', "is not UTF-8"),
    ],
)
def test_ner_bodies_go_through_the_bounded_json_reader(body, words):
    with NERService() as ner:
        status, error = _post_raw(ner.url, body)
        ok = httpx.post(ner.url + "/ner", json={"texts": ["LHCb"]})
    assert status == 400 and words in error and "\n" not in error, (status, error)
    assert ok.status_code == 200 and ok.json()["entities"][0][0]["entity"] == "experiment:lhcb"


def test_slow_clients_cannot_keep_the_ner_service_from_everyone(monkeypatch):
    monkeypatch.setattr(limits, "NER_MAX_CONNECTIONS", 8)
    stop = threading.Event()
    with NERService(read_timeout_s=3.0) as ner:
        port = int(ner.url.rsplit(":", 1)[1])
        slow = [socket.create_connection(("127.0.0.1", port)) for _ in range(10)]  # more than the slots
        for s in slow:
            s.sendall(b"POST /ner HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{")

        def trickle() -> None:  # a byte per connection every 0.2 s, until the test ends
            while not stop.wait(0.2):
                for s in slow:
                    with contextlib.suppress(OSError):
                        s.sendall(b" ")

        threading.Thread(target=trickle, daemon=True).start()
        try:
            first = slow[0]
            first.settimeout(30)  # a guard: before the fix the service never answered it
            answer = b""
            while chunk := first.recv(4096):
                answer += chunk
            assert answer.startswith(b"HTTP/1.0 408") and b"not sent whole within 3 s" in answer, answer
            for _ in range(50):  # the slots of the cut connections free as their threads end
                try:
                    health = httpx.get(ner.url + "/health", timeout=5)
                    break
                except httpx.TransportError:
                    time.sleep(0.1)
            else:
                pytest.fail("/health never answered while slow clients trickled")
            assert health.status_code == 200 and health.json()["status"] == "ok"
        finally:
            stop.set()
            for s in slow:
                s.close()


def _hepwb(home: Path, *args: str) -> tuple[int, str]:
    """The installed console script, run as the probe ran it: exit status and stdout + stderr."""
    env = {**os.environ, "HEPWB_HOME": str(home)}
    res = subprocess.run([HEPWB, *args], capture_output=True, env=env, timeout=300, check=False, text=True)
    return res.returncode, res.stdout + res.stderr


def test_damaged_cached_documents_and_chunk_set_manifests_are_named_and_rebuilt(tmp_path):
    """The probe's F3 (``full_document.md`` a FIFO: a hang; a link to /dev/zero or 2 GB sparse: read whole,
    MemoryError) and M2 (``chunkset.json`` = ``[]``: exit 3), all in one search."""
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

    code, out = _hepwb(home, "search", "Compton scattering", "--corpus", str(corpus), "--chunk-size", "48")
    assert code == 0 and "[1] A01" in out, out
    whys = ("is a FIFO", "is a character device", "has 2,147,483,648 bytes, its record says")
    for folder, text, why in zip(folders, texts, whys, strict=True):
        line = next(ln for ln in out.splitlines() if f"cached conversion {folder} is unreadable" in ln)
        assert f"cached conversion text {text} {why}" in line and "again" in line, line
    assert f"chunk set manifest {manifest} holds a list, not a JSON object" in out, out
    assert out.count("is unreadable") == 4, out  # each logged once, not by two loggers
    assert [t.read_bytes() for t in texts] == good  # converted again
    assert json.loads(manifest.read_text(encoding="utf-8"))["fingerprint"] == fingerprint


def test_a_huge_corpus_markdown_file_is_skipped_unread(tmp_path):
    """The probe's F4: a 3 GB sparse ``.md`` was hashed and read whole (3.2 GB, MemoryError, exit 0)."""
    from tests.helpers import tiny_corpus

    corpus, _ = tiny_corpus(tmp_path)
    big = corpus / "Z09_big.md"
    with big.open("wb") as fh:
        fh.truncate(3 * 1024**3)
    code, out = _hepwb(tmp_path / "home", "ingest", "--corpus", str(corpus), "--chunk-sizes", "48")
    assert code == 0, out
    line = next(ln for ln in out.splitlines() if ln.startswith("PROC_TOO_LARGE"))
    assert f"{big} has 3,221,225,472 bytes" in line and "limits.MAX_TEXT_FILE_BYTES" in line, line
    assert "MemoryError" not in out and "PROC_UNEXPECTED" not in out, out
    cached = sorted(p.name.split("-")[0] for p in (tmp_path / "home/data/interim/documents").iterdir())
    assert cached == ["A01", "B02", "C03"]  # the others converted


def test_latex_sources_are_read_by_the_bounded_reader(tmp_path):
    """The sibling of F4: a LaTeX file ``\\input`` (or given as the main file) was read whole."""
    pytest.importorskip("pypandoc")
    from hepwb.exceptions import ProcessingError
    from hepwb.processing.latex import latex_to_document

    (tmp_path / "main.tex").write_text(
        "\\documentclass{article}\n\\begin{document}\nHello.\n\\input{big}\n\\end{document}\n",
        encoding="utf-8",
    )
    with (tmp_path / "big.tex").open("wb") as fh:
        fh.truncate(limits.MAX_TEXT_FILE_BYTES + 1)
    with pytest.raises(ProcessingError, match=r"big\.tex: 67,108,865 bytes .* more than the") as info:
        latex_to_document(tmp_path)
    assert info.value.code == "PROC_TOO_LARGE"
    with pytest.raises(ProcessingError, match=r"big\.tex: 67,108,865 bytes") as info:
        latex_to_document(tmp_path / "big.tex")  # named as the main file
    assert info.value.code == "PROC_TOO_LARGE"


def test_a_fusion_fit_whose_folds_were_damaged_is_refused(tmp_path, monkeypatch):
    """The probe's F11: ``folds: {}`` (or folds disagreeing with ``fold_params``) was accepted, and every
    question of the fit's own set was then scored with the weights fitted on it, as an out-of-fold run."""
    from tests.helpers import tiny_corpus

    corpus, questions = tiny_corpus(tmp_path)
    monkeypatch.setenv("HEPWB_HOME", str(tmp_path / "home"))
    common = ["--corpus", str(corpus), "--questions", str(questions), "--chunk-size", "48"]
    res = CliRunner().invoke(app, ["fit-fusion", "--name", "f1", *common, "--folds", "2"])
    assert res.exit_code == 0, res.output
    path = tmp_path / "home" / "data" / "models" / "fusion" / "f1.json"
    good = json.loads(path.read_text(encoding="utf-8"))
    moved = sorted(good["fold_params"]["0"]["papers"])[0]  # a paper of fold 0, said to be in fold 1 too

    def empty(d):
        d["folds"] = {}

    def lost(d):
        del d["folds"][moved]

    def listed_twice(d):
        d["fold_params"]["1"]["papers"].append(moved)

    def more_folds(d):
        d["n_folds"] = 5

    for damage, why in [
        (empty, "folds is empty: no paper has weights fitted without it"),
        (lost, "fold_params[0].papers and folds disagree on the papers of fold 0"),
        (listed_twice, "fold_params[1].papers and folds disagree on the papers of fold 1"),
        (more_folds, "n_folds is 5, fold_params has 2 folds"),
    ]:
        fit = json.loads(json.dumps(good))
        damage(fit)
        path.write_text(json.dumps(fit), encoding="utf-8")
        res = CliRunner().invoke(app, ["evaluate", *common, "--retriever", "fusion(fitted=f1)"])
        out = res.output
        assert res.exit_code == 2 and f"fusion fit {path} is damaged ({why})" in out, out
        assert "hepwb fit-fusion --name f1" in out and out.count("\n") == 1, out


@pytest.mark.parametrize("added", ["added_tokens.json", "1_Pooling/extra.json", "link"])
def test_a_published_model_folder_with_an_unlisted_file_is_refused(tmp_path, monkeypatch, added):
    """The probe's F12: a file added to a published model after publication (an ``added_tokens.json`` the
    tokenizer then read: IndexError, exit 3) passed the manifest check, which looked at listed files only."""
    import shutil

    from hepwb.models.tokenizers import resolve_model_path
    from hepwb.publish import publish_folder, published_problem
    from tests.helpers import tiny_corpus

    corpus, questions = tiny_corpus(tmp_path)
    monkeypatch.setenv("HEPWB_HOME", str(tmp_path / "home"))
    base = Path(resolve_model_path("all-MiniLM-L6-v2"))
    final = tmp_path / "home" / "data" / "models" / "fakem"
    publish_folder(final, lambda tmp: shutil.copytree(base, tmp, dirs_exist_ok=True), {"rebuild": "make it"})
    assert published_problem(final) is None
    if added == "link":
        (final / "link").symlink_to(final / "config.json")
    else:
        (final / added).write_text('{"higgs": 30522, "boson": 30523, "mass": 30524}', encoding="utf-8")
    assert published_problem(final) == f"{added} is not listed in its manifest (added after publication)"
    args = [
        "--corpus",
        str(corpus),
        "--questions",
        str(questions),
        "--chunk-size",
        "48",
        "--retriever",
        "dense",
    ]
    res = CliRunner().invoke(app, ["evaluate", *args, "--embedding-model", "fakem"])
    out = res.output
    assert res.exit_code == 2 and out.count("\n") == 1, out
    assert f"adapted model {final} is incomplete or damaged ({added} is not listed" in out, out
    assert "rebuild it with `make it`" in out, out


def _ragmd(path: Path) -> str:
    """Write a valid two-chunk .ragmd file with hepwb's writer (unit vectors of 384 floats); its text."""
    import numpy as np

    from hepwb.ragmd.model import RagChunk, RagDocument, RagFile
    from hepwb.ragmd.writer import dump

    texts = ["Measurement of the Higgs boson mass at 13 TeV.", "The W and Z boson backgrounds are small."]
    starts = [0, len(texts[0])]
    chunks = [
        RagChunk(f"c{i}", "d1", i, s, s + len(t), t)
        for i, (s, t) in enumerate(zip(starts, texts, strict=True))
    ]
    vectors = np.random.default_rng(0).normal(size=(2, 384)).astype("<f4")
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    when = "2026-01-01T00:00:00Z"
    docs = [RagDocument("d1", "P01", "Measurement of the Higgs boson mass 0", "")]
    dump(RagFile("all-MiniLM-L6-v2", "cs", when, when, docs, chunks, vectors), path)
    return path.read_text(encoding="utf-8")


def _huge_vector_line(text: str) -> str:
    import base64

    import numpy as np

    lines = text.split("\n")
    at = next(i for i, ln in enumerate(lines) if ln.startswith("c0 "))
    lines[at] = "c0 " + base64.b64encode(np.full(384, 1e38, dtype="<f4").tobytes()).decode()
    return "\n".join(lines)


@pytest.mark.parametrize(
    ("mutate", "why"),
    [
        (
            lambda t: t.replace(
                '"title": "Measurement of the Higgs boson mass 0"', '"title": "Evil \\ud800 title"'
            ),
            "[Document Metadata] the text 'Evil \\ud800 title' holds a lone surrogate (U+D800)",
        ),
        (
            lambda t: t.replace('"text": "The W and Z', '"text": "The W \\udcff Z'),
            "holds a lone surrogate (U+DCFF)",
        ),
        (_huge_vector_line, "1 vector(s) not of unit length (chunks ['c0'])"),
        (
            lambda t: t.replace('distance: "inner_product"', 'distance: "l2"'),
            "distance 'l2'; a .ragmd file has",
        ),
    ],
)
def test_validate_ragmd_refuses_what_the_loaders_refuse(tmp_path, monkeypatch, mutate, why):
    """The probe's F14 and M6: these files were "valid", then ``search --ragmd`` crashed printing the
    surrogate title (exit 3), ``import-ragmd`` refused the 1e38 vectors, and ``distance: l2`` was ignored."""
    monkeypatch.setenv("HEPWB_HOME", str(tmp_path / "home"))
    good = _ragmd(tmp_path / "a.ragmd")
    res = CliRunner().invoke(app, ["validate-ragmd", str(tmp_path / "a.ragmd")])
    assert res.exit_code == 0 and "valid (1 documents, 2 vectors of 384, all-MiniLM-L6-v2)" in res.output
    bad = tmp_path / "s.ragmd"
    bad.write_text(mutate(good), encoding="utf-8")
    res = CliRunner().invoke(app, ["validate-ragmd", str(bad)])
    assert res.exit_code == 1 and why in res.output, res.output
    for args in (
        ["search", "Higgs boson mass", "--ragmd", str(bad), "--retrievers", "bm25"],
        ["import-ragmd", str(bad)],
    ):
        res = CliRunner().invoke(app, args)
        assert res.exit_code == 2 and why in res.output and "Traceback" not in res.output, res.output


def test_csv_rows_sharing_a_qid_must_share_its_question(tmp_path, monkeypatch):
    """The probe's F16: a second row of ``Q0`` with another question was merged silently (its text lost)."""
    from tests.helpers import tiny_corpus

    corpus, _ = tiny_corpus(tmp_path)
    monkeypatch.setenv("HEPWB_HOME", str(tmp_path / "home"))
    quote = "The HERMES experiment measured the beam-spin asymmetry"
    head = "qid,question,doc,quote,answer\n"
    same = tmp_path / "same.csv"  # one question, two quotes (the later row may leave the question empty)
    same.write_text(head + f"Q0,What did HERMES measure?,A01,{quote},x\nQ0,,A01,{quote},\n", encoding="utf-8")
    res = CliRunner().invoke(app, ["questions", "check", str(same), "--corpus", str(corpus)])
    assert res.exit_code == 0, res.output
    for row, field in [
        (f"Q0,A completely different question?,A01,{quote},x", "question"),
        (f"Q0,What did HERMES measure?,A01,{quote},y", "answer"),
    ]:
        bad = tmp_path / "c.csv"
        bad.write_text(head + f"Q0,What did HERMES measure?,A01,{quote},x\n{row}\n", encoding="utf-8")
        res = CliRunner().invoke(app, ["questions", "check", str(bad), "--corpus", str(corpus)])
        out = res.output
        assert res.exit_code == 2 and out.count("\n") == 1, out
        assert f"{bad} line 3: qid 'Q0' has {field} " in out and f"at {bad} line 2" in out, out
