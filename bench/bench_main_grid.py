"""The main job's sweep against an earlier commit's, in one run: seconds, and the same metrics cell for cell.

One command::

    python -m bench.bench_main_grid --baseline-commit 529203a     # about 15 minutes on 2 cores

The earlier commit is checked out into a temporary work tree (removed afterwards). Each code runs
``hepwb sweep`` (the main grid, ``sweeps/default.yaml``: 21 cells, the 32 shipped papers, hepqa-dev) with its
defaults in a fresh process and a fresh artefact root holding only the converted papers, the baseline first;
then the two runs' found@5 and MRR@10 are compared cell by cell.

Results: ``docs/results/main-grid.md`` (stamped) and the table on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.common import ROOT, shared_material, timed_child
from bench.results import git_commit, write_results
from hepwb.experiment import ingest
from hepwb.paths import Layout, shared_dir
from hepwb.runtime.env import configure_runtime

METRICS = ("hit_rate@5", "mrr@10")


def _sweep(tree: Path, home: Path) -> float:
    """``hepwb sweep`` of the code in ``tree`` on the artefact root ``home``: wall seconds."""
    env = {
        **os.environ,
        "HEPWB_HOME": str(home),
        "HEPWB_SHARED": str(shared_dir()),  # the same corpus and questions for both trees
        "HF_HUB_OFFLINE": "1",
        "PYTHONPATH": str(tree),
    }
    code = "import sys; from hepwb.cli import main; sys.argv[0] = 'hepwb'; main()"
    # -P: the tree's package first on the path, not the folder the command runs in
    done = timed_child(["-P", "-c", code, "sweep", str(tree / "sweeps" / "default.yaml")], env=env)
    if done.returncode:
        sys.exit(f"hepwb sweep failed in {tree} ({done.returncode}):\n{done.output[-3000:]}")
    return done.wall_s


def _metrics(home: Path) -> dict[str, dict[str, float]]:
    out = {}
    for path in sorted((home / "reports" / "runs").glob("*/metrics.json")):
        record = json.loads(path.read_text())
        out[path.parent.name] = {m: float(record["summary"][m]) for m in METRICS}
    return out


def main(argv: list[str] | None = None) -> None:
    """Measure both sweeps and write ``docs/results/main-grid.md``."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline-commit", required=True, help="the earlier commit to compare with")
    ap.add_argument("--no-write", action="store_true", help="print only; no results file")
    args = ap.parse_args(argv)
    if shared_material("corpus", "papers") is None:
        return
    configure_runtime(offline=True)
    commit = git_commit()
    seed = Layout.default()
    ingest(None, layout=seed, progress=True, require=True)  # the converted papers both start from
    with tempfile.TemporaryDirectory(prefix="hepwb-main-grid-") as tmp:
        work = Path(tmp)
        base = work / "baseline"
        subprocess.run(["git", "worktree", "add", "--detach", str(base), args.baseline_commit], cwd=ROOT,
                       check=True, capture_output=True)  # fmt: skip
        try:
            times, metrics = {}, {}
            for label, tree in (("baseline", base), ("this commit", ROOT)):
                home = work / f"home-{label.replace(' ', '-')}"
                shutil.copytree(seed.interim, Layout(home).interim)
                times[label] = _sweep(tree, home)
                metrics[label] = _metrics(home)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=ROOT, check=False)
    old, new = metrics["baseline"], metrics["this commit"]
    same = sum(old.get(k) == v for k, v in new.items())
    ratio = times["this commit"] / times["baseline"]
    body = (
        "| main grid (21 cells) | seconds | cells | found@5 and MRR@10 equal to the baseline's |\n"
        "|---|---:|---:|---:|\n"
        f"| baseline ({args.baseline_commit}) | {times['baseline']:.1f} | {len(old)} | |\n"
        f"| this commit | {times['this commit']:.1f} | {len(new)} | {same} of {len(new)} |\n"
        f"| this commit / baseline | {ratio:.2f} | | |\n"
    )
    caption = (
        "The main job's sweep (`sweeps/default.yaml`, 32 shipped papers, hepqa-dev) with its defaults, each "
        "code "
        "from the converted papers alone, one after the other on the same machine; "
        f"`python -m bench.bench_main_grid --baseline-commit {args.baseline_commit}`."
    )
    print(body)
    if not args.no_write:
        write_results("main-grid", body, caption=caption, commit=commit)


if __name__ == "__main__":
    main()
