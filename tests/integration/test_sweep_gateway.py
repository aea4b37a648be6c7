"""Sweeps on a Dask Gateway cluster: a real dask-gateway-server (local processes) on 127.0.0.1."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hepwb.exceptions import ConfigError
from hepwb.paths import Layout
from hepwb.sweep import SweepSpec, run_sweep
from hepwb.sweep.gateway import make_gateway_cluster
from tests.gateway_server import descendants, gateway
from tests.helpers import tiny_corpus
from tests.s3_server import free_port

dask = pytest.importorskip("dask")
pytest.importorskip("dask_gateway")
pytest.importorskip("dask_gateway_server")
BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def gw(tmp_path_factory):
    with gateway(tmp_path_factory.mktemp("gateway")) as server:
        yield server


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("gw-tiny")
    corpus, questions = tiny_corpus(root)
    return root, {"corpus": str(corpus), "questions": str(questions), "tokenizer": "words"}


def _cluster_processes(gw) -> list[int]:
    """The gateway's scheduler and worker processes alive now (its proxy excluded)."""
    out = []
    for pid in descendants(gw.pid):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(part in (b"scheduler", b"worker") for part in cmd):
            out.append(pid)
    return out


def _where(dask_worker=None) -> dict[str, str | None]:
    env = os.environ
    return {"cwd": str(Path.cwd()), "home": env.get("HEPWB_HOME"), "offline": env.get("HF_HUB_OFFLINE"),
            "address": dask_worker.address}  # fmt: skip


def test_a_sweep_runs_on_a_gateway_cluster_read_from_daskconfig_and_shuts_it_down(gw, tiny, monkeypatch):
    root, base = tiny
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    spec = SweepSpec.from_dict(
        {"name": "gw", **base, "grid": {"chunk_size": [32], "retriever": ["bm25", "dense"]}}
    )
    serial = run_sweep(spec, layout=Layout(root / "home-serial"), executor="serial", progress=False)
    seen: dict[str, object] = {}

    def start():  # what `--cluster gateway` does, the facility's configuration giving address and credentials
        cluster = make_gateway_cluster(worker_cores=1, worker_memory=1.5, workers=1)
        try:
            client = cluster.get_client()
            client.wait_for_workers(1, timeout=120)
            seen.update(client.run(_where))
            seen["processes"] = len(_cluster_processes(gw))
        except BaseException:
            cluster.close()
            raise
        return cluster

    with dask.config.set(gw.dask_config()):
        res = run_sweep(spec, layout=Layout(root / "home-gw"), cluster=start, progress=False)
    assert res.executor == "dask" and not res.failed and len(res.computed) == 2
    assert [o.detail["summary"] for o in res.cells] == [o.detail["summary"] for o in serial.cells]
    workers = {v["address"] for v in seen.values() if isinstance(v, dict)}
    used = {o.worker for o in [*res.cells, *res.stages] if o.worker}
    assert used and used <= workers, (used, workers)  # every task ran on the gateway's workers
    for info in (v for v in seen.values() if isinstance(v, dict)):
        assert info["home"] is None and not Path(info["cwd"]).is_relative_to(root)  # not the project
        assert info["offline"] == "1"  # hepwb's variables reached them through the option `environment`
    assert seen["processes"] >= 2  # its scheduler and worker
    deadline = time.monotonic() + 60
    while _cluster_processes(gw) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _cluster_processes(gw), "the sweep's gateway cluster is still running"
    # a warm rerun starts no cluster at all
    started = []
    with dask.config.set(gw.dask_config()):
        again = run_sweep(
            spec, layout=Layout(root / "home-gw"), cluster=lambda: started.append(1), progress=False
        )
    assert again.executor == "none" and not started


def test_gateway_problems_are_one_line(gw):
    with (
        dask.config.set({"gateway.address": None}),
        pytest.raises(ConfigError, match="needs the gateway's address"),
    ):
        make_gateway_cluster()
    port = free_port()  # nothing listens there
    start = time.monotonic()
    with pytest.raises(ConfigError, match=rf"cannot reach the Dask Gateway at http://127\.0\.0\.1:{port}"):
        make_gateway_cluster(address=f"http://127.0.0.1:{port}")
    assert time.monotonic() - start < 30
    wrong = {**gw.dask_config(), "gateway.auth.kwargs": {"username": "x", "password": "wrong"}}
    with dask.config.set(wrong), pytest.raises(ConfigError, match="refused the cluster"):
        make_gateway_cluster()
    with (
        dask.config.set(gw.dask_config()),
        pytest.raises(ConfigError, match="offers no cluster option 'image'"),
    ):
        make_gateway_cluster(image="coffeateam/coffea-dask:latest")


def test_sweep_help_shows_the_gateway_and_the_tls_options():
    out = subprocess.run([BIN / "hepwb", "sweep", "--help"], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "COLUMNS": "200"})  # fmt: skip
    assert out.returncode == 0, out.stderr
    flags = ("gateway", "--gateway-address", "--gateway-auth", "--worker-cores", "--worker-memory", "--image",
             "--adapt-min", "--adapt-max", "--tls-ca-file", "--tls-cert", "--tls-key")  # fmt: skip
    for flag in flags:
        assert flag in out.stdout, flag


def test_cli_refuses_gateway_options_without_the_gateway_cluster(tmp_path):
    out = subprocess.run([BIN / "hepwb", "sweep", "--worker-cores", "2", "--dry-run"], capture_output=True,
                         text=True, timeout=120, cwd=tmp_path)  # fmt: skip
    assert out.returncode == 2 and "--worker-cores is an option of --cluster gateway" in out.stderr, (
        out.stderr
    )
    assert len(out.stderr.strip().splitlines()) == 1


_AWS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL", "AWS_DEFAULT_REGION", "AWS_REGION")


def test_a_gateway_sweep_keeps_its_artefacts_in_the_store_and_a_resumed_one_starts_no_cluster(
    s3_env, tiny, tmp_path_factory, monkeypatch
):
    """The facility's set-up: gateway workers (the store's credentials in their environment) and S3."""
    root, base = tiny
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    grid = {"chunk_size": [40], "retriever": ["bm25"]}
    spec = SweepSpec.from_dict({"name": "gw-store", **base, "grid": grid})
    url = s3_env.url("gateway")

    def start():
        return make_gateway_cluster(worker_cores=1, worker_memory=1.5, workers=1)

    with gateway(tmp_path_factory.mktemp("gateway-store"), inherit=_AWS) as server:
        with dask.config.set(server.dask_config()):
            home = Layout(root / "home-gw-store")
            res = run_sweep(spec, layout=home, store=url, progress=False, cluster=start)
        assert not res.failed and len(res.computed) == 1 and res.moved["cell"]["sent"] > 0
        assert all(o.worker.startswith("tls://") for o in [*res.cells, *res.stages] if o.worker)
        started = []  # another project resumes from the store: no cluster is asked for
        with dask.config.set(server.dask_config()):
            again = run_sweep(spec, layout=Layout(root / "home-gw-store-2"), store=url, progress=False,
                              cluster=lambda: started.append(1))  # fmt: skip
        assert again.executor == "none" and not started
        assert [o.detail["summary"] for o in again.cells] == [o.detail["summary"] for o in res.cells]
