"""Sweeps on real Dask clusters on 127.0.0.1, killed sweeps resuming, papermill records, batch job scripts."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from hepwb.catalog import Catalog
from hepwb.paths import Layout
from hepwb.runs.record import RunRecord
from hepwb.sweep import SweepSpec, run_sweep
from hepwb.sweep.jobqueue import make_cluster
from tests.helpers import notebook_warnings, tiny_corpus

BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("dask")
    corpus, questions = tiny_corpus(root)
    return root, {"corpus": str(corpus), "questions": str(questions), "tokenizer": "words"}


def _spec(base, name, **grid):
    return SweepSpec.from_dict({"name": name, **base, "grid": grid})


def _start_cluster(tmp_path, procs, n_workers=2):
    """Start a `dask scheduler` and ``n_workers`` `dask worker` processes on 127.0.0.1, into ``procs``."""
    sched_file = tmp_path / "scheduler.json"
    procs.append(
        subprocess.Popen(
            [BIN / "dask", "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
             "--scheduler-file", str(sched_file)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    )  # fmt: skip
    deadline = time.time() + 60
    while not sched_file.is_file() and time.time() < deadline:
        time.sleep(0.2)
    address = json.loads(sched_file.read_text())["address"]
    for i in range(n_workers):
        procs.append(
            subprocess.Popen(
                [BIN / "dask", "worker", address, "--nthreads", "1", "--host", "127.0.0.1", "--no-dashboard",
                 "--name", f"w{i}", "--local-directory", str(tmp_path / f"w{i}")],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )  # fmt: skip
    from distributed import Client

    with Client(address, timeout="30s") as client:
        client.wait_for_workers(n_workers, timeout=120)
        workers = set(client.scheduler_info()["workers"])
    return address, workers


def _stop(procs):
    for p in reversed(procs):
        p.terminate()
    for p in procs:
        p.wait(timeout=30)


@pytest.fixture
def dask_cluster(tmp_path):
    """A `dask scheduler` and two `dask worker` processes on 127.0.0.1 (killed afterwards)."""
    procs: list = []
    try:
        yield _start_cluster(tmp_path, procs)
    finally:
        _stop(procs)


def test_a_cluster_lost_mid_sweep_is_one_line_and_no_cell_is_recorded_as_failed(tiny, tmp_path):
    _, base = tiny
    spec_file = tmp_path / "grid.yaml"
    grid = {"chunk_size": [24, 32, 40, 48, 56, 64], "retriever": ["bm25", "dense"]}
    spec_file.write_text(yaml.safe_dump({"name": "lost", **base, "grid": grid}))
    home = tmp_path / "home"
    procs: list = []
    try:
        address, _ = _start_cluster(tmp_path, procs, n_workers=1)
        env = {**os.environ, "HEPWB_HOME": str(home)}
        cmd = [BIN / "hepwb", "sweep", str(spec_file), "--scheduler", address]
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 240
        while time.time() < deadline and not list((home / "reports" / "runs").glob("*/metrics.json")):
            assert proc.poll() is None, proc.stderr.read()[-2000:] if proc.stderr else ""
            time.sleep(0.05)
        procs[0].send_signal(signal.SIGKILL)  # the scheduler (a gateway cluster stopped, a node lost)
        _, err = proc.communicate(timeout=300)
    finally:
        _stop(procs)
    said = [line for line in err.splitlines() if line.startswith(("error", "ERROR", "WARNING", "Traceback"))]
    assert proc.returncode == 2, err[-3000:]
    assert len(said) == 1 and "was lost mid-sweep" in said[0] and "run the same command again" in said[0], err
    cat = Catalog(home / "reports" / "catalog.duckdb")
    assert cat.sql("SELECT count(*) AS n FROM runs WHERE status = 'failed'")["n"][0] == 0
    assert not list((home / "reports" / "runs").glob("*/traceback.txt"))  # no cell blamed


def test_sweep_through_a_scheduler_and_two_workers(tiny, dask_cluster):
    root, base = tiny
    address, workers = dask_cluster
    layout = Layout(root / "home-dask")
    s = _spec(base, "dask", chunk_size=[32, 48, 64], retriever=["bm25", "dense"])
    res = run_sweep(s, layout=layout, scheduler=address, progress=False)
    assert not res.failed and len(res.computed) == 6 and res.executor == "dask"
    used = {o.worker for o in [*res.cells, *res.stages] if o.worker}
    assert used <= workers, (used, workers)  # every task ran on the cluster, none in this process
    assert len(used) == 2, f"both workers should have run tasks: {used}"
    assert res.embedded == res.unique_texts
    rows = Catalog(layout.catalog).sql("SELECT worker FROM runs WHERE status = 'ok'")
    assert set(rows["worker"]) <= workers and len(rows) == 6
    peaks = res.peak_rss_mib()
    assert set(peaks) <= workers and all(0 < v < 4096 for v in peaks.values())
    # the same sweep again: all done, the cluster is not even contacted
    assert run_sweep(s, layout=layout, scheduler="tcp://127.0.0.1:9", progress=False).executor == "none"


def test_local_cluster_matches_serial(tiny):
    root, base = tiny
    s = _spec(base, "local", chunk_size=[32], retriever=["bm25", "dense"])
    serial = run_sweep(s, layout=Layout(root / "home-serial"), executor="serial", progress=False)
    local = run_sweep(s, layout=Layout(root / "home-local"), executor="local", n_workers=2, progress=False)
    assert local.executor == "dask" and not local.failed
    assert [o.detail["summary"] for o in serial.cells] == [o.detail["summary"] for o in local.cells]


def test_unreachable_scheduler_is_a_clear_error(tiny):
    root, base = tiny
    from hepwb.exceptions import ConfigError

    with pytest.raises(ConfigError, match=r"cannot connect to the Dask scheduler at tcp://127\.0\.0\.1:9"):
        run_sweep(
            _spec(base, "x", chunk_size=[40]),
            layout=Layout(root / "home-x"),
            scheduler="tcp://127.0.0.1:9",
            progress=False,
        )


def test_a_killed_sweep_resumes(tiny, tmp_path):
    _, base = tiny
    spec_file = tmp_path / "grid.yaml"
    spec_file.write_text(
        yaml.safe_dump(
            {"name": "kill", **base, "grid": {"chunk_size": [24, 40, 56], "retriever": ["bm25", "dense"]}}
        )
    )
    home = tmp_path / "home"
    env = {**os.environ, "HEPWB_HOME": str(home)}
    cmd = [BIN / "hepwb", "sweep", str(spec_file), "--executor", "serial"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 240
    while time.time() < deadline and len(list((home / "reports" / "runs").glob("*/metrics.json"))) < 2:
        assert proc.poll() is None, proc.stderr.read().decode()[-2000:] if proc.stderr else ""
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.communicate()  # waits and closes the stderr pipe
    finished = {
        p.parent.name: p.stat().st_mtime_ns for p in (home / "reports" / "runs").glob("*/metrics.json")
    }
    assert 2 <= len(finished) < 6, "the sweep should have been killed part-way"
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert f"{6 - len(finished)} computed, {len(finished)} reused, 0 failed" in out.stdout
    runs = home / "reports" / "runs"
    for name, mtime in finished.items():  # the finished cells were not recomputed
        assert (runs / name / "metrics.json").stat().st_mtime_ns == mtime
    assert len(list(runs.glob("*/metrics.json"))) == 6
    assert not list((home / "data" / "processed" / "chunksets").glob(".*"))  # no half-built chunk set left
    cat = Catalog(home / "reports" / "catalog.duckdb")
    assert cat.sql("SELECT count(*) AS n FROM runs WHERE status = 'ok'")["n"][0] == 6


def test_notebooks_are_the_record(tiny):
    root, base = tiny
    layout = Layout(root / "home-nb")
    s = _spec(base, "nb", chunk_size=[32], retriever=["bm25"])
    res = run_sweep(s, layout=layout, executor="serial", notebooks=True, progress=False)
    assert not res.failed
    (cell,) = res.plan.cells
    executed = cell.run_dir / "20-evaluate.ipynb"
    assert executed.is_file() and "papermill" in json.loads(executed.read_text())["metadata"]
    assert not notebook_warnings(executed)
    first = RunRecord.load(cell.run_dir)
    params = yaml.safe_load((cell.run_dir / "parameters.yaml").read_text())
    assert params["chunk_size"] == 32 and params["home"] == str(layout.root.resolve())
    # the recorded command re-executes this cell alone and gives the same numbers
    executed.unlink()
    out = subprocess.run(
        ["bash", str(cell.run_dir / "rerun.sh")],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHON": sys.executable},
    )
    assert out.returncode == 0, out.stderr[-3000:]
    again = RunRecord.load(cell.run_dir)
    assert executed.is_file() and again.summary == first.summary and again.cell_key == first.cell_key


@pytest.mark.parametrize("kind", ["slurm", "htcondor"])
def test_a_batch_cluster_beside_another_dashboard_starts_without_a_clash(kind, tmp_path):
    import socket

    taken = socket.socket()
    try:
        try:
            taken.bind(("0.0.0.0", 8787))  # Dask's default dashboard port, held by "another cluster"
            taken.listen()
        except OSError:
            pass  # already held by something else: the same situation
        cluster = make_cluster(kind, home=tmp_path, cores=1, memory="1GiB")  # warnings are errors here
        try:
            assert cluster.scheduler.http_server.port != 8787
        finally:
            cluster.close()
    finally:
        taken.close()


@pytest.mark.parametrize("kind", ["slurm", "htcondor"])
def test_batch_job_scripts(kind, tmp_path):
    cluster = make_cluster(
        kind,
        home=tmp_path,
        cores=4,
        memory="8GiB",
        queue="short",
        account="hep",
        job_extra=["--constraint=avx512"] if kind == "slurm" else ['+JobFlavour="longlunch"'],
    )
    try:
        script = cluster.job_script()
    finally:
        cluster.close()
    assert f"source {Path(sys.executable).parent / 'activate'}" in script
    assert "export HF_HUB_OFFLINE=1" in script and f"export HEPWB_HOME={tmp_path.resolve()}" in script
    assert "distributed.cli.dask_worker" in script and "--nthreads 1" in script
    if kind == "slurm":
        for line in (
            "#SBATCH -p short",
            "#SBATCH -A hep",
            "#SBATCH --cpus-per-task=4",
            "#SBATCH --mem=8G",
            "#SBATCH -t 04:00:00",
            "#SBATCH --constraint=avx512",
            "--nworkers 4",
        ):
            assert line in script, line
    else:
        for line in (
            "RequestCpus = MY.DaskWorkerCores",
            "MY.DaskWorkerCores = 4",
            '+JobFlavour = "longlunch"',
            "RequestDisk",
            "--nworkers 4",
        ):
            assert line in script, line


@pytest.mark.parametrize("kind", ["slurm", "htcondor"])
def test_gpu_batch_jobs_request_a_gpu_and_declare_it_to_dask(kind, tmp_path):
    cluster = make_cluster(kind, home=tmp_path, cores=1, memory="16GiB", gpus_per_job=1)
    try:
        script = cluster.job_script()
    finally:
        cluster.close()
    assert "--resources GPU=1" in script  # the workers' tasks with resources={"GPU": 1} go there
    assert ("#SBATCH --gres=gpu:1" if kind == "slurm" else "request_gpus = 1") in script, script


def _where() -> dict[str, object]:
    from distributed import get_worker

    w = get_worker()
    return {"gpu": bool(w.state.total_resources.get("GPU")), "device": os.environ.get("HEPWB_DEVICE")}


def test_gpu_workers_take_the_embedding_tasks_and_cpu_workers_the_rest(monkeypatch, tmp_path):
    """A LocalCluster with a GPU worker (here a GPU by Dask resource only, the model on the CPU)."""
    from hepwb.sweep.executors.dask import DaskExecutor

    monkeypatch.setenv("HEPWB_DEVICE", "cpu")
    with DaskExecutor(n_workers=1, gpu_workers=1) as ex:
        assert ex.gpu and "1 with a GPU" in ex.describe()
        on_gpu = [ex.result(ex.submit(_where, gpu=True, key="embed")) for _ in range(4)]
        anywhere = [ex.result(ex.submit(_where, key="chunk")) for _ in range(4)]
    assert all(r["gpu"] for r in on_gpu) and {r["device"] for r in on_gpu} == {"cpu"}
    assert len(anywhere) == 4
