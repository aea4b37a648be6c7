"""Your papers inside a realistic haystack: one corpus folder of your papers and a background corpus.

With a handful of papers, found@5 saturates: every configuration finds nearly everything, because there is
almost nothing else to find. :func:`haystack` puts your papers among the papers of a background corpus (the
shipped 32, or any folder you acquired) so that the same questions discriminate. The result is an ordinary
corpus folder (``data/interim/haystacks/<key>/``), so every command, sweep and notebook takes it as
``corpus``: your files and the background's, hard-linked (copied across file systems), with one
``papers.json`` holding both sidecars and their LaTeX trees under ``tex/``.

Nothing is dropped or renamed in silence: a background paper that *is* one of yours (same content) is kept
once, as yours; one whose label is also one of yours is relabelled ``bg-<label>`` (your questions cite yours);
:func:`describe` says how many of each. ``haystack.json`` in the folder records both sources and each file.
The folder is keyed by both folders' file names and contents: the same inputs give the same folder (and the
papers converted once are reused).

Example (in a notebook)::

    corpus = haystack("my-papers", "shipped")      # your 4 papers among the 32 shipped ones
    compare(["bm25", "dense"], corpus=str(corpus), questions="my-questions.jsonl")
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from hepwb.acquisition.folder import corpus_files, label_of, resolve_corpus, tex_folder
from hepwb.exceptions import ConfigError
from hepwb.files.io import read_json, read_json_object
from hepwb.paths import Layout, shared_dir
from hepwb.text.ids import file_sha256, short_hash

__all__ = ["MANIFEST", "SHIPPED", "describe", "haystack", "haystack_of"]

MANIFEST = "haystack.json"
"""The file naming a haystack folder's two sources and their files."""

SHIPPED = "shipped"
"""The background that names the shipped corpus (its 32 papers, with their LaTeX sources)."""

PREFIX = "bg-"
"""What a background paper's label and file name get when one of your papers has that label."""

_log = logging.getLogger("hepwb")


def _background(background: str | Path) -> Path:
    """The background's folder: ``"shipped"`` is the shipped corpus, anything else a folder of papers."""
    if str(background) != SHIPPED:
        return resolve_corpus(background)
    folder = shared_dir() / "corpus" / "papers" / "pdf"
    if not folder.is_dir():
        msg = f"the shipped corpus is not here ({folder}); give --background a folder of papers instead"
        raise ConfigError(msg)
    return folder


def _sidecar(folder: Path) -> tuple[Path | None, list[dict[str, Any]]]:
    """The ``papers.json`` of ``folder`` (in it or beside it, as the converter reads it) and its entries."""
    for cand in (folder / "papers.json", folder.parent / "papers.json"):
        if cand.is_file():
            data = read_json(cand, "paper metadata", fix="fix or remove it")
            papers = data.get("papers", data) if isinstance(data, dict) else data
            return cand, [p for p in papers if isinstance(p, dict)] if isinstance(papers, list) else []
    return None, []


def _entry_for(path: Path, entries: list[dict[str, Any]]) -> dict[str, Any] | None:
    for e in entries:
        if (e.get("pdf") and Path(str(e["pdf"])).name == path.name) or e.get("pid") == label_of(path):
            return e
    return None


def _link(src: Path, dst: Path) -> None:
    """``dst`` as a hard link of ``src`` (a copy across file systems); folders file by file."""
    if src.is_dir():
        for item in sorted(src.rglob("*")):
            if item.is_file() and not item.is_symlink():
                _link(item, dst / item.relative_to(src))
        return
    dst.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst)


def haystack(
    corpus: str | Path | None, background: str | Path | None, *, layout: Layout | None = None
) -> str | Path | None:
    """The corpus folder (a path string) of your papers among those of ``background`` (built once, reused).

    Args:
        corpus: Your papers' folder (``None``: the default corpus).
        background: A folder of papers, ``"shipped"`` for the shipped corpus, or ``None``: no haystack
            (``corpus`` is returned as given).
        layout: The project (the folder lives under its ``data/interim/haystacks``).

    Raises:
        ConfigError: A folder that is missing or holds no papers (one line naming it).
    """
    if background is None or str(background) == "":
        return corpus
    own, bg = resolve_corpus(corpus).resolve(), _background(background).resolve()
    mine, theirs = corpus_files(own), corpus_files(bg)
    digests = {p: file_sha256(p) for p in (*mine, *theirs)}
    key = short_hash(
        {"own": [(p.name, digests[p]) for p in mine], "background": [(p.name, digests[p]) for p in theirs]},
        16,
    )
    folder = (layout or Layout.default()).data / "interim" / "haystacks" / key
    if (folder / MANIFEST).is_file():
        return str(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{key}-"))
    try:
        manifest = _build(tmp, own, mine, bg, theirs, digests)
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
        try:
            tmp.replace(folder)
        except OSError:  # built meanwhile by another process: theirs is the same
            if not (folder / MANIFEST).is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return str(folder)


def _build(
    tmp: Path, own: Path, mine: list[Path], bg: Path, theirs: list[Path], digests: dict[Path, str]
) -> dict[str, Any]:
    """Fill ``tmp`` with both corpora's files, one ``papers.json`` and their LaTeX trees; the manifest."""
    papers: list[dict[str, Any]] = []
    mine_side, mine_entries = _sidecar(own)
    bg_side, bg_entries = _sidecar(bg)
    labels, contents = set(), {digests[p] for p in mine}
    for p in mine:
        _link(p, tmp / p.name)
        entry = _entry_for(p, mine_entries)
        labels.add(str(entry.get("pid")) if entry and entry.get("pid") else label_of(p))
        if entry is not None:
            papers.append(_copy_entry(entry, p.name, mine_side, tmp, ""))
    duplicates, relabelled, added = [], [], []
    for p in theirs:
        if digests[p] in contents:  # one of yours: kept once, as yours
            duplicates.append(p.name)
            continue
        entry = _entry_for(p, bg_entries)
        label = str(entry.get("pid")) if entry and entry.get("pid") else label_of(p)
        prefix = PREFIX if label in labels else ""
        name = prefix + p.name
        if prefix:
            relabelled.append(f"{label} → {prefix}{label}")
        _link(p, tmp / name)
        added.append(name)
        if entry is not None:
            papers.append(_copy_entry(entry, name, bg_side, tmp, prefix))
    if papers:
        (tmp / "papers.json").write_text(json.dumps({"papers": papers}, indent=1) + "\n", encoding="utf-8")
    return {
        "own": str(own),
        "background": str(bg),
        "own_files": [p.name for p in mine],
        "background_files": added,
        "duplicates": duplicates,
        "relabelled": relabelled,
    }


def _copy_entry(
    entry: dict[str, Any], name: str, sidecar: Path | None, tmp: Path, prefix: str
) -> dict[str, Any]:
    """A sidecar entry for the file ``name`` of the haystack, its LaTeX tree linked under ``tex/``."""
    out = {k: v for k, v in entry.items() if k != "tex_dir"}
    out["pdf"] = name
    if prefix and out.get("pid"):
        out["pid"] = prefix + str(out["pid"])
    tex = entry.get("tex")
    src = tex_folder(sidecar, entry) if tex and sidecar is not None else None
    if src is not None and Path(src).is_dir():  # a tree leaving the corpus is not copied (one warning)
        out["tex"] = prefix + Path(str(tex)).name
        _link(Path(src), tmp / "tex" / out["tex"])
    else:
        out.pop("tex", None)
    return out


def haystack_of(corpus: str | Path | None) -> dict[str, Any] | None:
    """The manifest of ``corpus`` when it is a haystack folder (else ``None``)."""
    try:
        folder = resolve_corpus(corpus)
    except ConfigError:
        return None
    path = folder / MANIFEST
    return read_json_object(path, "haystack manifest") if path.is_file() else None


def describe(manifest: dict[str, Any]) -> str:
    """One line: your papers, the background's, and what was kept once or relabelled.

    Example:
        >>> describe({"own": "/p/mine", "background": "/s/pdf", "own_files": ["a.pdf", "b.pdf"],
        ...           "background_files": ["c.pdf"], "duplicates": ["a.pdf"], "relabelled": []})
        'haystack: your 2 papers (/p/mine) among 1 background papers (/s/pdf); 1 background paper is one \
of yours (kept once, as yours)'
    """
    line = (
        f"haystack: your {len(manifest['own_files'])} papers ({manifest['own']}) among "
        f"{len(manifest['background_files'])} background papers ({manifest['background']})"
    )
    if manifest.get("duplicates"):
        n = len(manifest["duplicates"])
        line += f"; {n} background paper{'s are' if n > 1 else ' is'} one of yours (kept once, as yours)"
    if manifest.get("relabelled"):
        shown = ", ".join(manifest["relabelled"][:4]) + (", …" if len(manifest["relabelled"]) > 4 else "")
        line += f"; background labels that are also yours renamed: {shown}"
    return line
