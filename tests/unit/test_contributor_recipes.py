"""The recipes of docs/howto/contributing.md, each followed with a toy part through the public surface.

Each test registers its toy as the page says and removes it afterwards: the registries have no unregister, so
their dictionaries (and the Typer app's command list) are restored by the fixtures below.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import pytest
import typer
from typer.testing import CliRunner

import hepwb.evaluation.metrics as metrics_module
from hepwb import defaults
from hepwb.catalog.sweeps import CONFIG_COLUMNS
from hepwb.chunking import CHUNKERS, Chunker, get_chunker
from hepwb.chunking._packing import SizedChunker
from hepwb.chunking._spans import ChunkSpan, TokenIndex, finalize
from hepwb.chunking.base import config_key, register_chunker
from hepwb.cli.base import app, current_command
from hepwb.evaluation import Evidence, Question, build_keyindexes, evaluate, locate_all, metric_columns
from hepwb.evaluation.rank import FAMILIES, rank_scores
from hepwb.evaluation.stats import summary_with_ci
from hepwb.exceptions import ConfigError
from hepwb.experiment import ExperimentConfig, run_experiment
from hepwb.experiment import config as config_module
from hepwb.experiment.config import DIMENSIONS
from hepwb.models.tokenizers import get_tokenizer
from hepwb.paths import Layout
from hepwb.processing.markdown import markdown_document
from hepwb.retrieval import RETRIEVERS, get_retriever, reads_vectors, specs
from hepwb.retrieval.base import register_retriever, rows_to_hits, table_parts
from hepwb.retrieval.bm25 import fts_rows
from hepwb.retrieval.options import Fetch
from hepwb.sweep import SweepSpec, SweepSpecError
from hepwb.types import Document, Hit
from tests.helpers import SAMPLE_MD, assert_chunk_invariants, tiny_corpus

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "howto" / "contributing.md"
runner = CliRunner()


@pytest.fixture
def registries() -> Iterator[None]:
    """Whatever a test registers as a chunker or retriever is gone after it (and no cached check of it)."""
    saved = {reg: dict(reg._items) for reg in (CHUNKERS, RETRIEVERS)}
    yield
    for reg, items in saved.items():
        reg._items.clear()
        reg._items.update(items)
    config_module._chunker_problem.cache_clear()  # a chunker name checked once is remembered


@pytest.fixture
def commands() -> Iterator[None]:
    """Commands a test adds to ``hepwb`` are removed after it."""
    saved, running = list(app.registered_commands), list(current_command)
    yield
    app.registered_commands[:] = saved
    current_command[:] = running  # the error boundary records the command it ran


def test_the_page_is_in_the_how_to_toctree_and_every_file_it_names_exists() -> None:
    index = (ROOT / "docs" / "howto" / "index.md").read_text(encoding="utf-8")
    assert "\ncontributing\n" in index
    named = re.findall(r"`((?:hepwb|docs|tests)/[\w/.-]+\.(?:py|md))`", PAGE.read_text(encoding="utf-8"))
    assert len(named) > 20
    missing = [path for path in named if "NAME" not in path and not (ROOT / path).is_file()]
    assert missing == [], f"docs/howto/contributing.md names files that do not exist: {missing}"


def test_a_chunker_registered_by_name_is_built_configured_swept_and_run(home: Path, registries: None) -> None:
    @register_chunker("toy")
    class ToyChunker(SizedChunker):
        """One chunk per paragraph, cut at chunk_size tokens; atomic blocks kept whole."""

        name = "toy"

        def chunk(self, doc: Document) -> list[Any]:
            tokens = TokenIndex(doc.markdown, get_tokenizer(self.tokenizer))
            spans = []
            for b in (b for b in doc.blocks if b.retrievable):
                if b.atomic:
                    over = tokens.count(b.start, b.end) > self.budget
                    spans.append(ChunkSpan(b.start, b.end, b.start, oversized=over))
                else:
                    pieces = tokens.cut_at_tokens(b.start, b.end, self.budget)
                    spans += [ChunkSpan(a, z, a) for a, z in pieces]
            return finalize(doc, spans, tokens, config_key(self))

    assert "toy" in CHUNKERS.names()
    chunker = get_chunker("toy", chunk_size=16, chunk_overlap=0.0, tokenizer="words")
    assert isinstance(chunker, Chunker) and chunker.params()["chunk_size"] == 16
    doc = markdown_document(SAMPLE_MD, "S")
    assert_chunk_invariants(doc, chunker.chunk(doc), 16)  # what test_chunking_strategies checks by name
    with pytest.raises(ConfigError, match="chunker 'toy' has no option"):
        get_chunker("toy", window=2)  # its options are its constructor's signature

    corpus, questions = tiny_corpus(home)
    cfg = ExperimentConfig.from_params(
        corpus=str(corpus),
        questions=str(questions),
        chunker="toy",
        chunk_size=48,
        tokenizer="words",
        retriever="bm25_plain",  # reads no vector: no model is loaded
        run_dir=str(home / "run"),
    )
    assert cfg.chunker == "toy"
    spec = SweepSpec.from_dict({"tokenizer": "words", "grid": {"chunker": ["toy", {"name": "token"}]}})
    assert [c.chunker for c in spec.cells(check_inputs=False)] == ["toy", "token"]

    result = run_experiment(cfg, layout=Layout(home / "proj"), progress=False)
    assert result.record.config["chunker"] == "toy"
    assert result.chunkset_id.startswith("toy-cs48-")
    assert result.summary["n_questions_evaluated"] > 0 and result.summary["recall@10"] > 0


def test_a_retriever_registered_by_name_is_listed_built_and_searched(home: Path, registries: None) -> None:
    @register_retriever("toy")
    class ToyRetriever:
        """BM25 over the raw text, the shortest of the top ``fetch`` chunks first."""

        name = "toy"

        @staticmethod
        def parts(options: dict[str, Any]) -> set[str]:
            return {"text_index"}

        def __init__(self, table: Any, embedder: Any = None, fetch: Fetch = defaults.FETCH) -> None:
            self.table, self.fetch = table, fetch

        def search(self, query: str, k: int = defaults.EVAL_K) -> list[Hit]:
            rows = fts_rows(self.table, query, max(k, self.fetch), hep=False)
            rows = sorted(rows, key=lambda r: r["end"] - r["start"])[:k]
            return rows_to_hits(rows, self.name, "_score", query=query)

    assert "toy" in RETRIEVERS.names()
    assert table_parts("toy") == {"text_index"} and not reads_vectors("toy(fetch=5)")
    assert get_retriever("toy(fetch=5)", table=None).fetch == 5  # type: ignore[attr-defined]
    configured = ExperimentConfig.from_params(retriever={"name": "toy", "fetch": 7})
    assert configured.retriever_spec == "toy(fetch=7)"
    with pytest.raises(ConfigError, match="fetch"):
        ExperimentConfig.from_params(retriever="toy(fetch=0)")  # checked by its declared type's bound
    assert str(specs.Toy(fetch=3)) == "toy(fetch=3)"  # its object, made from the registry
    assert specs.spec_for("toy") is specs.Toy

    corpus, _ = tiny_corpus(home)
    listed = runner.invoke(app, ["retrievers", "--corpus", str(corpus), "--chunk-size", "64"])
    assert listed.exit_code == 0, listed.output
    assert any(line.split()[:2] == ["toy", "ok"] for line in listed.output.splitlines()), listed.output
    found = runner.invoke(
        app, ["search", "beam-spin asymmetry", "--corpus", str(corpus), "--retrievers", "toy",
              "--chunk-size", "64", "-k", "1"],
    )  # fmt: skip
    assert found.exit_code == 0, found.output
    assert "== toy" in found.output and "why: toy" in found.output


def test_a_rank_metric_family_is_computed_from_qrels_and_runs_and_reported_by_evaluate(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(FAMILIES, "toyap", "AP")  # hepwb/evaluation/rank.py
    monkeypatch.setattr(metrics_module, "METRICS", (*metrics_module.METRICS, "toyap"))  # metrics.py

    scores = rank_scores({"q1": {"a": 1, "c": 1}}, {"q1": {"b": 1.0, "a": 0.5, "c": 0.25}}, ["toyap@10"])
    assert scores["toyap@10"]["q1"] == pytest.approx((1 / 2 + 2 / 3) / 2)
    assert "toyap@5" in metric_columns((5,))

    quote = "The beam-spin asymmetry rises with the momentum transfer at every beam energy"
    doc = markdown_document(f"An unrelated opening paragraph.\n\n{quote}.", "S01")
    question = Question("q1", "What rises?", "", (Evidence("q1#e0", "S01", 1, quote),))
    located, unlocated = locate_all([question], [doc])
    assert unlocated == []
    at = doc.markdown.index(quote)
    opening, answer = (0, at), (at, len(doc.markdown))  # the first hit misses the quote, the second holds it
    hits = [
        Hit(f"c{i}", doc.document_id, "S01", *span, i + 1, 1.0 / (i + 1))
        for i, span in enumerate([opening, answer])
    ]
    ev = evaluate([question], located, {"q1": hits}, ks=(1, 5), keyindexes=build_keyindexes([doc]))
    assert ev.summary["toyap@1"] == 0.0 and ev.summary["toyap@5"] == pytest.approx(0.5)
    assert "toyap@5" in ev.per_question.columns
    assert "toyap@5" in set(summary_with_ci(ev.per_question)["metric"])  # its 95 % interval comes with it


def test_a_command_registered_on_the_app_shows_in_help_runs_and_fails_in_one_line(commands: None) -> None:
    @app.command("toy-hello")
    def toy_hello(name: Annotated[str, typer.Argument(help="Who to greet.")] = "world") -> None:
        """Greet NAME (a toy command)."""
        if name == "nobody":
            raise ConfigError("nobody to greet; name someone")
        typer.echo(f"hello {name}")

    listing = runner.invoke(app, ["--help"])
    assert listing.exit_code == 0 and "toy-hello" in listing.output and "Greet NAME" in listing.output
    done = runner.invoke(app, ["toy-hello", "muon"])
    assert done.exit_code == 0 and done.output == "hello muon\n"
    failed = runner.invoke(app, ["toy-hello", "nobody"])  # hepwb's error boundary, no code of the command's
    assert failed.exit_code == 2 and "error: nobody to greet; name someone" in failed.output


def test_a_sweep_dimension_is_a_config_field_named_in_dimensions() -> None:
    fields = set(ExperimentConfig.model_fields)
    assert set(DIMENSIONS) <= fields  # 1. the field, named in DIMENSIONS (hepwb/experiment/config.py)
    assert set(DIMENSIONS) <= set(SweepSpec.keys())  # a fixed setting of a sweep file, found by its name
    assert CONFIG_COLUMNS is DIMENSIONS  # the catalog's configuration columns and the report's

    grid = SweepSpec.from_dict({"grid": {"min_coverage": [0.5, 0.8], "k": [5]}})
    cells = grid.cells(check_inputs=False)
    assert [c.min_coverage for c in cells] == [0.5, 0.8] and grid.varying(cells) == ["min_coverage"]
    fixed = SweepSpec.from_dict({"min_coverage": 0.8, "grid": {"k": [3, 5]}})
    assert [(c.min_coverage, c.k) for c in fixed.cells(check_inputs=False)] == [(0.8, 3), (0.8, 5)]
    with pytest.raises(SweepSpecError, match="min_coverage"):
        SweepSpec.from_dict({"grid": {"min_coverage": [2.0]}}).cells(check_inputs=False)  # the field's check

    assert "accept_unscored" in fields - set(DIMENSIONS)  # a configuration field, but no dimension: refused
    with pytest.raises(SweepSpecError, match="grid has unknown dimension 'accept_unscored'"):
        SweepSpec.from_dict({"grid": {"accept_unscored": [True, False]}}).check()
