"""Pydantic models of the HEPilot output records (written from the spec, not vendored).

Each model forbids unknown fields, as the schemas do, and :meth:`_Record.dump` gives the JSON-ready
dict without unset optional fields.

Example:
    >>> ProcessingMetadata(processor_used="hepwb-pdf/0.1.0", processing_timestamp="2026-01-01T00:00:00Z",
    ...                    processing_duration=0.5).dump()["processor_used"]
    'hepwb-pdf/0.1.0'
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from hepwb.limits import HEPILOT_CHUNK_OVERLAP, HEPILOT_CHUNK_SIZE
from hepwb.types import JSONObject

__all__ = [
    "AdapterConfig",
    "CatalogEntry",
    "ChunkMetadata",
    "ChunkOutput",
    "ContentFeatures",
    "DocumentMetadata",
    "HepilotCatalog",
    "LogEntry",
    "OverlapInfo",
    "ProcessingConfig",
    "ProcessingMetadata",
]

SourceType = Literal["arxiv", "indico", "internal_notes", "twiki", "code_docs", "code", "other"]


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    def dump(self) -> JSONObject:
        """JSON-ready dict, optional fields left out when unset."""
        return self.model_dump(mode="json", exclude_none=True)


class ProcessingConfig(_Record):
    """``adapter_config.processing_config``."""

    chunk_size: int = Field(ge=HEPILOT_CHUNK_SIZE.low, le=HEPILOT_CHUNK_SIZE.high)
    chunk_overlap: float = Field(ge=HEPILOT_CHUNK_OVERLAP.low, lt=HEPILOT_CHUNK_OVERLAP.high)
    preserve_tables: bool = True
    preserve_equations: bool = True


class AdapterConfig(_Record):
    """``adapter_config`` (wrapped under that key when written)."""

    name: str
    version: str = Field(pattern=r"^\d+\.\d+\.\d+$")
    source_type: SourceType
    processing_config: ProcessingConfig
    config_hash: str = Field(pattern=r"^[A-Fa-f0-9]{64}$")
    credential_id: str | None = None
    profile: str | None = None
    x_extension: JSONObject | None = None


class DocumentMetadata(_Record):
    """``document_metadata.json``."""

    document_id: str
    source_type: str
    original_url: str
    title: str
    file_hash: str
    file_size: int
    processing_timestamp: str
    adapter_version: str
    local_path: str | None = None
    authors: list[str] | None = None
    publication_date: str | None = None
    subject_categories: list[str] | None = None
    language: str | None = None
    experiment_tags: list[str] | None = None
    collaboration: str | None = None
    license: str | None = None


class ProcessingMetadata(_Record):
    """``processing_metadata.json``."""

    processor_used: str
    processing_timestamp: str
    processing_duration: float
    conversion_warnings: list[str] | None = None


class OverlapInfo(_Record):
    """``chunk_metadata.overlap_info``."""

    has_previous_overlap: bool
    has_next_overlap: bool
    overlap_token_count: int


class ChunkMetadata(_Record):
    """``chunk_NNNN_metadata.json``."""

    chunk_id: str
    document_id: str
    chunk_index: int
    total_chunks: int
    token_count: int
    section_hierarchy: list[str] | None = None
    character_count: int | None = None
    chunk_type: str | None = None
    contains_equations: bool | None = None
    contains_tables: bool | None = None
    overlap_info: OverlapInfo | None = None


class ContentFeatures(_Record):
    """``chunk_output.content_features``."""

    heading_count: int
    list_count: int
    table_count: int
    equation_count: int


class ChunkOutput(_Record):
    """A chunk with its content, as the Chunking Engine emits it (``chunk_output`` schema)."""

    chunk_id: str
    document_id: str
    chunk_index: int
    total_chunks: int
    content: str
    token_count: int
    chunk_type: Literal["text", "table", "equation", "mixed"] | None = None
    section_path: list[str] | None = None
    has_overlap_previous: bool | None = None
    has_overlap_next: bool | None = None
    content_features: ContentFeatures | None = None


class CatalogEntry(_Record):
    """One ``catalog.json`` document entry."""

    document_id: str
    source_type: str
    title: str
    chunk_count: int
    file_path: str


class HepilotCatalog(_Record):
    """``catalog.json``."""

    creation_timestamp: str
    adapter_version: str
    total_documents: int
    total_chunks: int
    documents: list[CatalogEntry]
    source_distribution: dict[str, int] | None = None


class LogEntry(_Record):
    """One entry of ``processing_log.json``."""

    timestamp: str
    trace_id: str
    level: Literal["debug", "info", "warning", "error", "critical"]
    component: str
    message: str
    document_id: str | None = None
    error_code: str | None = None
    recovery_action: str | None = None
    context: JSONObject | None = None
