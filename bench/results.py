"""Results files: every table the docs publish is a file a bench wrote, stamped with how it was made.

A bench calls :func:`write_results` with the table; it writes two files side by side:

``docs/results/<name>.md`` (the docs include it as it is)::

    <!-- hepwb-results {"command": ..., "commit": ..., "date": ..., "machine": {...}, "sha256": ...} -->
    One caption line: what was measured, on which question set, with which command.

    | the | table |

* ``command``: the command line that made it (``python -m bench.NAME ARGS``, from ``sys.argv``);
  ``commit``: ``git`` HEAD's short hash, ``+dirty`` when tracked files differ from it; ``date``: UTC, ISO
  8601; ``machine``: cores, memory (GiB), CPU model, GPU name (or ``null``) and the torch device.
* ``sha256``: the SHA-256 of everything after the first line. A hand edit of the caption or the table no
  longer matches it, and :func:`problems` (run by ``tests/unit/test_results_files.py``) says so.

``docs/results/<name>.json``: the table's numbers as keyed rows, ``{"results": "<name>.md", "rows":
[{"label", "key", "values"}]}``; its SHA-256 is the stamp's ``rows_sha256``. A row's ``key`` is what its
numbers depend on, by content, never by path: for a run, :func:`run_key` (the run's configuration without
its paths, the SHA-256 of its question file and of its corpus files); for a paired comparison,
:func:`comparison_key` (both runs' keys and the metric). Two rows with the same key, in one file or in
two, must carry the same value for every name they both have (values are rounded to 4 decimals):
otherwise two pages publish different numbers for the same thing, and :func:`problems` names both.

``python -m bench.results`` lists the problems of ``docs/results`` (exit 1 when there are any).
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import platform
import re
import shlex
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.common import ROOT
from hepwb.files.io import atomic_write_text
from hepwb.files.parsers import parse_json
from hepwb.files.readers import ReadError, read_text
from hepwb.models.device import resolve_device
from hepwb.runs.record import RunRecord
from hepwb.text.ids import canonical_json, short_hash
from hepwb.text.names import under
from hepwb.types import JSONObject

RESULTS = ROOT / "docs" / "results"
"""Where results files go (the docs' Results page includes them)."""
STAMP_KEYS = ("command", "commit", "date", "machine", "sha256")
"""What every stamp holds (``rows_sha256`` too when the file has rows)."""
NOT_RESULTS = ("index.md", "README.md")
"""Files of the results folder that are pages, not results files."""
TOLERANCE = 5e-5
"""Two stored values (4 decimals) farther apart than this differ."""
_STAMP = re.compile(r"<!-- hepwb-results (\{.*\}) -->")
_NOT_CONFIG = ("corpus", "questions", "run_dir", "accept_unscored")


@dataclass(frozen=True)
class Row:
    """One published result: a label for people, the key of what it measured, its values."""

    label: str
    key: JSONObject
    values: dict[str, float] = field(default_factory=dict)


def run_key(record: RunRecord) -> JSONObject:
    """What a run's numbers depend on: configuration (paths left out), question set and corpus, by content.

    Example:
        >>> rec = RunRecord(run_id="r", chunkset_id="c", config={"k": 5, "questions": "/tmp/q.jsonl"})
        >>> run_key(rec)["config"]
        {'k': 5}
    """
    config = {k: v for k, v in record.config.items() if k not in _NOT_CONFIG}
    corpus = short_hash(sorted(record.inputs.corpus_documents.items()), 16)
    return {"config": config, "questions_sha256": record.inputs.questions_sha256, "corpus": corpus}


def comparison_key(run: JSONObject, baseline: JSONObject, metric: str) -> JSONObject:
    """The key of a paired comparison of ``run`` against ``baseline`` on ``metric`` (keys of :func:`run_key`).

    Example:
        >>> comparison_key({"config": {"k": 5}}, {"config": {"k": 10}}, "hit_rate@5")["compare"]
        'hit_rate@5'
    """
    return {"compare": metric, "run": run, "baseline": baseline}


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def command_line(argv: Sequence[str] | None = None) -> str:
    """The command that runs this process, as a person would type it from the repository root.

    ``python -m bench.NAME ARGS`` when the bench runs as a module (or as ``bench/NAME.py``).

    Example:
        >>> command_line([str(ROOT / "bench" / "transfer.py"), "--sizes", "256,512"])
        'python -m bench.transfer --sizes 256,512'
    """
    args = list(sys.argv if argv is None else argv)
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    script = Path(args[0]) if args else Path()
    if argv is None and spec is not None and spec.name.startswith("bench."):
        head = f"python -m {spec.name}"
    elif script.suffix == ".py" and script.resolve().parent == ROOT / "bench":
        head = f"python -m bench.{script.stem}"
    else:
        head = shlex.join([Path(sys.executable).name, *args[:1]])
    return " ".join([head, *(shlex.quote(a) for a in args[1:])])


def git_commit() -> str:
    """``git`` HEAD's short hash, ``+dirty`` when tracked files differ from it (``unknown`` outside git)."""

    def git(*args: str) -> str:
        out = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=False)
        return out.stdout.strip() if out.returncode == 0 else ""

    head = git("rev-parse", "--short", "HEAD")
    if not head:
        return "unknown"
    return head + ("+dirty" if git("status", "--porcelain", "--untracked-files=no") else "")


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine() -> JSONObject:
    """Cores, memory (GiB), CPU model, GPU name (``None`` without CUDA) and the torch device hepwb picks."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") if hasattr(os, "sysconf") else 0
    device = resolve_device()
    gpu = None
    if device.startswith("cuda"):
        import torch

        gpu = str(torch.cuda.get_device_name(0))
    return {"cores": cores, "memory_gib": round(memory / 2**30, 1), "cpu": _cpu_model(), "gpu": gpu,
            "device": device}  # fmt: skip


def write_results(
    name: str,
    body: str,
    *,
    caption: str,
    rows: Sequence[Row] = (),
    folder: Path | None = None,
    commit: str | None = None,
) -> Path:
    """Write the results file ``<folder>/<name>.md`` (and its rows, ``<name>.json``); returns its path.

    Args:
        name: The file's name (a plain name: letters, digits, ``.``, ``_``, ``+``, ``-``).
        body: The markdown table.
        caption: One line: what was measured, on which question set, with which command.
        rows: The table's numbers, keyed (see the module docstring); none for a table without run metrics.
        folder: Default ``docs/results``.
        commit: The commit measured (:func:`git_commit` when the bench started); default: the commit now.
    """
    folder = folder or RESULTS
    path = under(folder, name, "results file", ".md")
    rest = " ".join(caption.split()) + "\n\n" + body.strip("\n") + "\n"
    stamp: JSONObject = {
        "command": command_line(),
        "commit": commit or git_commit(),
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "sha256": _sha256(rest),
    }
    if rows:
        listed = [{"label": r.label, "key": r.key, "values": r.values} for r in rows]
        sidecar = json.dumps({"results": path.name, "rows": listed}, indent=1, sort_keys=True) + "\n"
        stamp["rows_sha256"] = _sha256(sidecar)
        atomic_write_text(path.with_suffix(".json"), sidecar)
    else:
        path.with_suffix(".json").unlink(missing_ok=True)
    head = json.dumps(stamp, sort_keys=True, ensure_ascii=False).replace("-->", "--\\u003e")
    atomic_write_text(path, f"<!-- hepwb-results {head} -->\n{rest}")
    print(f"results file: {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
    return path


def read_results(path: Path) -> tuple[JSONObject, str]:
    """A results file's stamp and the text after it.

    Raises:
        ReadError: The file is unreadable or its first line is not a stamp.
    """
    text = read_text(path, "results file", fix="rerun the bench that writes it")
    first, _, rest = text.partition("\n")
    match = _STAMP.fullmatch(first)
    if match is None:
        msg = f"results file {path}: its first line is not a <!-- hepwb-results {{...}} --> stamp"
        raise ReadError(msg)
    stamp = parse_json(match.group(1), f"results file {path}'s stamp", fix="rerun the bench that writes it")
    if not isinstance(stamp, dict) or any(k not in stamp for k in STAMP_KEYS):
        msg = f"results file {path}: its stamp lacks one of {', '.join(STAMP_KEYS)}"
        raise ReadError(msg)
    return stamp, rest


def _rows(path: Path, stamp: Mapping[str, Any]) -> tuple[list[Row], list[str]]:
    """The rows of a results file's sidecar, and its problems."""
    sidecar = path.with_suffix(".json")
    if "rows_sha256" not in stamp:
        return [], ([f"{sidecar.name}: no results file stamps it; delete it"] if sidecar.exists() else [])
    rerun = f"rerun `{stamp['command']}`"
    try:
        text = read_text(sidecar, "results rows", fix=rerun)
        if _sha256(text) != stamp["rows_sha256"]:
            return [], [
                f"{sidecar.name} was edited by hand (its SHA-256 is not {path.name}'s rows_sha256): {rerun}"
            ]
        data = parse_json(text, f"results rows {sidecar}", fix=rerun)
    except ReadError as exc:
        return [], [str(exc)]
    return [Row(r["label"], r["key"], r["values"]) for r in data["rows"]], []


def problems(folder: Path | None = None) -> list[str]:
    """What is wrong with the results files of ``folder`` (default ``docs/results``): one line each.

    A file edited by hand (its table or caption, or its rows file, no longer hashes to its stamp), a file
    without a stamp, a rows file without its results file, and two rows with the same key whose values
    differ (in one file or in two).
    """
    folder = folder or RESULTS
    out: list[str] = []
    seen: dict[str, tuple[str, Row]] = {}
    for path in sorted(folder.glob("*.md")) if folder.is_dir() else []:
        if path.name in NOT_RESULTS:
            continue
        try:
            stamp, rest = read_results(path)
        except ReadError as exc:
            out.append(str(exc))
            continue
        if _sha256(rest) != stamp["sha256"]:
            out.append(f"{path.name} was edited by hand (its text no longer matches its stamp's sha256): "
                       f"rerun `{stamp['command']}`")  # fmt: skip
        rows, bad = _rows(path, stamp)
        out += bad
        for row in rows:
            key = canonical_json(row.key)
            if key not in seen:
                seen[key] = (path.name, row)
                continue
            where, first = seen[key]
            for name in sorted(first.values.keys() & row.values.keys()):
                a, b = first.values[name], row.values[name]
                if abs(a - b) > TOLERANCE:
                    out.append(f"{where} ({first.label}) and {path.name} ({row.label}) publish {name} "
                               f"{a} and {b} for the same configuration and question set")  # fmt: skip
    for sidecar in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        if not sidecar.with_suffix(".md").is_file():
            out.append(f"{sidecar.name}: rows without their results file {sidecar.with_suffix('.md').name}")
    return out


def main(argv: list[str] | None = None) -> int:
    """List the problems of the results files; exit 1 when there are any."""
    ap = argparse.ArgumentParser(description="Check the results files (docs/results): stamps and values.")
    ap.add_argument("--folder", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    found = problems(args.folder)
    print("\n".join(found) if found else f"{args.folder}: every results file matches its stamp, values agree")
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
