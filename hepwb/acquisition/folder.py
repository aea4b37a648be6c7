"""A local folder of papers: its supported files, their labels and the ``papers.json`` sidecar.

A corpus is a folder of PDFs (and/or ``.md`` files). Bibliographic metadata comes from an optional
``papers.json`` in the folder or its parent (``{"papers": [{"pid", "pdf", "title", "authors", …}]}``,
the format of ``../shared/corpus/papers/papers.json``); an entry's ``"tex"`` names its LaTeX source
folder under ``tex/`` beside that file. Local acquisition and ingestion both read folders through here.

Example:
    >>> label_of(Path("P01_hep-ex_0106068.pdf"))
    'P01'
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
from pathlib import Path

from hepwb import limits
from hepwb.exceptions import ConfigError, CorpusNotFoundError
from hepwb.files.io import read_json
from hepwb.paths import shared_dir
from hepwb.text.plaintext import plain
from hepwb.types import JSONObject

_log = logging.getLogger("hepwb.corpus")

__all__ = [
    "SUFFIXES",
    "corpus_files",
    "corpus_labels",
    "default_corpus",
    "describe",
    "escapes",
    "label_of",
    "load_sidecar",
    "resolve_corpus",
    "tex_folder",
]

SUFFIXES = (".pdf", ".md")

_SKIPPED: set[str] = set()
"""Special entries already reported in this process (a command lists its corpus several times)."""

_SYSTEM = (Path("/proc"), Path("/sys"), Path("/dev"))
"""Kernel and device trees: a corpus link into one is never read (``/proc/self/environ`` holds secrets)."""

_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def describe(path: Path) -> str | None:
    """What ``path`` is, following links: ``"a file"``, ``"a folder"``, ``"a FIFO"``, … (``None``: nothing).

    Only :func:`os.stat` is asked: a FIFO or device is never opened.

    Example:
        >>> describe(Path("/dev/null")), describe(Path("/nonexistent"))
        ('a character device', None)
    """
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return "a broken link" if path.is_symlink() else None
    except OSError as exc:  # a link loop, a name too long, no permission on the folder
        return f"unreadable ({exc.strerror or type(exc).__name__})"
    if stat.S_ISREG(mode):
        return "a file"
    return next((kind for test, kind in _KINDS if test(mode)), "a special file")


def _shown(path: Path) -> str:
    """``path`` for a message: control sequences stripped, and the target of a link."""
    text = plain(str(path))
    if path.is_symlink():
        with contextlib.suppress(OSError):
            text += f" (a link to {plain(str(path.readlink()))})"
    return text


def label_of(path: Path) -> str:
    """A file's label: its name up to the first ``_`` (``P01_hep-ex_0106068.pdf`` → ``P01``)."""
    return path.stem.split("_", 1)[0]


def default_corpus() -> Path | None:
    """``$HEPWB_CORPUS``, else the shared 32-paper corpus when it is present."""
    env = os.environ.get("HEPWB_CORPUS")
    if env:
        return Path(env)
    cand = shared_dir() / "corpus" / "papers" / "pdf"
    return cand if cand.is_dir() else None


def resolve_corpus(corpus: str | Path | None) -> Path:
    """Return the corpus folder or raise :class:`CorpusNotFoundError` naming the option to set."""
    path = Path(corpus) if corpus else default_corpus()
    if path is None:
        msg = (
            "no corpus configured and none found: pass --corpus DIR (CLI), corpus='DIR' (notebook "
            "parameter) or set HEPWB_CORPUS to a folder of PDF files"
        )
        raise CorpusNotFoundError(msg)
    if not path.is_dir():
        kind = describe(path)
        fix = "set --corpus / HEPWB_CORPUS to a folder of PDF or .md files"
        if kind is None:
            msg = f"corpus folder {plain(str(path))} does not exist: {fix}"
        else:
            msg = f"{_shown(path)} is {kind}, not a folder of papers: {fix}"
        raise CorpusNotFoundError(msg)
    return path


def escapes(path: Path, root: Path) -> str | None:
    """Why ``path`` (an entry of the folder ``root``, maybe a link) must not be read as part of it, or None.

    Its target (all links followed) must lie inside ``root`` (also followed) and outside ``/proc``,
    ``/sys`` and ``/dev`` (unless ``root`` itself lies there, as a folder in ``/dev/shm`` may): a link to
    ``/proc/self/environ`` or to a file elsewhere would put secrets in the artefacts. Only the paths are
    resolved: nothing is opened.

    Example:
        >>> escapes(Path("/tmp/c/P01.md"), Path("/tmp/c")) is None
        True
        >>> escapes(Path("/proc/self/environ"), Path("/tmp/c"))
        'leads into /proc (a kernel or device file)'
    """
    target, home = Path(os.path.realpath(path)), Path(os.path.realpath(root))
    system = next((s for s in _SYSTEM if target.is_relative_to(s) and not home.is_relative_to(s)), None)
    if system is not None:
        return f"leads into {system} (a kernel or device file)"
    if not target.is_relative_to(home):
        return f"leads outside the folder {plain(str(root))}"
    return None


def corpus_files(corpus: Path, max_docs: int | None = None, only: list[str] | None = None) -> list[Path]:
    """Supported files of ``corpus`` in name order (only labels ``only``; the first ``max_docs``).

    An entry with a supported suffix that is not a regular file (a folder, a FIFO, a device, a socket, a
    broken link, or a link to one of them), or a link whose target lies outside ``corpus`` or under
    ``/proc``, ``/sys`` or ``/dev`` (:func:`escapes`), is skipped with one warning naming it and why, once
    per process; it is never opened. A link to another file of the corpus folder is a file of it.
    """
    files = []
    for path in sorted(p for p in corpus.iterdir() if p.suffix.lower() in SUFFIXES):
        kind = describe(path)
        leaves = escapes(path, corpus) if kind == "a file" else None
        if kind == "a file" and leaves is None:
            files.append(path)
        elif str(path) not in _SKIPPED:
            _SKIPPED.add(str(path))
            why = (
                f"is {kind or 'gone'}, not a file: skipped"
                if leaves is None
                else f"{leaves}: skipped, not read"
            )
            _log.warning("%s %s", _shown(path), why)
    files = _once(files)
    if not files:
        msg = f"corpus folder {corpus} holds no .pdf or .md files; point --corpus at a folder of papers"
        raise CorpusNotFoundError(msg)
    if only is not None:
        files = [p for p in files if label_of(p) in set(only)]
        if not files:
            msg = f"no file of {corpus} has a label in {only}; labels are the file-name prefix before '_'"
            raise CorpusNotFoundError(msg)
    if max_docs is not None:
        files = files[: limits.MAX_DOCS.check(max_docs)]
    return files


def _once(files: list[Path]) -> list[Path]:
    """``files`` with each file read once: a link to another file of the list is left out, with one warning.

    The file itself keeps its place and label (its link would be the same paper under a second label).
    """
    real = {p.resolve(): p for p in files if not p.is_symlink()}
    kept = []
    for path in files:
        target = real.get(path.resolve()) if path.is_symlink() else None
        if target is None:
            kept.append(path)
            real.setdefault(path.resolve(), path)  # a second link to one file outside the list: read once
        elif str(path) not in _SKIPPED:
            _SKIPPED.add(str(path))
            _log.warning("%s is a second name of a paper of the corpus: read once, as %s", _shown(path),
                         label_of(target))  # fmt: skip
    return kept


_FIELDS = {
    "pid": "a label (a string)",
    "pdf": "a file name (a string)",
    "tex": "a folder name under tex/ (a string)",
}


def _check_entry(sidecar: Path, index: int, entry: JSONObject) -> None:
    """Refuse (:class:`ConfigError`, one line) a ``pid``/``pdf``/``tex`` that cannot name a label or file.

    Each must be a string without control characters (NUL included) whose last part is a name (not
    ``""``, ``.`` or ``..``); ``pdf`` may carry folders (``papers/pdf/P01_….pdf``: its name is matched).
    """
    for key, what in _FIELDS.items():
        value = entry.get(key)
        if value is None:
            continue
        text = isinstance(value, str)
        if text and plain(value) == value and Path(value).name not in ("", ".", ".."):
            continue
        why = " (it holds a control character)" if text and plain(value) != value else ""
        shown = repr(value) if len(repr(value)) <= 80 else repr(value)[:79] + "…"
        msg = f"{plain(str(sidecar))}, papers[{index}].{key} must be {what}, got {shown}{why}; fix it"
        raise ConfigError(msg)


def tex_folder(sidecar: Path, entry: JSONObject) -> str | None:
    """The LaTeX folder an entry's ``tex`` names under ``tex/`` beside ``sidecar`` (resolved), or ``None``.

    The folder, links followed, must lie inside ``tex/`` and inside the folder of ``sidecar`` (a ``tex/``
    that is a link elsewhere, or a ``tex`` with ``..`` or a link leaving it, would point the converter at
    files outside the corpus): otherwise a warning names the entry and why, and ``None`` is returned.
    """
    named = sidecar.parent / "tex" / str(entry["tex"])
    tex_root, tex_dir = Path(os.path.realpath(sidecar.parent / "tex")), Path(os.path.realpath(named))
    leaves = escapes(named, sidecar.parent)
    if leaves is None and not tex_dir.is_relative_to(tex_root):
        leaves = f"leaves {plain(str(tex_root))}"
    if leaves is None:
        return str(tex_dir)
    _log.warning(
        "%s: ignoring 'tex' %r of %s: it %s, so it is not read; name a folder under tex/ beside it",
        plain(str(sidecar)),
        entry["tex"],
        entry.get("pid") or entry.get("pdf"),
        leaves,
    )
    return None


def load_sidecar(corpus: Path) -> dict[str, JSONObject]:
    """Metadata from ``papers.json`` beside or above the corpus, keyed by file name and by ``pid``.

    An entry whose ``pid``, ``pdf`` or ``tex`` is not a string name (a number, a list, a control
    character, ``..``) is a :class:`ConfigError` naming the file, the entry and the field.
    """
    for cand in (corpus / "papers.json", corpus.parent / "papers.json"):
        if cand.exists() or cand.is_symlink():  # a special file is refused by the reader, not skipped
            data = read_json(cand, "paper metadata", fix="fix or remove it")
            papers = data.get("papers", data) if isinstance(data, dict) else data
            if not isinstance(papers, list):
                msg = f"{cand}: 'papers' must be a list of paper objects, got {type(papers).__name__}; fix it"
                raise ConfigError(msg)
            out: dict[str, JSONObject] = {}
            for i, p in enumerate(papers):
                if not isinstance(p, dict):
                    _log.warning("%s: ignoring an entry that is not an object: %.60r", cand, p)
                    continue
                _check_entry(cand, i, p)
                if "tex_dir" in p:  # hepwb's own field, derived below from a checked 'tex' only
                    msg = (
                        f"{plain(str(cand))}, papers[{i}] sets 'tex_dir', hepwb's own field (it comes from "
                        "'tex', a folder under tex/ beside papers.json); remove it and give 'tex'"
                    )
                    raise ConfigError(msg)
                tex_dir = tex_folder(cand, p) if p.get("tex") else None
                if tex_dir is not None:
                    p = {**p, "tex_dir": tex_dir}
                name = Path(p["pdf"]).name if p.get("pdf") else str(p["pid"]) if p.get("pid") else None
                if name is None:  # entries naming their file are matched by file name, the others by pid
                    continue
                if name in out:
                    msg = (
                        f"{cand}: papers[{i}] describes {name!r} again (an earlier entry already does); "
                        "keep one entry per paper"
                    )
                    raise ConfigError(msg)
                out[name] = p
            return out
    return {}


def corpus_labels(corpus: Path) -> set[str]:
    """Every label a document of ``corpus`` can carry: its ``papers.json`` pid or file-name prefix, and stem.

    (The stem is the fallback when two files share a prefix.) Used to tell a question naming a paper
    outside a ``max_docs`` subset from one naming a paper that is not in the corpus at all.
    """
    return {name for pair in file_labels(corpus) for name in pair}


def file_labels(corpus: Path) -> list[tuple[str, str]]:
    """Each supported file of ``corpus`` (name order): its label (``papers.json`` pid or prefix) and stem."""
    sidecar = load_sidecar(corpus)
    out = []
    for path in corpus_files(corpus):
        meta = sidecar.get(path.name) or sidecar.get(label_of(path)) or {}
        out.append((str(meta.get("pid") or label_of(path)), path.stem))
    return out
