"""Findings of the sixth hostile-input probe (issue 38): the importers, ``hepwb export``, the Dask Gateway
connection and the object store. Each reproduces the probe's input (real files, real servers on 127.0.0.1)."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from pathlib import Path

import pytest

from hepwb import limits
from hepwb.exceptions import ConfigError
from tests.helpers import run_main

pytest.importorskip("ir_datasets")


def _beir(folder: Path, docs: list[dict[str, str]], queries: list[dict[str, str]], qrels: str) -> Path:
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + qrels)
    return folder


_ONE_DOC = [{"_id": "d1", "text": "Alpha text about W boson."}]
_ONE_QUERY = [{"_id": "q1", "text": "alpha?"}]


# G1: an id equal to another id's hashed label overwrote that document (silent wrong evidence)


def test_import_beir_keeps_a_document_whose_label_another_id_has(home, monkeypatch, capsys):
    docs = [
        {"_id": "a_b", "text": "Alpha text about W boson."},
        {"_id": "a-b-3ebec71b", "text": "Beta text about Z boson."},
    ]
    queries = [{"_id": "q1", "text": "alpha?"}, {"_id": "q2", "text": "beta?"}]
    folder = _beir(home / "b2", docs, queries, "q1\ta_b\t1\nq2\ta-b-3ebec71b\t1\n")
    code, _, err = run_main(monkeypatch, capsys, "import-beir", str(folder), "o2")
    assert code == 0, err
    files = sorted((home / "o2" / "corpus").glob("*.md"))
    assert sorted(f.read_text() for f in files) == [d["text"] for d in docs]
    papers = json.loads((home / "o2" / "corpus" / "papers.json").read_text())["papers"]
    assert len({p["pid"] for p in papers}) == 2
    rows = [json.loads(line) for line in (home / "o2" / "questions.jsonl").read_text().splitlines()]
    quotes = {r["qid"]: r["evidence"][0]["quote"] for r in rows}
    assert quotes == {"q1": docs[0]["text"], "q2": docs[1]["text"]}


# G3: import-ir-datasets kept the last of duplicate queries and judgements, silently


def _ird(home: Path, queries: str, qrels: str) -> list[str]:
    (home / "docs.tsv").write_text("d1\tThe W boson backgrounds are small.\nd2\tHiggs mass.\n")
    (home / "q.tsv").write_text(queries)
    (home / "qrels").write_text(qrels)
    return ["--docs", "docs.tsv", "--queries", "q.tsv", "--qrels", "qrels"]


@pytest.mark.parametrize(
    ("queries", "qrels", "says"),
    [
        ("q1\tWhich backgrounds?\nq1\tDuplicate query text wins?\n", "q1 0 d1 1\n", "given twice"),
        ("q1\tWhich backgrounds?\n", "q1 0 d1 1\nq1 0 d1 0\nq1 0 d2 1\n", "judged twice"),
    ],
)
def test_import_ir_datasets_refuses_a_duplicate_query_or_judgement(
    home, monkeypatch, capsys, queries, qrels, says
):
    args = _ird(home, queries, qrels)
    code, _, err = run_main(monkeypatch, capsys, "import-ir-datasets", "oi3", *args)
    assert code == 2, err
    assert says in err and len(err.strip().splitlines()) == 1
    assert ("q.tsv" if "given" in says else "qrels") in err
    assert not (home / "oi3").exists()


# M1: a qrels score of non-ASCII digits or two signs was exit 3 (int() refused what isdigit() let in)


@pytest.mark.parametrize("score", ["--5", "\u00b2", "\u0661", "+-1"])
def test_import_beir_refuses_a_score_that_is_no_ascii_whole_number(home, monkeypatch, capsys, score):
    folder = _beir(home / "b3", _ONE_DOC, _ONE_QUERY, f"q1\td1\t{score}\n")
    code, _, err = run_main(monkeypatch, capsys, "import-beir", str(folder), "o3")
    assert code == 2, err
    assert "is not a whole number" in err and "test.tsv" in err


def test_import_beir_reads_signed_ascii_scores(home, monkeypatch, capsys):
    folder = _beir(home / "b3", _ONE_DOC, _ONE_QUERY, "q1\td1\t+5\n")
    code, _, err = run_main(monkeypatch, capsys, "import-beir", str(folder), "o3")
    assert code == 0, err


# M6: the importers blamed their own output file and left a partial folder that blocked the retry


def test_import_beir_names_queries_file_for_a_control_character_and_leaves_nothing(home, monkeypatch, capsys):
    queries = [{"_id": "q1", "text": "alpha?"}, {"_id": "q\x1b[2J", "text": "beta?"}]
    folder = _beir(home / "b4", _ONE_DOC, queries, "q1\td1\t1\n")
    code, _, err = run_main(monkeypatch, capsys, "import-beir", str(folder), "o4")
    assert code == 2, err
    assert "queries.jsonl line 2" in err and "U+001B" in err and "\x1b" not in err
    assert not (home / "o4").exists()


def test_import_ir_datasets_names_the_qrels_file_for_a_huge_relevance_and_can_retry(
    home, monkeypatch, capsys
):
    args = _ird(home, "q1\tWhich backgrounds?\n", "q1 0 d1 " + "9" * 4000 + "\n")
    (home / "oi2").mkdir()  # an empty folder given: it stays, empty
    code, _, err = run_main(monkeypatch, capsys, "import-ir-datasets", "oi2", *args)
    assert code == 2, err
    assert "qrels" in err and "questions.jsonl" not in err
    assert list((home / "oi2").iterdir()) == []
    (home / "qrels").write_text("q1 0 d1 1\n")
    code, _, err = run_main(monkeypatch, capsys, "import-ir-datasets", "oi2", *args)
    assert code == 0, err


def test_import_ir_datasets_leaves_no_folder_after_a_parse_error(home, monkeypatch, capsys):
    args = _ird(home, "q1\tWhich backgrounds?\n", "q1 0 d1 1\n")
    (home / "docs.tsv").write_text("d1 no tab here\n")
    code, _, err = run_main(monkeypatch, capsys, "import-ir-datasets", "oi1", *args)
    assert code == 2, err
    assert not (home / "oi1").exists()


# G4 and G5: a server that accepts connections and never answers hung the gateway client and the S3 client


@pytest.fixture
def silent_port():
    """A TCP listener on 127.0.0.1 that accepts every connection and never sends a byte."""
    server = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                held.append(server.accept()[0])

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    server.close()


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_a_silent_gateway_is_one_line(silent_port, monkeypatch, scheme):
    pytest.importorskip("dask_gateway")
    from hepwb.sweep.gateway import make_gateway_cluster

    monkeypatch.setattr(limits, "GATEWAY_WAIT_S", 1.0)
    address = f"{scheme}://127.0.0.1:{silent_port}"
    with pytest.raises(ConfigError) as info:
        make_gateway_cluster(address=address)
    assert "does not answer HTTP within 1 s" in str(info.value) and address in str(info.value)


def test_a_silent_s3_endpoint_is_one_line(silent_port, monkeypatch, tmp_path):
    pytest.importorskip("s3fs")
    from hepwb.paths import Layout
    from hepwb.store import StoreError
    from hepwb.sweep.store_client import StoreSweep

    endpoint = f"http://127.0.0.1:{silent_port}"
    for name, value in {
        "AWS_ACCESS_KEY_ID": "x",
        "AWS_SECRET_ACCESS_KEY": "y",
        "AWS_ENDPOINT_URL": endpoint,
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(limits, "STORE_PROBE_S", 1.0)
    with pytest.raises(StoreError) as info:
        StoreSweep("s3://hepwb-probe-bucket/x", Layout(tmp_path))
    text = str(info.value)
    assert "s3://hepwb-probe-bucket/x" in text and endpoint in text and "\n" not in text


# M2 and M5: hepwb export of a damaged hits.parquet, and into a file, was exit 3 (and left partial output)


@pytest.fixture(scope="module")
def one_run(tmp_path_factory):
    """A project with one bm25 run over three markdown papers."""
    from hepwb.paths import Layout
    from hepwb.pipeline.config import ExperimentConfig
    from hepwb.pipeline.experiment import run_experiment
    from tests.helpers import tiny_corpus

    root = tmp_path_factory.mktemp("probe6-export")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HEPWB_HOME", str(root))
        mp.chdir(root)
        corpus, questions = tiny_corpus(root)
        cfg = ExperimentConfig.from_params(
            corpus=str(corpus), questions=str(questions), chunk_size=48, retriever="bm25", k=5
        )
        run = run_experiment(cfg, layout=Layout(root), progress=False)
    return root, run.run_dir


@pytest.mark.parametrize("out", ["afile", "/dev/null"])
def test_export_into_something_not_a_folder_is_one_line(one_run, monkeypatch, capsys, out):
    root, run_dir = one_run
    monkeypatch.setenv("HEPWB_HOME", str(root))
    monkeypatch.chdir(root)
    (root / "afile").write_text("keep me\n")
    code, _, err = run_main(monkeypatch, capsys, "export", str(run_dir), out)
    assert code == 2, err
    assert f"{out} is not a folder" in err and len(err.strip().splitlines()) == 1
    assert (root / "afile").read_text() == "keep me\n"


def test_export_of_a_damaged_hits_file_names_it_and_the_rebuild_and_writes_nothing(
    one_run, monkeypatch, capsys
):
    root, run_dir = one_run
    monkeypatch.setenv("HEPWB_HOME", str(root))
    monkeypatch.chdir(root)
    hits = run_dir / "hits.parquet"
    good = hits.read_bytes()
    try:
        hits.write_bytes(good[:100])
        code, _, err = run_main(monkeypatch, capsys, "export", str(run_dir), "ex")
    finally:
        hits.write_bytes(good)
    assert code == 2, err
    assert "hits.parquet is damaged" in err and "rerun.sh" in err and "unexpected" not in err
    assert not (root / "ex").exists()
    code, _, err = run_main(monkeypatch, capsys, "export", str(run_dir), "ex")
    assert code == 0, err
