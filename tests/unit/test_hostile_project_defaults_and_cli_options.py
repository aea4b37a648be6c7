"""Findings of the seventh hostile-input probe (issue 38) in the CLI's own options and files: project
defaults, YAML numbers, ``hepwb acquire``'s interval and service URLs. Each reproduces the probe's input."""

from __future__ import annotations

import json
import re

import pytest

from hepwb.tiers.settings import load_config
from hepwb.yamlio import load_yaml
from tests.helpers import run_main

# F1: the `source` of hepwb-defaults.json reached the terminal raw (OSC 52 writes the clipboard)


@pytest.mark.parametrize("source", ["\u001b]52;c;aGk=\u0007 evil", "\u009b2J clear", "x" * 20_000, 7])
def test_project_defaults_with_control_codes_in_source_are_refused(home, monkeypatch, capsys, source):
    pinned = home / "proj" / "hepwb-defaults.json"
    pinned.write_text(json.dumps({"retriever": "bm25", "chunk_size": 64, "source": source}))
    code, out, err = run_main(monkeypatch, capsys, "defaults", "show")
    assert code == 2 and "\x1b" not in out + err and "\x9b" not in out + err
    line = err.strip()
    assert "\n" not in line and "hepwb-defaults.json: source" in line and "hepwb defaults unpin" in line


def test_project_defaults_with_a_plain_source_are_shown(home, monkeypatch, capsys):
    pinned = home / "proj" / "hepwb-defaults.json"
    pinned.write_text(json.dumps({"retriever": "bm25", "chunk_size": 64, "source": "my report"}))
    code, out, _ = run_main(monkeypatch, capsys, "defaults", "show")
    assert code == 0 and "bm25" in out and "64" in out


# F2: YAML 1.1 base-60 numbers were read silently (`ttl_s: 1:30` was 90 seconds)


def test_yaml_reads_decimal_numbers_only():
    got = load_yaml("[1:30, '1:30', 012, 0x10, 0o17, 0b11, 1:30.5, 20_000, 1e3, -2.5]", source="t.yaml")
    assert got == ["1:30", "1:30", 12, "0x10", "0o17", "0b11", "1:30.5", 20_000, 1000.0, -2.5]


def test_a_base_60_duration_in_a_tier_config_is_refused(tmp_path):
    config = tmp_path / "t.yaml"
    config.write_text("ttl_s: 1:30\n")
    with pytest.raises(ValueError, match=r"ttl_s.*got '1:30'"):
        load_config(config)


def test_a_base_60_k_in_a_sweep_file_is_one_line(home, monkeypatch, capsys):
    corpus = home / "c"
    corpus.mkdir()
    (corpus / "P01_a.md").write_text("# A\n\nThe W boson and Z boson backgrounds are small.\n")
    sweep = home / "s.yaml"
    sweep.write_text(f"corpus: {corpus}\nk: 1:00\ngrid: {{chunk_size: [1:04]}}\n")
    code, _, err = run_main(monkeypatch, capsys, "sweep", str(sweep), "--dry-run")
    assert code == 2 and "k = '1:00'" in err and "chunk_size" in err


# F4, M5, M6: hepwb acquire took a NaN, negative or infinite interval, and malformed or file:// URLs


@pytest.mark.parametrize(
    ("option", "value", "says"),
    [
        ("--min-interval", "nan", "min_interval is seconds"),
        ("--min-interval", "-5", "got -5.0"),
        ("--min-interval", "1e400", "got inf"),
        ("--max-results", "0", "max_results is a whole number"),
        ("--arxiv-url", "http://[::1", "--arxiv-url (HEPWB_ARXIV_API_URL) 'http://[::1' is malformed"),
        ("--arxiv-url", "file:///etc/passwd", "is not an http:// or https:// URL"),
        ("--oai-url", "http://" + "a" * 5000 + ".example", "--oai-url (HEPWB_ARXIV_OAI_URL)"),
        ("--inspire-url", "http://me:s3cret@127.0.0.1:99999/api", "outside 1-65535"),
        ("--pdf-base", "ftp://arxiv.org", "--pdf-base (HEPWB_ARXIV_PDF_BASE)"),
    ],
)
def test_acquire_refuses_a_bad_interval_or_url_before_any_request(
    home, monkeypatch, capsys, option, value, says
):
    code, _, err = run_main(monkeypatch, capsys, "acquire", "acq", "--query", "higgs", option, value)
    assert code == 2 and says in err and len(err.strip().splitlines()) == 1
    assert "s3cret" not in err and not (home / "acq").exists()  # nothing written, no password shown


# a BEIR query id longer than a question file allows: the importer skips it and says so (never a file that
# `hepwb questions check` then refuses)


def test_import_beir_skips_a_query_whose_id_is_too_long(home, monkeypatch, capsys):
    folder = home / "b"
    (folder / "qrels").mkdir(parents=True)
    doc = {"_id": "d1", "text": "Alpha text about W boson."}
    (folder / "corpus.jsonl").write_text(json.dumps(doc) + "\n")
    long_id = "q" * 300
    queries = [{"_id": "q1", "text": "alpha?"}, {"_id": long_id, "text": "alpha again?"}]
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (folder / "qrels" / "test.tsv").write_text(f"query-id\tcorpus-id\tscore\nq1\td1\t1\n{long_id}\td1\t1\n")
    code, out, err = run_main(monkeypatch, capsys, "import-beir", str(folder), "o")
    assert code == 0, err
    assert "longer than 256 characters" in out + err
    written = [json.loads(line)["qid"] for line in (home / "o" / "questions.jsonl").read_text().splitlines()]
    assert written == ["q1"]


# M2: a file:// store whose folder cannot be made ended in a FileNotFoundError traceback (exit 3)


def test_a_store_folder_that_cannot_be_made_is_one_line(home, monkeypatch, capsys):
    corpus = home / "c"
    corpus.mkdir()
    (corpus / "P01_a.md").write_text("# A\n\nThe W boson and Z boson backgrounds are small.\n")
    questions = home / "q.jsonl"
    quote = "The W boson and Z boson backgrounds are small."
    questions.write_text(
        json.dumps({"qid": "Q1", "question": "Which?", "evidence": [{"doc": "P01", "quote": quote}]})
    )
    sweep = home / "s.yaml"
    sweep.write_text(
        f"corpus: {corpus}\nquestions: {questions}\ntokenizer: words\ngrid: {{chunk_size: [64]}}\n"
    )
    code, _, err = run_main(
        monkeypatch, capsys, "sweep", str(sweep), "--executor", "serial", "--store", "file:///proc/self/x"
    )
    assert code == 2 and "its folder cannot be made" in err and len(err.strip().splitlines()) == 1


# M1: a gateway host label over 63 characters ended in a UnicodeError (exit 3); its password was echoed


@pytest.mark.parametrize(
    ("address", "says"),
    [
        ("http://" + "a" * 5000 + ".example", "has 5,0"),
        ("http://" + "a" * 70 + ".example", "is malformed"),
        ("http://alice:S3cretPW@" + "b" * 70 + ".example", "http://***@"),
        ("http://alice:S3cretPW@127.0.0.1:1", "cannot reach the Dask Gateway at http://***@127.0.0.1:1"),
    ],
)
def test_a_bad_gateway_address_is_one_line_without_its_password(address, says):
    pytest.importorskip("dask_gateway")
    from hepwb.exceptions import ConfigError
    from hepwb.sweep.gateway import make_gateway_cluster

    with pytest.raises(ConfigError) as info:
        make_gateway_cluster(address=address, workers=1)
    assert says in str(info.value) and "S3cretPW" not in str(info.value)


def test_an_empty_list_in_a_grid_is_named_not_blamed_on_exclude():
    from hepwb.sweep import SweepSpec
    from hepwb.sweep.spec import SweepSpecError

    spec = SweepSpec.from_dict({"grid": {"chunker": [], "chunk_size": [64]}}, source="s.yaml")
    with pytest.raises(SweepSpecError, match=r"s\.yaml: grid\.chunker is an empty list") as info:
        spec.check()
    assert "exclude" not in str(info.value)


# N1: .ragmd files that validate-ragmd accepted although their parts disagree


def _ragmd_text() -> str:
    import numpy as np

    from hepwb.ragmd import RagFile, dumps
    from hepwb.ragmd.model import RagChunk, RagDocument

    doc = RagDocument("d1", "P01", "A title", "")
    chunks = [RagChunk("c0", "d1", 0, 0, 5, "alpha"), RagChunk("c1", "d1", 1, 5, 9, "beta")]
    vectors = np.array([[1.0, 0.0], [0.6, 0.8]], dtype="<f4")
    return dumps(
        RagFile(
            "all-MiniLM-L6-v2", "cs", "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z", [doc], chunks, vectors
        )
    )


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (lambda t: "\ufeff" + t, "byte-order mark"),
        (lambda t: t + "\n## Vectors\n", "section '## Vectors' appears 2 times"),
        (lambda t: t.replace('index_type: "flat"', 'index_type: "hnsw"'), "index_type 'hnsw'"),
        (
            lambda t: t.replace("vector_count: 2", "vector_count: 2.0"),
            "vector_count '2.0' is not a whole number",
        ),
        (lambda t: t.replace('"chunk_index": 1', '"chunk_index": 0'), "chunk_index given twice"),
    ],
    ids=["bom", "two-vector-sections", "index-type", "float-count", "chunk-index-twice"],
)
def test_a_ragmd_file_whose_parts_disagree_is_refused(tmp_path, change, says):
    from hepwb.ragmd import RagmdError
    from hepwb.ragmd.reader import load_searchable

    text = _ragmd_text()
    assert load_searchable(_write(tmp_path / "ok.ragmd", text)).chunks  # the file before the change loads
    changed = change(text)
    assert changed != text
    with pytest.raises(RagmdError, match=re.escape(says)):
        load_searchable(_write(tmp_path / "bad.ragmd", changed))


def test_a_ragmd_vector_not_of_unit_length_is_refused(tmp_path):
    import base64

    import numpy as np

    from hepwb.ragmd import RagmdError
    from hepwb.ragmd.reader import load_searchable

    text = _ragmd_text()
    for scale in (100.0, 1e-20):
        line = "c0 " + base64.b64encode(np.array([scale, 0.0], dtype="<f4").tobytes()).decode()
        changed = "\n".join(line if ln.startswith("c0 ") else ln for ln in text.split("\n"))
        with pytest.raises(RagmdError, match=r"not of unit length \(chunks \['c0'\]\)"):
            load_searchable(_write(tmp_path / "bad.ragmd", changed))


def _write(path, text):
    path.write_text(text, encoding="utf-8")
    return path
