"""The object store's manifests are data: nothing they name lands outside the artefact's own folder.

A ``file://`` store here; the same manifests planted in SeaweedFS are in
``tests/integration/test_sweep_store.py``. Whoever can write to a shared store must not be able to write files
into the projects that read it (a ``Makefile``, a git hook, a module of hepwb), read files outside the store
through a manifest's ``base``, or make a sweep fail with a traceback instead of a line naming the manifest.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from hepwb.paths import Layout
from hepwb.store import ArtefactStore, StoreError
from hepwb.store.manifest import artefact_home
from hepwb.sweep import SweepSpec, run_sweep
from tests.helpers import tiny_corpus

EVIL = b"echo owned > /tmp/owned\n"


def _snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _plant(store: ArtefactStore, kind: str, key: str, files: dict[str, bytes], *, base: str | None = None,
           entry=None) -> None:  # fmt: skip
    """Write a manifest (and its objects) as a hostile writer of the store would."""
    base = base or f"objects/{kind}/{key}/abcdef012345"
    listing = {}
    for rel, data in files.items():
        target = Path(store.root, base, rel)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        listing[rel] = (
            entry if entry is not None else {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
        )
    body = {"format": "hepwb-store/1", "kind": kind, "key": key, "base": base, "meta": {}, "files": listing}
    manifest = Path(store.root, "manifests", kind, f"{key}.json")
    manifest.parent.mkdir(parents=True, exist_ok=True)
    manifest.write_text(json.dumps(body))


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    """A store filled by one sweep, and the conversion keys of its corpus."""
    root = tmp_path_factory.mktemp("object-store")
    corpus, questions = tiny_corpus(root)
    base = {"corpus": str(corpus), "questions": str(questions), "tokenizer": "words"}
    spec = SweepSpec.from_dict({"name": "o", **base, "grid": {"chunk_size": [32], "retriever": ["bm25"]}})
    res = run_sweep(spec, layout=Layout(root / "first"), executor="serial", progress=False,
                    store=f"file://{root}/store")  # fmt: skip
    keys = sorted(f.conversion_key for cp in res.plan.corpora.values() for f in cp.files)
    return root, spec, keys


@pytest.mark.parametrize(
    "rel",
    ["Makefile", "README.md", "hepwb/planted.py", ".git/hooks/post-merge", "data/interim/documents/x.json"],
)
def test_a_planted_failure_manifest_writes_nothing_into_the_project(swept, rel):
    root, spec, keys = swept
    store = ArtefactStore(f"file://{root}/store")
    _plant(store, "failure", keys[0], {rel: EVIL, f"data/interim/documents/.failed/{keys[0]}.json": b"{}"})
    project = Layout(root / f"victim-{hashlib.sha256(rel.encode()).hexdigest()[:6]}")
    project.root.mkdir()
    (project.root / "README.md").write_text("mine\n")
    before = _snapshot(project.root)
    try:
        with pytest.raises(StoreError, match=rf"manifests/failure/{keys[0]}\.json in the store .* lists"):
            run_sweep(spec, layout=project, executor="serial", progress=False, store=store.url)
    finally:
        Path(store.root, "manifests", "failure", f"{keys[0]}.json").unlink()
    assert _snapshot(project.root) == before  # nothing placed, nothing overwritten, even during planning


@pytest.mark.heavy  # a sweep or a run end to end: make test, not make check
@pytest.mark.parametrize(
    ("kind", "files"),
    [("run", {}), ("run", {"reports/runs/another-cell/metrics.json": b"{}"}), ("chunkset", {}),
     ("run", {"reports/runs": b"x"})],
)  # fmt: skip
def test_a_manifest_that_does_not_hold_its_artefact_is_one_line_and_replaces_nothing(swept, kind, files):
    root, spec, _ = swept
    store = ArtefactStore(f"file://{root}/store")
    (key,) = store.published(kind)
    manifest = Path(store.root, "manifests", kind, f"{key}.json")
    real = manifest.read_bytes()
    tag = hashlib.sha256(repr(files).encode()).hexdigest()[:12]
    _plant(store, kind, key, files, base=f"objects/{kind}/{key}/{tag}")
    project = Layout(root / f"victim-{kind}-{tag}")
    project.root.mkdir()
    try:
        with pytest.raises(StoreError) as err:
            run_sweep(spec, layout=project, executor="serial", progress=False, store=store.url)
    finally:
        manifest.write_bytes(real)
    said = str(err.value)
    assert f"manifests/{kind}/{key}.json" in said and "delete that manifest" in said and "\n" not in said
    placed = project.runs if kind == "run" else project.chunksets  # nothing of the artefact placed
    assert not placed.exists() or not [p for p in placed.iterdir() if not p.name.startswith(".")]


@pytest.mark.parametrize("link", ["object", "base", "manifest"])
def test_a_link_leading_out_of_a_folder_store_is_never_read(tmp_path, link):
    secret = tmp_path / "outside"
    secret.mkdir()
    (secret / "notes.md").write_bytes(b"HUNTER2")
    store = ArtefactStore(f"file://{tmp_path}/store")
    rel = f"{artefact_home('document', 'k1')}/notes.md"
    _plant(store, "document", "k1", {rel: b"HUNTER2"})  # a manifest with the secret's true SHA-256
    base = Path(store.root, "objects", "document", "k1", "abcdef012345")
    manifest = Path(store.root, "manifests", "document", "k1.json")
    if link == "object":
        target = base / rel
        target.unlink()
        target.symlink_to(secret / "notes.md")
    elif link == "base":
        shutil.rmtree(base)
        (secret / rel).parent.mkdir(parents=True)
        (secret / rel).write_bytes(b"HUNTER2")
        base.symlink_to(secret, target_is_directory=True)
    else:
        (secret / "k1.json").write_bytes(manifest.read_bytes())
        manifest.unlink()
        manifest.symlink_to(secret / "k1.json")
    with pytest.raises(StoreError, match="is a link leading out of the store: nothing was read from it"):
        store.fetch("document", "k1", tmp_path / "project")
    assert not any(p.is_file() for p in (tmp_path / "project").rglob("*"))


def test_a_manifest_that_is_a_folder_is_named_not_the_credentials(tmp_path):
    store = ArtefactStore(f"file://{tmp_path}/store")
    Path(store.root, "manifests", "run", "k1.json").mkdir(parents=True)
    with pytest.raises(StoreError, match=r"manifests/run/k1\.json is a folder, not an object") as err:
        store.fetch("run", "k1", tmp_path / "project")
    assert "credentials" not in str(err.value)


def test_a_manifest_whose_base_leaves_the_store_is_refused(tmp_path):
    secret = tmp_path / "secretdir"
    secret.mkdir()
    (secret / "id_rsa").write_text("PRIVATE")
    store = ArtefactStore(f"file://{tmp_path}/store")
    rel = f"{artefact_home('document', 'k1')}/id_rsa"
    digest = hashlib.sha256(b"PRIVATE").hexdigest()
    body = {"format": "hepwb-store/1", "kind": "document", "key": "k1", "base": "../secretdir", "meta": {},
            "files": {rel: {"bytes": 7, "sha256": digest}}}  # fmt: skip
    Path(store.root, "manifests", "document").mkdir(parents=True)
    Path(store.root, "manifests", "document", "k1.json").write_text(json.dumps(body))
    with pytest.raises(StoreError, match=r"manifests/document/k1\.json in the store .* points outside"):
        store.fetch("document", "k1", tmp_path / "project")
    with pytest.raises(StoreError, match="points outside"):
        store.lancedb_uri("document", "k1")  # nor is a table opened there
    assert not (tmp_path / "project").exists()


def test_damaged_manifests_and_missing_objects_name_the_manifest_not_the_credentials(tmp_path):
    store = ArtefactStore(f"file://{tmp_path}/store")
    rel = f"{artefact_home('document', 'k2')}/document.json"
    _plant(store, "document", "k2", {rel: b"{}"}, entry={"bytes": 2})  # no sha256
    with pytest.raises(StoreError, match=r"manifests/document/k2\.json in the store .* no size and SHA-256"):
        store.fetch("document", "k2", tmp_path / "p")
    rel = f"{artefact_home('document', 'k3')}/document.json"
    _plant(store, "document", "k3", {rel: b"{}"})
    Path(store.root, "objects/document/k3/abcdef012345", rel).unlink()  # listed, but gone from the store
    with pytest.raises(StoreError, match=r"missing from the store although its manifest") as missing:
        store.fetch("document", "k3", tmp_path / "p")
    assert "credentials" not in str(missing.value) and "delete that manifest" in str(missing.value)
    Path(store.root, "manifests", "document", "k4.json").write_text("{not json")
    with pytest.raises(StoreError, match=r"manifests/document/k4\.json in the store .* is damaged"):
        store.has("document", "k4")


def test_a_lease_of_a_killed_process_here_is_taken_over_at_once_and_a_held_one_is_renewed(tmp_path):
    import socket
    import subprocess
    import sys
    import time

    from hepwb.store import lease

    store = ArtefactStore(f"file://{tmp_path}/store")
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    held = {"holder": f"{socket.gethostname()}:{gone.stdout.strip()}", "expires": time.time() + 3600}
    store.put_if_absent("locks/t.json", json.dumps(held).encode())  # a worker killed while building
    start = time.monotonic()
    with lease(store, "t", "table t", ttl_s=0.6):
        assert time.monotonic() - start < 5  # not an hour behind the dead worker's lease
        first = json.loads(store.cat("locks/t.json") or b"{}")["expires"]
        time.sleep(0.5)
        assert json.loads(store.cat("locks/t.json") or b"{}")["expires"] > first  # renewed while held
    assert store.cat("locks/t.json") is None
