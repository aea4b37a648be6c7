"""Lighter installs: a missing extra names `pip install 'hepwb[extra]'`; pyproject and runtime.deps agree."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from hepwb.runtime.deps import EXTRAS

ROOT = Path(__file__).resolve().parents[2]

# (extra, a package of it hidden from the interpreter, what a user runs)
CASES = [
    (
        "sweep",
        "distributed",
        "from hepwb.sweep.executors.dask import DaskExecutor; DaskExecutor(n_workers=1)",
    ),
    (
        "sweep",
        "dask_jobqueue",
        "from hepwb.sweep.jobqueue import make_cluster; make_cluster('slurm', home='.')",
    ),
    ("lab", "ipywidgets", "from hepwb.viz.chunk_explorer import ChunkExplorer; ChunkExplorer([])"),
    ("lab", "anywidget", "from hepwb.viz.evidence_marker import page_text_widget; page_text_widget()"),
    ("ragas", "ragas", "from hepwb.evaluation.ragas_eval import offline_scores; offline_scores({})"),
]


@pytest.mark.parametrize(("extra", "hidden", "code"), CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_a_missing_extra_raises_a_dependency_error_naming_the_install(extra, hidden, code):
    script = (
        f"import sys; sys.modules[{hidden!r}] = None\n"
        "from hepwb.exceptions import DependencyError\n"
        f"try:\n    {code}\nexcept DependencyError as exc:\n    print(exc)\nelse:\n    print('no error')\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip().endswith(f"needs {hidden}: pip install 'hepwb[{extra}]'"), (
        out.stdout + out.stderr
    )


def test_a_run_without_ragas_skips_only_the_ragas_metrics(monkeypatch, caplog):
    """Without the ragas extra the offline ragas metrics are skipped with one info line; nothing fails."""
    from types import SimpleNamespace

    from hepwb.experiment import scoring

    for name in [m for m in sys.modules if m == "ragas" or m.startswith("ragas.")] or ["ragas"]:
        monkeypatch.setitem(sys.modules, name, None)  # as if `hepwb[ragas]` were not installed
    monkeypatch.setattr(scoring, "ragas_samples", lambda *a, **k: {"q1": {}})
    cs = SimpleNamespace(documents={})
    with caplog.at_level("INFO", logger="hepwb.scoring"):
        out = scoring._ragas([SimpleNamespace(qid="q1")], {}, [], cs, {}, k=5, llm_embeddings=None)
    assert list(out.index) == ["q1"] and out.columns.empty
    assert "pip install 'hepwb[ragas]'" in caplog.text


def test_every_extra_of_pyproject_is_known_to_hepwb_deps():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = meta["optional-dependencies"]
    assert set(EXTRAS) <= set(extras)
    dev = extras["dev"][0]  # the README's commands install every extra hepwb knows
    assert dev.startswith("hepwb[") and set(EXTRAS) <= set(dev[6:-1].split(",")), dev
    base = " ".join(meta["dependencies"]).lower()
    for name in ("jupyterlab", "dask", "ragas", "datasets", "accelerate", "openai", "ipywidgets"):
        assert name not in base, f"{name} is a base dependency; it belongs to an extra"


def _base_closure() -> set[str]:
    """Distributions the base install pulls in: hepwb's requirements without extras, followed transitively."""
    import importlib.metadata as md

    from packaging.requirements import Requirement

    seen: set[str] = set()
    todo = ["hepwb"]
    while todo:
        name = todo.pop()
        try:
            reqs = md.requires(name) or []
        except md.PackageNotFoundError:
            continue
        for text in reqs:
            req = Requirement(text)
            if req.marker is not None and not req.marker.evaluate({"extra": ""}):
                continue  # an extra's requirement (or another platform's)
            key = req.name.lower().replace("_", "-")
            if key not in seen:
                seen.add(key)
                todo.append(req.name)
    return seen


def test_no_module_of_an_extra_comes_with_the_base_install():
    """What CI's bare install checks, here without a fresh venv: an extra lists only what the base lacks."""
    import importlib.metadata as md

    base = _base_closure()
    owners = md.packages_distributions()
    for extra_name, modules in EXTRAS.items():
        for module in modules:
            dists = {d.lower().replace("_", "-") for d in owners.get(module, [])}
            if extra_name == "adapt" and module == "sklearn":
                continue  # sentence-transformers needs scikit-learn; listed so adapt names it when missing
            assert not dists & base, f"{module} ({extra_name}) comes with the base package: {dists & base}"
