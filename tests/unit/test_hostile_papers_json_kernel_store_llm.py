"""Findings of the eighth hostile-input probe (issue 38): ``papers.json`` fields, the report kernel's
files, the project's store setting, the LLM endpoint and ``hepwb export``'s folder (the probe's inputs)."""

from __future__ import annotations

import json
import os
import sys

import pytest

from hepwb.exceptions import ConfigError
from tests.helpers import HAVE_SHARED_PDFS, PDF_DIR, run_main


def _corpus(home):
    corpus = home / "c"
    corpus.mkdir()
    for i in range(3):
        (corpus / f"P0{i}_doc.md").write_text(
            f"# Measurement {i}\n\n## Results\nThe W boson and Z boson backgrounds are small.\n"
        )
    quote = "The W boson and Z boson backgrounds are small."
    rows = [
        {
            "qid": f"Q{i}",
            "question": "Which backgrounds are small?",
            "evidence": [{"doc": f"P0{i}", "quote": quote}],
        }
        for i in range(3)
    ]
    (home / "q.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return corpus


def _evaluated(monkeypatch, capsys, home, corpus) -> None:
    """One bm25 run of the three papers (``hepwb evaluate``), asserted to succeed."""
    code, _, err = run_main(
        monkeypatch, capsys, "evaluate", "--corpus", str(corpus), "--questions", str(home / "q.jsonl"),
        "--chunk-size", "64", "--retriever", "bm25",
    )  # fmt: skip
    assert code == 0, err


# F1: a papers.json entry set `tex_dir` itself and pointed the LaTeX converter at any folder


@pytest.mark.parametrize("target", ["/tmp", "/proc/self", "/usr"])
def test_papers_json_may_not_set_tex_dir(home, monkeypatch, capsys, target):
    corpus = _corpus(home)
    (corpus / "papers.json").write_text(
        json.dumps({"papers": [{"pid": "P00", "pdf": "P00_doc.md", "tex_dir": target}]})
    )
    code, _, err = run_main(
        monkeypatch, capsys, "search", "W boson", "--corpus", str(corpus), "--retrievers", "bm25"
    )
    assert code == 2 and "sets 'tex_dir', hepwb's own field" in err and len(err.strip().splitlines()) == 1


def test_a_latex_folder_beyond_the_bounds_is_refused(tmp_path, monkeypatch):
    from hepwb import limits
    from hepwb.corpus import sources

    folder = tmp_path / "tex"
    folder.mkdir()
    for i in range(4):
        (folder / f"f{i}.tex").write_text("x")
    monkeypatch.setattr(limits, "MAX_TEX_FILES", 3)
    with pytest.raises(ConfigError, match="holds more than 3 files"):
        sources._tree_sha256(folder)


@pytest.mark.skipif(not HAVE_SHARED_PDFS, reason="needs ../shared")
def test_a_checked_tex_folder_still_converts(tmp_path):
    from hepwb.acquisition.folder import load_sidecar

    meta = load_sidecar(PDF_DIR)
    assert any(m.get("tex_dir") for m in meta.values())  # the shared corpus names its LaTeX with 'tex'


# F2: `hepwb report` wrote $HOME/.ipython


def test_the_report_kernel_writes_nothing_in_home(home, monkeypatch, capsys):
    corpus = _corpus(home)
    fresh = home / "fresh-home"
    fresh.mkdir()
    for variable in ("IPYTHONDIR", "JUPYTER_RUNTIME_DIR", "MPLCONFIGDIR"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("HOME", str(fresh))
    _evaluated(monkeypatch, capsys, home, corpus)
    code, _, err = run_main(monkeypatch, capsys, "report")
    assert code == 0, err
    assert list(fresh.iterdir()) == [], sorted(str(p) for p in fresh.rglob("*"))[:5]
    assert (home / "proj" / "data" / "interim" / "jupyter" / "ipython").is_dir()
    for variable in (
        "IPYTHONDIR",
        "JUPYTER_RUNTIME_DIR",
        "MPLCONFIGDIR",
    ):  # set for this process by the report
        os.environ.pop(variable, None)


# F5: a broken hepwb-store.json link silently meant local disk


@pytest.mark.parametrize("kind", ["dangling", "loop"])
def test_a_broken_store_setting_link_is_refused(tmp_path, kind):
    from hepwb.store.url import STORE_FILE, resolve_store

    link = tmp_path / STORE_FILE
    link.symlink_to(tmp_path / "missing.json" if kind == "dangling" else link)
    with pytest.raises(ConfigError) as info:
        resolve_store(None, root=tmp_path)
    assert STORE_FILE in str(info.value)


# F6, M6: a malformed HEPWB_LLM_URL was reported usable, then failed with InvalidURL (exit 3)


@pytest.mark.parametrize("url", ["http://[::1/v1", "file:///etc/passwd", "http://h:99999/v1"])
def test_a_malformed_llm_url_is_unavailable_with_one_line(monkeypatch, url):
    from hepwb.exceptions import RetrieverUnavailableError
    from hepwb.llm import LLMEndpoint

    monkeypatch.setenv("HEPWB_LLM_URL", url)
    monkeypatch.setenv("HEPWB_LLM_MODEL", "x")
    with pytest.raises(RetrieverUnavailableError, match=r"HEPWB_LLM_URL \(llm_url\)"):
        LLMEndpoint.from_env()


# F8, M4: hepwb export echoed OUT raw (escape codes); an OUT that cannot be made was a traceback


@pytest.mark.parametrize("out", ["/proc/self/x", "dangling"])
def test_export_into_a_folder_that_cannot_be_made_is_one_line(home, monkeypatch, capsys, out):
    corpus = _corpus(home)
    _evaluated(monkeypatch, capsys, home, corpus)
    if out == "dangling":
        (home / "dangling").symlink_to(home / "nowhere")
    run = next((home / "proj" / "reports" / "runs").iterdir()).name
    code, _, err = run_main(monkeypatch, capsys, "export", run, out)
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert code == 2 and len(errors) == 1 and "export folder" in errors[0]


def test_export_shows_its_folder_without_control_codes(home, monkeypatch, capsys):
    corpus = _corpus(home)
    _evaluated(monkeypatch, capsys, home, corpus)
    run = next((home / "proj" / "reports" / "runs").iterdir()).name
    code, out, err = run_main(monkeypatch, capsys, "export", run, "exo\x1b]52;c;aGk=\x07")
    assert code == 0, err
    assert "\x1b" not in out + err and "\x07" not in out + err and "exported 1 run(s)" in out


# notes: --adapt-min above --adapt-max, and an --image with control codes, were taken when no cell ran


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--adapt-min", "10", "--adapt-max", "2"], "--adapt-min 10 is above --adapt-max 2"),
        (["--image", "img\x1b]52;c;aGk=\x07"], "--image must be a container image"),
        (["--image", "a b; rm -rf /"], "--image must be a container image"),
    ],
)
def test_gateway_options_are_checked_before_anything_runs(home, monkeypatch, capsys, extra, says):
    pytest.importorskip("dask_gateway")
    args = ["sweep", "s.yaml", "--cluster", "gateway", "--gateway-address", "http://127.0.0.1:1", *extra]
    code, _, err = run_main(monkeypatch, capsys, *args)
    assert code == 2 and says in err and "\x1b" not in err


# round 9: a damaged catalog found inside the report notebook was an exit 3 (papermill wraps hepwb's error)


def test_a_catalog_damaged_inside_the_report_notebook_is_one_line(home, monkeypatch, capsys):
    corpus = _corpus(home)
    _evaluated(monkeypatch, capsys, home, corpus)
    code, _, err = run_main(monkeypatch, capsys, "report")  # the catalog is made here
    assert code == 0, err
    catalog = home / "proj" / "reports" / "catalog.duckdb"
    with catalog.open("r+b") as fh:  # the probe's damage: 200 kB of noise at offset 300,000
        fh.seek(300_000)
        fh.write(os.urandom(200_000))
    code, _, err = run_main(monkeypatch, capsys, "report")
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert code == 2 and len(errors) == 1 and "damaged" in errors[0] and "a bug" not in errors[0], err[-500:]
    for variable in ("IPYTHONDIR", "JUPYTER_RUNTIME_DIR", "MPLCONFIGDIR"):
        os.environ.pop(variable, None)


# round 9: `hepwb report` printed papermill's INFO lines on stderr (information is never red stderr)


def test_report_prints_no_information_on_stderr(home, monkeypatch, capsys):
    import subprocess
    from pathlib import Path

    corpus = _corpus(home)
    _evaluated(monkeypatch, capsys, home, corpus)
    hepwb_cli = Path(sys.executable).parent / "hepwb"
    done = subprocess.run(
        [str(hepwb_cli), "report"], capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr[-500:]
    assert "report.html" in done.stdout and "INFO" not in done.stderr, done.stderr[-500:]
