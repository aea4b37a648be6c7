"""What the tiers take from a user is checked: row counts and durations have upper bounds (hepwb.limits), a
tier config's values are numbers of their kind (no YAML booleans, quoted or base-60 numbers), an actor is
plain text, a history limit is in range. One line and exit 2, never a crash, and nothing recorded."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from hepwb import limits
from hepwb.cli import app
from hepwb.exceptions import ConfigError
from hepwb.tiers.settings import TierConfig, load_config

runner = CliRunner()


@pytest.mark.parametrize(
    ("args", "name"),
    [
        (["--warm-max-rows", "100000000000000000000", "warm"], "warm_max_rows"),
        (["--ttl-s", "1e308", "evict", "--dry-run"], "ttl_s"),
        (["--recency-s", "1e308", "warm"], "recency_s"),
        (["--ttl-s", "1e16", "status"], "ttl_s"),
        (["--job-max-rows", "1000000000", "evict"], "job_max_rows"),
        (["--job-min-interval-s", "1e300", "evict"], "job_min_interval_s"),
        (["--warm-max-docs", "99999999", "warm"], "warm_max_docs"),
        (["--promote-min-questions", "99999999", "promote"], "promote_min_questions"),
    ],
)
def test_huge_tier_settings_are_one_line_and_exit_2(tmp_path, monkeypatch, args, name):
    monkeypatch.setenv("HEPWB_HOME", str(tmp_path))
    out = CliRunner().invoke(app, ["tiers", *args])
    assert out.exit_code == 2, out.output
    assert out.output.count("\n") == 1 and out.output.startswith(f"error: bad tier config: {name} is ")
    assert "e.g." in out.output and "Traceback" not in out.output


def test_the_bounds_live_in_limits_and_the_largest_values_still_work():
    cfg = TierConfig(
        ttl_s=limits.MAX_TIER_SECONDS,
        recency_s=limits.MAX_TIER_SECONDS,
        job_min_interval_s=limits.MAX_TIER_SECONDS,
        warm_max_rows=limits.MAX_TIER_ROWS,
        job_max_rows=limits.MAX_TIER_ROWS,
    )
    assert int(cfg.ttl_s * 1000) < 2**63  # stamps in milliseconds stay 64-bit integers
    assert TierConfig(ttl_s=60).ttl_s == 60.0


def test_a_config_file_is_bounded_the_same_way(tmp_path):
    path = tmp_path / "tiers.yaml"
    path.write_text("ttl_s: 1e400\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=rf"in {path}: ttl_s is a duration in seconds.*got inf"):
        load_config(path)


@pytest.mark.parametrize(
    ("line", "name", "got"),
    [
        ("ttl_s: yes", "ttl_s", "True"),
        ("ttl_s: on", "ttl_s", "True"),
        ("promote_min_questions: true", "promote_min_questions", "True"),
        ("warm_max_rows: true", "warm_max_rows", "True"),
        ('ttl_s: "86400"', "ttl_s", "'86400'"),
        ("warm_max_docs: 5.0", "warm_max_docs", "5.0"),
    ],
)
def test_a_tier_config_refuses_what_is_no_number_of_its_kind(home, line, name, got):
    path = home / "t.yaml"
    path.write_text(line + "\n", encoding="utf-8")
    res = runner.invoke(app, ["tiers", "--config", str(path), "status"])
    assert res.exit_code == 2 and res.output.count("\n") == 1, res.output
    assert res.output.startswith(f"error: bad tier config in {path}: {name} is ")
    assert f"got {got} (e.g." in res.output


def test_a_tier_config_still_reads_numbers(home):
    from hepwb.tiers.settings import load_config

    path = home / "t.yaml"
    path.write_text("ttl_s: 60\nrecency_s: 1.5e3\nwarm_max_rows: 7\n", encoding="utf-8")
    cfg = load_config(path, job_max_rows=9)
    assert (cfg.ttl_s, cfg.recency_s, cfg.warm_max_rows, cfg.job_max_rows) == (60.0, 1500.0, 7, 9)
    assert isinstance(cfg.ttl_s, float)


def test_a_base_60_duration_in_a_tier_config_is_refused(tmp_path):
    config = tmp_path / "t.yaml"
    config.write_text("ttl_s: 1:30\n")
    with pytest.raises(ValueError, match=r"ttl_s.*got '1:30'"):
        load_config(config)


@pytest.fixture(scope="module")
def tiers_home(tmp_path_factory):
    """A tier folder of three small papers, and one of its chunk ids."""
    home = tmp_path_factory.mktemp("tiers-home")
    corpus = home / "corpus"
    corpus.mkdir()
    for i in range(3):
        text = (
            f"# Measurement of the Higgs boson mass {i}\n\n## Introduction\nThe ATLAS collaboration measured "
            f"the Higgs boson mass at 13 TeV. Paper {i} describes the analysis.\n\n## Results\nThe W boson "
            "and Z boson backgrounds are small.\n"
        ) * 3
        (corpus / f"P0{i}_doc.md").write_text(text, encoding="utf-8")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HEPWB_HOME", str(home))
        res = runner.invoke(app, ["tiers", "init", "--corpus", str(corpus), "--chunk-size", "64"])
        assert res.exit_code == 0, res.output
        from hepwb.tiers.store import Tiers

        chunk = Tiers.open("default").search("Higgs", 1, record=False)[0].chunk_id
    return home, chunk


@pytest.mark.parametrize(
    ("actor", "why"),
    [
        ("ev\x1b]8;;http://x\x07il", "holds the control character U+001B"),
        ("ev\u202eil", "holds the control character U+202E"),
        ("ev\udced\udca0\udc80", "holds a lone surrogate (U+DCED)"),
        ("x" * 129, "has 129 characters (at most 128)"),
    ],
)
def test_an_actor_with_control_characters_is_refused_before_anything_is_recorded(
    tiers_home, monkeypatch, actor, why
):
    home, chunk = tiers_home
    monkeypatch.setenv("HEPWB_HOME", str(home))
    res = runner.invoke(app, ["tiers", "mark", chunk, "--actor", actor])
    assert res.exit_code == 2, res.output
    assert res.output.startswith("error: actor ") and why in res.output and "\x1b" not in res.output
    from hepwb.tiers.store import Tiers

    tiers = Tiers.open("default")
    assert tiers.audit.rows("SELECT count(*) FROM signals WHERE actor <> 'Zoë Müller'") == [(0,)]
    with pytest.raises(ConfigError, match="actor"):
        tiers.warm(actor=actor)  # the Python API refuses it too
    assert tiers.audit.rows("SELECT count(*) FROM audit WHERE action = 'warm'") == [(0,)]


def test_a_plain_actor_is_recorded_and_echoed(tiers_home, monkeypatch):
    home, chunk = tiers_home
    monkeypatch.setenv("HEPWB_HOME", str(home))
    res = runner.invoke(
        app, ["tiers", "mark", chunk, "--actor", "Zoë Müller", "--note", "line one\nline two"]
    )
    assert res.exit_code == 0 and res.output == f"recorded useful for {chunk} by Zoë Müller\n"


@pytest.mark.parametrize("limit", ["-1", "0", "100000000000000000000"])
def test_a_history_limit_out_of_range_is_one_line_and_exit_2(tiers_home, monkeypatch, limit):
    home, _ = tiers_home
    monkeypatch.setenv("HEPWB_HOME", str(home))
    res = runner.invoke(app, ["tiers", "history", "--limit", limit])
    assert res.exit_code == 2 and res.output.count("\n") == 1, res.output
    assert res.output.startswith("error: limit is a whole number of audit events shown from 1 to 100000")
    assert runner.invoke(app, ["tiers", "history", "--limit", "1"]).exit_code == 0
