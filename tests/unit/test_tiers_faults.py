"""The tiers under faults: promotions killed mid-way, queries during eviction and promotion, NER outages."""

from __future__ import annotations

import logging
import subprocess
import sys
import threading
import time

import pytest
from typer.testing import CliRunner

from hepwb.ner import NERClient, NERService, NERUnavailableError
from hepwb.paths import Layout
from hepwb.tiers import TierConfig, Tiers
from tests.helpers import tiny_corpus

KILLER = """
import os, signal, sys
import hepwb.tiers.promote as promote
from hepwb.paths import Layout
from hepwb.tiers import Tiers

root, home, mode = sys.argv[1:4]
real = promote.upsert_documents

def killing(tbl, rows, keys):  # SIGKILL just before or just after LT's commit
    if mode == "before":
        os.kill(os.getpid(), signal.SIGKILL)
    real(tbl, rows, keys)
    if mode == "after":
        os.kill(os.getpid(), signal.SIGKILL)

promote.upsert_documents = killing  # the call promotion makes
Tiers(root, layout=Layout(home)).promote(actor="cron")
"""


@pytest.fixture(scope="module")
def material(tmp_path_factory):
    root = tmp_path_factory.mktemp("tierfaults")
    corpus, _ = tiny_corpus(root)
    return root, corpus


def _session(material, folder, **cfg):
    root, corpus = material
    t = Tiers(folder, TierConfig(**cfg), layout=Layout(root / "home"))
    t.init_lt(corpus, only=["A01", "B02"], chunk_size=24)
    t.acquire(corpus, only=["C03"])
    hit = next(h for h in t.search("How are cosmic muons tagged?", 3) if h.tier == "hot")
    t.approve(hit.chunk_id, actor="alice")
    return t


def _c03_rows(t):
    return t.table("lt").count_rows("doc_key = 'label:C03'")


@pytest.mark.heavy
@pytest.mark.parametrize("mode", ["before", "after"])
def test_a_promotion_killed_midway_leaves_lt_unchanged_or_fully_promoted(material, tmp_path, mode):
    root, _ = material
    t = _session(material, tmp_path / "t")
    n_hot = t.table("hot").count_rows()
    lt_rows = t.table("lt").count_rows()
    script = tmp_path / "kill.py"
    script.write_text(KILLER)
    proc = subprocess.run([sys.executable, str(script), str(t.root), str(root / "home"), mode], check=False)
    assert proc.returncode == -9
    pending = t.audit.pending("promote")
    assert len(pending) == 1
    assert _c03_rows(t) == (0 if mode == "before" else n_hot)  # never partial
    assert t.table("lt").count_rows() == lt_rows + (0 if mode == "before" else n_hot)
    rep = t.promote(actor="alice")  # settles the killed job first, then does what is left
    assert rep.recovered == (pending[0]["event_id"],)
    settled = next(e for e in t.audit.events(action="promote") if e["event_id"] == pending[0]["event_id"])
    if mode == "before":
        assert settled["status"] == "aborted" and rep.rows == n_hot
    else:
        assert settled["status"] == "done" and settled["lt_version_after"] > settled["lt_version_before"]
        assert rep.skipped.startswith("nothing earned")
    assert _c03_rows(t) == n_hot
    assert [e["status"] for e in t.audit.events(action="promote")].count("done") == 1
    assert t.promote().skipped and _c03_rows(t) == n_hot  # idempotent


@pytest.mark.heavy
def test_queries_during_promotion_and_eviction_never_see_half_a_job(material, tmp_path):
    t = _session(material, tmp_path / "c", ttl_s=1)
    n_hot = t.table("hot").count_rows()
    assert n_hot >= 3
    seen_lt: set[int] = set()
    seen_hot: set[int] = set()
    errors: list[BaseException] = []
    done = threading.Event()

    def reader():
        reader_tiers = Tiers(t.root, TierConfig(ttl_s=1), layout=t.layout)
        while not done.is_set():
            try:
                seen_lt.add(_c03_rows(reader_tiers))
                hits = reader_tiers.search("far detector liquid scintillator", 5, record=False)
                seen_hot.add(reader_tiers.table("hot").count_rows())
                assert all(h.tier for h in hits)
            except BaseException as exc:  # reported below
                errors.append(exc)
                return

    th = threading.Thread(target=reader)
    th.start()
    try:
        time.sleep(0.3)
        t.promote(actor="alice")
        time.sleep(0.3)
        time.sleep(1.1)  # past the 1 s TTL (the real clock: the reader runs meanwhile)
        assert t.evict().rows == n_hot
        time.sleep(0.3)
    finally:
        done.set()
        th.join()
    assert not errors, errors
    assert seen_lt <= {0, n_hot} and n_hot in seen_lt  # all of the promotion or none of it
    assert seen_hot <= {0, n_hot}  # all of the eviction or none of it
    assert _c03_rows(t) == n_hot


def test_ingest_needs_the_ner_service_by_default(material, tmp_path, caplog):
    root, corpus = material
    layout = Layout(root / "home-ner")
    with NERService() as ner:
        t = Tiers(tmp_path / "n", layout=layout, ner=NERClient(ner.url))
        t.init_lt(corpus, only=["A01"], chunk_size=24)
        hits = t.search("HERMES beam-spin asymmetry", 2)
        model = ner.model
    assert t.meta["ner_model"] == model and hits[0].why.startswith("strict")
    assert {e for row in t.table("lt").to_arrow()["entities"].to_pylist() for e in row} >= {
        "experiment:hermes"
    }
    # the service is down: ingest stops with the fix, nothing written
    down = NERClient(ner.url, attempts=1, timeout=1)
    t2 = Tiers(tmp_path / "n2", layout=layout, ner=down)
    with pytest.raises(NERUnavailableError, match="hepwb ner-serve"):
        t2.init_lt(corpus, only=["B02"], chunk_size=24)
    assert not t2.has("lt")
    # fail-soft: indexed with empty entities, logged, and the table is rebuilt once NER is back
    soft = NERClient(ner.url, attempts=1, timeout=1, fail_soft=True)
    t3 = Tiers(tmp_path / "n3", layout=layout, ner=soft)
    with caplog.at_level(logging.WARNING, logger="hepwb.ner"):
        t3.init_lt(corpus, only=["B02"], chunk_size=24)
    assert "failed soft" in caplog.text and soft.failed_soft > 0
    assert all(not e for e in t3.table("lt").to_arrow()["entities"].to_pylist())
    back = Tiers(tmp_path / "n3", layout=layout).init_lt(corpus, only=["B02"])  # in-process NER
    assert back.versions == {"label:B02": 2}
    ents = t3.table("lt").to_arrow()["entities"].to_pylist()
    assert any("particle:jet" in e for e in ents)


def test_cli_lists_the_tunables_and_runs_a_session(material, tmp_path, monkeypatch):
    from hepwb.cli import app

    root, corpus = material
    monkeypatch.setenv("HEPWB_HOME", str(root / "home"))
    runner = CliRunner()
    helptext = runner.invoke(app, ["tiers", "--help"], terminal_width=200).output
    for opt in ("--ttl-s", "--warm-max-docs", "--recency-s", "--job-max-rows", "--lt-table", "86400"):
        assert opt in helptext
    base = ["tiers", "--name", "cli", "--ttl-s", "60"]
    r = runner.invoke(
        app, [*base, "init", "--corpus", str(corpus), "--only", "A01,B02", "--chunk-size", "24"]
    )
    assert r.exit_code == 0, r.output
    assert runner.invoke(app, [*base, "acquire", str(corpus), "--only", "C03"]).exit_code == 0
    out = runner.invoke(app, [*base, "search", "How are cosmic muons tagged?", "-k", "2"]).output
    assert "hot" in out and "C03" in out
    out = runner.invoke(app, [*base, "history"]).output
    assert "acquire" in out and "init" in out
    bad = runner.invoke(app, ["tiers", "--ttl-s", "-1", "status"])
    assert bad.exit_code == 2 and "ttl_s" in bad.output


def test_a_running_promotion_is_not_settled_by_another(material, tmp_path):
    import os
    import socket

    t = _session(material, tmp_path / "r")
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        t.audit.begin(
            "other",
            t.now_ms(),
            "promote",
            "cron",
            rows=1,
            doc_keys=["label:C03"],
            details={"pid": live.pid, "host": socket.gethostname()},
        )
        assert t.promote().recovered == ()  # its owner is alive: left alone
        assert [e["status"] for e in t.audit.events(action="promote") if e["event_id"] == "other"] == [
            "pending"
        ]
    finally:
        live.kill()
        live.wait()
    assert os.getpid() != live.pid
    t.promote()
    assert [e["status"] for e in t.audit.events(action="promote") if e["event_id"] == "other"] == ["aborted"]


EVICT_KILLER = """
import os, signal, sys, time
from hepwb.paths import Layout
from hepwb.tiers import TierConfig, Tiers

root, home, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
count = 0

def tracer(frame, event, arg):  # SIGKILL at the n-th line hepwb executes during the job (0: never)
    global count
    if event == "line" and "/hepwb/" in frame.f_code.co_filename:
        count += 1
        if count == n:
            os.kill(os.getpid(), signal.SIGKILL)
    return tracer

t = Tiers(root, TierConfig(ttl_s=1), layout=Layout(home), clock=lambda: time.time() + 3600)
t.table("hot")  # opened before tracing: the job is what is counted
sys.settrace(tracer)
t.evict(actor="cron")
sys.settrace(None)
print(count)
"""


@pytest.mark.heavy
@pytest.mark.parametrize("share", ["quick", pytest.param("rest", marks=pytest.mark.slow)])
def test_an_eviction_killed_anywhere_leaves_every_removed_row_accounted_for(material, tmp_path, share):
    """Kills at seeded random lines of the job (and between LanceDB's delete and the audit row's close).

    ``make test`` tries the first and last seeded point (one before the delete's commit, one after); the
    ``slow`` step the four others.
    """
    import random
    import shutil

    from hepwb.tiers.journal import settle

    root, _ = material
    base = _session(material, tmp_path / "base")
    script = tmp_path / "kill.py"
    script.write_text(EVICT_KILLER)

    def trial(n: int) -> tuple[Tiers, set[str], subprocess.CompletedProcess[str]]:
        folder = tmp_path / f"t{n}"
        shutil.copytree(base.root, folder)
        t = Tiers(folder, TierConfig(ttl_s=1), layout=Layout(root / "home"))
        before = set(t.table("hot").to_arrow()["chunk_id"].to_pylist())
        cmd = [sys.executable, str(script), str(folder), str(root / "home"), str(n)]
        return t, before, subprocess.run(cmd, check=False, capture_output=True, text=True)

    _, before, clean = trial(0)
    assert clean.returncode == 0, clean.stderr
    lines = int(clean.stdout.split()[-1])  # lines hepwb runs in one whole eviction
    every = sorted(random.Random(0).sample(range(1, lines + 1), 6))
    points = [every[0], every[-1]] if share == "quick" else every[1:-1]
    outcomes = set()
    for n in points:
        t, before, proc = trial(n)
        assert proc.returncode == -9, (n, proc.stderr[-300:])
        removed = before - set(t.table("hot").to_arrow()["chunk_id"].to_pylist())
        settle(t)  # what the next tier job does first
        events = t.audit.events(action="evict")
        assert not [e for e in events if e["status"] == "pending"], n
        done = {c for e in events if e["status"] == "done" for c in e["chunk_ids"]}
        assert removed == done, f"killed at line {n} of {lines}: removed {len(removed)}, audited {len(done)}"
        outcomes.add(bool(removed))
    if share == "quick":
        assert outcomes == {False, True}  # kills before the delete's commit and after it were both tried


JOB_KILLER = """
import os, signal, sys, time
from hepwb.paths import Layout
from hepwb.tiers import TierConfig, Tiers

root, home, corpus, job, n = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
count = finish = 0

def tracer(frame, event, arg):  # SIGKILL at the n-th line hepwb executes during the job (0: never)
    global count, finish
    if event == "call" and frame.f_code.co_name == "finish" and "journal" in frame.f_code.co_filename:
        finish = count  # the line where the audit row is closed, just after HOT's commit
    if event == "line" and "/hepwb/" in frame.f_code.co_filename:
        count += 1
        if count == n:
            os.kill(os.getpid(), signal.SIGKILL)
    return tracer

t = Tiers(root, TierConfig(), layout=Layout(home), clock=lambda: time.time() + 600)
t.table("hot"), t.embedder.dim  # opened before tracing: the job is what is counted
sys.settrace(tracer)
if job == "warm":
    rows = t.warm(["What did HERMES measure in deeply virtual Compton scattering?"], actor="cron").rows
else:
    rows = t.acquire(corpus, only=["C03"], actor="cron").rows
sys.settrace(None)
print(rows, finish, count)
"""


@pytest.mark.heavy
@pytest.mark.parametrize("share", ["quick", pytest.param("rest", marks=pytest.mark.slow)])
@pytest.mark.parametrize("job", ["warm", "acquire"])
def test_a_hot_write_killed_anywhere_leaves_every_written_row_accounted_for(material, tmp_path, job, share):
    """Warming and acquisition write a pending audit row before HOT's commit: kills at seeded lines.

    ``make test`` tries one point anywhere and one after HOT's commit; the ``slow`` step the others.
    """
    import random
    import shutil

    from hepwb.tiers.journal import settle

    root, corpus = material
    base = _session(material, tmp_path / "base")
    script = tmp_path / "kill.py"
    script.write_text(JOB_KILLER)

    def stamps(t: Tiers) -> set[tuple[str, int]]:
        hot = t.table("hot").to_arrow()
        return set(zip(hot["chunk_id"].to_pylist(), hot["ingested_at_ms"].to_pylist(), strict=True)) | set(
            zip(hot["chunk_id"].to_pylist(), hot["hot_promoted_at"].to_pylist(), strict=True)
        )

    def trial(n: int) -> tuple[Tiers, set[tuple[str, int]], subprocess.CompletedProcess[str]]:
        folder = tmp_path / f"t{n}"
        shutil.copytree(base.root, folder)
        t = Tiers(folder, layout=Layout(root / "home"))
        cmd = [sys.executable, str(script), str(folder), str(root / "home"), str(corpus), job, str(n)]
        before = stamps(t)
        return t, before, subprocess.run(cmd, check=False, capture_output=True, text=True)

    _, _, clean = trial(0)
    assert clean.returncode == 0, clean.stderr
    rows, finish, lines = map(int, clean.stdout.split()[-3:])
    assert rows > 0 and 0 < finish < lines, f"the {job} job wrote nothing to HOT: nothing to test"
    rng = random.Random(1)  # anywhere in the job, and twice between HOT's commit and the job's end
    anywhere, late = rng.sample(range(1, lines + 1), 4), rng.sample(range(finish - 2, lines + 1), 2)
    points = sorted({anywhere[0], late[0]} if share == "quick" else {*anywhere[1:], late[1]})
    outcomes = set()
    for n in points:
        t, before, proc = trial(n)
        assert proc.returncode == -9, (n, proc.stderr[-300:])
        written = {c for c, _ in stamps(t) - before}  # rows added or re-stamped by the killed job
        settle(t)  # what the next tier job does first
        events = [e for e in t.audit.events(action=job) if e["actor"] == "cron"]  # the killed job's
        assert not [e for e in events if e["status"] == "pending"], n
        done = [e for e in events if e["status"] == "done"]
        if job == "warm":
            accounted = {c for e in done for c in e["chunk_ids"]}
        else:
            keys = {k for e in done for k in e["doc_keys"]}
            hot = t.table("hot").to_arrow()
            pairs = zip(hot["chunk_id"].to_pylist(), hot["doc_key"].to_pylist(), strict=True)
            accounted = {c for c, k in pairs if k in keys}
        assert written <= accounted, (
            f"killed at line {n} of {lines}: {len(written - accounted)} rows unaudited"
        )
        assert bool(written) == bool(done), n
        outcomes.add(bool(written))
    if share == "quick":
        assert outcomes == {False, True}  # kills before HOT's commit and after it were both tried
