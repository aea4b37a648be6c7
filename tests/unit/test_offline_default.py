"""Offline by default (issue #38 item 6): `import hepwb` and the CLI set the hub libraries offline unless the
user opts in (HEPWB_ONLINE=1, or their own HF_HUB_OFFLINE=0); batch jobs inherit the choice. Only an explicit
yes or off opts in: any other value of either variable means offline."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from hepwb.runtime.env import OFFLINE_VARIABLES, configure_runtime, hub_offline, online_requested
from hepwb.sweep.jobqueue import job_prologue

_SHOW = (
    "import hepwb, os, huggingface_hub.constants as c; "
    "print([os.environ.get(k) for k in ('HF_HUB_OFFLINE', 'TRANSFORMERS_OFFLINE', 'HF_DATASETS_OFFLINE')],"
    " c.HF_HUB_OFFLINE)"
)


def _fresh(**env: str) -> str:
    base = {k: v for k, v in os.environ.items() if k not in (*OFFLINE_VARIABLES, "HEPWB_ONLINE")}
    out = subprocess.run(
        [sys.executable, "-c", _SHOW], env={**base, **env}, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_import_hepwb_sets_the_hub_libraries_offline():
    assert _fresh() == "['1', '1', '1'] True"


def test_hepwb_online_opts_in():
    assert _fresh(HEPWB_ONLINE="1") == "[None, None, None] False"


def test_the_users_own_hf_hub_offline_0_is_kept():
    assert _fresh(HF_HUB_OFFLINE="0") == "['0', None, None] False"


@pytest.fixture
def clean_env(monkeypatch):
    for key in (*OFFLINE_VARIABLES, "HEPWB_ONLINE"):
        monkeypatch.delenv(key, raising=False)


def test_configure_runtime_defaults_to_offline(clean_env):
    configure_runtime()
    assert all(os.environ[k] == "1" for k in OFFLINE_VARIABLES)


def test_configure_runtime_respects_the_opt_in_and_false(clean_env, monkeypatch):
    monkeypatch.setenv("HEPWB_ONLINE", "1")
    assert online_requested()
    configure_runtime()
    assert not any(k in os.environ for k in OFFLINE_VARIABLES)
    configure_runtime(offline=False)
    assert not any(k in os.environ for k in OFFLINE_VARIABLES)
    assert hub_offline(force=True) and os.environ["HF_HUB_OFFLINE"] == "1"


def test_batch_jobs_inherit_the_choice(clean_env, monkeypatch, tmp_path):
    assert "export HF_HUB_OFFLINE=1" in job_prologue(tmp_path)
    monkeypatch.setenv("HEPWB_ONLINE", "1")
    lines = job_prologue(tmp_path)
    assert "export HEPWB_ONLINE=1" in lines and not any("OFFLINE" in line for line in lines)


@pytest.mark.parametrize("value", ["garbage", "2", "", " "])
def test_a_garbage_hf_hub_offline_is_offline(hub_env, value):
    hub_env.setenv("HEPWB_ONLINE", "0")
    hub_env.setenv("HF_HUB_OFFLINE", value)
    assert not online_requested()
    assert hub_offline()
    assert [os.environ[k] for k in OFFLINE_VARIABLES] == ["1", "1", "1"]


@pytest.mark.parametrize("value", ["0", "false", "No", "OFF"])
def test_only_an_explicit_off_turns_the_hub_on(hub_env, value):
    hub_env.setenv("HF_HUB_OFFLINE", value)
    assert online_requested() and not hub_offline()
    assert os.environ["HF_HUB_OFFLINE"] == value


@pytest.mark.parametrize(
    ("value", "online"), [("1", True), ("Yes", True), ("on", True), ("2", False), ("x", False)]
)
def test_hepwb_online_is_on_only_for_an_explicit_yes(hub_env, value, online):
    hub_env.setenv("HEPWB_ONLINE", value)
    assert online_requested() is online
    hub_env.setenv("TRANSFORMERS_OFFLINE", "maybe")  # never left for the library to read as off
    hub_offline()
    assert os.environ["TRANSFORMERS_OFFLINE"] == "1"
