"""Tier row counts and durations have upper bounds (hepwb.limits): one line and exit 2, never a crash."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from hepwb import limits
from hepwb.cli import app
from hepwb.exceptions import ConfigError
from hepwb.tiers.settings import TierConfig, load_config


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
