from __future__ import annotations

import pytest
from typer.testing import CliRunner

from hepwb.cli import app

runner = CliRunner()


@pytest.mark.parametrize(
    "command",
    ["ingest", "evaluate", "sweep", "report", "run", "search", "retrievers", "testset", "validate", "sql"],
)
def test_every_command_has_help(command):
    res = runner.invoke(app, [command, "--help"])
    assert res.exit_code == 0, res.output
    assert "Usage" in res.output


def test_run_without_corpus_names_the_option(monkeypatch, tmp_path):
    monkeypatch.delenv("HEPWB_CORPUS", raising=False)
    monkeypatch.setenv("HEPWB_SHARED", str(tmp_path / "absent"))
    monkeypatch.setenv("HEPWB_HOME", str(tmp_path))
    res = runner.invoke(app, ["run"])
    assert res.exit_code == 2
    assert "--corpus" in res.output and "HEPWB_CORPUS" in res.output


def test_bad_chunk_sizes_are_rejected():
    res = runner.invoke(app, ["ingest", "--chunk-sizes", "big"])
    assert res.exit_code != 0
    assert "comma-separated integers" in res.output


@pytest.mark.parametrize("sizes", [",,,", " , "])
def test_chunk_sizes_naming_no_size_are_one_line_and_exit_2_before_converting(sizes, tmp_path, monkeypatch):
    from hepwb.chunking.prepare import prepare
    from hepwb.exceptions import ConfigError

    monkeypatch.setenv("HEPWB_HOME", str(tmp_path / "home"))
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "A01_calo.md").write_text(MD["A01_calo.md"], encoding="utf-8")
    res = runner.invoke(app, ["ingest", "--corpus", str(corpus), "--chunk-sizes", sizes])
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert res.exit_code == 2 and len(lines) == 1, res.output
    assert lines[0] == (
        f"error: --chunk-sizes {sizes!r} names no chunk size: give comma-separated integers such as "
        "256,512,1024"
    )
    with pytest.raises(ConfigError, match=r"no chunk size given: give at least one \(--chunk-sizes 512"):
        prepare(str(corpus), chunk_sizes=[], progress=False)
    assert not (tmp_path / "home" / "data").exists()  # refused before anything was converted


@pytest.mark.parametrize(
    ("option", "value", "said"),
    [
        ("--retrievers", ",,,", "--retrievers ',,,' names nothing"),
        ("--chunkers", " , ", "--chunkers ' , ' names nothing"),
        ("--overlaps", "x", "--overlaps 'x': expected comma-separated fractions"),
    ],
)
def test_sweep_grid_options_naming_nothing_are_one_line(option, value, said, tmp_path, monkeypatch):
    monkeypatch.setenv("HEPWB_HOME", str(tmp_path / "home"))
    res = runner.invoke(app, ["sweep", option, value, "--dry-run"])
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert res.exit_code == 2 and len(lines) == 1 and said in lines[0], res.output


MD = {
    "A01_calo.md": "# Calorimetry\n\nThe ATLAS electromagnetic calorimeter measures photon energies.",
    "A02_dvcs.md": "# DVCS\n\nCLAS12 measured the DVCS beam-spin asymmetry with a polarized electron beam.",
}


@pytest.fixture
def md_corpus(tmp_path, monkeypatch):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name, text in MD.items():
        (corpus / name).write_text(text, encoding="utf-8")
    monkeypatch.setenv("HEPWB_HOME", str(tmp_path / "home"))
    return corpus


def test_search_prints_citations_and_why(md_corpus):
    res = runner.invoke(
        app,
        ["search", "DVCS asymmetry at CLAS12", "--corpus", str(md_corpus), "--retrievers", "bm25,entity",
         "--chunk-size", "64", "-k", "1"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "== bm25" in res.output and "== entity" in res.output
    assert "A02" in res.output and "why: strict: all of" in res.output and "**DVCS**" in res.output


def test_search_names_files_it_could_not_convert_and_exits_2(md_corpus):
    (md_corpus / "A03_broken.pdf").write_bytes(b"not a pdf at all")
    res = runner.invoke(
        app, ["search", "photon energies", "--corpus", str(md_corpus), "--chunk-size", "64", "-k", "1"]
    )
    assert res.exit_code == 2, res.output
    assert "A01" in res.stdout  # the hits of the files that could be read come first
    tail = res.stdout.split("could not be converted and were not searched:")[1]
    assert "A03_broken.pdf" in tail and "not a PDF" in tail


def test_search_json_and_sql_join_with_lancedb(md_corpus):
    import json

    res = runner.invoke(
        app,
        ["search", "photon energies", "--corpus", str(md_corpus), "--chunk-size", "64", "-k", "1", "--json"],
    )
    assert res.exit_code == 0, res.output
    hit = json.loads(next(ln for ln in res.stdout.splitlines() if ln.startswith("{")))
    assert hit["label"] == "A01" and hit["citation"].startswith("[1] ")
    res = runner.invoke(app, ["sql", "SELECT name FROM (SHOW TABLES) WHERE name LIKE 'lance_%'"])
    assert res.exit_code == 0 and "lance_hepilot_cs64" in res.output, res.output
    view = next(w for w in res.output.split() if w.startswith("lance_hepilot_cs64"))
    res = runner.invoke(app, ["sql", f"SELECT label, entities FROM {view} ORDER BY label"])
    assert res.exit_code == 0 and "experiment:atlas" in res.output and "experiment:clas12" in res.output


def test_retrievers_lists_availability(md_corpus, monkeypatch):
    monkeypatch.delenv("HEPWB_LLM_URL", raising=False)
    res = runner.invoke(app, ["retrievers", "--corpus", str(md_corpus), "--chunk-size", "64"])
    assert res.exit_code == 0, res.output
    assert "bm25" in res.output and "ok" in res.output and "HEPWB_LLM_URL" in res.output


def test_search_unknown_retriever_lists_names(md_corpus):
    res = runner.invoke(
        app, ["search", "x", "--corpus", str(md_corpus), "--retrievers", "bm26", "--chunk-size", "64"]
    )
    assert res.exit_code == 2 and "choose one of" in res.output


def test_search_shows_links_and_filters_by_collaboration(tmp_path, monkeypatch):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    body = "The HERMES Collaboration measured the beam-spin asymmetry, shown in Fig. 1, as predicted [1]."
    (corpus / "B01_hermes.md").write_text(
        f"# Asymmetry\n\n(The HERMES Collaboration)\n\n{body}\n\n"
        "Figure 1: The beam-spin asymmetry versus phi.\n\n"
        "## References\n\n[1] X. Ji, Phys. Rev. Lett. 78 (1997) 610, arXiv:hep-ph/9603249.",
        encoding="utf-8",
    )
    (corpus / "B02_clas.md").write_text(
        "# CLAS\n\nCLAS measured the beam-spin asymmetry too.", encoding="utf-8"
    )
    monkeypatch.setenv("HEPWB_HOME", str(tmp_path / "home"))
    args = [
        "search",
        "beam-spin asymmetry",
        "--corpus",
        str(corpus),
        "--retrievers",
        "bm25",
        "--chunk-size",
        "64",
    ]
    res = runner.invoke(app, [*args, "-k", "3"])
    assert res.exit_code == 0, res.output
    assert "links: Fig. 1 -> Figure 1 (p. 1): Figure 1: The beam-spin asymmetry versus phi." in res.output
    res = runner.invoke(app, [*args, "-k", "3", "--collaboration", "hermes"])
    assert res.exit_code == 0, res.output
    assert "B01" in res.output and "B02" not in res.output
    query = ["search", "what does figure 1 show", "--corpus", str(corpus), "--retrievers", "xref"]
    res = runner.invoke(app, [*query, "--chunk-size", "64", "-k", "1"])
    assert res.exit_code == 0 and "caption of Figure 1 named in the query" in res.output, res.output


def test_search_shows_each_link_once(tmp_path, monkeypatch):
    """A chunk naming Figure 2 three ways ("Fig. 2", "Figure 2", "FIG. 2") gets one link line for it."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "C01_dvcs.md").write_text(
        "# Asymmetry\n\nThe beam-spin asymmetry of Fig. 2 rises with t. Figure 2 also shows the fit, "
        "and FIG. 2 compares it with Fig. 1.\n\nFigure 1: The detector.\n\n"
        "Figure 2: The beam-spin asymmetry versus t.",
        encoding="utf-8",
    )
    monkeypatch.setenv("HEPWB_HOME", str(tmp_path / "home"))
    args = ["search", "beam-spin asymmetry fit", "--corpus", str(corpus), "--retrievers", "bm25"]
    res = runner.invoke(app, [*args, "--chunk-size", "256", "-k", "1"])
    assert res.exit_code == 0, res.output
    links = [ln.strip() for ln in res.output.splitlines() if ln.strip().startswith("links:")]
    assert [ln.split(" -> ")[1].split(" (")[0] for ln in links] == ["Figure 2", "Figure 1"], links
    assert links[0].startswith("links: Fig. 2 -> Figure 2 (p. 1)")
