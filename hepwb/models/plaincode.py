"""hepwb loads model folders as data: a folder whose ``modules.json`` names code of its own is refused.

sentence-transformers builds a model from the classes its ``modules.json`` names. A class outside
sentence-transformers (``"evilmod.Evil"``, with ``evilmod.py`` beside it) is code shipped with the model,
which it would import and run given ``trust_remote_code``. hepwb never passes that, so such a folder
would fail deep inside the load; it is refused here instead, before any work, in one line.
"""

from __future__ import annotations

import re
from pathlib import Path

from hepwb import limits
from hepwb.files.parsers import read_json_file
from hepwb.files.readers import ReadError
from hepwb.text.plaintext import plain

__all__ = ["custom_code_problem"]

_MODULES = "modules.json"
_PLAIN_CLASS = re.compile(r"sentence_transformers(\.[A-Za-z_][A-Za-z0-9_]*)+")


def custom_code_problem(folder: Path) -> str | None:
    """Why the model folder ``folder`` would run code of its own (``None``: it names only library classes).

    A folder without ``modules.json`` (a bare transformers model, a cross-encoder) is left to its loader,
    which runs no shipped code without ``trust_remote_code``.

    Example:
        >>> import json, tempfile
        >>> folder = Path(tempfile.mkdtemp())
        >>> _ = (folder / "modules.json").write_text(json.dumps([{"type": "evilmod.Evil", "path": ""}]))
        >>> print(custom_code_problem(folder))  # doctest: +ELLIPSIS
        model folder ... (modules.json names custom code 'evilmod.Evil'); hepwb never runs a model's code
        >>> _ = (folder / "modules.json").write_text('[{"type": "sentence_transformers.models.Pooling"}]')
        >>> custom_code_problem(folder) is None
        True
    """
    path = folder / _MODULES
    if not path.is_file():
        return None
    fix = "rebuild or re-download the model"
    try:
        modules = read_json_file(path, "model modules file", fix=fix, max_bytes=limits.MAX_MODULES_JSON_BYTES)
    except ReadError as exc:
        return str(exc)
    entries = modules if isinstance(modules, list) else [modules]
    for entry in entries:
        kind = entry.get("type") if isinstance(entry, dict) else None
        if not isinstance(kind, str):
            return f"model folder {folder}: {_MODULES} is damaged (a module without a class name); {fix}"
        if not _PLAIN_CLASS.fullmatch(kind):
            shown = plain(kind)[:80]
            return (
                f"model folder {folder} is not a plain sentence-transformers model ({_MODULES} names custom "
                f"code {shown!r}); hepwb never runs a model's code"
            )
    return None
