"""The performance benches write their results files only from what they measured (no GPU: no gpu.md)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest

from bench import bench_gpu
from bench.results import problems, read_results


@pytest.fixture
def inputs(tmp_path):
    folder = tmp_path / "inputs"
    folder.mkdir()
    (folder / "texts.json").write_text(json.dumps([f"text {i}" for i in range(8)]), encoding="utf-8")
    (folder / "pairs.json").write_text("[]", encoding="utf-8")
    (folder / "papers.json").write_text(json.dumps(["P01", "P02"]), encoding="utf-8")
    return folder


def _fake_device(monkeypatch, device):
    vecs = np.eye(8, dtype=np.float32)
    emb = SimpleNamespace(device=device, batch_size=256, embed=lambda texts: vecs[: len(texts)])
    monkeypatch.setattr(bench_gpu, "hepwb_embed", lambda texts, dev: (120.0, vecs, emb))
    monkeypatch.setattr(bench_gpu, "bare_loop", lambda texts, dev: (100.0, vecs))
    monkeypatch.setattr(bench_gpu, "Embedder", lambda device: emb)
    monkeypatch.setattr(bench_gpu, "configure_runtime", lambda: None)  # no environment variables set here
    import torch

    monkeypatch.setattr(torch.cuda, "get_device_name", lambda i: "Fake GPU")


def test_the_gpu_bench_writes_its_results_file_only_on_a_gpu(tmp_path, inputs, monkeypatch, capsys):
    out = tmp_path / "results"
    args = [
        "--inputs",
        str(inputs),
        "--no-adapt",
        "--json",
        str(tmp_path / "gpu.json"),
        "--results-folder",
        str(out),
    ]
    _fake_device(monkeypatch, "cpu")
    assert bench_gpu.main(args) == 0
    assert not out.exists()
    assert "no GPU (device cpu): no results file written" in capsys.readouterr().out

    _fake_device(monkeypatch, "cuda")
    bench_gpu.main(args)
    stamp, rest = read_results(out / "gpu.md")
    assert "on Fake GPU (cuda)" in rest and "the 2 shared papers (P01, P02)" in rest
    assert "| hepwb against the bare loop | 1.20× | ≥ 0.60× |" in rest
    assert stamp["command"].startswith("python")
    assert problems(out) == []


def test_the_chunking_table_says_which_peer_is_missing_and_compares_with_those_that_ran():
    from bench.bench_chunking import MINILM, Row, caption, results_table

    ran = Row("hepwb", "token", MINILM, best_s=1.0, n_chunks=10)
    peer = Row("langchain-ts 1.1", "RecursiveCharacterTextSplitter", MINILM, best_s=2.0, n_chunks=10)
    missing = Row("semchunk", "chunkerify", "-", offsets="-", note="not installed")
    body = results_table([ran, peer, missing], n_bytes=2_000_000)
    assert "| hepwb | token | all-MiniLM-L6-v2 | 2.000 |" in body and "| 2.00 | ≥ 1.0 |" in body
    assert "| semchunk | chunkerify | - |" in body and "not installed |" in body
    doc = SimpleNamespace(label="P01")
    line = caption([ran, peer, missing], [doc], 2_000_000, 32)
    assert "1 of the 32 shared papers, P01," in line
    assert "langchain-ts 1.1 RecursiveCharacterTextSplitter (semchunk not installed" in line


def test_the_scale_table_gives_each_stage_growth_against_the_documents_growth():
    from bench.bench_scale import STAGES, results_table

    def row(n, s):
        ev = {"timings_s": {"index_s": s, "retrieve_s": s, "evaluate_s": 0.0}, "found@5": 0.5}
        stages = {st: {"wall_s": s, "peak_rss_mib": 100.0} for st in STAGES}
        return {**stages, "documents": n, "embedding": "measured", "chunk": {"wall_s": s, "peak_rss_mib": 1.0,
                "chunks": n}, "evaluate": {**stages["evaluate"], "dense": ev, "bm25": ev},
                "report": {**stages["report"], "render_s": 1.0}, "disk_mib": {"a": 1.0}}  # fmt: skip

    body = results_table([row(32, 2.0), row(320, 10.0)])
    assert "| 32 → 320 | 10.0 | 5.0 | 5.0 | 5.0 | 5.0 | 5.0 | ≤ 11.0 |" in body
