"""The HEPilot output layout: models, writer, processing log and schema validation."""

from __future__ import annotations

from hepwb.hepilot.log import ProcessingLog, utc_now
from hepwb.hepilot.schemas import validate_record, validate_tree
from hepwb.hepilot.writer import (
    chunk_output_record,
    document_dir,
    document_metadata,
    source_type_of,
    write_catalog,
    write_document,
)

__all__ = [
    "ProcessingLog",
    "chunk_output_record",
    "document_dir",
    "document_metadata",
    "source_type_of",
    "utc_now",
    "validate_record",
    "validate_tree",
    "write_catalog",
    "write_document",
]


def __dir__() -> list[str]:
    return __all__
