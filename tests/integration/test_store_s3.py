"""The artefact store against a real S3 server (SeaweedFS on 127.0.0.1): publication, reads, leases."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from hepwb.exceptions import CatalogBusyError, ConfigError
from hepwb.store import ArtefactStore, StoreError, lease, resolve_store, s3_storage_options, store_problem
from tests.s3_server import free_port

pytest.importorskip("s3fs")


def _files(folder: Path, **content: str) -> dict[str, Path]:
    out = {}
    for name, text in content.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        out[f"data/processed/chunksets/x/{name}"] = path
    return out


def test_publish_then_fetch_verified_and_published_once(s3_env, tmp_path):
    store = ArtefactStore(s3_env.url("t1"))
    files = _files(tmp_path / "src", **{"a.txt": "alpha", "sub/b.txt": "beta" * 1000})
    assert not store.has("chunkset", "k1") and store.fetch("chunkset", "k1", tmp_path / "dst") is None
    assert store.publish("chunkset", "k1", files, {"fingerprint": "k1"})
    assert store.sent >= 5 + 4000
    body = store.fetch("chunkset", "k1", tmp_path / "dst", last=("a.txt",))
    assert body is not None and body["meta"] == {"fingerprint": "k1"}
    assert (tmp_path / "dst/data/processed/chunksets/x/sub/b.txt").read_text() == "beta" * 1000
    assert not list((tmp_path / "dst").rglob(".*part-*"))  # nothing half-downloaded left
    again = ArtefactStore(s3_env.url("t1"))
    assert not again.publish("chunkset", "k1", files)  # published already: nothing uploaded
    assert again.sent == 0
    raw = store.cat("manifests/chunkset/k1.json") or b""
    assert s3_env.secret_key.encode() not in raw and s3_env.access_key.encode() not in raw


def test_concurrent_publishers_leave_one_whole_artefact(s3_env, tmp_path):
    store = ArtefactStore(s3_env.url("t2"))
    results: list[bool] = []

    def publish(i: int) -> None:
        files = _files(tmp_path / f"p{i}", **{"a.txt": f"a{i}" * 500, "b.txt": f"b{i}" * 500})
        results.append(ArtefactStore(s3_env.url("t2")).publish("chunkset", "same", files))

    threads = [threading.Thread(target=publish, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [False, False, False, True]  # one manifest won (a conditional write)
    store.fetch("chunkset", "same", tmp_path / "dst")
    a = (tmp_path / "dst/data/processed/chunksets/x/a.txt").read_text()
    b = (tmp_path / "dst/data/processed/chunksets/x/b.txt").read_text()
    assert a[1:] * 0 == "" and a[1] == b[1]  # both files from the same publisher, never a mix
    body = store.manifest("chunkset", "same")
    left = store.fs.find(f"{store.root}/objects/chunkset/same")
    assert left and all(f"/{body['base']}/" in f"/{p}" for p in left), (
        left
    )  # the losers removed their uploads


def test_no_reader_sees_an_unfinished_or_damaged_artefact(s3_env, tmp_path):
    store = ArtefactStore(s3_env.url("t3"))
    files = _files(tmp_path / "src", **{"a.txt": "complete"})
    # a publisher killed before its manifest: its files are in the store, the artefact is not
    store.fs.put(
        str(files["data/processed/chunksets/x/a.txt"]),
        f"{store.root}/objects/doc/k/dead0/data/processed/chunksets/x/a.txt",
    )
    assert not store.has("doc", "k") and store.fetch("doc", "k", tmp_path / "dst") is None
    assert store.publish("doc", "k", files)
    body = store.manifest("doc", "k")
    assert body is not None
    store.fs.pipe_file(
        f"{store.root}/{body['base']}/data/processed/chunksets/x/a.txt", b"tampered"
    )  # damaged in the store
    with pytest.raises(StoreError, match="does not match its manifest"):
        store.fetch("doc", "k", tmp_path / "dst2")
    assert not (tmp_path / "dst2/data/processed/chunksets/x/a.txt").exists()  # nothing placed


def test_a_planted_manifest_places_nothing_outside_its_artefact(s3_env, tmp_path):
    import hashlib

    store = ArtefactStore(s3_env.url("t5"))
    base = "objects/failure/k9/abcdef012345"
    store.fs.pipe_file(f"{store.root}/{base}/Makefile", b"all:\n\techo owned\n")
    digest = hashlib.sha256(b"all:\n\techo owned\n").hexdigest()
    body = {"format": "hepwb-store/1", "kind": "failure", "key": "k9", "base": base, "meta": {},
            "files": {"Makefile": {"bytes": 19, "sha256": digest}}}  # fmt: skip
    store.fs.pipe_file(f"{store.root}/manifests/failure/k9.json", json.dumps(body).encode())
    with pytest.raises(StoreError, match=r"manifests/failure/k9\.json in the store .* lists 'Makefile'"):
        store.fetch("failure", "k9", tmp_path / "project")
    body["base"] = "../../secretdir"
    store.fs.pipe_file(f"{store.root}/manifests/failure/k9.json", json.dumps(body).encode())
    with pytest.raises(StoreError, match="points outside its artefact"):
        store.fetch("failure", "k9", tmp_path / "project")
    assert not (tmp_path / "project").exists()


def test_conditional_writes_and_leases(s3_env):
    store = ArtefactStore(s3_env.url("t4"))
    assert store.put_if_absent("x.json", b"1") and not store.put_if_absent("x.json", b"2")
    assert store.cat("x.json") == b"1"  # SeaweedFS honours If-None-Match: the second write was refused
    order: list[str] = []

    def second() -> None:
        with lease(ArtefactStore(s3_env.url("t4")), "build-x", "x"):
            order.append("second")

    with lease(store, "build-x", "x"):
        t = threading.Thread(target=second)
        t.start()
        time.sleep(1.5)
        order.append("first done")
    t.join(timeout=30)
    assert order == ["first done", "second"]
    # a holder killed without releasing: its lease expires and is taken over
    store.put_if_absent(
        "locks/build-y.json", json.dumps({"holder": "dead", "expires": time.time() - 1}).encode()
    )
    with lease(store, "build-y", "y"):
        assert b"dead" not in (store.cat("locks/build-y.json") or b"")


def test_a_lease_held_too_long_is_one_line(s3_env, monkeypatch):
    store = ArtefactStore(s3_env.url("t5"))
    monkeypatch.setenv("HEPWB_BUILD_WAIT_S", "1")
    holder = ArtefactStore(s3_env.url("t5"))
    with (
        lease(store, "busy", "table busy"),
        pytest.raises(CatalogBusyError, match="table busy has been built"),
        lease(holder, "busy", "table busy"),
    ):
        pass


def test_lancedb_opens_a_published_table_in_the_store(s3_env, tmp_path):
    import lancedb
    import pyarrow as pa

    local = tmp_path / "data/processed/lancedb"
    lancedb.connect(local).create_table("chunks", pa.table({"id": [1, 2, 3], "text": ["a", "b", "c"]}))
    files = {
        p.relative_to(tmp_path).as_posix(): p for p in (local / "chunks.lance").rglob("*") if p.is_file()
    }
    store = ArtefactStore(s3_env.url("t6"))
    assert store.publish("table", "chunks-k", files)
    uri = store.lancedb_uri("table", "chunks-k")
    assert uri is not None and uri.startswith(s3_env.url("t6"))
    db = lancedb.connect(uri, storage_options=s3_storage_options())  # LanceDB's own object-store client
    assert db.open_table("chunks").count_rows() == 3


def test_an_unreachable_store_is_one_line_not_a_hang(monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{free_port()}")  # nothing listens there
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "x")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "y")
    start = time.monotonic()
    problem = store_problem("s3://bucket/prefix")
    assert problem and "\n" not in problem
    with pytest.raises(StoreError, match=r"the artefact store s3://bucket/prefix cannot be used") as err:
        ArtefactStore("s3://bucket/prefix").manifest("doc", "k")
    assert "\n" not in str(err.value) and "y" not in str(err.value).split("(")[0]
    assert time.monotonic() - start < 60


def test_the_store_in_force(tmp_path, monkeypatch):
    monkeypatch.delenv("HEPWB_STORE", raising=False)
    assert resolve_store(None, tmp_path) is None  # a laptop: local disk
    (tmp_path / "hepwb-store.json").write_text('{"url": "s3://proj-bucket/hepwb/"}')
    assert resolve_store(None, tmp_path) == "s3://proj-bucket/hepwb"
    monkeypatch.setenv("HEPWB_STORE", "s3://env-bucket/x")
    assert resolve_store(None, tmp_path) == "s3://env-bucket/x"
    assert resolve_store("s3://flag/y", tmp_path) == "s3://flag/y"
    assert resolve_store("local", tmp_path) is None
    with pytest.raises(ConfigError, match="holds credentials"):
        resolve_store("s3://AKIA:secret@bucket/x", tmp_path)
    (tmp_path / "hepwb-store.json").write_text('{"url": "s3://b/x", "secret": "no"}')
    monkeypatch.delenv("HEPWB_STORE")
    with pytest.raises(ConfigError, match="must hold only"):
        resolve_store(None, tmp_path)
