"""Corpus pairs, a real (tiny) CPU fine-tune, and fusion fitted by paper-grouped cross-validation."""

from __future__ import annotations

import json
import shutil

import pytest

from hepwb.adapt.finetune import AdaptSettings, adapt_embedder, hard_negatives
from hepwb.adapt.pairs import KINDS, corpus_pairs, pairs_sha256
from hepwb.exceptions import ConfigError, HepwbError
from hepwb.experiment import ExperimentConfig, run_experiment
from hepwb.models.embedder import Embedder
from hepwb.paths import Layout
from hepwb.processing.markdown import markdown_document
from hepwb.retrieval import get_retriever
from tests.helpers import TINY_DOCS, TINY_QUESTIONS, tiny_corpus


def _docs():
    return [markdown_document(text, name.split(".")[0]) for name, text in TINY_DOCS.items()]


TOPICS = [
    ("time projection chamber (TPC)", "drift velocity", "argon gas mixture", "pad plane readout"),
    (
        "deeply virtual Compton scattering (DVCS)",
        "beam-spin asymmetry",
        "recoil proton",
        "polarised positrons",
    ),
    ("electromagnetic calorimeter (ECAL)", "energy resolution", "lead tungstate crystals", "test beam"),
    ("ring imaging Cherenkov (RICH)", "kaon identification", "photon detectors", "radiator gas"),
]


def _prose_docs():
    """Four papers of running text: enough paragraphs for every kind of pair."""
    docs = []
    for i, (acr, a, b, c) in enumerate(TOPICS):
        short = acr.split("(")[1].rstrip(")")
        paras = [
            f"The {acr} of the experiment was studied in detail during the {2010 + i} running period, and "
            f"the {a} was monitored continuously with dedicated calibration runs and laser pulses. Results "
            f"from these runs were compared with the full detector simulation and agreed. "
            f"The remaining differences were assigned as a systematic uncertainty of the measurement.",
            f"The {short} {a} depends on the {b} and on the temperature of the detector volume. A change of "
            f"one degree shifts the measured value by a few per mille, which was corrected offline using "
            f"sensors installed at several positions along the detector. It was checked with cosmic "
            f"muons recorded between the fills of the accelerator.",
            f"As Figure 1 shows, the {c} of the {short} was stable as a function of the run number. The "
            f"stability over the full period is better than one per cent, which meets the design goal of the "
            f"collaboration and the requirements of the physics analyses. "
            f"No run had to be excluded from the analysis for this reason.",
        ]
        md = (
            f"# Performance of the {short} {i}\n\n{paras[0]}\n\n## Calibration of the {a}\n\n{paras[1]}"
            f"\n\n## Stability of the {c}\n\n{paras[2]}\n\nFigure 1: The {c} versus run number."
        )
        docs.append(markdown_document(md, f"T{i}"))
    return docs


def test_pairs_come_from_the_papers_deterministically():
    docs = _docs()
    pairs = corpus_pairs(docs, seed=0)
    assert pairs and {p.kind for p in pairs} <= set(KINDS)
    assert pairs_sha256(pairs) == pairs_sha256(corpus_pairs(docs, seed=0))
    words = {d.label: set(d.markdown.split()) for d in docs}
    for p in pairs:  # every passage is text of its own paper (an inverse-cloze passage skips one sentence)
        assert p.query and p.passage and set(p.passage.split()) <= words[p.label], p
    questions = {q for _, q, _, _ in TINY_QUESTIONS}
    assert not questions & {p.query for p in pairs}


def test_hard_negatives_are_never_the_answer():
    pairs = corpus_pairs(_prose_docs(), seed=0)
    for p, neg in zip(pairs, hard_negatives(pairs), strict=True):
        assert neg and neg != p.passage and p.query.lower() not in neg.lower()


@pytest.mark.heavy
def test_adapted_model_is_saved_with_a_card_and_used_by_name(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HEPWB_HOME", str(tmp_path))
    pairs = corpus_pairs(_prose_docs(), seed=0)
    assert len(pairs) >= 10 and {"heading", "acronym", "sentence", "caption"} <= {p.kind for p in pairs}
    settings = AdaptSettings(epochs=1.0, batch_size=4, max_seq_length=64, holdout=0.2)
    out = Layout(tmp_path).data / "models" / "tiny-hep"
    capsys.readouterr()
    card = adapt_embedder(pairs, "all-MiniLM-L6-v2", out, name="tiny-hep", settings=settings, progress=True)
    shown = capsys.readouterr()  # one tqdm.auto bar (text outside a notebook): steps, epoch, loss
    bar = shown.err.replace("\r", "\n").splitlines()
    assert any("training tiny-hep: 100%" in ln and f"{card.steps}/{card.steps}" in ln for ln in bar), bar
    assert any("epoch=1.00" in ln and "loss=" in ln for ln in bar), bar
    assert "loss" not in shown.out and "Training Loss" not in shown.out + shown.err  # transformers' own
    saved = json.loads((out / "model_card.json").read_text())
    assert saved["pairs_sha256"] == pairs_sha256(pairs) and saved["base_model"] == "all-MiniLM-L6-v2"
    assert card.steps >= 1 and saved["settings"]["seed"] == 0 and saved["seconds"] > 0
    assert "held-out" in (out / "README.md").read_text().lower()
    from hepwb.files.publish import check_published

    assert check_published(out) is None  # published whole, with its manifest; nothing left beside it
    assert not [p.name for p in out.parent.iterdir() if p.name.startswith(".")]
    from hepwb.index import get_embedder

    emb = get_embedder("tiny-hep")
    vec = emb.embed(["deeply virtual Compton scattering"])
    assert vec.shape == (1, 384)
    base = get_embedder("all-MiniLM-L6-v2").embed(["deeply virtual Compton scattering"])
    assert abs(float(vec[0] @ base[0])) < 0.99999, "the adapted model did not change"


@pytest.mark.heavy
def test_fitted_fusion_is_scored_out_of_fold(tmp_path):
    from hepwb.adapt.commands import fit_fusion_for

    corpus, questions = tiny_corpus(tmp_path)
    layout = Layout(tmp_path)
    params = {"corpus": str(corpus), "questions": str(questions), "chunk_size": 48, "chunk_overlap": 0.0}
    fit = fit_fusion_for("tiny", layout=layout, n_folds=3, progress=False, **params)
    assert fit.method in {"rrf", "linear"} and 0 <= fit.weight <= 1
    assert set(fit.folds) == {"A01", "B02", "C03"} and len(set(fit.folds.values())) == 3
    for p in fit.fold_params.values():  # each fold's weights were chosen without its own paper
        assert len(p["papers"]) == 1
    path = layout.data / "models" / "fusion" / "tiny.json"
    assert json.loads(path.read_text())["out_of_fold"] == fit.out_of_fold
    cfg = ExperimentConfig.from_params(
        **params, retriever="fusion", retriever_options={"fitted": str(path)}, run_dir=str(tmp_path / "run")
    )
    res = run_experiment(cfg, layout=layout, progress=False)
    for metric in ("hit_rate@5", "mrr@10", "recall@5"):
        assert res.summary[metric] == pytest.approx(fit.out_of_fold[metric]), metric
    with pytest.raises(ConfigError, match="hepwb fit-fusion"):
        get_retriever("fusion", None, fitted="no-such-fit")
    # a fit refuses what it was not fitted on: another embedding model, another chunk set
    other = Embedder("sentence-transformers/all-mpnet-base-v2")  # never loaded: the check comes first
    with pytest.raises(ConfigError, match=r"fitted with embedding model .* --embedding-model"):
        get_retriever("fusion", None, embedder=other, fitted=str(path))
    # a fit whose dense branch reads windows gets its window tables built by evaluate itself
    windowed = json.loads(path.read_text())
    windowed["dense_read"] = "max"
    for p in windowed["fold_params"].values():
        p["dense_read"] = "max"
    (path.parent / "tiny-max.json").write_text(json.dumps(windowed))
    fresh = Layout(tmp_path / "fresh")
    max_cfg = cfg.model_copy(update={"retriever_options": {"fitted": str(path.parent / "tiny-max.json")},
                                     "run_dir": str(tmp_path / "run-max")})  # fmt: skip
    assert run_experiment(max_cfg, layout=fresh, progress=False).summary["n_questions"] > 0
    resized = cfg.model_copy(update={"chunk_size": 64, "run_dir": str(tmp_path / "run64")})
    with pytest.raises(ConfigError, match=r"fitted on chunk set .*\(chunk size 48\).*\(chunk size 64\)"):
        run_experiment(resized, layout=layout, progress=False)


@pytest.mark.heavy
def test_llm_pseudo_questions_join_the_pairs(tmp_path, monkeypatch):
    """GPL style: with an endpoint, an LLM question per sampled paragraph becomes a `generated` pair."""
    from hepwb.adapt.commands import adapt_corpus
    from hepwb.adapt.generated import generated_pairs
    from hepwb.runtime.llm import LLMEndpoint
    from tests.llm_server import LLMServer

    docs = _prose_docs()
    with LLMServer() as srv:
        pairs = generated_pairs(docs, LLMEndpoint(srv.url, "m"), per_doc=2, seed=0)
        assert len(pairs) == len(srv.requests) == 2 * len(docs)
        assert all(p.kind == "generated" and p.query.endswith("?") and p.passage for p in pairs)
        assert "Write one question" in srv.requests[0]["messages"][-1]["content"]
        corpus = tmp_path / "corpus"
        corpus.mkdir()
        for d in docs:
            (corpus / f"{d.label}_paper.md").write_text(d.markdown, encoding="utf-8")
        monkeypatch.setenv("HEPWB_LLM_URL", srv.url)
        monkeypatch.setenv("HEPWB_LLM_MODEL", "m")
        settings = AdaptSettings(batch_size=8, max_seq_length=48, holdout=0.2)
        card = adapt_corpus("gpl", corpus=str(corpus), llm_questions=1, settings=settings,
                            layout=Layout(tmp_path), progress=False)  # fmt: skip
    assert card.pairs.get("generated") and card.n_train + card.n_heldout > len(pairs) // 2


@pytest.mark.heavy
def test_a_cross_encoder_trained_on_corpus_pairs_reranks_by_name(tmp_path, monkeypatch):
    """`hepwb adapt --cross-encoder` end to end on a tiny corpus: card, rerank by name, key per weights."""
    from typer.testing import CliRunner

    from hepwb.cli import app
    from hepwb.experiment.keys import cell_key
    from hepwb.retrieval.rerank import cross_encoder_name, load_cross_encoder

    monkeypatch.setenv("HEPWB_HOME", str(tmp_path))
    monkeypatch.delenv("HEPWB_CROSS_ENCODER", raising=False)
    corpus, questions = tmp_path / "papers", tmp_path / "questions.jsonl"
    corpus.mkdir()
    lines = []
    for doc in _prose_docs():
        (corpus / f"{doc.label}.md").write_text(doc.markdown, encoding="utf-8")
        quote = doc.markdown.split("\n\n")[3][:120]  # from the calibration section
        ask = f"How was the {doc.title[15:]} calibrated?"
        evidence = [{"doc": doc.label, "quote": quote}]
        lines.append(json.dumps({"qid": doc.label, "question": ask, "answer": "-", "evidence": evidence}))
    questions.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert cross_encoder_name() == "cross-encoder/ms-marco-MiniLM-L-6-v2"  # none trained yet
    args = ["adapt", "--cross-encoder", "hep-reranker", "--corpus", str(corpus), "--pdf-only"]
    res = CliRunner().invoke(app, [*args, "--batch-size", "8", "--max-pairs", "60", "--epochs", "1"])
    assert res.exit_code == 0, res.output
    assert "cross-encoder" in res.output and "held-out mrr" in res.output
    out = Layout(tmp_path).data / "models" / "hep-reranker"
    card = json.loads((out / "model_card.json").read_text())
    assert card["kind"] == "cross-encoder" and card["steps"] >= 1 and card["base_model"] == "all-MiniLM-L6-v2"
    assert cross_encoder_name() == "hep-reranker"  # the trained one is rerank's default now
    model = load_cross_encoder("hep-reranker")
    s = model.predict([("drift velocity", "The drift velocity was measured."), ("drift velocity", "Tea.")])
    assert len(s) == 2 and float(s[0]) != float(s[1])
    cfg = ExperimentConfig.from_params(
        corpus=str(corpus), questions=str(questions), prefer_latex=False, chunk_size=64,
        retriever="rerank(base=bm25(fields=context), top_n=5)",
    )  # fmt: skip
    result = run_experiment(cfg, layout=Layout(tmp_path), progress=False)
    plain = run_experiment(
        cfg.model_copy(update={"retriever": "bm25", "retriever_options": {"fields": "context"}}),
        layout=Layout(tmp_path), progress=False,
    )  # fmt: skip
    assert result.record.config["retriever"] == "rerank" and len(result.hits) == len(plain.hits) > 0
    assert list(result.hits["score"]) != list(plain.hits["score"])  # cross-encoder scores, not BM25's
    key = cell_key(cfg.to_dict(), chunkset_id="c", index="i", questions_sha256="q")
    from hepwb.files.publish import publish_folder, read_manifest

    assert read_manifest(out)["rebuild"] == "hepwb adapt --cross-encoder hep-reranker"
    (out / "model.safetensors").write_bytes((out / "model.safetensors").read_bytes() + b" ")
    with pytest.raises(HepwbError, match=r"model\.safetensors has \d+ bytes, its manifest says"):
        cell_key(cfg.to_dict(), chunkset_id="c", index="i", questions_sha256="q")  # damaged: refused
    changed = (out / "model.safetensors").read_bytes()

    def write(tmp):  # other weights published under the same name
        shutil.copytree(out, tmp, dirs_exist_ok=True, ignore=shutil.ignore_patterns("hepwb-manifest.json"))
        (tmp / "model.safetensors").write_bytes(changed)

    publish_folder(out, write)
    assert cell_key(cfg.to_dict(), chunkset_id="c", index="i", questions_sha256="q") != key


def test_nested_retriever_options_parse_with_their_commas():
    from hepwb.components.callspec import named

    assert named("rerank(base=hybrid(method=linear, weight=0.1), top_n=20)") == (
        "rerank",
        {"base": "hybrid(method=linear, weight=0.1)", "top_n": 20},
    )


@pytest.mark.heavy
def test_a_fusion_run_without_a_fit_fits_one_out_of_fold_and_reuses_it(tmp_path):
    corpus, questions = tiny_corpus(tmp_path)
    layout = Layout(tmp_path)
    params = {"corpus": str(corpus), "questions": str(questions), "chunk_size": 48, "chunk_overlap": 0.0}
    cfg = ExperimentConfig.from_params(**params, retriever="fusion", run_dir=str(tmp_path / "run"))
    res = run_experiment(cfg, layout=layout, progress=False)
    fits = list((layout.data / "models" / "fusion").glob("run-*.json"))
    assert len(fits) == 1, fits
    fit = json.loads(fits[0].read_text())
    assert fit["n_folds"] == 3 and set(fit["folds"]) == {"A01", "B02", "C03"}  # one fold per paper here
    for metric in ("hit_rate@5", "mrr@10", "recall@5"):  # scored with each paper's out-of-fold weights
        assert res.summary[metric] == pytest.approx(fit["out_of_fold"][metric]), metric
    assert json.loads((tmp_path / "run" / "fusion_fit.json").read_text()) == fit
    assert res.record.timings_s["fit_s"] > 0
    before = fits[0].stat().st_mtime_ns
    again = run_experiment(cfg.model_copy(update={"run_dir": str(tmp_path / "run2")}), layout=layout,
                           progress=False)  # fmt: skip
    assert fits[0].stat().st_mtime_ns == before and again.summary == res.summary
    with pytest.raises(ConfigError, match="fusion needs fitted=<a fit> here"):
        get_retriever("fusion", None)


@pytest.mark.heavy
def test_a_fusion_run_on_evidence_in_one_paper_says_it_needs_two(tmp_path):
    import dataclasses

    from hepwb.experiment.fusion_fit import fit_in_run
    from hepwb.experiment.stages import chunk_stage, index_stage, load_inputs
    from hepwb.index import get_embedder

    corpus, questions = tiny_corpus(tmp_path)
    layout = Layout(tmp_path)
    cfg = ExperimentConfig.from_params(
        corpus=str(corpus), questions=str(questions), chunk_size=48, chunk_overlap=0.0, retriever="fusion"
    )
    inputs = load_inputs(cfg, layout, progress=False)
    cs = chunk_stage(cfg, inputs.documents, layout, inputs.log, progress=False)
    emb = get_embedder(cfg.embedding_model)
    table = index_stage(cs, emb, layout, progress=False)
    one = dataclasses.replace(inputs, located=[loc for loc in inputs.located if loc.label == "A01"])
    with pytest.raises(ConfigError, match=r"lies in 1 paper\(s\): it needs 2 or more, or pass fitted=NAME"):
        fit_in_run(cfg, table, emb, one, cs, layout)
    assert not list((layout.data / "models" / "fusion").glob("run-*.json"))
