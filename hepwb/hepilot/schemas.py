"""Validate hepwb outputs against the HEPilot JSON schemas (draft 2020-12, formats checked).

The schemas are read from a folder given by the caller (``../shared/hepilot`` in this project);
hepwb does not vendor them.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from hepwb.exceptions import SchemaValidationError
from hepwb.files.parsers import parse_json, read_json_file
from hepwb.files.readers import ReadError, read_text

__all__ = ["schema_for_file", "validate_record", "validate_tree"]

_FIX = "a HEPilot output file is JSON as RFC 8259 defines it: fix it or build the chunk set again"

_FILE_SCHEMAS = {
    "catalog.json": "catalog",
    "document_metadata.json": "document_metadata",
    "processing_metadata.json": "processing_metadata",
    "adapter_config.json": "adapter_config",
}


def schema_for_file(name: str) -> str | None:
    """The schema name for an output file name (``None`` for files without one)."""
    if name in _FILE_SCHEMAS:
        return _FILE_SCHEMAS[name]
    if name.startswith("chunk_") and name.endswith("_metadata.json"):
        return "chunk_metadata"
    if name == "processing_log.json":
        return "log_entry"  # an array of entries
    if name in ("discovery_output.json", "acquisition_output.json"):
        return name.removesuffix(".json")
    return None


@lru_cache(maxsize=32)
def _validator(schema_dir: str, name: str) -> Any:
    from jsonschema import Draft202012Validator, FormatChecker

    path = Path(schema_dir) / f"{name}.schema.json"
    if not path.is_file():
        msg = f"schema {path} not found; pass the folder holding the HEPilot *.schema.json files"
        raise SchemaValidationError(msg)
    schema = read_json_file(path, "HEPilot schema", fix="pass the folder of the HEPilot *.schema.json files")
    return Draft202012Validator(schema, format_checker=FormatChecker(), registry=_registry(schema_dir))


@lru_cache(maxsize=4)
def _registry(schema_dir: str) -> Any:
    """Every schema of the folder under its ``$id``, so relative ``$ref`` s resolve locally (no network)."""
    from referencing import Registry, Resource

    resources = []
    for f in sorted(Path(schema_dir).glob("*.schema.json")):
        doc = read_json_file(f, "HEPilot schema", fix="pass the folder of the HEPilot *.schema.json files")
        resources.append((doc.get("$id", f.name), Resource.from_contents(doc)))
    return Registry().with_resources(resources)


def validate_record(record: Any, schema: str, schema_dir: str | Path) -> list[str]:
    """Return the validation errors of ``record`` against schema ``schema`` (empty when valid)."""
    v = _validator(str(Path(schema_dir).resolve()), schema)
    return [f"{'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}" for e in v.iter_errors(record)]


def _outside(path: Path, inside: Path) -> str:
    """Why ``path`` is not a file of the tree at ``inside`` (a link out of it, a loop), or ``""``."""
    try:
        target = path.resolve(strict=True)
    except (OSError, RuntimeError) as exc:
        return f"a link that leads nowhere ({type(exc).__name__})"
    return "" if target.is_relative_to(inside) else f"a link to {target}, outside the folder validated"


def validate_tree(
    root: str | Path, schema_dir: str | Path, *, progress: bool = False
) -> dict[str, list[str]]:
    """Read every JSON file under ``root`` and validate those with a HEPilot schema.

    Every file must be JSON as RFC 8259 defines it: ``NaN``, ``Infinity`` and a number beyond a float
    (``1e999``) are errors, although Python reads them. A file that is a link to a file outside ``root``
    (``extra.json -> /etc/passwd``) is an error too, and is not read.

    Returns:
        ``{relative path: errors}`` of the files that do not parse (any JSON file) or do not validate.
    """
    from tqdm.auto import tqdm

    root = Path(root)
    inside = root.resolve()
    failures: dict[str, list[str]] = {}
    files = sorted(root.rglob("*.json"))
    for path in tqdm(files, desc=f"validating {root.name}", unit="file", disable=not progress):
        outside = _outside(path, inside)
        if outside:  # a link out of the tree (or a loop): never read
            failures[path.relative_to(root).as_posix()] = [
                f"{outside}, not read: a HEPilot output tree holds its own files (put the file itself there)"
            ]
            continue
        schema = schema_for_file(path.name)
        what = "HEPilot file" if schema else "JSON file"
        try:  # every JSON file of the tree is read (bounded, RFC 8259: no NaN), those with a schema validated
            data = parse_json(read_text(path, what, fix=_FIX), f"{what} {path}", fix=_FIX, strict=True)
        except ReadError as exc:  # damaged: reported with the others, the rest still validated
            failures[path.relative_to(root).as_posix()] = [str(exc)]
            continue
        if schema is None:
            continue
        records = data if path.name == "processing_log.json" else [data]
        errs = [err for rec in records for err in validate_record(rec, schema, schema_dir)]
        if path.name == "processing_log.json" and not isinstance(data, list):
            errs.append("<root>: processing_log.json must be a JSON array of log entries")
        if errs:
            failures[path.relative_to(root).as_posix()] = errs
    return failures
