"""Reading and checking a ``.ragmd`` file: all of it is checked before anything is returned.

Every problem names the file, the line and the section, e.g. ``paper.ragmd:41 [Vectors] chunk 'c7':
not base64``. A file with git conflict markers, a truncated one (a missing section or fence) or a
hand-edited one whose counts, ids or vector lengths disagree raises :class:`RagmdError` listing every
problem, and nothing is loaded. This module checks the file's structure (front matter, sections,
fenced blocks, JSON); :mod:`hepwb.ragmd.contents` whether the sections agree with each other.
"""

from __future__ import annotations

import gc
import json
import re
from pathlib import Path
from typing import Any

from hepwb import limits
from hepwb.exceptions import HepwbError
from hepwb.files.parsers import json_hooks
from hepwb.files.readers import ReadError, read_text
from hepwb.files.yamlio import YamlError, load_yaml
from hepwb.limits import MAX_RAGMD_BYTES
from hepwb.models.tokenizers import path_named
from hepwb.ragmd.contents import Problems, assemble
from hepwb.ragmd.model import FORMAT_VERSION, RagFile
from hepwb.ragmd.writer import VECTOR_ENCODING
from hepwb.text.plaintext import plain
from hepwb.types import JSONObject

__all__ = ["RagmdError", "load", "load_searchable", "loads", "model_name_problem", "problems", "searchable"]

SECTIONS = ("Documents", "Chunks", "Document Metadata", "Vectors")
_FENCES = {"Chunks": "```json", "Document Metadata": "```json", "Vectors": "```base64"}
_CONFLICT = ("<<<<<<< ", "=======", ">>>>>>> ")
_MODEL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,95}(/[A-Za-z0-9][A-Za-z0-9._-]{0,95})?")
"""A model's name as a .ragmd file may give it: ``NAME`` or a hub's ``ORG/NAME``; never a path."""

_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}|[\ud800-\udfff]")
"""A surrogate in JSON text, escaped (``\\ud800``) or raw: valid pairs match too, then values are checked."""
_DISTANCE = "inner_product"

_REQUIRED = (
    "format_version",
    "model_name",
    "embedding_dim",
    "vector_count",
    "document_count",
    "index_type",
    "created_at",
    "updated_at",
    "chunkset_id",
)


class RagmdError(HepwbError, ValueError):
    """A ``.ragmd`` file that cannot be loaded; the message lists every problem with its line.

    ``args`` are the message and the list of problems; ``str()`` is the message alone.
    """

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


MAX_EMBEDDING_DIM = limits.MAX_EMBEDDING_DIM
"""The widest vectors a ``.ragmd`` file may declare (:data:`hepwb.limits.MAX_EMBEDDING_DIM`)."""


def problems(text: str, source: str = "<ragmd>") -> list[str]:
    """Every problem of ``text`` (empty when the file is valid)."""
    try:
        _parse(text, source)
    except RagmdError as exc:
        return list(exc.args[1])
    return []


def loads(text: str, source: str = "<ragmd>") -> RagFile:
    """The contents of ``text``, or :class:`RagmdError` listing every problem."""
    if len(text) > MAX_RAGMD_BYTES:  # characters: at least as many bytes
        msg = f"{source}: more than a .ragmd file may hold ({MAX_RAGMD_BYTES:,} bytes)"
        raise RagmdError(msg, [msg])
    return _parse(text, source)


def load(path: str | Path) -> RagFile:
    """The contents of the file at ``path`` (see :func:`loads`), read by the bounded reader.

    A FIFO, device or socket is refused before it is opened; at most
    :data:`~hepwb.limits.MAX_RAGMD_BYTES` are read (:func:`hepwb.files.readers.read_text`).
    """
    try:
        text = read_text(path, ".ragmd file", max_bytes=MAX_RAGMD_BYTES, fix="give an exported .ragmd file")
    except ReadError as exc:
        rest = str(exc).removeprefix(f".ragmd file {path}")  # messages of .ragmd files start with the path
        msg = f"{path}{rest}" if rest.startswith((" line", ":")) else f"{path}: {rest.lstrip()}"
        raise RagmdError(msg, [msg]) from None
    return _parse(text.replace("\r\n", "\n").replace("\r", "\n"), str(path))  # as read_text reads lines


def load_searchable(path: str | Path) -> RagFile:
    """:func:`load`, then :func:`searchable`: how import-ragmd, search --ragmd and validate-ragmd read a file.

    A file ``validate-ragmd`` calls valid is one the loaders load: the same checks, in one place.
    """
    return searchable(load(path), path)


def searchable(rf: RagFile, path: str | Path) -> RagFile:
    """``rf`` when every vector can be searched (:meth:`RagFile.unsearchable`), else a :class:`RagmdError`."""
    bad = rf.unsearchable()
    if bad:
        msg = (
            f"{path}: {len(bad)} vector(s) not of unit length (chunks {bad[:3]}): not vectors of a model "
            "(hepwb's are normalised); export the file again with `hepwb export-ragmd`"
        )
        raise RagmdError(msg, [msg])
    return rf


def _fail(probs: Problems) -> RagmdError:
    head = f"{probs.source}: {len(probs)} problem(s); nothing was loaded:\n  " + "\n  ".join(probs[:20])
    if len(probs) > 20:
        head += f"\n  … and {len(probs) - 20} more"
    return RagmdError(head, list(probs))


def _parse(text: str, source: str) -> RagFile:
    """Parse ``text`` with the cyclic garbage collector paused.

    The hundreds of thousands of small objects a large file makes would otherwise trigger full collections
    again and again: validation time grew 13.5× for 10× the file, 10.8× without them.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _parse_text(text, source)
    finally:
        if enabled:
            gc.enable()


def _parse_text(text: str, source: str) -> RagFile:
    """The contents of ``text``, checked.

    The structure is checked here; whether the sections agree with each other by
    :func:`~hepwb.ragmd.contents.assemble`.
    """
    lines = text.split("\n")
    probs = Problems(source)
    _check_conflicts(lines, probs)
    fm = _front_matter(lines, source, probs)
    starts = _section_starts(lines, probs)
    if probs:
        raise _fail(probs)
    blocks = {name: _block(lines, starts[name], name, probs) for name in _FENCES}
    if probs:
        raise _fail(probs)
    chunks_at, chunk_list = blocks["Chunks"]
    meta_at, meta_text = blocks["Document Metadata"]
    vec_at, vec_lines = blocks["Vectors"]
    order = _json(chunk_list, chunks_at, "Chunks", probs)
    meta = _json(meta_text, meta_at, "Document Metadata", probs)
    for section, block, value, first in (
        ("Chunks", chunk_list, order, chunks_at),
        ("Document Metadata", meta_text, meta, meta_at),
    ):
        bad = _lone_surrogate(value) if _SURROGATE_ESCAPE.search(block) else None
        if bad:
            probs.add(first, section, bad)
    if probs:
        raise _fail(probs)
    vecs = vec_lines.split("\n") if vec_lines else []
    rf = assemble(fm, order, meta, vecs, vec_at, lines, starts, probs, chunks_at)
    if rf is None:
        raise _fail(probs)
    return rf


def _check_conflicts(lines: list[str], probs: Problems) -> None:
    """Refuse a file with git conflict markers: it is resolved, or re-exported, never read."""
    marks = [i + 1 for i, ln in enumerate(lines) if ln.startswith(_CONFLICT) or ln == "======="]
    if marks:
        probs.add(
            marks[0],
            "file",
            f"git conflict markers at lines {marks[:6]}: resolve the merge, or re-export "
            "both sides and merge the indexes with hepwb (a .ragmd file is not merged by hand)",
        )
        raise _fail(probs)


def _front_matter(lines: list[str], source: str, probs: Problems) -> JSONObject:
    """The YAML front matter between the ``---`` lines, its problems added (a fatal one raises)."""
    if lines and lines[0].startswith("\ufeff"):
        probs.add(1, "file", "starts with a byte-order mark (BOM): save it as UTF-8 without one")
        raise _fail(probs)
    if not lines or lines[0] != "---" or "---" not in lines[1:]:
        probs.add(
            1, "front matter", "no YAML front matter between '---' lines (not a .ragmd file, or truncated)"
        )
        raise _fail(probs)
    end = lines.index("---", 1)
    try:
        fm = load_yaml("\n".join(lines[1:end]), source="front matter") or {}
    except YamlError as exc:
        probs.add(1, "front matter", str(exc).removeprefix("front matter").lstrip(", :"))
        raise _fail(probs) from None
    fm = fm if isinstance(fm, dict) else {}
    for key in _REQUIRED:
        if key not in fm or fm[key] in ("", None):
            probs.add(1, "front matter", f"missing {key!r}")
    dim = fm.get("embedding_dim")
    if "embedding_dim" in fm and (
        not isinstance(dim, int) or isinstance(dim, bool) or not 1 <= dim <= MAX_EMBEDDING_DIM
    ):
        probs.add(1, "front matter", f"embedding_dim must be a whole number from 1 to {MAX_EMBEDDING_DIM:,}")
        raise _fail(probs)
    for key in ("vector_count", "document_count"):  # counts: whole numbers, as the writer writes them
        if key in fm and (not isinstance(fm[key], int) or isinstance(fm[key], bool) or fm[key] < 0):
            probs.add(1, "front matter", f"{key} {str(fm[key])[:40]!r} is not a whole number")
    _check_front_values(fm, probs)
    return fm


def model_name_problem(model: object) -> str | None:
    """Why ``model`` cannot be the ``model_name`` of a ``.ragmd`` file, or ``None``.

    It must be a model identifier: ``NAME`` or a hub's ``ORG/NAME`` (letters, digits, ``.``, ``_``, ``-``;
    no ``..``), and not the name of a file or folder of the working folder that hepwb would load as the
    model (:func:`~hepwb.models.tokenizers.path_named`): a ``.ragmd`` file names the model it was embedded
    with, it never points hepwb at a folder whose contents it would load and run.

    Example:
        >>> model_name_problem("sentence-transformers/all-MiniLM-L6-v2") is None
        True
        >>> print(model_name_problem("/tmp/x"))
        model_name '/tmp/x' is not a model name (NAME or ORG/NAME, never a path): a .ragmd file names the \
model it was embedded with, it does not point at folders
    """
    if not isinstance(model, str) or not _MODEL_NAME.fullmatch(model) or ".." in model:
        return (
            f"model_name {str(model)[:60]!r} is not a model name (NAME or ORG/NAME, never a path): a .ragmd "
            "file names the model it was embedded with, it does not point at folders"
        )
    path = path_named(model)
    if path is not None:
        return (
            f"model_name {model!r} is also the path of {plain(str(Path.cwd() / path))}, which hepwb would "
            "load as the model: a .ragmd file names the model it was embedded with (NAME or ORG/NAME), it "
            "does not point at folders; run hepwb from a folder without it"
        )
    return None


def _check_front_values(fm: JSONObject, probs: Problems) -> None:
    """The front matter's model name, time stamps, distance, encoding, text and format version."""
    problem = model_name_problem(fm["model_name"]) if "model_name" in fm else None
    if problem:
        probs.add(1, "front matter", problem)
    for stamp in ("created_at", "updated_at"):
        value = fm.get(stamp)
        if value not in (None, "") and not _is_timestamp(value):
            probs.add(1, "front matter", f"{stamp} {str(value)[:40]!r} is not an ISO 8601 date and time")
    for key, want in (("distance", _DISTANCE), ("vector_encoding", VECTOR_ENCODING), ("index_type", "flat")):
        if key in fm and fm[key] != want:  # hepwb searches by inner product of base64 float32 vectors only
            probs.add(1, "front matter", f"{key} {str(fm[key])[:40]!r}; a .ragmd file has {want!r}")
    bad = _lone_surrogate(fm)
    if bad:
        probs.add(1, "front matter", bad)
    if fm.get("format_version") not in (None, FORMAT_VERSION):
        probs.add(
            1,
            "front matter",
            f"format_version {fm.get('format_version')!r}; this hepwb reads {FORMAT_VERSION}",
        )


def _section_starts(lines: list[str], probs: Problems) -> dict[str, int]:
    """The index of each section's ``## `` line; a missing section is a problem."""
    starts = {}
    for name in SECTIONS:
        where = [i for i, ln in enumerate(lines) if ln == f"## {name}"]
        if not where:
            probs.add(len(lines), name, f"section '## {name}' missing (a truncated or hand-cut file?)")
        else:
            starts[name] = where[0]
        if len(where) > 1:  # a second one would be ignored: two files pasted together, or a hand edit
            probs.add(
                where[1] + 1,
                name,
                f"section '## {name}' appears {len(where)} times (first on line {where[0] + 1}); keep one",
            )
    return starts


def _block(lines: list[str], start: int, name: str, probs: Problems) -> tuple[int, str]:
    """(line number of the block's first line, its text) of the fenced block after ``start``."""
    fence = _FENCES[name]
    i = start + 1
    while i < len(lines) and lines[i] != fence and not lines[i].startswith("## "):
        i += 1
    if i >= len(lines) or lines[i] != fence:
        probs.add(start + 1, name, f"no '{fence}' block under '## {name}'")
        return 0, ""
    try:
        close = lines.index("```", i + 1)
    except ValueError:
        probs.add(i + 1, name, f"the '{fence}' block opened here is never closed (truncated file?)")
        return 0, ""
    return i + 2, "\n".join(lines[i + 1 : close])


def _json(text: str, first: int, section: str, probs: Problems) -> Any:
    """The JSON of a block (integer digits and nesting bounded), or None with a problem recorded."""
    try:
        value = json.loads(text, **json_hooks(section, "fix the block or export the file again"))
    except json.JSONDecodeError as exc:
        probs.add(first + exc.lineno - 1, section, f"not valid JSON: {exc.msg} (column {exc.colno})")
        return None
    except RecursionError:
        probs.add(first, section, "JSON nested too deeply to read")
        return None
    except ValueError as exc:  # an integer with too many digits, a repeated key (ReadError)
        probs.add(first, section, f"not valid JSON: {exc}")
        return None
    return value


def _lone_surrogate(value: Any) -> str | None:
    r"""The problem of the first string (key or value) in ``value`` holding a lone surrogate, or ``None``.

    Such a string is no Unicode text: it cannot be printed, written as UTF-8 or stored (a search printing a
    title ``"\ud800"`` failed with a UnicodeEncodeError after showing its first hits).

    Example:
        >>> _lone_surrogate({"d1": {"title": "Evil \ud800 title"}})  # doctest: +ELLIPSIS
        "the text 'Evil \\ud800 title' holds a lone surrogate (U+D800): not Unicode text; ..."
        >>> _lone_surrogate(["a pair is text: \U0001f600"]) is None
        True
    """
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str) and (m := _SURROGATE.search(item)):
            shown = item if len(item) <= 40 else item[:39] + "…"
            return (
                f"the text {shown!r} holds a lone surrogate (U+{ord(m.group()):04X}): not Unicode text; "
                "export the file again"
            )
    return None


def _is_timestamp(value: Any) -> bool:
    """Whether ``value`` is an ISO 8601 date and time (``2026-11-27T10:00:00Z``)."""
    from datetime import datetime

    try:
        datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return False
    return True
