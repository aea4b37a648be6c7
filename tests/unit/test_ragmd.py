"""`.ragmd` files: exact round trips, every check of a broken file, search of the file alone, local diffs."""

from __future__ import annotations

import base64
import difflib
import re
import struct
import subprocess

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from hepwb.exceptions import ConfigError
from hepwb.experiment.search import Searcher
from hepwb.index.lance import connect, table_names
from hepwb.paths import Layout
from hepwb.ragmd import RagFile, RagmdError, RagmdIndex, dumps, export_table, import_file, loads, problems
from hepwb.ragmd.model import RagChunk, RagDocument
from tests.helpers import tiny_corpus


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    """The three tiny papers chunked at 32 tokens and indexed, exported once."""
    root = tmp_path_factory.mktemp("ragmd")
    corpus, _ = tiny_corpus(root)
    layout = Layout(root / "home")
    s = Searcher.open(str(corpus), chunk_size=32, chunk_overlap=0.0, layout=layout)
    s.retriever("dense")  # a searcher adds the table's vectors when a retriever first reads them
    out = export_table(layout.lancedb, s.chunkset.chunkset_id, "all-MiniLM-L6-v2", root / "tiny.ragmd")
    return root, layout, s, out


def test_export_import_export_is_byte_identical_and_stands_alone(indexed):
    root, layout, s, out = indexed
    text = out.read_text(encoding="utf-8")
    rf = loads(text)
    assert len(rf.documents) == 3 and len(rf.chunks) == s.table.count_rows() and rf.embedding_dim == 384
    # offsets into full_document.md still give every chunk's text, which travels in the file
    for c in rf.chunks:
        assert s.chunkset.documents[c.document_id].markdown[c.i_start : c.i_end] == c.text
    # vectors bit-identical to the table's
    table = {
        r["chunk_id"]: r["vector"] for r in s.table.to_arrow().select(["chunk_id", "vector"]).to_pylist()
    }
    want = np.asarray([table[c.chunk_id] for c in rf.chunks], dtype="<f4")
    assert rf.vectors.tobytes() == want.tobytes()
    name, rows = import_file(out, root / "db2")
    again = export_table(root / "db2", name, "all-MiniLM-L6-v2", root / "again.ragmd")
    assert again.read_bytes() == out.read_bytes()
    assert export_table(
        layout.lancedb, s.chunkset.chunkset_id, "all-MiniLM-L6-v2", root / "x.ragmd"
    ).read_bytes() == (out.read_bytes())  # the same table exports the same bytes
    assert import_file(out, root / "db2") == (name, rows)  # unchanged file: not imported twice


def test_every_retriever_searches_the_imported_table(indexed):
    root, _, s, out = indexed
    name, _ = import_file(out, root / "home" / "data" / "processed" / "lancedb")
    imported = Searcher.at_table(name, layout=Layout(root / "home"))
    q = "What does the far detector contain?"
    for method in ("dense", "bm25", "hybrid", "entity", "bm25_plain"):
        hits = imported.search(q, method, 3)
        assert hits and hits[0].label == "C03", method
        assert [h.chunk_id for h in hits] == [h.chunk_id for h in s.search(q, method, 3)], method
    # the file alone: exact inner product equals LanceDB's exact search; BM25 over the same analyzer
    idx = RagmdIndex.load(out)
    assert [h.chunk_id for h in idx.search(q, "dense", 3)] == [h.chunk_id for h in s.search(q, "dense", 3)]
    assert idx.search(q, "bm25", 3)[0].label == idx.search(q, "hybrid", 3)[0].label == "C03"
    assert idx.search("zzzz qqqq", "bm25", 3) == []


def _broken(text: str, old: str, new: str) -> str:
    assert old in text
    return text.replace(old, new, 1)


def test_broken_files_name_the_section_and_line_and_load_nothing(indexed, tmp_path):
    _, _, _, out = indexed
    text = out.read_text(encoding="utf-8")
    lines = text.split("\n")
    assert problems(text) == []
    cases = {
        "truncated": ("\n".join(lines[: len(lines) // 2]), "[Vectors] section '## Vectors' missing"),
        "count": (_broken(text, "vector_count: ", "vector_count: 1"), "[front matter] vector_count is 1"),
        "model": (_broken(text, 'model_name: "all-MiniLM-L6-v2"', 'model_name: ""'), "missing 'model_name'"),
        "model path": (
            _broken(text, 'model_name: "all-MiniLM-L6-v2"', 'model_name: "../../../../tmp/x"'),
            "is not a model name (NAME or ORG/NAME, never a path)",
        ),
        "base64": (text.rsplit("\n", 3)[0][:-6] + "!!!!\n```\n", "not base64"),
        "short vector": (text.rsplit("\n", 3)[0][:-8] + "\n```\n", "floats, embedding_dim is 384"),
        "json": (_broken(text, '{"chunk_id": ', '{"chunk_id" '), "[Chunks] not valid JSON"),
        # a front matter promising far more than the file holds: refused before the array is made
        "wide": (
            _broken(text, "embedding_dim: 384", "embedding_dim: 65536"),
            "the vector lines hold at most",
        ),
    }
    first_vector = lines[next(i for i, ln in enumerate(lines) if ln == "```base64") + 1]
    nan = base64.b64encode(struct.pack("<384f", *[float("nan")] * 384)).decode()
    cases["infinite index"] = (re.sub(r'"i_end": \d+', '"i_end": 1e400', text, count=1), "bad entry")
    cases["huge index"] = (
        re.sub(r'"i_end": \d+', '"i_end": 99999999999999999999', text, count=1),
        "not a whole number",
    )
    cases["index as text"] = (
        re.sub(r'"i_end": (\d+)', r'"i_end": "\1"', text, count=1),
        "not a whole number",
    )
    cases["bad date"] = (
        re.sub(r"created_at: .*", 'created_at: "2026-02-30T25:61:00Z"', text, count=1),
        "not an ISO 8601",
    )
    cases["repeated key"] = (
        _broken(text, '{"chunk_id": ', '{"chunk_id": "x", "chunk_id": '),
        "appears twice",
    )
    cases["nan vector"] = (
        _broken(text, first_vector, first_vector.split(" ")[0] + " " + nan),
        "the vector holds NaN or infinite values",
    )
    for what, (bad, expected) in cases.items():
        found = problems(bad, "f.ragmd")
        assert any(expected in p for p in found), (what, found)
        assert all(p.startswith("f.ragmd:") and "[" in p for p in found), found
    vec_line = next(i for i, ln in enumerate(lines) if ln == "```base64") + 2
    assert any(
        p.startswith(f"f.ragmd:{vec_line} [Vectors]") for p in problems(cases["base64"][0], "f.ragmd")
    ) or any("[Vectors]" in p for p in problems(cases["base64"][0], "f.ragmd"))
    # a duplicated chunk id, hand-edited
    ids = [ln for ln in lines if ln.startswith('{"chunk_id": ')]
    dup = _broken(text, ids[1].split('"')[3], ids[0].split('"')[3])
    assert any("chunk ids repeated" in p for p in problems(dup))
    # importing a broken file raises with every problem and writes no table
    bad_file = tmp_path / "bad.ragmd"
    bad_file.write_text(cases["count"][0], encoding="utf-8")
    with pytest.raises(RagmdError, match="nothing was loaded"):
        import_file(bad_file, tmp_path / "db")
    assert not (tmp_path / "db").exists() or not table_names(connect(tmp_path / "db"))


def test_a_git_merge_conflict_is_refused(indexed, tmp_path):
    _, _, _, out = indexed
    text = out.read_text(encoding="utf-8")
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    (repo / "i.ragmd").write_text(text, encoding="utf-8")
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "a"], check=True)
    subprocess.run([*git, "checkout", "-qb", "other"], check=True)
    (repo / "i.ragmd").write_text(_broken(text, "| A01 |", "| A01x |"), encoding="utf-8")
    subprocess.run([*git, "commit", "-qam", "b"], check=True)
    subprocess.run([*git, "checkout", "-q", "main"], check=True)
    (repo / "i.ragmd").write_text(_broken(text, "| A01 |", "| A01y |"), encoding="utf-8")
    subprocess.run([*git, "commit", "-qam", "c"], check=True)
    assert subprocess.run([*git, "merge", "-q", "other"], capture_output=True, check=False).returncode != 0
    with pytest.raises(RagmdError, match="git conflict markers"):
        loads((repo / "i.ragmd").read_text(encoding="utf-8"))


def test_adding_a_document_only_adds_its_lines(indexed):
    _, _, _, out = indexed
    rf = loads(out.read_text(encoding="utf-8"))
    keep = [d for d in rf.documents if d.label != "B02"]
    idx = [i for i, c in enumerate(rf.chunks) if c.document_id in {d.document_id for d in keep}]
    smaller = RagFile(
        rf.model_name,
        rf.chunkset_id,
        rf.created_at,
        rf.updated_at,
        keep,
        [rf.chunks[i] for i in idx],
        rf.vectors[idx],
    )
    diff = [
        ln
        for ln in difflib.unified_diff(dumps(smaller).split("\n"), dumps(rf).split("\n"), n=0, lineterm="")
        if ln[:1] in "+-" and not ln.startswith(("+++", "---"))
    ]
    removed = [ln for ln in diff if ln.startswith("-")]
    added = [ln for ln in diff if ln.startswith("+")]
    b02 = sum(c.document_id not in {d.document_id for d in keep} for c in rf.chunks)
    # removed: only the two counts of the front matter and the summary line
    assert len(removed) == 3 and all(("count" in ln or "documents," in ln) for ln in removed), removed
    # added: those 3 lines again, the table row, and per chunk one Chunks, one metadata and one vector line
    assert len(added) == 3 + 1 + 3 * b02 + 2, len(added)  # + the document's header and closing lines


FLOATS = st.floats(width=32, allow_nan=False, allow_infinity=False)  # an index holds finite vectors only
SEARCHABLE = st.floats(0.5, 1e3, width=32) | st.floats(-1e3, -0.5, width=32)  # a norm LanceDB can search
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)


@st.composite
def rag_files(draw, floats=FLOATS):
    dim = draw(st.integers(1, 6))
    docs, chunks = [], []
    for d in range(draw(st.integers(0, 4))):
        did = f"d{d}-{draw(st.uuids())}"
        docs.append(
            RagDocument(
                did,
                draw(st.from_regex(r"[A-Z][0-9]{2}", fullmatch=True)) + str(d),
                draw(TEXT),
                draw(st.sampled_from(["", "2101.00001", "hep-ex/0106068"])),
            )
        )
        pos = 0
        for i in range(draw(st.integers(0, 4))):
            text = draw(TEXT)
            ctx = draw(st.booleans())
            chunks.append(
                RagChunk(
                    f"{did}-c{i}",
                    did,
                    i,
                    pos,
                    pos + len(text),
                    text,
                    tuple(draw(st.lists(st.integers(1, 300), max_size=3))),
                    draw(TEXT),
                    draw(st.integers(0, 500)),
                    0 if ctx else -1,
                    9 if ctx else -1,
                    draw(TEXT) if ctx else "",
                )
            )
            pos += len(text) + draw(st.integers(0, 3))
    vecs = np.asarray([[draw(floats) for _ in range(dim)] for _ in chunks], dtype="<f4").reshape(
        len(chunks), dim
    )
    if floats is SEARCHABLE:  # a model's vectors: of unit length (what a search needs)
        vecs = (vecs / np.linalg.norm(vecs.astype(np.float64), axis=1, keepdims=True)).astype("<f4")
    return RagFile(
        "all-MiniLM-L6-v2", "cs-x", "2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z", docs, chunks, vecs
    )


ODD = RagFile(
    "all-MiniLM-L6-v2",
    "cs-odd",
    "2026-01-01T00:00:00Z",
    "2026-01-01T00:00:00Z",
    [RagDocument("d-odd", "Z99", "A | B\u2028title", "")],
    [
        RagChunk("c-odd", "d-odd", 0, 0, 8, "a\u2028|b\n```", (1,), "§ 1 | x", 3, 0, 20, "ctx\u2029"),
        RagChunk("c-empty", "d-odd", 1, 8, 8, ""),
    ],
    np.array([[-0.0, 1e-45, np.finfo(np.float32).max], [0.0, -1e-38, 1.0]], dtype="<f4"),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example(ODD)
@given(rag_files())
def test_any_file_round_trips_exactly(rf):
    text = dumps(rf)
    back = loads(text)
    assert dumps(back) == text
    assert (
        back.vectors.tobytes() == rf.sorted().vectors.tobytes()
    )  # bit-identical, -0.0 and subnormals included
    assert [c.text for c in back.chunks] == [c.text for c in rf.sorted().chunks]


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rag_files(floats=SEARCHABLE).filter(lambda f: len(f.chunks) > 0))
def test_any_file_survives_lancedb(rf):
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "p.ragmd"
        path.write_text(dumps(rf), encoding="utf-8")
        name, _ = import_file(path, Path(tmp) / "db", table="t__m")
        assert export_table(Path(tmp) / "db", name, rf.model_name, Path(tmp) / "q.ragmd").read_bytes() == (
            path.read_bytes()
        )


def test_cli_export_validate_import(indexed, tmp_path, monkeypatch):
    from hepwb.cli import app

    root, _, s, out = indexed
    monkeypatch.setenv("HEPWB_HOME", str(root / "home"))
    runner = CliRunner()
    r = runner.invoke(app, ["export-ragmd", s.chunkset.chunkset_id, str(tmp_path / "c.ragmd")])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "c.ragmd").read_bytes() == out.read_bytes()
    assert "valid (3 documents" in runner.invoke(app, ["validate-ragmd", str(out)]).output
    bad = tmp_path / "bad.ragmd"
    bad.write_text(out.read_text(encoding="utf-8")[:-300], encoding="utf-8")
    r = runner.invoke(app, ["validate-ragmd", str(bad)])
    assert r.exit_code == 1 and "bad.ragmd:" in r.output and "[Vectors]" in r.output
    r = runner.invoke(app, ["import-ragmd", str(out), "--table", "shared-tiny__all_minilm_l6_v2"])
    assert r.exit_code == 0 and "shared-tiny__all_minilm_l6_v2" in r.output
    r = runner.invoke(
        app,
        [
            "search",
            "What does the far detector contain?",
            "--ragmd",
            str(out),
            "--retrievers",
            "bm25,dense",
            "-k",
            "1",
        ],
    )
    assert r.exit_code == 0 and r.output.count("C03") >= 2, r.output
    # its defaults: the default retriever, bm25(fields=context), reads the titles and sections in the file
    r = runner.invoke(app, ["search", "What does the far detector contain?", "--ragmd", str(out), "-k", "1"])
    assert r.exit_code == 0 and "== bm25(fields=context)" in r.output and "C03" in r.output, r.output
    r = runner.invoke(app, ["search", "far detector", "--ragmd", str(out), "--retrievers", "entity"])
    assert r.exit_code == 2 and "import-ragmd" in r.output
    r = runner.invoke(
        app,
        [
            "search",
            "far detector",
            "--table",
            "shared-tiny__all_minilm_l6_v2",
            "--retrievers",
            "entity",
            "-k",
            "1",
        ],
    )
    assert r.exit_code == 0 and "C03" in r.output, r.output


@pytest.mark.parametrize("value", [0.0, 3e38])
def test_vectors_that_cannot_be_searched_are_refused_by_the_search_and_the_import(indexed, tmp_path, value):
    from hepwb.ragmd.index import RagmdIndex
    from hepwb.ragmd.reader import RagmdError
    from hepwb.ragmd.tables import import_file

    _, _, _, out = indexed
    text = out.read_text(encoding="utf-8")
    lines = text.split("\n")
    first_vector = lines[next(i for i, ln in enumerate(lines) if ln == "```base64") + 1]
    bad = base64.b64encode(struct.pack("<384f", *[value] * 384)).decode()
    path = tmp_path / "tampered.ragmd"
    path.write_text(_broken(text, first_vector, first_vector.split(" ")[0] + " " + bad), encoding="utf-8")
    with pytest.raises(RagmdError, match="not of unit length"):
        RagmdIndex.load(path)
    db = tmp_path / "lancedb"
    with pytest.raises(RagmdError, match="not of unit length"):
        import_file(path, db)
    assert not (db / "_complete").exists()  # nothing written


@pytest.mark.parametrize("model", ["evilmodel", "org/model"])
def test_a_model_name_that_is_a_local_folder_is_refused_by_validate_and_search(tmp_path, monkeypatch, model):
    from hepwb.cli import app

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HEPWB_HOME", str(tmp_path / "home"))
    (tmp_path / model).mkdir(parents=True)
    (tmp_path / model / "modules.json").write_text("[]", encoding="utf-8")  # what would be loaded and run

    def no_model(*_: object, **__: object) -> None:
        raise AssertionError("the folder was loaded as the embedding model")

    monkeypatch.setattr("hepwb.ragmd.index.get_embedder", no_model)
    rf = RagFile(
        model,
        "cs-x",
        "2026-01-01T00:00:00Z",
        "2026-01-01T00:00:00Z",
        [RagDocument("d1", "P01", "Gluons", "")],
        [RagChunk("c1", "d1", 0, 0, 5, "gluon")],
        np.array([[1.0, 0.0]], dtype="<f4"),
    )
    path = tmp_path / "f.ragmd"
    path.write_text(dumps(rf), encoding="utf-8")
    said = f"model_name {model!r} is also the path of {tmp_path / model}, which hepwb would load as the model"
    runner = CliRunner()
    r = runner.invoke(app, ["validate-ragmd", str(path)])
    assert r.exit_code == 1 and said in r.output, r.output
    r = runner.invoke(app, ["search", "gluon", "--ragmd", str(path), "--retrievers", "dense"])
    lines = [line for line in r.output.splitlines() if line.strip()]
    assert r.exit_code == 2 and len(lines) == 1 and lines[0].startswith("error: ") and said in lines[0], (
        r.output
    )
    with pytest.raises(ConfigError, match="is also the path of"):  # a file read from a table: checked too
        RagmdIndex(rf).search("gluon", "dense")
    # imported from a folder without it, then searched as a table from this folder: checked where it loads
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    r = runner.invoke(app, ["import-ragmd", str(path)])
    assert r.exit_code == 0, r.output
    from hepwb.paths import Layout
    from hepwb.ragmd.tables import import_file

    name, _ = import_file(path, Layout.default().lancedb)  # the same file: its table name
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("hepwb.experiment.search.get_embedder", no_model)
    r = runner.invoke(app, ["search", "gluon", "--table", name, "--retrievers", "dense"])
    lines = [line for line in r.output.splitlines() if line.strip()]
    assert r.exit_code == 2 and len(lines) == 1 and said in lines[0], r.output
