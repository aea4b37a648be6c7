"""Where models run: CUDA when present, else MPS, else the CPU; a named device is honoured or refused."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from hepwb.cli import app
from hepwb.exceptions import ConfigError
from hepwb.experiment.config import ExperimentConfig
from hepwb.experiment.run import run_experiment
from hepwb.index.lance import connect
from hepwb.models.device import resolve_device
from hepwb.models.embedder import Embedder, get_embedder
from hepwb.paths import Layout
from hepwb.sweep.spec import SweepSpec, SweepSpecError
from hepwb.text.ids import text_sha256
from tests.helpers import SHARED, tiny_corpus

GPU = torch.cuda.is_available()


def test_auto_picks_the_gpu_when_there_is_one_else_the_cpu(monkeypatch):
    monkeypatch.delenv("HEPWB_DEVICE", raising=False)
    assert resolve_device() == ("cuda" if GPU else resolve_device("auto"))
    assert resolve_device("cpu") == "cpu"
    emb = Embedder(device="cpu")
    assert (emb.device, emb.batch_size, emb.precision) == ("cpu", 4, "fp32")


def test_hepwb_device_forces_a_device_and_a_missing_one_names_the_fix(monkeypatch):
    monkeypatch.setenv("HEPWB_DEVICE", "cpu")
    assert get_embedder().device == "cpu"
    if not GPU:
        with pytest.raises(ConfigError, match=r"device 'cuda' is not available here .*--device auto or cpu"):
            Embedder(device="cuda").device  # noqa: B018
    with pytest.raises(ConfigError, match=r"device 'gpu': choose auto, cpu, cuda, cuda:N or mps"):
        Embedder(device="gpu")


def test_a_bad_device_on_the_command_line_is_one_line_and_exit_2():
    out = CliRunner().invoke(app, ["--device", "gpu", "evaluate", "--show-config"])
    assert out.exit_code == 2
    assert "device 'gpu': choose auto, cpu, cuda, cuda:N or mps" in out.output


def test_a_sweep_file_may_name_the_device_and_is_checked():
    assert SweepSpec.from_dict({"device": "cpu"}).device == "cpu"
    with pytest.raises(SweepSpecError, match="device 'tpu'"):
        SweepSpec.from_dict({"device": "tpu"})


@pytest.mark.heavy  # loads the embedding model and runs end to end: make test, not make check
def test_runs_and_tables_record_the_device_and_precision(tmp_path, monkeypatch):
    monkeypatch.setenv("HEPWB_DEVICE", "cpu")
    corpus, questions = tiny_corpus(tmp_path)
    cfg = ExperimentConfig.from_params(
        corpus=str(corpus),
        questions=str(questions),
        chunk_size=48,
        retriever="dense",
        run_dir=str(tmp_path / "r"),
    )
    res = run_experiment(cfg, layout=Layout(tmp_path), progress=False)
    embedder = res.record.environment["embedder"]
    assert embedder == {"model": cfg.embedding_model, "device": "cpu", "precision": "fp32", "batch": 4}
    markers = list((Layout(tmp_path).lancedb / "_complete").glob("*.json"))
    assert markers and all(json.loads(m.read_text())["embedder"]["device"] == "cpu" for m in markers)
    assert connect(Layout(tmp_path).lancedb) is not None


@pytest.mark.heavy  # loads the embedding model and runs end to end: make test, not make check
def test_cpu_vectors_agree_with_vectors_stored_from_a_gpu():
    """The embedding cache is shared across devices because vectors agree: checked against an H100's."""
    data = Path(__file__).resolve().parents[1] / "data"
    meta = json.loads((data / "gpu_h100_queries.json").read_text(encoding="utf-8"))
    gpu = np.load(data / "gpu_h100_queries.npy")
    lines = (SHARED / "eval" / "hepqa-dev.jsonl").read_text(encoding="utf-8").splitlines()
    questions = [json.loads(line)["question"] for line in lines if line.strip()][: len(gpu)]
    assert [text_sha256(q) for q in questions] == meta["question_sha256"]
    emb = Embedder(device="cpu")
    cpu = np.stack([emb.embed([q])[0] for q in questions])  # one at a time, as queries are embedded
    cosines = np.sum(cpu * gpu, axis=1)
    assert cosines.min() >= 0.9999, f"{meta['card']}: min cosine {cosines.min():.7f}"
