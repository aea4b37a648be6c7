"""rerun.sh quotes every value it interpolates: paths with $(…), backticks, quotes or newlines stay paths."""

from __future__ import annotations

import os
import subprocess
import sys

from hepwb.experiment.notebook import EVALUATE_NOTEBOOK, notebook_path, write_rerun_files
from hepwb.paths import Layout

EVIL = "a $(touch PWNED1) `touch PWNED2` 'q' \"d\" ;touch PWNED3\nline2"


def test_every_interpolated_value_is_quoted_the_interpreter_included(tmp_path, monkeypatch):
    evil = tmp_path / EVIL
    evil.mkdir()
    fake = evil / "python $(touch PWNED4)"
    fake.write_text('#!/usr/bin/env bash\nprintf "%s\\0" "$@" > "$ARGS_OUT"\n', encoding="utf-8")
    fake.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(fake))
    run_dir = evil / "run `touch PWNED5`"
    run_dir.mkdir()
    layout = Layout(tmp_path / "home")
    write_rerun_files(run_dir, {"chunk_size": 256}, layout)
    args_out = tmp_path / "args"
    env = {k: v for k, v in os.environ.items() if k != "PYTHON"} | {"ARGS_OUT": str(args_out)}
    done = subprocess.run(
        ["bash", str(run_dir / "rerun.sh")], cwd=evil, env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    src = notebook_path(EVALUATE_NOTEBOOK, layout).resolve()
    assert args_out.read_text().split("\0")[:-1] == [
        "-m",
        "papermill",
        str(src),
        str((run_dir / EVALUATE_NOTEBOOK).resolve()),
        "-f",
        str((run_dir / "parameters.yaml").resolve()),
        "--cwd",
        str(src.parent),
        "-k",
        "python3",
    ]
    assert not list(tmp_path.rglob("PWNED*"))  # nothing was executed from a path
