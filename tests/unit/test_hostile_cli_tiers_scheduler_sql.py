"""Findings of the fifth hostile-input probe (issue 38), part A: the CLI, tiers, the sweep's scheduler
connection, ``hepwb sql``, ``hepwb validate`` and configuration bounds. Each reproduces the probe's input."""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

import hepwb.cli
import hepwb.cli_ner
from hepwb.cli import app
from hepwb.cli_crash import save_traceback
from hepwb.exceptions import ConfigError
from hepwb.sweep.executors.connect import probe_scheduler

runner = CliRunner()
HEPWB = str(Path(sys.executable).with_name("hepwb"))


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("HEPWB_HOME", str(tmp_path))
    return tmp_path


def _hepwb(home: Path, *args: str | bytes) -> subprocess.CompletedProcess[bytes]:
    """The installed console script, run as a user runs it (``args`` may hold bytes that are no UTF-8)."""
    env = {**os.environ, "HEPWB_HOME": str(home)}
    return subprocess.run([HEPWB, *args], capture_output=True, env=env, timeout=300, check=False)


def _main(monkeypatch, capsys, *argv: str) -> tuple[int, str]:
    monkeypatch.setattr(sys, "argv", ["hepwb", *argv])
    with pytest.raises(SystemExit) as info:
        hepwb.cli.main()
    return int(info.value.code or 0), capsys.readouterr().err


# F1: a byte that is no UTF-8 on the command line crashed the traceback saver (raw traceback, exit 1)


@pytest.mark.parametrize(
    "args",
    [
        [b"tiers", b"mark", b"x", b"--actor", b"\xed\xa0\x80"],
        [b"tiers", b"history", b"--limit", b"-1", b"--chunk", b"\xff"],
        [b"ner-serve", b"--port", b"70000", b"--token", b"\xff"],
    ],
)
def test_an_argument_that_is_no_utf8_is_one_line_and_exit_2(home, args):
    res = _hepwb(home, *args)
    err = res.stderr.decode("utf-8")
    assert res.returncode == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "is not UTF-8 text" in err and "\\x" in err
    assert not (home / "reports" / "tracebacks").exists()


def test_the_traceback_saver_writes_what_is_no_utf8_escaped(home, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["hepwb", "tiers", "mark", "x", "--actor", "ev\udced\udca0\udc80"])
    try:
        raise RuntimeError("boom \udcff")
    except RuntimeError as exc:
        saved = save_traceback(exc, "hepwb tiers mark")
    assert saved is not None and saved.parent == home / "reports" / "tracebacks"
    text = saved.read_text(encoding="utf-8")
    assert "command: hepwb tiers mark x --actor ev\\udced\\udca0\\udc80" in text
    assert "RuntimeError: boom \\udcff" in text


def test_a_message_with_a_lone_surrogate_still_prints(home, monkeypatch, capsys):
    def boom(*_a, **_k):
        raise ConfigError("bad title 'Evil \ud800 title' in x.ragmd")

    monkeypatch.setattr(hepwb.cli, "render_report", boom)
    code, err = _main(monkeypatch, capsys, "report")
    assert code == 2 and err == "error: bad title 'Evil \ufffd title' in x.ragmd\n"


# F2: saved traceback files recorded secrets from the command line, readable by everyone


def test_a_saved_traceback_holds_no_secret_and_only_its_owner_reads_it(home, monkeypatch, capsys):
    def boom(*_a, **_k):
        raise RuntimeError("cannot serve")

    monkeypatch.setattr(hepwb.cli_ner, "NERService", boom)
    argv = ["ner-serve", "--port", "0", "--host", "127.0.0.1", "--token", "s3cret-TOKEN"]
    code, err = _main(monkeypatch, capsys, *argv)
    assert code == 3 and "s3cret" not in err
    (saved,) = (home / "reports" / "tracebacks").glob("*-ner-serve.txt")
    text = saved.read_text(encoding="utf-8")
    assert "s3cret" not in text
    assert "command: hepwb ner-serve --port 0 --host 127.0.0.1 --token ***" in text
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600


# F6: `tiers mark --actor` echoed an escape sequence to the terminal and stored it in the audit trail


@pytest.fixture(scope="module")
def tiers_home(tmp_path_factory):
    """A tier folder of three small papers (the probe's corpus), and one of its chunk ids."""
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


# M1: `tiers history --limit -1` (or 10**20) was an unexpected DuckDB error, exit 3


@pytest.mark.parametrize("limit", ["-1", "0", "100000000000000000000"])
def test_a_history_limit_out_of_range_is_one_line_and_exit_2(tiers_home, monkeypatch, limit):
    home, _ = tiers_home
    monkeypatch.setenv("HEPWB_HOME", str(home))
    res = runner.invoke(app, ["tiers", "history", "--limit", limit])
    assert res.exit_code == 2 and res.output.count("\n") == 1, res.output
    assert res.output.startswith("error: limit is a whole number of audit events shown from 1 to 100000")
    assert runner.invoke(app, ["tiers", "history", "--limit", "1"]).exit_code == 0


# F5: a tier config read YAML booleans (and quoted numbers) as numbers: `ttl_s: yes` was a 1-second TTL


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


# M3: `hepwb defaults unpin` when hepwb-defaults.json is a folder was an unexpected IsADirectoryError, exit 3


def test_unpinning_a_folder_is_one_line_and_leaves_it_alone(home):
    (home / "hepwb-defaults.json").mkdir()
    (home / "hepwb-defaults.json" / "keep.txt").write_text("mine", encoding="utf-8")
    res = runner.invoke(app, ["defaults", "unpin"])
    assert res.exit_code == 2 and res.output.count("\n") == 1, res.output
    assert "hepwb-defaults.json is a folder, not pinned defaults" in res.output
    assert (home / "hepwb-defaults.json" / "keep.txt").read_text(encoding="utf-8") == "mine"


# M5: `hepwb ner-serve --port 70000` (or -1) was an unexpected OverflowError, exit 3


@pytest.mark.parametrize(
    ("port", "words"), [("70000", "less than or equal to 65535"), ("-1", "greater than")]
)
def test_a_port_out_of_range_is_one_line_and_exit_2(home, port, words):
    res = _hepwb(home, "ner-serve", "--port", port)
    err = res.stderr.decode()
    assert res.returncode == 2 and err.count("\n") == 1, err
    assert err.startswith("error: Invalid value for '--port': Input should be") and words in err
    with pytest.raises(
        ConfigError, match=f"port is a TCP port \\(0: a free one\\) from 0 to 65535, got {port}"
    ):
        from hepwb.ner.service import NERService

        NERService(port=int(port))  # the Python API says it too


def test_a_port_in_use_is_one_line_and_exit_2(home):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        res = runner.invoke(app, ["ner-serve", "--port", str(port)])
    assert res.exit_code == 2 and res.output.count("\n") == 1, res.output
    assert f"error: cannot listen on 127.0.0.1:{port}: Address already in use" in res.output


# F15: `hepwb validate` called a HEPilot tree holding NaN, -Infinity or 1e999999 (read as inf) valid


def test_validate_holds_files_to_rfc_8259_json(tmp_path):
    doc = tmp_path / "documents" / "P00"
    doc.mkdir(parents=True)
    (tmp_path / "catalog.json").write_text("{}", encoding="utf-8")
    (doc / "references.json").write_text('{"x": NaN, "y": -Infinity}', encoding="utf-8")
    (doc / "figures.json").write_text('{"x": 1e999999}', encoding="utf-8")
    (doc / "tables.json").write_text('{"x": 1.5e300, "y": [1, -2.5]}', encoding="utf-8")
    res = runner.invoke(app, ["validate", str(tmp_path)])
    assert res.exit_code == 1, res.output
    lines = res.output.splitlines()
    refs = next(line for line in lines if line.startswith("documents/P00/references.json: "))
    figs = next(line for line in lines if line.startswith("documents/P00/figures.json: "))
    assert "NaN is not a JSON number (RFC 8259)" in refs
    assert "the number 1e999999 is beyond the range of a float" in figs
    assert not any(line.startswith("documents/P00/tables.json") for line in lines)


# F13: an overlap just below 1 was accepted: 2-token chunks (as many chunks as the corpus has tokens), 'ov1'


@pytest.mark.parametrize(("size", "overlap"), [("64", "0.9999999999"), ("1024", "0.999"), ("64", "0.76")])
def test_an_overlap_leaving_chunks_little_new_text_is_refused_before_any_work(home, size, overlap):
    corpus = home / "corpus"
    corpus.mkdir()
    (corpus / "P00_doc.md").write_text("# Title\n\nThe W boson backgrounds are small.\n", encoding="utf-8")
    res = runner.invoke(
        app, ["ingest", "--corpus", str(corpus), "--chunk-sizes", size, "--chunk-overlap", overlap]
    )
    assert res.exit_code == 2 and res.output.count("\n") == 1, res.output
    assert res.output.startswith("error: chunk_overlap is a fraction of the chunk size")
    assert f"from 0 to 0.75, got {overlap}" in res.output
    assert not (home / "data").exists()  # nothing converted


def test_the_largest_overlap_still_chunks_and_its_label_keeps_every_digit(home):
    from hepwb.chunking import get_chunker
    from hepwb.pipeline.keys import cell_name, chunkset_id_of

    get_chunker("hepilot", chunk_size=64, chunk_overlap=0.75, tokenizer="words")
    assert chunkset_id_of("hepilot", {"chunk_size": 64, "chunk_overlap": 0.7499999999}, "ab" * 8) == (
        "hepilot-cs64-ov0.7499999999-abababab"
    )
    assert chunkset_id_of("hepilot", {"chunk_size": 64, "chunk_overlap": 0.1}, "ab" * 8).startswith(
        "hepilot-cs64-ov0.1-"
    )
    cfg = {"chunker": "hepilot", "chunk_size": 64, "chunk_overlap": 0.1234567, "retriever": "bm25", "k": 5}
    assert cell_name(cfg).startswith("hepilot-cs64-ov0.1234567-bm25-k5-")
    with pytest.raises(ConfigError, match=r"from 0 to 0\.75"):
        get_chunker("hepilot", chunk_size=64, chunk_overlap=0.9999999999, tokenizer="words")


# F10: `hepwb sql` bounded DuckDB's memory, not the result fetched into Python and printed (1.2-3.2 GB)

_CHILD_RSS = """
import resource, subprocess, sys
out = subprocess.run(sys.argv[1:], capture_output=True, check=False)
print(out.returncode, len(out.stdout), resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
sys.stderr.write(out.stdout[-300:].decode("utf-8", "replace") + out.stderr.decode("utf-8", "replace"))
"""


def test_a_huge_cell_is_cut_in_duckdb_not_copied_into_python(home):
    query = "SELECT repeat('a', 50000000) AS s FROM range(3)"
    env = {**os.environ, "HEPWB_HOME": str(home)}
    argv = [sys.executable, "-c", _CHILD_RSS, HEPWB, "sql", query, "--memory-mb", "16", "--no-lance"]
    res = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300, check=True)
    code, printed, rss_kib = map(int, res.stdout.split())
    assert code == 0, res.stderr
    assert printed < 100_000  # three cells of 20,000 characters (the old code printed 150 MB)
    assert "(cells longer than 20,000 characters are cut, ending in …)" in res.stderr
    assert rss_kib < 800_000  # the old code peaked at 1.2 GB on this query


def test_rows_stop_at_the_byte_cap_and_say_so(home, monkeypatch):
    from hepwb import limits

    monkeypatch.setattr(limits, "SQL_MAX_RESULT_BYTES", 2 * 1_048_576)
    res = runner.invoke(app, ["sql", "SELECT repeat('b', 10000) AS s FROM range(1000)", "--no-lance"])
    assert res.exit_code == 0, res.output[-300:]
    rows = [line for line in res.output.splitlines() if line.startswith("bbb")]
    assert 100 < len(rows) < 1000
    assert res.output.rstrip().endswith(
        f"(the first {len(rows):,} rows, 2 MiB of cells; there are more: add a LIMIT or select fewer or "
        "shorter columns)"
    )


def test_nested_values_print_as_text_and_a_too_wide_result_is_refused(home):
    res = runner.invoke(app, ["sql", "SELECT 1 AS a, [1, 2] AS l, {'k': 1} AS s, 'x' AS a", "--no-lance"])
    assert res.exit_code == 0 and res.output.split("\n")[1].split() == ["1", "[1,", "2]", "{'k':", "1}", "x"]
    wide = "SELECT " + ", ".join(f"{i} AS c{i}" for i in range(201))
    res = runner.invoke(app, ["sql", wide, "--no-lance"])
    assert res.exit_code == 2 and res.output.count("\n") == 1, res.output
    assert "the result has 201 columns, more than the 200 hepwb sql prints" in res.output


# F7, M4: `--scheduler` at a service that is no Dask scheduler hung (a web server) or was exit 3 (a peer
# sending 0xff bytes: a 3 EiB allocation asked for); now a bounded probe says so in one line


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
        res = _hepwb(home, *args)  # a hang fails the test at the subprocess timeout
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
