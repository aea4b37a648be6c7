"""Atomic publication of multi-file artefacts: kill tests at seeded points, manifests, damaged fits.

A publication (:func:`hepwb.files.publish.publish_folder`) and the adapted model's save path
(:func:`hepwb.adapt.finetune.save_model`) run in a process that SIGKILLs itself at a seeded point: just
before its N-th file write or rename under the models folder (counted by an audit hook on ``open`` and
``os.rename``; weights written by native code are covered by the write that follows them). After every kill
the model folder is the previous complete one, absent, or the new complete one - never part of one - and
an incomplete folder is refused in one line naming it and the ``hepwb adapt`` command that rebuilds it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hepwb.cli import app
from hepwb.files.publish import (
    MANIFEST,
    IncompleteArtefactError,
    check_published,
    publish_folder,
    read_manifest,
    recover,
)

HOOK = """
import os, signal, sys

def arm(kill_at, under, counted):
    '''SIGKILL this process just before its ``kill_at``-th write or rename under ``under`` (0: never).'''
    seen = []

    def hook(event, args):
        if event == "open":
            path, mode, flags = args
            if isinstance(path, int) or under not in os.fsdecode(path):
                return
            if mode is not None and not any(c in mode for c in "wax+"):
                return
            if mode is None and not flags & (os.O_WRONLY | os.O_RDWR):
                return
        elif event != "os.rename" or under not in os.fsdecode(args[0]):
            return
        seen.append(os.fsdecode(args[0]))
        with open(counted, "w") as fh:  # every event so far, one a line
            fh.write("\\n".join(seen))
        if len(seen) == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)

    sys.addaudithook(hook)
"""

PLAIN = (
    HOOK
    + """
from pathlib import Path
from hepwb.files.publish import publish_folder

final, kill_at, version = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]

def write(tmp):
    for i in range(3):
        (tmp / f"part{i}.bin").write_bytes(version.encode() * (1000 + i))
    (tmp / "sub").mkdir()
    (tmp / "sub" / "config.json").write_text('{"version": "%s"}' % version)

arm(kill_at, str(final.parent), str(final.parent.parent / "counted"))
publish_folder(final, write, {"rebuild": "make it", "version": version})
"""
)


def _state(folder: Path) -> str:
    """``absent``, ``incomplete`` or the version of the complete folder."""
    if not folder.exists():
        return "absent"
    if check_published(folder) is not None:
        return "incomplete"
    return str(
        read_manifest(folder).get("version") or json.loads((folder / "model_card.json").read_text())["steps"]
    )


def _hidden(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.parent.iterdir() if p.name.startswith("."))


@pytest.mark.heavy
def test_a_publication_killed_at_every_write_leaves_the_old_folder_or_none_or_the_new(tmp_path):
    script = tmp_path / "publish.py"
    script.write_text(PLAIN)
    final = tmp_path / "models" / "thing"
    run = [sys.executable, str(script), str(final)]
    assert subprocess.run([*run, "0", "v1"], check=False).returncode == 0
    assert subprocess.run([*run, "0", "v2"], check=False).returncode == 0  # counting its writes
    events = len((tmp_path / "counted").read_text().splitlines())
    assert events == 8  # 4 files, the manifest (a temporary file renamed), the old folder aside, the new in
    assert _state(final) == "v2" and _hidden(final) == []
    assert subprocess.run([*run, "0", "v1"], check=False).returncode == 0
    seen = []
    for kill_at in range(1, events + 1):  # every point: each run takes a fraction of a second
        proc = subprocess.run([*run, str(kill_at), "v2"], check=False)
        assert proc.returncode == -9, kill_at
        state = _state(final)
        assert state in ("v1", "absent"), (kill_at, state)  # killed before its last rename: never v2
        recover(final)  # what a loader does first: a complete folder left between two renames goes in
        seen.append((state, _state(final)))
        assert seen[-1][1] in ("v1", "v2"), kill_at
        assert subprocess.run([*run, "0", "v1"], check=False).returncode == 0  # and publishing again works
        assert _state(final) == "v1" and _hidden(final) == [], kill_at  # the killed run's leftovers removed
    assert ("absent", "v2") in seen and ("v1", "v1") in seen  # killed between the renames; before them


def test_a_publication_checks_and_names_what_is_incomplete(tmp_path):
    final = tmp_path / "m"

    def write(tmp: Path) -> None:
        (tmp / "a.bin").write_bytes(b"abc")
        (tmp / "b").mkdir()
        (tmp / "b" / "c.json").write_text("{}")

    publish_folder(final, write, {"rebuild": "hepwb adapt --name m"})
    assert check_published(final) is None and sorted(read_manifest(final)["files"]) == ["a.bin", "b/c.json"]

    def failing(tmp: Path) -> None:
        (tmp / "a.bin").write_bytes(b"half")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        publish_folder(final, failing)
    assert (final / "a.bin").read_bytes() == b"abc" and _hidden(final) == []  # the old one untouched

    (final / "a.bin").write_bytes(b"abd")  # same size, other bytes
    assert "a.bin does not match its SHA-256" in check_published(final)
    (final / "a.bin").unlink()
    problem = check_published(final, what="adapted model")
    fix = "rebuild it with `hepwb adapt --name m`"
    assert problem == f"adapted model {final} is incomplete or damaged (a.bin is missing): {fix}"
    (final / MANIFEST).write_text('{"format": "hepwb-manifest/1", "files": {"../../etc/passwd": '
                                  '{"bytes": 1, "sha256": "' + "0" * 64 + '"}}}')  # fmt: skip
    assert "outside the folder" in check_published(final, "x")
    (final / MANIFEST).write_text('{"files": [')
    assert check_published(final, "hepwb adapt --name m").endswith(
        "(hepwb-manifest.json does not parse (invalid JSON (Expecting value column 12))): rebuild it with "
        "`hepwb adapt --name m`"
    )
    (final / MANIFEST).unlink()
    assert "no hepwb-manifest.json" in check_published(final, "x")
    (final.parent / f".{final.name}.tmp-999999999").mkdir()  # a publisher that is gone
    publish_folder(final, write)
    assert check_published(final) is None and _hidden(final) == []


@pytest.mark.parametrize("added", ["added_tokens.json", "1_Pooling/extra.json", "link"])
def test_a_published_model_folder_with_an_unlisted_file_is_refused(tmp_path, monkeypatch, added):
    """Hostile-input probe 5 (issue 38), F12: a file added to a published model after publication (an
    ``added_tokens.json`` the tokenizer then read: IndexError, exit 3) passed the manifest check, which looked
    at listed files only."""
    import shutil

    from hepwb.files.publish import publish_folder, published_problem
    from hepwb.models.tokenizers import resolve_model_path
    from tests.helpers import tiny_corpus

    corpus, questions = tiny_corpus(tmp_path)
    monkeypatch.setenv("HEPWB_HOME", str(tmp_path / "home"))
    base = Path(resolve_model_path("all-MiniLM-L6-v2"))
    final = tmp_path / "home" / "data" / "models" / "fakem"
    publish_folder(final, lambda tmp: shutil.copytree(base, tmp, dirs_exist_ok=True), {"rebuild": "make it"})
    assert published_problem(final) is None
    if added == "link":
        (final / "link").symlink_to(final / "config.json")
    else:
        (final / added).write_text('{"higgs": 30522, "boson": 30523, "mass": 30524}', encoding="utf-8")
    assert published_problem(final) == f"{added} is not listed in its manifest (added after publication)"
    args = [
        "--corpus",
        str(corpus),
        "--questions",
        str(questions),
        "--chunk-size",
        "48",
        "--retriever",
        "dense",
    ]
    res = CliRunner().invoke(app, ["evaluate", *args, "--embedding-model", "fakem"])
    out = res.output
    assert res.exit_code == 2 and out.count("\n") == 1, out
    assert f"adapted model {final} is incomplete or damaged ({added} is not listed" in out, out
    assert "rebuild it with `make it`" in out, out


# --- the adapted model's save path, killed at seeded points -----------------------------------------

SAVE = (
    HOOK
    + """
import json, random, shutil
from pathlib import Path
import numpy as np
from sentence_transformers import SentenceTransformer
from hepwb.adapt.finetune import ModelCard, save_model
from hepwb.models.embedder import Embedder
from hepwb.models.tokenizers import resolve_model_path

home, name, seed, n_points = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
models = home / "data" / "models"
final = models / name
counted = str(home / "counted")
model = SentenceTransformer(resolve_model_path("all-MiniLM-L6-v2"), device="cpu")

def card(steps):
    return ModelCard(name=name, base_model="all-MiniLM-L6-v2", path=str(final), pairs_sha256="0" * 64,
                     pairs={"heading": 12}, n_train=10, n_heldout=2, steps=steps, seconds=1.0,
                     settings={"seed": 0}, heldout_before={"mrr": 0.5}, heldout_after={"mrr": 0.6})

def save(kill_at, steps):  # in a child process, SIGKILLed at its kill_at-th write (0: never)
    pid = os.fork()
    if pid == 0:
        arm(kill_at, str(models), counted)
        save_model(model, card(steps))
        os._exit(0)
    return os.waitpid(pid, 0)[1]

def state():
    try:
        path = resolve_model_path(name)  # the loaders' way in: recovers, then checks the manifest
    except Exception as exc:
        return "refused: " + str(exc)
    if path == name:
        return "absent"
    return json.loads((final / "model_card.json").read_text())["steps"]

def embed(model_name):
    try:
        return Embedder(model_name, device="cpu").embed(["deeply virtual Compton scattering"])
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"

out = {"points": []}
assert save(0, 1) == 0 and save(0, 2) == 0  # the second replaces the first: every write counted
events = open(counted).read().splitlines()
after_weights = next(i for i, e in enumerate(events, 1) if e.endswith("tokenizer_config.json"))
points = set(random.Random(seed).sample(range(1, len(events) + 1), n_points)) | {after_weights, len(events)}
previous = 2
for new, kill_at in enumerate(sorted(points), 3):
    status = save(kill_at, new)
    out["points"].append({"kill_at": kill_at, "event": events[kill_at - 1], "status": status,
                          "state": state(), "allowed": [previous, new]})
    previous = out["points"][-1]["state"]
assert save(0, 1) == 0
out["hidden"] = sorted(p.name for p in models.iterdir() if p.name.startswith("."))
out["files"] = sorted(str(p.relative_to(final)) for p in final.rglob("*") if p.is_file())
base = embed("all-MiniLM-L6-v2")
out["same_as_base"] = bool(np.allclose(embed(name), base, atol=1e-5))
# the issue's reproduction: the folder a kill just after model.safetensors left before this change
broken = models / "broken"
broken.mkdir()
for f in ("config.json", "model.safetensors", "config_sentence_transformers.json"):
    os.link(final / f, broken / f)
out["broken"] = embed("broken")
# a complete model adapted before manifests (no hepwb-manifest.json) still loads
legacy = models / "legacy"
shutil.copytree(final, legacy)
(legacy / "hepwb-manifest.json").unlink()
out["legacy_same"] = bool(np.allclose(embed("legacy"), base, atol=1e-5))
print(json.dumps(out))
"""
)


@pytest.mark.heavy
def test_adapt_save_killed_at_seeded_points_never_leaves_part_of_a_model(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from hepwb.cli import app
    from hepwb.models.tokenizers import resolve_model_path

    script = tmp_path / "save.py"
    script.write_text(SAVE)
    home = tmp_path / "home"
    (home / "data" / "models").mkdir(parents=True)
    env = {**os.environ, "HEPWB_HOME": str(home), "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, str(script), str(home), "kept", "38", "4"],
        capture_output=True, text=True, env=env, check=False, timeout=240,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    print(f"{len(out['points'])} kills in {time.perf_counter() - t0:.1f} s: {out['points']}")
    # the layout sentence-transformers loads, plus hepwb's card and manifest
    for f in ("modules.json", "config.json", "model.safetensors", "tokenizer.json", "1_Pooling/config.json",
              "2_Normalize/config.json", "model_card.json", "README.md", MANIFEST):  # fmt: skip
        assert f in out["files"], f
    assert any(p["event"].endswith("tokenizer_config.json") for p in out["points"])  # just after the weights
    assert out["points"][-1]["state"] == out["points"][-1]["allowed"][1]  # between the renames: recovered
    for p in out["points"]:
        assert os.WIFSIGNALED(p["status"]) and os.WTERMSIG(p["status"]) == 9, p
        assert p["state"] in p["allowed"], p  # the old model or (recovered) the new one, whole
    assert out["hidden"] == []  # what killed publications left is removed by the next
    assert out["same_as_base"] and out["legacy_same"]
    broken = home / "data" / "models" / "broken"
    assert out["broken"] == (
        f"IncompleteArtefactError: adapted model {broken} is incomplete (no modules.json: an interrupted "
        "`hepwb adapt`?): rebuild it with `hepwb adapt --name broken`"
    )

    monkeypatch.setenv("HEPWB_HOME", str(home))
    res = CliRunner().invoke(app, ["evaluate", "--embedding-model", "broken"])
    assert res.exit_code == 2 and "`hepwb adapt --name broken`" in res.output, res.output
    final = home / "data" / "models" / "kept"
    assert resolve_model_path("kept") == str(final) and check_published(final) is None
    with (final / "tokenizer.json").open("r+b") as fh:  # a file cut short after publication
        fh.truncate(100)
    with pytest.raises(
        IncompleteArtefactError, match=r"tokenizer.json has 100 bytes.*`hepwb adapt --name kept`"
    ):
        resolve_model_path("kept")


# --- fusion fits: one file, written atomically; a damaged one named with its fix ---------------------


def test_a_damaged_fusion_fit_is_named_with_its_fix_at_once(tmp_path, monkeypatch):
    from hepwb.exceptions import ConfigError
    from hepwb.experiment import ExperimentConfig
    from hepwb.retrieval.fusion import fit_problem, load_fit

    monkeypatch.setenv("HEPWB_HOME", str(tmp_path))
    folder = tmp_path / "data" / "models" / "fusion"
    folder.mkdir(parents=True)
    good = {
        "name": "f", "method": "rrf", "weight": 0.4, "fields": "context", "dense_read": "max", "top_m": 1,
        "fetch": 50, "embedding_model": "all-MiniLM-L6-v2", "chunkset_id": "c", "questions_sha256": "q",
        "folds": {"A": 0, "B": 1}, "n_folds": 2, "n_questions": 5,
        "fold_params": {"0": {"method": "linear", "weight": 0.5, "papers": ["A"]},
                        "1": {"method": "rrf", "weight": 0.3, "dense_read": "first", "papers": ["B"]}},
    }  # fmt: skip
    assert fit_problem(good) is None
    (folder / "f.json").write_text(json.dumps(good))
    assert load_fit("f")["weight"] == 0.4
    for bad, why in [
        ({**good, "weight": "x"}, "weight is 'x', not a number from 0 to 1"),
        ({**good, "weight": float("nan")}, "weight is nan"),
        ({**good, "fetch": 10**40}, "fetch is 1000"),
        ({**good, "fold_params": {"0": {"method": "rrf", "weight": 2}}}, "fold_params[0].weight is 2"),
        ({**good, "folds": {"A": 7}}, "folds names a fold that fold_params lacks"),
        ([1, 2], "not a JSON object"),
    ]:
        (folder / "f.json").write_text(json.dumps(bad))
        with pytest.raises(IncompleteArtefactError) as err:
            load_fit("f")
        msg = str(err.value)
        assert msg.startswith(f"fusion fit {folder / 'f.json'} is damaged (") and why in msg, msg
        assert msg.endswith("fit it again with `hepwb fit-fusion --name f ...` (its chunk set and questions)")
        assert "\n" not in msg
    (folder / "f.json").write_text('{"method": "rrf", "wei')
    with pytest.raises(IncompleteArtefactError, match="it does not parse: invalid JSON"):
        load_fit("f")
    (folder / "run-0123.json").write_text(json.dumps({**good, "weight": "x"}))
    with pytest.raises(IncompleteArtefactError, match="delete it and run again"):
        load_fit("run-0123")
    t0 = time.perf_counter()  # refused while the configuration is read, before any work
    with pytest.raises(ConfigError, match=r"f\.json is damaged \(weight is 'x'"):
        (folder / "f.json").write_text(json.dumps({**good, "weight": "x"}))
        ExperimentConfig.from_params(retriever="fusion", retriever_options={"fitted": "f"})
    from typer.testing import CliRunner

    from hepwb.cli import app

    res = CliRunner().invoke(app, ["search", "drift velocity", "--retrievers", "bm25,fusion(fitted=f)"])
    assert res.exit_code == 2 and "hepwb fit-fusion --name f" in res.output, res.output  # before chunking
    assert time.perf_counter() - t0 < 5


def test_a_fusion_fit_whose_folds_were_damaged_is_refused(tmp_path, monkeypatch):
    """Hostile-input probe 5 (issue 38), F11: ``folds: {}`` (or folds disagreeing with ``fold_params``) was
    accepted, and every question of the fit's own set was then scored with the weights fitted on it, as an
    out-of-fold run."""
    from tests.helpers import tiny_corpus

    corpus, questions = tiny_corpus(tmp_path)
    monkeypatch.setenv("HEPWB_HOME", str(tmp_path / "home"))
    common = ["--corpus", str(corpus), "--questions", str(questions), "--chunk-size", "48"]
    res = CliRunner().invoke(app, ["fit-fusion", "--name", "f1", *common, "--folds", "2"])
    assert res.exit_code == 0, res.output
    path = tmp_path / "home" / "data" / "models" / "fusion" / "f1.json"
    good = json.loads(path.read_text(encoding="utf-8"))
    moved = sorted(good["fold_params"]["0"]["papers"])[0]  # a paper of fold 0, said to be in fold 1 too

    def empty(d):
        d["folds"] = {}

    def lost(d):
        del d["folds"][moved]

    def listed_twice(d):
        d["fold_params"]["1"]["papers"].append(moved)

    def more_folds(d):
        d["n_folds"] = 5

    for damage, why in [
        (empty, "folds is empty: no paper has weights fitted without it"),
        (lost, "fold_params[0].papers and folds disagree on the papers of fold 0"),
        (listed_twice, "fold_params[1].papers and folds disagree on the papers of fold 1"),
        (more_folds, "n_folds is 5, fold_params has 2 folds"),
    ]:
        fit = json.loads(json.dumps(good))
        damage(fit)
        path.write_text(json.dumps(fit), encoding="utf-8")
        res = CliRunner().invoke(app, ["evaluate", *common, "--retriever", "fusion(fitted=f1)"])
        out = res.output
        assert res.exit_code == 2 and f"fusion fit {path} is damaged ({why})" in out, out
        assert "hepwb fit-fusion --name f1" in out and out.count("\n") == 1, out
