"""The import graph as readers see it: own imports at module top, heavy libraries on first use."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import hepwb

PACKAGE = Path(hepwb.__file__).parent
BENCH = PACKAGE.parent / "bench"
OWN = ("hepwb", "bench")
HEAVY = ("torch", "lancedb", "duckdb", "dask", "distributed", "ragas", "sentence_transformers")
STAGES = [
    "hepwb",
    *sorted(f"hepwb.{p.name}" for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()),
    "hepwb.cli",
]


def _own_imports_below_top(path: Path) -> list[str]:
    """hepwb (or bench) imports inside a function body or under ``if TYPE_CHECKING:``, as ``file:line``."""
    found: list[str] = []

    def visit(node: ast.AST, hidden: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import | ast.ImportFrom) and hidden:
                names = (
                    [child.module or ""]
                    if isinstance(child, ast.ImportFrom)
                    else [a.name for a in child.names]
                )
                if getattr(child, "level", 0) or any(n.split(".")[0] in OWN for n in names):
                    found.append(f"{path.relative_to(PACKAGE.parent)}:{child.lineno}")
            deeper = hidden or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            deeper = deeper or (isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test))
            visit(child, deeper)

    visit(ast.parse(path.read_text(encoding="utf-8")), False)
    return found


def test_hepwb_imports_its_own_modules_at_module_top():
    hidden = [hit for path in sorted(PACKAGE.rglob("*.py")) for hit in _own_imports_below_top(path)]
    assert hidden == [], f"move these imports of hepwb modules to the module top: {hidden}"


@pytest.mark.parametrize("module", STAGES)
def test_importing_a_stage_leaves_the_heavy_libraries_unloaded(module):
    code = f"import sys, {module}; print(','.join(h for h in {HEAVY!r} if h in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"`import {module}` loads {out.stdout.strip()}: import them on first use"


def test_benches_import_hepwb_and_bench_at_module_top():
    hidden = [hit for path in sorted(BENCH.glob("*.py")) for hit in _own_imports_below_top(path)]
    assert hidden == [], f"move these imports of hepwb or bench modules to the module top: {hidden}"


def test_importing_every_bench_leaves_the_heavy_libraries_unloaded():
    modules = sorted(f"bench.{p.stem}" for p in BENCH.glob("*.py") if p.stem != "__init__")
    code = (
        f"import importlib, sys; [importlib.import_module(m) for m in {modules!r}]; "
        f"print(','.join(h for h in {HEAVY!r} if h in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=PACKAGE.parent
    )
    assert out.stdout.strip() == "", (
        f"importing the benches loads {out.stdout.strip()}: import them on first use"
    )
