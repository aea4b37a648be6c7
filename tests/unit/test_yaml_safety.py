"""Every YAML hepwb reads goes through one bounded loader: no alias bombs, duplicate keys, huge files, and
decimal numbers only (no YAML 1.1 base-60, octal or hexadecimal numbers)."""

from __future__ import annotations

import resource
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from hepwb import limits
from hepwb.cli import app
from hepwb.exceptions import HepwbError
from hepwb.files.yamlio import YamlError, load_yaml
from hepwb.ragmd import reader as ragmd
from hepwb.sweep.spec import SweepSpec, SweepSpecError
from hepwb.tiers.settings import load_config

# the "billion laughs" pattern: 9 levels of 9 aliases (9**9 strings once expanded)
BOMB = "a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]\n" for i in range(1, 9)
)


def test_an_alias_bomb_is_refused_before_it_expands(tmp_path):
    path = tmp_path / "bomb.yaml"
    path.write_text("name: bomb\ngrid:\n  k: [1]\n" + BOMB, encoding="utf-8")
    assert len(BOMB) < 1000
    start, rss = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(SweepSpecError) as err:
        SweepSpec.from_yaml(path)
    assert (
        time.perf_counter() - start < 5 and resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss < 50_000
    )
    msg = str(err.value)
    assert msg.startswith(f"sweep file {path}, line 5: a YAML alias (*a0)") and "write the value out" in msg
    assert len(msg) < 300 and "\n" not in msg  # the source line, cut short; never the expanded value


def test_the_same_loader_guards_tier_configs_ragmd_front_matter_and_cli_options(tmp_path):
    cfg = tmp_path / "tiers.yaml"
    cfg.write_text(BOMB, encoding="utf-8")
    with pytest.raises(YamlError, match=r"^tier config .*tiers.yaml, line 2: a YAML alias \(\*a0\)"):
        load_config(cfg)
    text = "---\nformat_version: 1\n" + BOMB + "---\n"
    with pytest.raises(ragmd.RagmdError, match=r"a YAML alias \(\*a0\)"):
        ragmd.loads(text, "bomb.ragmd")
    out = CliRunner().invoke(app, ["evaluate", "--show-config", "--option", "weight=*x"])
    assert out.exit_code == 2 and "--option weight: cannot read the value (a YAML alias (*x)" in out.output


def test_duplicate_keys_name_both_lines(tmp_path):
    path = tmp_path / "dup.yaml"
    path.write_text("name: a\ngrid:\n  k: [1]\nname: b\n", encoding="utf-8")
    with pytest.raises(SweepSpecError, match=r"dup.yaml, line 4: duplicate key 'name' \(first on line 1\)"):
        SweepSpec.from_yaml(path)
    with pytest.raises(YamlError, match="duplicate key 'k'"):
        load_yaml("{k: 1, k: 2}", source="flow")


@pytest.mark.heavy
def test_size_depth_and_count_are_bounded(tmp_path):
    big = tmp_path / "big.yaml"
    big.write_text("# " + "x" * limits.MAX_YAML_BYTES + "\n", encoding="utf-8")
    with pytest.raises(SweepSpecError, match=r"more than the 1,048,576 a sweep file may hold"):
        SweepSpec.from_yaml(big)
    with pytest.raises(YamlError, match="nesting deeper than 64 levels"):
        load_yaml("x: " + "[" * 200 + "]" * 200, source="deep")
    with pytest.raises(YamlError, match="more than 100,000 values"):
        load_yaml("[" + ", ".join(["1"] * 100_001) + "]", source="many")
    with pytest.raises(SweepSpecError, match="is a folder; give a file"):
        SweepSpec.from_yaml(tmp_path)


def test_the_cli_prints_one_line_and_exits_2(tmp_path):
    path = tmp_path / "bomb.yaml"
    path.write_text(BOMB, encoding="utf-8")
    out = CliRunner().invoke(app, ["sweep", str(path), "--dry-run"])
    assert out.exit_code == 2
    assert out.output.strip().count("\n") == 0 and "a YAML alias (*a0)" in out.output


@settings(max_examples=150, deadline=2000, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=400) | st.text(alphabet="{}[]:,-&*!|>'\"#\n abc01", max_size=300))
def test_random_and_mutated_input_fails_only_with_the_projects_errors(tmp_path, data):
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    path = tmp_path / "fuzz.yaml"
    path.write_text(text, encoding="utf-8")
    for read in (
        lambda: SweepSpec.from_yaml(path),
        lambda: load_config(path),
        lambda: ragmd.loads("---\n" + text + "\n---\n", "fuzz.ragmd"),
    ):
        try:
            read()
        except HepwbError as exc:
            assert len(str(exc)) < 5000


@pytest.mark.parametrize("ttl", ["-1", "inf", "nan"])
def test_a_bad_tier_setting_is_one_line_naming_it(tmp_path, monkeypatch, ttl):
    monkeypatch.setenv("HEPWB_HOME", str(tmp_path))
    out = CliRunner().invoke(app, ["tiers", "--ttl-s", ttl, "status"])
    assert out.exit_code == 2 and out.output.count("\n") == 1
    assert out.output.startswith("error: bad tier config: ttl_s is a duration in seconds")
    assert f"got {float(ttl)!r}" in out.output


VALID = {
    "sweep": (Path(__file__).resolve().parents[2] / "sweeps" / "example.yaml").read_text(encoding="utf-8"),
    "tiers": "ttl_s: 3600\nwarm_max_docs: 5\nwarm_max_rows: 200\nrecency_s: 600\njob_max_rows: 1000\n",
}


@settings(max_examples=120, deadline=3000, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    which=st.sampled_from(sorted(VALID)),
    cuts=st.lists(
        st.tuples(
            st.floats(0, 1),
            st.integers(0, 12),
            st.text(alphabet="{}[]:,-&*!|>'\"#\n %.0123456789eEaz", max_size=12),
        ),
        min_size=1,
        max_size=4,
    ),
)
def test_mutated_valid_files_fail_only_with_the_projects_errors_naming_the_file(tmp_path, which, cuts):
    """A valid sweep file or tier config with slices replaced: a HepwbError naming the file, or a valid
    object; bounded in time and memory."""
    text = VALID[which]
    for where, length, insert in cuts:  # replace text[at:at+length] by insert
        at = int(where * len(text))
        text = text[:at] + insert + text[at + length :]
    path = tmp_path / f"mutated-{which}.yaml"
    path.write_text(text, encoding="utf-8")
    rss, start = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, time.perf_counter()
    try:
        SweepSpec.from_yaml(path).cells() if which == "sweep" else load_config(path)
    except HepwbError as exc:  # one line per problem (all reported at once), each naming the file
        lines = str(exc).strip().splitlines()
        assert lines and all(path.name in line for line in lines) and len(str(exc)) < 5000, str(exc)[:300]
    assert time.perf_counter() - start < 5
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss < 100_000  # KiB


def test_yaml_reads_decimal_numbers_only():
    got = load_yaml("[1:30, '1:30', 012, 0x10, 0o17, 0b11, 1:30.5, 20_000, 1e3, -2.5]", source="t.yaml")
    assert got == ["1:30", "1:30", 12, "0x10", "0o17", "0b11", "1:30.5", 20_000, 1000.0, -2.5]
