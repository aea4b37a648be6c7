"""The benchmarks are a package under hepwb's rules: public API only, no sys.path edits, run with -m."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import hepwb

ROOT = Path(hepwb.__file__).parents[1]
BENCH = ROOT / "bench"
MODULES = sorted(p for p in BENCH.glob("*.py") if p.stem != "__init__")
RUNNABLE = [p.stem for p in MODULES if "def main(" in p.read_text(encoding="utf-8")]


def _private_uses(path: Path) -> list[str]:
    """Where ``path`` reaches into hepwb past its public API, as ``file:line what``.

    Public: a module without a leading underscore in its dotted name, and a name in that module's
    ``__all__`` (or, where a module has none, a name without a leading underscore, or a submodule).
    An attribute with a single leading underscore (``obj._cache``) is private anywhere.
    """
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        where = f"{path.name}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "hepwb":
            module = node.module or ""
            if any(part.startswith("_") for part in module.split(".")):
                found.append(f"{where} private module {module}")
                continue
            mod = importlib.import_module(module)
            public = getattr(mod, "__all__", None)
            for alias in node.names:
                is_module = isinstance(getattr(mod, alias.name, None), type(hepwb))
                listed = alias.name in public if public is not None else not alias.name.startswith("_")
                if not (listed or is_module):
                    found.append(f"{where} {module}.{alias.name} is not in its __all__")
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names if a.name.split(".")[0] == "hepwb"]
            found += [
                f"{where} private module {n}" for n in names if any(p.startswith("_") for p in n.split("."))
            ]
        elif isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            found.append(f"{where} private attribute .{node.attr}")
    return found


def test_benches_use_only_hepwbs_public_api():
    found = [hit for path in MODULES for hit in _private_uses(path)]
    assert found == [], f"use hepwb's public API (add a public function to hepwb if one is missing): {found}"


def test_no_bench_edits_sys_path():
    lines = [
        (p.name, i, line) for p in MODULES for i, line in enumerate(p.read_text("utf-8").splitlines(), 1)
    ]
    edits = [f"{name}:{i}" for name, i, line in lines if "sys.path" in line]
    assert edits == [], f"benches import hepwb as installed and each other as the bench package: {edits}"


def test_the_benches_are_found():
    assert {"transfer", "results_retrieval", "dense_branch", "bench_chunking"} <= set(RUNNABLE)


@pytest.mark.parametrize("name", RUNNABLE)
def test_every_bench_explains_its_options(name, capsys):
    module = importlib.import_module(f"bench.{name}")
    with pytest.raises(SystemExit) as exit_:
        module.main(["--help"])
    assert exit_.value.code == 0
    assert "usage:" in capsys.readouterr().out


def test_a_bench_runs_as_a_module_from_the_repository_root():
    out = subprocess.run(
        [sys.executable, "-m", "bench.transfer", "--help"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("usage: python -m bench.transfer") or "usage:" in out.stdout
