from __future__ import annotations

import hepwb
import hepwb.catalog
import hepwb.chunking
import hepwb.evaluation
import hepwb.experiment
import hepwb.hepilot
import hepwb.index
import hepwb.report
import hepwb.retrieval
import hepwb.sweep
import hepwb.sweep.executors


def test_top_level_api_is_locked():
    assert dir(hepwb) == [
        "Block",
        "Chunk",
        "ConfigError",
        "CorpusNotFoundError",
        "DependencyError",
        "Document",
        "HepwbError",
        "Hit",
        "ProcessingError",
        "RetrieverUnavailableError",
        "SchemaValidationError",
        "__version__",
    ]


def test_subpackages_declare_their_api():
    for mod in (
        hepwb.catalog,
        hepwb.chunking,
        hepwb.evaluation,
        hepwb.hepilot,
        hepwb.index,
        hepwb.experiment,
        hepwb.report,
        hepwb.retrieval,
        hepwb.sweep,
        hepwb.sweep.executors,
    ):
        assert dir(mod) == sorted(mod.__all__)
        for name in mod.__all__:
            assert hasattr(mod, name), f"{mod.__name__}.{name}"


def test_version_is_semver():
    parts = hepwb.__version__.split(".")
    assert len(parts) == 3 and all(p.isdigit() for p in parts)


def test_exceptions_inherit_builtins():
    assert issubclass(hepwb.ConfigError, ValueError)
    assert issubclass(hepwb.CorpusNotFoundError, FileNotFoundError)
    assert issubclass(hepwb.DependencyError, ImportError)
    assert issubclass(hepwb.ProcessingError, RuntimeError)
    assert issubclass(hepwb.RetrieverUnavailableError, RuntimeError)
    for exc in (hepwb.ConfigError, hepwb.ProcessingError, hepwb.SchemaValidationError):
        assert issubclass(exc, hepwb.HepwbError)


def test_registries_list_names():
    assert "hepilot" in hepwb.chunking.CHUNKERS.names()
    assert {"dense", "bm25"} <= set(hepwb.retrieval.RETRIEVERS.names())
