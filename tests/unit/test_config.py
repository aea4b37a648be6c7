"""One configuration, checked once: the CLI, a sweep file and the Python API build the same object."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

import hepwb
from hepwb import defaults, limits
from hepwb.chunking import get_chunker
from hepwb.cli import app
from hepwb.exceptions import ConfigError
from hepwb.experiment.config import ExperimentConfig
from hepwb.sweep.spec import SweepSpec, SweepSpecError

PACKAGE = Path(hepwb.__file__).parent
BOUNDS = [b for b in vars(limits).values() if isinstance(b, limits.Bound)]


def test_cli_sweep_file_and_python_api_give_the_same_default_configuration():
    out = CliRunner().invoke(app, ["evaluate", "--show-config"])
    assert out.exit_code == 0, out.output
    from_cli = json.loads(out.stdout)
    from_api = ExperimentConfig.from_params().model_dump()
    (from_sweep,) = SweepSpec.from_dict({"name": "no-keys"}).cells(check_inputs=False)
    assert from_cli == from_api == from_sweep.model_dump()
    assert ExperimentConfig.from_params().retriever_spec == defaults.RETRIEVER
    assert from_api["chunk_size"] == defaults.CHUNK_SIZE
    assert from_api["embedding_model"] == from_api["tokenizer"] == defaults.EMBEDDING_MODEL


def test_a_value_set_anywhere_gives_the_same_configuration():
    out = CliRunner().invoke(
        app,
        [
            *("evaluate", "--show-config", "--chunk-size", "256", "--retriever", "bm25", "--k", "7"),
            *("--vector-index", "ivf_pq", "--index-option", "nprobes=8"),
        ],
    )
    values = {
        "chunk_size": 256,
        "retriever": "bm25",
        "k": 7,
        "vector_index": {"name": "ivf_pq", "nprobes": 8},
    }
    (cell,) = SweepSpec.from_dict(values).cells(check_inputs=False)
    api = ExperimentConfig.from_params(**values)
    assert json.loads(out.stdout) == cell.model_dump() == api.model_dump()
    assert cell.to_dict() == api.to_dict()


@pytest.mark.parametrize(
    ("key", "bad"),
    [("chunk_size", 4), ("chunk_overlap", 1.0), ("k", 0), ("max_docs", 0), ("min_coverage", 0.0)],
)
def test_each_bound_has_one_message_wherever_it_is_checked(key, bad):
    bound = getattr(limits, key.upper())
    message = bound.problem(bad)
    assert message and message.startswith(key)
    with pytest.raises(ConfigError) as api:
        ExperimentConfig.from_params(**{key: bad})
    assert str(api.value) == message
    with pytest.raises(SweepSpecError) as sweep:
        SweepSpec.from_dict({key: bad}).cells(check_inputs=False)
    assert str(sweep.value).endswith(f"{key} = {bad!r}: {message}")
    out = CliRunner().invoke(app, ["evaluate", "--show-config", f"--{key.replace('_', '-')}", str(bad)])
    if out.exit_code != 2 or "No such option" in out.output:
        return  # not a CLI option of `evaluate`
    assert out.output.strip() == f"error: {message}"
    if key in ("chunk_size", "chunk_overlap"):
        with pytest.raises(ConfigError) as chunker:
            get_chunker("recursive", **{key: bad})
        assert str(chunker.value) == f"chunker 'recursive': {message}"


@pytest.mark.parametrize("bound", BOUNDS, ids=lambda b: f"{b.name}-{b.low}")
def test_no_other_module_words_a_bound(bound):
    """The words of each bound live in hepwb/limits.py only (no second, diverging check)."""
    words = re.escape(bound.what)
    copies = [
        str(p.relative_to(PACKAGE))
        for p in PACKAGE.rglob("*.py")
        if p.name != "limits.py" and re.search(words, p.read_text(encoding="utf-8"))
    ]
    assert copies == []


def test_every_problem_of_a_configuration_is_reported_at_once():
    with pytest.raises(ConfigError) as err:
        ExperimentConfig.from_params(chunk_size=0, k=0, retriever="nope", prefer_latex="yes")
    lines = str(err.value).splitlines()
    assert len(lines) == 4
    assert any("unknown retriever 'nope'" in line for line in lines)
    assert any(line.startswith("prefer_latex: a flag is true or false") for line in lines)


def test_named_forms_and_options_are_checked_against_their_declarations():
    cfg = ExperimentConfig.from_params(retriever={"name": "hybrid_linear", "weight": 0.3})
    assert (cfg.retriever, cfg.retriever_options) == ("hybrid_linear", {"weight": 0.3})
    share = r"retriever 'hybrid_linear': weight is a mixing share from 0 to 1, got 1.5 \(e.g. 0.5\)"
    with pytest.raises(ConfigError, match=share):
        ExperimentConfig.from_params(retriever="hybrid_linear", retriever_options={"weight": 1.5})
    with pytest.raises(ConfigError, match=r"fields = 'title': Input should be 'text' or 'context'"):
        ExperimentConfig.from_params(retriever="bm25", retriever_options={"fields": "title"})


def test_the_configuration_is_frozen():
    cfg = ExperimentConfig.from_params()
    with pytest.raises(ValueError, match="frozen"):
        cfg.k = 3  # type: ignore[misc]
    assert cfg.replace(k=3).k == 3


def test_a_retriever_may_be_written_as_a_call_with_options_everywhere(tmp_path):
    """`--retriever 'dense(read=max)'`, a sweep file and a notebook parameter say the same thing."""
    from hepwb.sweep.spec import SweepSpec

    cfg = ExperimentConfig(retriever="hybrid(weight=0.3, fields=context)")
    assert (cfg.retriever, cfg.retriever_options) == ("hybrid", {"weight": 0.3, "fields": "context"})
    assert cfg == ExperimentConfig(retriever={"name": "hybrid", "weight": 0.3, "fields": "context"})
    spec = SweepSpec.from_dict({"grid": {"retriever": ["dense(read=max)", "bm25"]}})
    cells = spec.cells(check_inputs=False)
    assert [(c.retriever, c.retriever_options) for c in cells] == [("dense", {"read": "max"}), ("bm25", {})]
    for bad in ("dense(read max)", "dense(read=max", "dense(1=2)"):
        res = CliRunner().invoke(app, ["evaluate", "--retriever", bad])
        assert res.exit_code == 2, res.output
        assert "write NAME(KEY=VALUE, ...), e.g. dense(read=max, top_m=2)" in res.output
        assert len(res.output.strip().splitlines()) == 1
    res = CliRunner().invoke(app, ["evaluate", "--retriever", "dense(colour=red)"])
    assert res.exit_code == 2 and "colour" in res.output
