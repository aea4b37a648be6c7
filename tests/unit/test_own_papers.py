"""A physicist's own papers, measured truthfully (issue 37): nothing dropped in silence, files checked first.

A scratch project with two markdown notes and a question file holding a short unambiguous quote, a quote
that is not in the text, and a question without ``answer``: ``hepwb questions check`` names the unlocated
quote with its reason and locates the short one; ``hepwb evaluate`` scores both located questions, prints
the unlocated one by name, and never prints an interval of width 0 for fewer than 10 questions.
"""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from hepwb.cli import app
from hepwb.evaluation.evidence import UnscoredError
from hepwb.evaluation.questions import question_schema
from hepwb.experiment.config import ExperimentConfig
from hepwb.experiment.run import run_experiment
from hepwb.paths import Layout
from hepwb.runs.record import RunRecord

runner = CliRunner()

NOTES = {
    "note-a.md": (
        "# Amplitude fit of the toy channel\n\n"
        "We fit the invariant-mass spectrum with a Breit-Wigner signal over a flat background.\n\n"
        "The fitted amplitude is $A = 0.42 \\pm 0.05$, compatible with the prediction of the model.\n\n"
        "| bin | events | background |\n|-----|--------|------------|\n| 1 | 120 | 40 |\n| 2 | 95 | 38 |\n"
    ),
    "note-b.md": (
        "# Detector calibration\n\n"
        "The calorimeter energy scale was calibrated with electrons from Z decays, giving a resolution of "
        "2.1 percent at 50 GeV.\n\nTiming alignment used cosmic-ray muons collected before the run.\n"
    ),
}
QUESTIONS = [
    # a short quote (20 key characters), unambiguous in note-a; no answer
    {"qid": "N1", "question": "What is the fitted amplitude?",
     "evidence": [{"doc": "note-a", "quote": "The fitted amplitude is"}]},
    {"qid": "N2", "question": "What resolution does the calorimeter reach?", "answer": "2.1 percent",
     "evidence": [{"doc": "note-b", "quote": "giving a resolution of 2.1 percent at 50 GeV"}]},
    # not in the text
    {"qid": "N3", "question": "Which tracker was aligned?", "answer": "the silicon tracker",
     "evidence": [{"doc": "note-b", "quote": "The silicon tracker was aligned with tracks from collisions"}]},
]  # fmt: skip


@pytest.fixture
def project(tmp_path, monkeypatch):
    papers = tmp_path / "papers"
    papers.mkdir()
    for name, text in NOTES.items():
        (papers / name).write_text(text, encoding="utf-8")
    qa = tmp_path / "qa.jsonl"
    qa.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS), encoding="utf-8")
    monkeypatch.setenv("HEPWB_HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    return papers, qa


def test_questions_check_names_the_unlocated_quote_and_locates_the_short_one(project):
    papers, qa = project
    res = runner.invoke(app, ["questions", "check", str(qa), "--corpus", str(papers)])
    assert res.exit_code == 1, res.output  # some quote not located
    lines = {line.split()[0]: line for line in res.output.splitlines() if "#e" in line}
    assert " located " in lines["N1#e0"] and "short, unique" in lines["N1#e0"]
    assert " located " in lines["N2#e0"]
    assert "not_found" in lines["N3#e0"] and "not in note-b's converted text" in lines["N3#e0"]
    assert "2 of 3 questions can be scored; 1 quote not located (1 not found)" in res.output


def test_evaluate_scores_the_located_questions_and_names_the_other(project):
    papers, qa = project
    res = runner.invoke(
        app, ["evaluate", "--corpus", str(papers), "--questions", str(qa), "--chunk-size", "64"]
    )
    assert res.exit_code == 0, res.output
    out = res.output
    assert "questions scored: 2 of 3" in out
    not_scored = out[out.index("not scored") :]
    assert "N3" in not_scored and "note-b" in not_scored and "not_found" in not_scored
    assert "The silicon tracker was aligned" in not_scored
    # never an interval of width 0 on fewer than 10 questions, and the sample is called small
    intervals = re.findall(r"\[(\d\.\d+), (\d\.\d+)\]", out)
    assert intervals and all(float(hi) - float(lo) > 0.1 for lo, hi in intervals)
    assert "small sample: 2 questions" in out
    # the run record keeps the unscored quote with its reason; the printed run is the folder's name
    run_name = re.search(r"^run: (\S+)$", out, re.M).group(1)  # type: ignore[union-attr]
    record = RunRecord.load(Layout.default().runs / run_name)
    assert [r["qid"] for r in record.inputs.unscored] == ["N3"]
    assert record.inputs.unscored[0]["status"] == "not_found"
    assert record.summary["n_questions_evaluated"] == 2
    assert not any(
        name.startswith("ragas_answer") and value != value for name, value in record.summary.items()
    )


def test_a_run_where_most_questions_cannot_be_scored_stops_unless_accepted(project):
    papers, qa = project
    bad = qa.with_name("mostly-bad.jsonl")
    rows = [QUESTIONS[0], *({**QUESTIONS[2], "qid": f"X{i}"} for i in range(3))]
    bad.write_text("".join(json.dumps(q) + "\n" for q in rows), encoding="utf-8")
    res = runner.invoke(
        app, ["evaluate", "--corpus", str(papers), "--questions", str(bad), "--chunk-size", "64"]
    )
    assert res.exit_code == 2
    assert "only 1 of 4 questions can be scored" in res.output and "--accept-unscored" in res.output
    assert not (Layout.default().runs).exists() or not any(Layout.default().runs.iterdir())  # nothing run
    cfg = ExperimentConfig.from_params(corpus=str(papers), questions=str(bad), chunk_size=64)
    with pytest.raises(UnscoredError):
        run_experiment(cfg, progress=False)
    accepted = run_experiment(cfg.replace(accept_unscored=True), progress=False)
    assert accepted.summary["n_questions_evaluated"] == 1
    assert list(accepted.unscored()["qid"]) == ["X0", "X1", "X2"]


def test_the_question_schema_and_the_loader_agree(project, tmp_path):
    from jsonschema import Draft202012Validator

    schema = question_schema()
    validator = Draft202012Validator(schema)
    for example in [*schema["examples"], *QUESTIONS]:
        assert not list(validator.iter_errors(example)), example
    assert "answer" not in schema["required"]
    for broken in ({"qid": "Q", "question": "?"}, {"qid": "Q", "question": "?", "evidence": []},
                   {"qid": "Q", "question": "?", "evidence": [{"doc": "P01"}]},
                   {"qid": "Q", "question": "?", "evidence": [{"doc": "P01", "quote": "± →"}]}):  # fmt: skip
        assert list(validator.iter_errors(broken)), broken
        path = tmp_path / "broken.jsonl"
        path.write_text(json.dumps(broken) + "\n", encoding="utf-8")
        res = runner.invoke(app, ["questions", "check", str(path)])
        assert res.exit_code == 2 and "broken.jsonl line 1" in res.output, res.output
    res = runner.invoke(app, ["questions", "schema"])
    assert res.exit_code == 0 and json.loads(res.output)["required"] == ["qid", "question", "evidence"]


def test_evaluate_help_shows_the_documented_default():
    from hepwb import defaults

    res = runner.invoke(app, ["evaluate", "--help"], env={"COLUMNS": "200"})
    # typer writes a default resolved when the command runs (the project's pin, else the package's) in ( )
    assert f"[default: ({defaults.RETRIEVER})]" in res.output
    assert f"[default: ({defaults.CHUNK_SIZE})]" in res.output


def test_a_project_pins_its_own_defaults(project):
    res = runner.invoke(app, ["defaults", "pin", "hybrid(weight=0.2)", "1024"])
    assert res.exit_code == 0, res.output
    assert ExperimentConfig.from_params().retriever_options == {"weight": 0.2}
    assert ExperimentConfig.from_params().chunk_size == 1024
    assert "hepwb-defaults.json" in runner.invoke(app, ["defaults", "show"]).output
    res = runner.invoke(app, ["defaults", "pin", "nonsense", "1024"])
    assert res.exit_code == 2 and "nonsense" in res.output
    assert runner.invoke(app, ["defaults", "unpin"]).exit_code == 0
    assert ExperimentConfig.from_params().chunk_size == 512
