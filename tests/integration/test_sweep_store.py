"""Store-backed sweeps with real servers: SeaweedFS (S3) and Dask workers that cannot see the client's folder.

The workers are a LocalCluster started in a mount namespace (``unshare -Urm``) where the client's folder
(its corpus, question file and projects) is an empty tmpfs, with a working directory and ``HEPWB_HOME`` of
their own: whatever they read comes from the store. The store is reached through a TCP forwarder
(:class:`tests.tcp_proxy.TcpProxy`) that one test takes down mid-sweep.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from hepwb.catalog import Catalog
from hepwb.paths import Layout
from hepwb.runs.record import RunRecord
from hepwb.store import ArtefactStore
from hepwb.sweep import SweepSpec, plan_sweep, run_sweep
from tests.gateway_server import descendants
from tests.helpers import tiny_corpus
from tests.tcp_proxy import TcpProxy

pytest.importorskip("s3fs")
distributed = pytest.importorskip("distributed")
BIN = Path(sys.executable).parent
GRID = {"chunk_size": [32], "retriever": ["bm25", "dense", "bm25(fields=context)"]}


@dataclass(frozen=True)
class Hidden:
    """Workers that cannot see ``client`` (the client's folder): their scheduler, processes and home."""

    address: str
    pid: int
    client: Path
    home: Path


@pytest.fixture(scope="module")
def client_side(tmp_path_factory):
    """The client's folder: a three-paper corpus, its questions, the grid file; projects go in it too."""
    root = tmp_path_factory.mktemp("store-client")
    corpus, questions = tiny_corpus(root)
    spec = {"name": "store", "corpus": str(corpus), "questions": str(questions), "tokenizer": "words",
            "grid": GRID}  # fmt: skip
    (root / "grid.yaml").write_text(yaml.safe_dump(spec))
    return root, spec


@pytest.fixture(scope="module")
def proxy(s3):
    forward = TcpProxy(int(s3.endpoint.rsplit(":", 1)[1]))
    yield forward
    forward.close()


def _aws(s3, proxy) -> dict[str, str]:
    return {**s3.env(), "AWS_ENDPOINT_URL": proxy.endpoint}


def _unshare_works() -> bool:
    try:
        return subprocess.run(["unshare", "-Urm", "true"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _warm(dask_worker=None) -> str:
    from hepwb.sweep import worker

    worker.embedder("all-MiniLM-L6-v2").embed(["warm"])  # the model loads here, not in a timed sweep
    return dask_worker.address


@pytest.fixture(scope="module")
def hidden(tmp_path_factory, client_side, s3, proxy):
    """Two LocalCluster workers in a mount namespace where the client's folder is an empty tmpfs."""
    if not _unshare_works():
        pytest.skip("unprivileged user namespaces are off here: the client's folder cannot be hidden")
    client = client_side[0]
    home = tmp_path_factory.mktemp("worker-home")
    address_file = home / "scheduler.address"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "HEPWB_"))}
    env.update(_aws(s3, proxy), HEPWB_HOME=str(home))
    script = 'mount -t tmpfs hidden "$1" && cd "$2" && exec "$3" -m tests.store_workers "$4" 2'
    cmd = ["unshare", "-Urm", "sh", "-c", script, "sh", str(client), str(home), sys.executable,
           str(address_file)]  # fmt: skip
    log = (home / "cluster.log").open("wb")
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        while not address_file.is_file():
            assert proc.poll() is None and time.monotonic() < deadline, (home / "cluster.log").read_text()[
                -3000:
            ]
            time.sleep(0.2)
        address = address_file.read_text()
        with distributed.Client(address, timeout="30s") as c:
            c.run(_warm)
        yield Hidden(address, proc.pid, client, home)
    finally:
        below = descendants(proc.pid)
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        deadline = time.monotonic() + 30
        while [p for p in below if Path(f"/proc/{p}").exists()] and time.monotonic() < deadline:
            time.sleep(0.2)
        left = [p for p in below if Path(f"/proc/{p}").exists()]
        for p in left:
            os.kill(p, signal.SIGKILL)
        log.close()
        assert not left, f"worker processes left behind: {left}"


@pytest.fixture(scope="module")
def reference(client_side):
    """The grid run on a LocalCluster of this machine, artefacts on local disk: metrics by cell."""
    root, spec = client_side
    res = run_sweep(SweepSpec.from_dict(spec), layout=Layout(root / "home-local"), executor="local",
                    n_workers=1, progress=False, store="local")  # fmt: skip
    assert not res.failed and res.executor == "dask"
    return {c.name: o.detail["summary"] for c, o in zip(res.plan.cells, res.cells, strict=True)}


@pytest.fixture
def aws(s3, proxy, monkeypatch):
    for key in ("AWS_PROFILE", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(key, raising=False)
    for key, value in _aws(s3, proxy).items():
        monkeypatch.setenv(key, value)
    return s3


def _metrics(layout: Layout, spec: dict) -> dict[str, dict[str, float]]:
    plan = plan_sweep(SweepSpec.from_dict(spec), layout)
    return {c.name: RunRecord.load(c.run_dir).summary for c in plan.cells}


def _view(folder: str, dask_worker=None) -> dict[str, object]:
    listing = sorted(p.name for p in Path(folder).iterdir())
    return {"listing": listing, "cwd": str(Path.cwd()), "home": os.environ.get("HEPWB_HOME")}


def _cli(hidden: Hidden, url: str) -> list[str]:
    return [str(BIN / "hepwb"), "sweep", str(hidden.client / "grid.yaml"), "--scheduler", hidden.address,
            "--store", url]  # fmt: skip


def _env(project: Path) -> dict[str, str]:
    return {**os.environ, "HEPWB_HOME": str(project), "COLUMNS": "200"}


def test_workers_that_cannot_see_the_client_give_the_local_metrics_and_a_warm_rerun_recomputes_nothing(
    hidden, reference, client_side, aws
):
    root, spec = client_side
    with distributed.Client(hidden.address) as c:
        views = c.run(_view, str(root))
        workers = set(c.scheduler_info()["workers"])
    assert list(root.iterdir()) and len(views) == 2
    for view in views.values():  # no shared file system: the client's folder is empty to every worker
        assert view["listing"] == [], view
        assert not Path(str(view["cwd"])).is_relative_to(root) and view["home"] == str(hidden.home)
    url = aws.url("equal")
    layout = Layout(root / "home-a")
    res = run_sweep(
        SweepSpec.from_dict(spec), layout=layout, scheduler=hidden.address, store=url, progress=False
    )
    assert not res.failed and len(res.computed) == 3, [o.error for o in res.failed]
    assert {c.name: o.detail["summary"] for c, o in zip(res.plan.cells, res.cells, strict=True)} == reference
    assert {o.worker for o in [*res.cells, *res.stages] if o.worker} <= workers  # nothing ran here
    assert all(res.moved[stage]["sent"] > 0 for stage in ("inputs", "convert", "chunkset", "embed", "index"))
    assert res.moved["fetch"]["received"] > 0 and res.moved["cell"]["received"] > 0
    for c in res.plan.cells:  # the records name this project's files, not the workers' scratch copies
        rec = RunRecord.load(c.run_dir)
        assert rec.inputs.questions_file == spec["questions"] and rec.cell_key == c.key
        assert Path(rec.chunkset_root) == layout.chunksets / rec.chunkset_id
        assert (Path(rec.chunkset_root) / "documents").is_dir()  # the HEPilot tree came too
    assert len(Catalog(layout.catalog).sql("SELECT run_id FROM runs WHERE status = 'ok'")) == 3
    again = run_sweep(SweepSpec.from_dict(spec), layout=layout, scheduler=hidden.address, store=url,
                      progress=False)  # fmt: skip
    assert again.executor == "none" and not again.computed  # no worker contacted, nothing recomputed
    other = Layout(root / "home-b")  # another project on the same store: every cell is fetched, none run
    fresh = run_sweep(SweepSpec.from_dict(spec), layout=other, scheduler="tcp://127.0.0.1:9", store=url,
                      progress=False)  # fmt: skip
    assert fresh.executor == "none" and _metrics(other, spec) == reference
    assert len(Catalog(other.catalog).sql("SELECT run_id FROM runs WHERE status = 'ok'")) == 3


def test_a_worker_killed_mid_task_is_replaced_and_the_sweep_completes(hidden, reference, client_side, aws):
    root, spec = client_side
    project = root / "home-kill-worker"
    proc = subprocess.Popen(_cli(hidden, aws.url("kill-worker")), env=_env(project),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    victim = None
    with distributed.Client(hidden.address) as c:
        deadline = time.monotonic() + 300
        while victim is None and proc.poll() is None and time.monotonic() < deadline:
            for addr, keys in c.processing().items():
                if any(str(k).startswith(("index-", "cell-")) for k in keys):
                    victim = addr
            time.sleep(0.05)
        assert victim is not None, "no table or cell task was seen running"
        pid = c.run(os.getpid, workers=[victim])[victim]
        os.kill(pid, signal.SIGKILL)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-3000:]
    assert "3 computed, 0 reused, 0 failed" in out and "artefact store: " in out
    assert _metrics(Layout(project), spec) == reference


def _tasks(dask_scheduler=None) -> int:
    return len(dask_scheduler.tasks)


def _running(dask_worker=None) -> int:
    """Tasks occupying a thread of this worker, those of a departed client included (still running)."""
    return len(dask_worker.state.all_running_tasks)


def _plant_half_written(store: ArtefactStore, spec: dict, layout: Layout) -> int:
    """Objects of a publisher killed before its manifest, for every run, chunk set and table to come."""
    plan = plan_sweep(SweepSpec.from_dict(spec), layout)
    planted = {("run", c.key): f"reports/runs/{c.name}/metrics.json" for c in plan.cells}
    planted.update({("chunkset", k): f"data/processed/chunksets/{k}/chunkset.json" for k in plan.chunksets})
    for (kind, key), rel in planted.items():
        store.fs.pipe_file(f"{store.root}/objects/{kind}/{key}/dead00000000/{rel}", b'{"half": ')
    return len(planted)


def test_a_client_killed_mid_sweep_resumes_with_every_published_cell(hidden, reference, client_side, aws):
    root, spec = client_side
    project = root / "home-kill-client"
    url = aws.url("kill-client")
    store = ArtefactStore(url)
    assert _plant_half_written(store, spec, Layout(project)) == 4
    cmd = _cli(hidden, url)
    proc = subprocess.Popen(cmd, env=_env(project), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 300
    while not store.published("run") and time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read().decode()[-3000:] if proc.stderr else ""
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    assert proc.returncode == -signal.SIGKILL, "the client should have been killed mid-sweep"
    with distributed.Client(hidden.address) as c:  # its tasks still running finish (and publish) first
        deadline = time.monotonic() + 120
        while (c.run_on_scheduler(_tasks) or sum(c.run(_running).values())) and time.monotonic() < deadline:
            time.sleep(0.2)
    published = len(store.published("run"))
    assert 1 <= published <= 3
    out = subprocess.run(cmd, env=_env(project), capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert f"{3 - published} computed, {published} reused, 0 failed" in out.stdout
    assert _metrics(Layout(project), spec) == reference  # no half-written object was read
    for key in store.published("run"):
        assert "dead00000000" not in str(store.manifest("run", key))
    assert len(Catalog(Layout(project).catalog).sql("SELECT run_id FROM runs WHERE status = 'ok'")) == 3


def test_a_store_gone_mid_sweep_is_one_line_not_a_hang(hidden, client_side, aws, proxy):
    root, _ = client_side
    project = root / "home-gone"
    url = aws.url("gone")
    store = ArtefactStore(url)
    proc = subprocess.Popen(_cli(hidden, url), env=_env(project), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 300
        while not store.published("chunkset") and time.monotonic() < deadline:
            assert proc.poll() is None
            time.sleep(0.05)
        proxy.down()
        gone = time.monotonic()
        _, err = proc.communicate(timeout=300)
        took = time.monotonic() - gone
    finally:
        proxy.up()
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert proc.returncode == 2 and "Traceback" not in err, err[-3000:]
    assert len(errors) == 1 and f"the artefact store {url} cannot be used" in errors[0], err[-3000:]
    assert took < 120, f"{took:.0f} s after the store went away"
