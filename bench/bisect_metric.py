"""Which commits moved a metric: one run of a configuration at each commit, bisected, questions compared.

Usage::

    python -m bench.bisect_metric GOOD BAD [--retriever bm25] [--chunk-size 1024]
        [--extra-path DIR] [--work /tmp/hepwb-bisect] [--steps C1,C2,...]

Every commit's run uses its own worktree (``git worktree add --detach``) and its own project folder, so
conversions, chunk sets and tables are that commit's; only the virtual environment is shared
(``PYTHONPATH`` puts the worktree's ``hepwb`` first). The run is that commit's ``run_experiment`` on
the shared corpus and hepqa-dev with the default chunker, overlap and ``prefer_latex``. Commits are
bisected on exact equality of found@5 with GOOD's; a commit that cannot run (an unfinished state) is
skipped for the next one. Once the first commit that moved it is found, the search repeats from there
until BAD's value is reached, so every step is listed, with the questions it lost and gained.
``--steps`` lists given commits instead (no search); runs already in ``--work`` are reused.

Old commits may need libraries this environment no longer has (before 96bbe38, ``ranx``): install them
into a folder with ``pip install --target DIR ranx`` (then delete from DIR what the environment already
has) and pass ``--extra-path DIR``. Exits 0 with a message when the shared material is absent.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.common import ROOT, shared_material

ONE_RUN = """
import json, sys
from hepwb.paths import Layout
from hepwb.experiment import ExperimentConfig, run_experiment
cfg = ExperimentConfig.from_params(chunk_size=int(sys.argv[2]), retriever=sys.argv[3])
res = run_experiment(cfg, layout=Layout.default(), progress=False)
pq = res.per_question
json.dump({"found5": float(res.summary["hit_rate@5"]), "mrr10": float(res.summary["mrr@10"]),
           "per_q": dict(zip(map(str, pq["qid"]), map(float, pq["hit_rate@5"])))}, open(sys.argv[1], "w"))
"""


class Runner:
    """Runs the configuration at a commit once (results kept in ``work``)."""

    def __init__(self, work: Path, size: int, retriever: str, extra: str | None, shared: Path) -> None:
        self.work, self.size, self.retriever, self.extra = work, size, retriever, extra
        self.work.mkdir(parents=True, exist_ok=True)
        (self.work / "one_run.py").write_text(ONE_RUN, encoding="utf-8")
        link = self.work / "shared"  # each worktree finds ../shared beside it
        if not link.exists():
            link.symlink_to(shared.resolve())

    def __call__(self, commit: str) -> dict[str, Any] | None:
        out = self.work / f"{commit}.json"
        if not out.is_file():
            tree = self.work / f"wt-{commit}"
            if not tree.is_dir():
                add = ["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(tree), commit]
                subprocess.run(add, check=True)
            env = {**os.environ, "HEPWB_HOME": str(tree), "HF_HUB_OFFLINE": "1",
                   "PYTHONPATH": os.pathsep.join(p for p in (str(tree), self.extra) if p)}  # fmt: skip
            with open(self.work / f"{commit}.log", "w", encoding="utf-8") as log:
                subprocess.run([sys.executable, str(self.work / "one_run.py"), str(out), str(self.size),
                                self.retriever], env=env, stdout=log, stderr=log, check=False)  # fmt: skip
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False)
        return json.loads(out.read_text(encoding="utf-8")) if out.is_file() else None


def first_move(commits: list[str], run: Runner, lo: int, hi: int) -> int:
    """Index of the first commit after ``lo`` whose found@5 differs from ``lo``'s (``hi``'s differs)."""
    first = run(commits[lo])
    if first is None:
        msg = f"bisect_metric: {commits[lo]} does not run (see {run.work}/{commits[lo]}.log)"
        raise SystemExit(msg)
    target = first["found5"]
    while hi - lo > 1:
        mid = j = (lo + hi) // 2
        result = run(commits[mid])
        while result is None and j < hi - 1:  # an unfinished commit: try the next one
            j += 1
            result = run(commits[j])
        if result is None:
            return hi
        lo, hi = (j, hi) if result["found5"] == target else (lo, j)
    return hi


def main(argv: list[str] | None = None) -> int:
    """Bisect and print every step; returns 0."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("good")
    ap.add_argument("bad")
    ap.add_argument("--retriever", default="bm25")
    ap.add_argument("--chunk-size", type=int, default=1024)
    ap.add_argument("--extra-path", default=None)
    ap.add_argument("--work", type=Path, default=Path("/tmp/hepwb-bisect"))
    ap.add_argument("--steps", default=None, help="comma-separated commits to list instead of searching")
    args = ap.parse_args(argv)
    corpus = shared_material("corpus")
    if corpus is None:
        return 0
    rev_list = ["git", "-C", str(ROOT), "rev-list", "--first-parent", "--reverse", f"{args.good}..{args.bad}"]
    listed = subprocess.run(rev_list, capture_output=True, text=True, check=True)
    commits = [args.good] + [c[:7] for c in listed.stdout.split()]
    run = Runner(args.work, args.chunk_size, args.retriever, args.extra_path, corpus.parent)
    steps, lo, end = [0], 0, len(commits) - 1
    if args.steps:
        commits = args.steps.split(",")
        steps = list(range(len(commits)))
    if run(commits[0]) is None:
        print(f"bisect_metric: {commits[0]} does not run (see {args.work}/{commits[0]}.log)")
        return 2
    last = run(commits[end]) if not args.steps else None
    while last is not None and run(commits[lo])["found5"] != last["found5"]:  # type: ignore[index]
        lo = first_move(commits, run, lo, end)
        steps.append(lo)
    print(f"| commit | {args.retriever} found@5 at {args.chunk_size} | lost | gained |\n|---|---:|---|---|")
    prev: dict[str, Any] | None = None
    for i in steps:
        now = run(commits[i])
        assert now is not None
        lost = gained = ""
        if prev is not None:
            pairs = [(q, prev["per_q"].get(q, 0.0), now["per_q"].get(q, 0.0)) for q in prev["per_q"]]
            lost = ", ".join(q for q, a, b in pairs if a > b)
            gained = ", ".join(q for q, a, b in pairs if a < b)
        print(f"| {commits[i]} | {now['found5']:.3f} | {lost} | {gained} |")
        prev = now
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
