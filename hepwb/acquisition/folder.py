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
from hepwb.io import read_json
from hepwb.paths import shared_dir
from hepwb.plaintext import plain
from hepwb.types import JSONObject

_log = logging.getLogger("hepwb.corpus")

__all__ = [
    "SUFFIXES",
    "corpus_files",
    "corpus_labels",
    "default_corpus",
    "describe",
    "label_of",
    "load_sidecar",
    "resolve_corpus",
]

SUFFIXES = (".pdf", ".md")

_SKIPPED: set[str] = set()
"""Special entries already reported in this process (a command lists its corpus several times)."""

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


def corpus_files(corpus: Path, max_docs: int | None = None, only: list[str] | None = None) -> list[Path]:
    """Supported files of ``corpus`` in name order (only labels ``only``; the first ``max_docs``).

    An entry with a supported suffix that is not a regular file (a folder, a FIFO, a device, a socket, a
    broken link, or a link to one of them) is skipped with one warning naming it and what it is, once per
    process; it is never opened.
    """
    files = []
    for path in sorted(p for p in corpus.iterdir() if p.suffix.lower() in SUFFIXES):
        kind = describe(path)
        if kind == "a file":
            files.append(path)
        elif str(path) not in _SKIPPED:
            _SKIPPED.add(str(path))
            _log.warning("%s is %s, not a file: skipped", _shown(path), kind or "gone")
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
                if p.get("tex"):
                    tex_root = (cand.parent / "tex").resolve()
                    tex_dir = (tex_root / str(p["tex"])).resolve()
                    if tex_dir.is_relative_to(tex_root):
                        p = {**p, "tex_dir": str(tex_dir)}
                    else:  # a sidecar must not point the converter outside the corpus
                        _log.warning(
                            "%s: ignoring 'tex' %r of %s: it leaves %s (name a folder inside it)",
                            cand,
                            p["tex"],
                            p.get("pid") or p.get("pdf"),
                            tex_root,
                        )
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
