"""``--scheduler``: an address is probed before any Dask client connects, so a service that is no Dask
scheduler (a web server, a peer sending garbage) is one line, not a hang or exit 3; a real scheduler, plain or
TLS, passes; a scheduler that would be ignored is refused. Servers bind 127.0.0.1 only."""

from __future__ import annotations

import asyncio
import contextlib
import threading

import pytest
from typer.testing import CliRunner

from hepwb.cli import app
from hepwb.exceptions import ConfigError
from hepwb.sweep.executors.connect import probe_scheduler
from tests.helpers import run_hepwb

runner = CliRunner()


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["sweep", "--scheduler", "", "--dry-run"], "--scheduler is empty"),
        (
            ["sweep", "--executor", "serial", "--scheduler", "tcp://127.0.0.1:1", "--dry-run"],
            "ignored by --executor serial",
        ),
    ],
)
def test_a_scheduler_that_would_be_ignored_is_refused(monkeypatch, tmp_path, args, words):
    monkeypatch.setenv("HEPWB_HOME", str(tmp_path))
    res = runner.invoke(app, args)
    assert res.exit_code == 2 and words in res.output, res.output


@contextlib.contextmanager
def _peer(greeting: bytes | None):
    """A TCP server on 127.0.0.1 sending ``greeting`` to each connection (``None``: a silent web server)."""
    import http.server
    import socketserver

    class Send(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            self.request.sendall(greeting or b"")
            self.request.recv(1)  # hold the connection until the client closes it

    handler = http.server.SimpleHTTPRequestHandler if greeting is None else Send
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"tcp://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def _dask_scheduler(security=None):
    """A real Dask scheduler on 127.0.0.1 (TLS with ``security``), in a thread of its own."""
    from distributed import Scheduler

    box: dict = {}
    ready = threading.Event()

    async def serve() -> None:
        tls = {"security": security, "protocol": "tls"} if security is not None else {}
        async with Scheduler(
            host="127.0.0.1", port=0, dashboard=False, dashboard_address="127.0.0.1:0", **tls
        ) as scheduler:
            box["address"], box["loop"], box["stop"] = (
                scheduler.address,
                asyncio.get_running_loop(),
                asyncio.Event(),
            )
            ready.set()
            await box["stop"].wait()

    thread = threading.Thread(target=asyncio.run, args=(serve(),), daemon=True)
    thread.start()
    assert ready.wait(60), "the scheduler did not start"
    try:
        yield box["address"]
    finally:
        box["loop"].call_soon_threadsafe(box["stop"].set)
        thread.join(60)


@pytest.mark.heavy
def test_a_web_server_given_as_scheduler_is_one_line_not_a_hang(home):
    corpus = home / "corpus"
    corpus.mkdir()
    (corpus / "P00_doc.md").write_text("# Higgs\n\nThe W boson backgrounds are small.\n", encoding="utf-8")
    questions = home / "q.jsonl"
    questions.write_text(
        '{"qid": "Q0", "question": "Which backgrounds are small?", "evidence": [{"doc": "P00", '
        '"quote": "The W boson backgrounds are small."}]}\n',
        encoding="utf-8",
    )
    spec = home / "ok.yaml"
    spec.write_text(
        f"name: t\ncorpus: {corpus}\nk: 5\n"
        "grid: {chunker: [hepilot], chunk_size: [64], retriever: [bm25]}\n",
        encoding="utf-8",
    )
    with _peer(None) as address:
        args = [
            "sweep",
            str(spec),
            "--executor",
            "dask",
            "--scheduler",
            address,
            "--questions",
            str(questions),
        ]
        res = run_hepwb(home, *args)  # a hang fails the test at the subprocess timeout
    err = res.stderr.decode()
    assert res.returncode == 2, err
    assert err.strip().splitlines()[-1] == (
        f"error: '{address}' answers but is not a Dask scheduler (it sent nothing in time); give the address "
        "`dask scheduler` printed (tcp://HOST:8786 by default), or drop --scheduler"
    )


@pytest.mark.parametrize(
    ("greeting", "why"),
    [
        (b"\xff" * 64, "it announced a first message of 18,446,744,073,709,551,615 bytes"),
        ((1 << 30).to_bytes(8, "little"), "it announced a first message of 1,073,741,824 bytes"),
        (
            (24).to_bytes(8, "little") + (1 << 40).to_bytes(8, "little") + b"x" * 16,
            "announces 1,099,511,627,776 frames",
        ),
        (
            (24).to_bytes(8, "little") + (1).to_bytes(8, "little") + (8).to_bytes(8, "little") + b"\xc1" * 8,
            "its first message is no msgpack",
        ),
        (b"HTTP/1.0 400 Bad request\r\n\r\n", "it announced a first message of"),
    ],
)
def test_a_peer_that_is_no_dask_scheduler_is_refused_before_any_client(home, greeting, why):
    from hepwb.sweep.executors.dask import DaskExecutor

    with _peer(greeting) as address, pytest.raises(ConfigError) as info:
        DaskExecutor(scheduler=address)
    assert str(info.value).startswith(f"'{address}' answers but is not a Dask scheduler (")
    assert why in str(info.value)


def test_a_real_scheduler_passes_the_probe_and_connects(home):
    from hepwb.sweep.executors.dask import DaskExecutor

    with _dask_scheduler() as address:
        probe_scheduler(address)
        executor = DaskExecutor(scheduler=address)
        try:
            assert executor.client.scheduler_info()["type"] == "Scheduler"
        finally:
            executor.__exit__()


def test_a_tls_scheduler_passes_the_probe_with_its_credentials_only(home):
    pytest.importorskip("cryptography")
    from distributed.security import Security

    security = Security.temporary()
    with _dask_scheduler(security) as address:
        assert address.startswith("tls://")
        probe_scheduler(address, security)
        with pytest.raises(ConfigError, match=r"TLS with the Dask scheduler at .* failed"):
            probe_scheduler(address, Security.temporary())  # another CA
