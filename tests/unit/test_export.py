"""``hepwb export RUN OUT``: an OUT that is no folder or cannot be made, and a damaged ``hits.parquet``, are
one line and leave nothing written; OUT is shown without control codes."""

from __future__ import annotations

import pytest

from tests.helpers import evaluate_bm25, run_main, three_notes


@pytest.fixture(scope="module")
def one_run(tmp_path_factory):
    """A project with one bm25 run over three markdown papers."""
    from hepwb.experiment.config import ExperimentConfig
    from hepwb.experiment.run import run_experiment
    from hepwb.paths import Layout
    from tests.helpers import tiny_corpus

    root = tmp_path_factory.mktemp("export")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HEPWB_HOME", str(root))
        mp.chdir(root)
        corpus, questions = tiny_corpus(root)
        cfg = ExperimentConfig.from_params(
            corpus=str(corpus), questions=str(questions), chunk_size=48, retriever="bm25", k=5
        )
        run = run_experiment(cfg, layout=Layout(root), progress=False)
    return root, run.run_dir


@pytest.mark.parametrize("out", ["afile", "/dev/null"])
def test_export_into_something_not_a_folder_is_one_line(one_run, monkeypatch, capsys, out):
    root, run_dir = one_run
    monkeypatch.setenv("HEPWB_HOME", str(root))
    monkeypatch.chdir(root)
    (root / "afile").write_text("keep me\n")
    code, _, err = run_main(monkeypatch, capsys, "export", str(run_dir), out)
    assert code == 2, err
    assert f"{out} is not a folder" in err and len(err.strip().splitlines()) == 1
    assert (root / "afile").read_text() == "keep me\n"


def test_export_of_a_damaged_hits_file_names_it_and_the_rebuild_and_writes_nothing(
    one_run, monkeypatch, capsys
):
    root, run_dir = one_run
    monkeypatch.setenv("HEPWB_HOME", str(root))
    monkeypatch.chdir(root)
    hits = run_dir / "hits.parquet"
    good = hits.read_bytes()
    try:
        hits.write_bytes(good[:100])
        code, _, err = run_main(monkeypatch, capsys, "export", str(run_dir), "ex")
    finally:
        hits.write_bytes(good)
    assert code == 2, err
    assert "hits.parquet is damaged" in err and "rerun.sh" in err and "unexpected" not in err
    assert not (root / "ex").exists()
    code, _, err = run_main(monkeypatch, capsys, "export", str(run_dir), "ex")
    assert code == 0, err


@pytest.mark.parametrize("out", ["/proc/self/x", "dangling"])
def test_export_into_a_folder_that_cannot_be_made_is_one_line(home, monkeypatch, capsys, out):
    corpus = three_notes(home)
    evaluate_bm25(monkeypatch, capsys, home, corpus)
    if out == "dangling":
        (home / "dangling").symlink_to(home / "nowhere")
    run = next((home / "proj" / "reports" / "runs").iterdir()).name
    code, _, err = run_main(monkeypatch, capsys, "export", run, out)
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert code == 2 and len(errors) == 1 and "export folder" in errors[0]


def test_export_shows_its_folder_without_control_codes(home, monkeypatch, capsys):
    corpus = three_notes(home)
    evaluate_bm25(monkeypatch, capsys, home, corpus)
    run = next((home / "proj" / "reports" / "runs").iterdir()).name
    code, out, err = run_main(monkeypatch, capsys, "export", run, "exo\x1b]52;c;aGk=\x07")
    assert code == 0, err
    assert "\x1b" not in out + err and "\x07" not in out + err and "exported 1 run(s)" in out
