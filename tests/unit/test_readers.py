"""Every file hepwb reads goes through one bounded reader (issue 38 items 1, 3 and 9).

* A test walks the package's source and fails on a direct ``json.load``, ``yaml.*load``, ``csv.reader`` or
  ``json.loads(path.read_text())`` outside :mod:`hepwb.files.readers` and :mod:`hepwb.files.yamlio`.
* Special files (FIFO, a symlink to ``/dev/zero``, a socket, a folder) are refused before they are opened.
* Property-based: hostile bytes, deep nesting, huge numbers, truncations of valid files and bad encodings
  given to each reader end in a :class:`~hepwb.exceptions.HepwbError` (or a value) within 5 s and 200 MB,
  never another exception, a hang or a crash.
* A text file read whole (a corpus markdown file, a LaTeX source) over ``limits.MAX_TEXT_FILE_BYTES`` is
  refused unread; a key repeated in a JSON object, or a column in a CSV header, is named; a CSV file's
  byte-order mark is dropped.
"""

from __future__ import annotations

import ast
import json
import os
import signal
import socket
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hepwb
from hepwb import limits
from hepwb.acquisition.folder import load_sidecar
from hepwb.evaluation.questions import load_questions
from hepwb.exceptions import HepwbError
from hepwb.files.parsers import parse_json, read_csv, read_json_file
from hepwb.files.readers import ReadError
from hepwb.hepilot.schemas import validate_tree
from hepwb.paths import shared_dir
from hepwb.project_defaults import current_defaults
from hepwb.ragmd import reader as ragmd
from hepwb.runs.record import RunRecord
from hepwb.sweep.spec import SweepSpec
from hepwb.tiers.settings import load_config
from tests.helpers import run_hepwb

PACKAGE = Path(hepwb.__file__).parent
READER_MODULES = {"readers.py", "parsers.py", "yamlio.py"}


def _direct_reads(path: Path) -> Iterator[str]:
    """``file:line call`` of every direct read of a file's JSON, YAML or CSV in ``path``'s source."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        owner = node.func.value.id if isinstance(node.func.value, ast.Name) else ""
        name = node.func.attr
        bad = (
            (owner == "json" and name == "load")
            or (owner == "yaml" and name in {"load", "safe_load", "full_load", "unsafe_load", "load_all"})
            or (owner == "csv" and name in {"reader", "DictReader"})
        )
        if (owner == "json" and name == "loads") or name == "model_validate_json":
            args = [a for a in node.args if isinstance(a, ast.Call) and isinstance(a.func, ast.Attribute)]
            bad = bad or any(a.func.attr in {"read_text", "read_bytes", "read"} for a in args)
        if bad:
            yield f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {owner or '…'}.{name}"


def test_no_module_reads_a_file_around_the_bounded_reader():
    found = [
        hit
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name not in READER_MODULES
        for hit in _direct_reads(path)
    ]
    assert not found, f"read these through hepwb.files.readers (or hepwb.files.yamlio): {found}"


@contextmanager
def _within(seconds: float, mebibytes: float) -> Iterator[None]:
    """Fail (never hang) when the block takes over ``seconds`` of CPU or allocates over ``mebibytes``.

    The bound is on the reader's work: CPU time (``ITIMER_PROF``, this process's user and system time), so it
    holds the same on a machine busy with other jobs; a block that waits without working (a FIFO opened for
    reading) is stopped by a wall-clock alarm at twelve times that.
    """

    def late(*_: Any) -> None:
        raise TimeoutError(f"took more than {seconds} s of CPU")

    def hung(*_: Any) -> None:
        raise TimeoutError(f"waited more than {12 * seconds} s")

    old = signal.signal(signal.SIGPROF, late), signal.signal(signal.SIGALRM, hung)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    signal.setitimer(signal.ITIMER_REAL, 12 * seconds)
    tracemalloc.start()
    try:
        yield
        _, peak = tracemalloc.get_traced_memory()
        assert peak < mebibytes * 2**20, f"peak {peak / 2**20:.0f} MiB"
    finally:
        tracemalloc.stop()
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGPROF, old[0])
        signal.signal(signal.SIGALRM, old[1])


def _sidecar(path: Path) -> object:
    (path.parent / "corpus").mkdir(exist_ok=True)
    return load_sidecar(path.parent / "corpus")


READERS: dict[str, tuple[str, Callable[[Path], object]]] = {
    "questions.jsonl": ("qa.jsonl", load_questions),
    "questions.csv": ("qa.csv", load_questions),
    "sweep file": ("grid.yaml", SweepSpec.from_yaml),
    "tier config": ("tiers.yaml", load_config),
    ".ragmd": ("corpus.ragmd", ragmd.load),
    "papers.json": ("papers.json", _sidecar),
    "project defaults": ("hepwb-defaults.json", lambda p: current_defaults(p.parent)),
    "run record": (RunRecord.FILE, lambda p: RunRecord.load(p.parent)),
    "json file": ("input.json", lambda p: read_json_file(p, "settings file")),
}
VALID = {
    "questions.jsonl": (
        '{"qid": "Q1", "question": "Why?", "evidence": [{"doc": "P01", "page": 2, "quote": "beam"}]}\n'
    ),
    "questions.csv": "qid,question,doc,page,quote\nQ1,Why?,P01,2,the beam spin asymmetry\n",
    "sweep file": "name: g\ngrid:\n  chunk_size: [256, 512]\n  retriever: [bm25]\n",
    "tier config": "ttl_s: 3600\nwarm_max_docs: 5\n",
    ".ragmd": "---\nformat: ragmd\n---\n# x\n",
    "papers.json": '{"papers": [{"file": "P01.pdf", "title": "A", "year": 2001}]}',
    "project defaults": '{"retriever": "bm25", "chunk_size": 512}',
    "run record": '{"run_id": "r", "chunkset_id": "c", "config": {"k": 5}, "summary": {"recall@5": 0.5}}',
    "json file": '{"a": [1, 2, {"b": null}]}',
}  # fmt: skip


def _call(name: str, folder: Path, data: bytes) -> None:
    file_name, read = READERS[name]
    path = folder / file_name
    path.write_bytes(data)
    try:
        with _within(5.0, 200):
            read(path)
    except HepwbError as exc:
        assert len(str(exc)) < 5000, str(exc)[:300]


HOSTILE = st.one_of(
    st.binary(max_size=2000),
    st.integers(1, 200_000).map(lambda n: b"[" * n),
    st.integers(1, 50_000).map(lambda n: b'{"a": ' * n),
    st.integers(100, 20_000).map(lambda n: b'{"a": ' + b"9" * n + b"}"),
    st.integers(100, 20_000).map(lambda n: b"a: " + b"9" * n),
    st.sampled_from([b"\xff\xfe\x00\x00", b"\x80abc", "é".encode("latin-1") * 10, b"\x00" * 64]),
    st.just(b"created: 2001-13-45\nttl_s: !!bool maybe\n"),
    st.just(b'"' + b"x" * 200_000 + b'"'),
)


@pytest.mark.heavy
@pytest.mark.parametrize("name", sorted(READERS))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=HOSTILE)
def test_hostile_bytes_give_one_clear_error(tmp_path, name, data):
    _call(name, tmp_path, data)


@pytest.mark.parametrize("name", sorted(READERS))
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.floats(0, 1), flip=st.integers(0, 255))
def test_truncated_and_mutated_valid_files_give_one_clear_error(tmp_path, name, cut, flip):
    valid = VALID[name].encode()
    at = int(len(valid) * cut)
    _call(name, tmp_path, valid[:at])
    _call(name, tmp_path, valid[:at] + bytes([flip]) + valid[at + 1 :])


def _make_special(kind: str, path: Path) -> socket.socket | None:
    if kind == "FIFO":
        os.mkfifo(path)
    elif kind == "device":
        path.symlink_to("/dev/zero")  # a symlink is followed: its target is checked
    elif kind == "folder":
        path.mkdir()
    else:
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(path))
        return sock
    return None


@pytest.mark.parametrize("name", sorted(READERS))
@pytest.mark.parametrize("kind", ["FIFO", "device", "socket", "folder"])
def test_special_files_are_refused_before_they_are_opened(tmp_path, name, kind):
    file_name, read = READERS[name]
    path = tmp_path / file_name
    sock = _make_special(kind, path)
    try:
        with _within(5.0, 50), pytest.raises(HepwbError) as info:
            read(path)
    finally:
        if sock is not None:
            sock.close()
    if name != "project defaults":  # a folder named like the defaults file is "not pinned" there
        assert kind in str(info.value), str(info.value)


def test_a_damaged_hepilot_tree_is_reported_file_by_file(tmp_path):
    (tmp_path / "catalog.json").write_text('{"truncated": ', encoding="utf-8")
    fails = validate_tree(tmp_path, shared_dir() / "hepilot")
    assert list(fails) == ["catalog.json"] and "invalid JSON" in fails["catalog.json"][0]


def test_json_values_are_bounded():
    from hepwb.files.parsers import parse_json

    assert parse_json('{"a": [1, 2.5, "x", null, true]}', "s") == {"a": [1, 2.5, "x", None, True]}
    for text, words in (("[" * 101 + "]" * 101, "nested deeper"), ("9" * 65, "integer of 65 digits"),
                        ('{"a": ', "invalid JSON")):  # fmt: skip
        with pytest.raises(HepwbError, match=words):
            parse_json(text, "s")
    assert json.dumps(parse_json("[" * 100 + "]" * 100, "s")).count("[") == 100


@pytest.mark.heavy
def test_a_huge_corpus_markdown_file_is_skipped_unread(tmp_path):
    """Hostile-input probe 5 (issue 38), F4: a 3 GB sparse ``.md`` was hashed and read whole (3.2 GB,
    MemoryError, exit 0)."""
    from tests.helpers import tiny_corpus

    corpus, _ = tiny_corpus(tmp_path)
    big = corpus / "Z09_big.md"
    with big.open("wb") as fh:
        fh.truncate(3 * 1024**3)
    res = run_hepwb(tmp_path / "home", "ingest", "--corpus", str(corpus), "--chunk-sizes", "48")
    code, out = res.returncode, (res.stdout + res.stderr).decode()
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


def test_a_repeated_json_key_is_named():
    with pytest.raises(ReadError, match=r"q.jsonl line 1: key 'qid' appears twice in one object"):
        parse_json('{"qid": "Q1", "qid": "Q2"}', "q.jsonl line 1")
    with pytest.raises(ReadError, match="key 'b' appears twice"):
        parse_json('{"a": [{"b": 1, "c": 2, "b": 3}]}', "f.json")
    assert parse_json('{"a": {"a": 1}, "b": NaN}', "f.json")["a"] == {"a": 1}


def test_a_repeated_csv_column_is_named(tmp_path):
    path = tmp_path / "q.csv"
    path.write_text("qid,question,doc,quote,quote\nQ1,x,P01,An average value of -0.23,other\n")
    with pytest.raises(ReadError, match=r"q.csv: column 'quote' appears twice in the header"):
        read_csv(path, "question file")


def test_read_csv_drops_the_byte_order_mark_from_the_first_column(tmp_path):
    path = tmp_path / "q.csv"
    path.write_text("qid,question\nQ1,x\n", encoding="utf-8-sig")
    assert read_csv(path, "question file") == (["qid", "question"], [(2, {"qid": "Q1", "question": "x"})])
