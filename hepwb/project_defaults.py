"""A project's own default retriever and chunk size, pinned from its own report (not in the package).

The package's defaults (:data:`hepwb.defaults.RETRIEVER`, :data:`hepwb.defaults.CHUNK_SIZE`) were chosen
from the main job's verdict on the shipped corpus. A physicist whose report recommends something else
pins it with ``hepwb defaults pin`` (or :func:`hepwb.report.pin.pin_defaults`): the choice is written to
``hepwb-defaults.json`` at the project root, with where it came from, and every configuration built in
that project afterwards (CLI, Python API, notebooks, sweep cells that do not set them) starts from it.
``hepwb defaults unpin`` removes the file.

Example:
    >>> import tempfile, pathlib
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> current_defaults(root).retriever == defaults.RETRIEVER
    True
    >>> _ = write_defaults(ProjectDefaults("hybrid", 1024, "my report"), root)
    >>> current_defaults(root)
    ProjectDefaults(retriever='hybrid', chunk_size=1024, source='my report', pinned_in='hepwb-defaults.json')
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from hepwb import defaults, limits
from hepwb.exceptions import ConfigError
from hepwb.files.io import atomic_write_text
from hepwb.files.parsers import read_json_file
from hepwb.paths import find_project_root
from hepwb.text.plaintext import plain

__all__ = ["DEFAULTS_FILE", "ProjectDefaults", "current_defaults", "unpin_defaults", "write_defaults"]

DEFAULTS_FILE = "hepwb-defaults.json"
"""The file at the project root that pins the project's defaults."""


@dataclass(frozen=True)
class ProjectDefaults:
    """The default retriever (``NAME`` or ``NAME(KEY=VALUE, ...)``) and chunk size in force, and whence."""

    retriever: str
    chunk_size: int
    source: str = "hepwb.defaults (the main job's verdict on the shipped corpus)"
    pinned_in: str = ""


def _file(root: str | Path | None) -> Path:
    return Path(root if root is not None else find_project_root()) / DEFAULTS_FILE


def _read(path: Path) -> ProjectDefaults:
    fix = f"repair it, or remove it with `hepwb defaults unpin` (or delete {path})"
    data = read_json_file(path, "project defaults", fix=fix, max_bytes=limits.MAX_PROJECT_DEFAULTS_BYTES)
    try:
        retriever, size = data["retriever"], data["chunk_size"]
    except (KeyError, TypeError) as exc:
        msg = f"{path} is damaged ({type(exc).__name__}: {exc}); {fix}"
        raise ConfigError(msg) from None
    unknown = sorted(set(data) - {"retriever", "chunk_size", "source", "pinned"})
    if unknown:
        msg = f"{path}: unknown key(s) {unknown[:5]} (it holds retriever, chunk_size, source, pinned); {fix}"
        raise ConfigError(msg)
    if not isinstance(retriever, str) or not retriever.strip():
        msg = f"{path}: retriever must be a name, got {retriever!r}; {fix}"
        raise ConfigError(msg)
    problem = limits.CHUNK_SIZE.problem(size)  # refuses true and false too (JSON booleans are no sizes)
    if problem:
        msg = f"{path}: chunk_size: {problem}; {fix}"
        raise ConfigError(msg)
    source = data.get("source", "")
    if not isinstance(source, str) or len(source) > limits.MAX_NOTE_CHARS or plain(source) != source:
        what = "is no text" if not isinstance(source, str) else "holds control characters or is too long"
        msg = f"{path}: source {what} (a line saying where the defaults come from); {fix}"
        raise ConfigError(msg)
    return ProjectDefaults(retriever, int(size), source, path.name)


_CACHE: dict[Path, tuple[float, ProjectDefaults]] = {}


def current_defaults(root: str | Path | None = None) -> ProjectDefaults:
    """The defaults in force in the project at ``root`` (default: this project): pinned, or the package's.

    Raises:
        ConfigError: The project's ``hepwb-defaults.json`` is damaged (named, with the fix).
    """
    path = _file(root)
    try:
        mtime = path.stat().st_mtime
    except OSError:
        return ProjectDefaults(defaults.RETRIEVER, defaults.CHUNK_SIZE)
    cached = _CACHE.get(path)
    if cached is None or cached[0] != mtime:
        cached = _CACHE[path] = (mtime, _read(path))
    return cached[1]


def write_defaults(record: ProjectDefaults, root: str | Path | None = None) -> Path:
    """Write ``record`` as the project's defaults (:func:`hepwb.report.pin.pin_defaults` validates it).

    Raises:
        ConfigError: ``hepwb-defaults.json`` exists and is no regular file (a folder, a FIFO …).
    """
    body = {**asdict(record), "pinned": datetime.now(UTC).isoformat(timespec="seconds")}
    del body["pinned_in"]
    path = _file(root)
    if path.exists() and not path.is_file():
        kind = "a folder" if path.is_dir() else "not a regular file"
        msg = f"{path} is {kind}, so the defaults cannot be pinned there; remove or rename it, then pin again"
        raise ConfigError(msg)
    atomic_write_text(path, json.dumps(body, indent=2) + "\n")
    _CACHE.pop(path, None)
    return path


def unpin_defaults(root: str | Path | None = None) -> bool:
    """Remove the project's pinned defaults; whether there were any.

    Raises:
        ConfigError: ``hepwb-defaults.json`` is a folder (never deleted: it is not hepwb's), or cannot be
            removed (the message names the file and the reason).
    """
    path = _file(root)
    _CACHE.pop(path, None)
    if path.is_dir() and not path.is_symlink():
        msg = f"{path} is a folder, not pinned defaults, so hepwb leaves it alone; remove or rename it"
        raise ConfigError(msg)
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    except OSError as exc:
        msg = f"cannot remove the pinned defaults {path}: {exc.strerror or exc}; delete it yourself"
        raise ConfigError(msg) from None
    return True
