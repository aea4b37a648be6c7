"""``processing_log.json``: structured log entries (HEPilot ``log_entry`` schema), also sent to logging."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from hepwb.files.io import read_json, write_json
from hepwb.hepilot.records import LogEntry

__all__ = ["ProcessingLog", "utc_now"]

_logger = logging.getLogger("hepwb")
Level = Literal["debug", "info", "warning", "error", "critical"]


def utc_now() -> str:
    """Current UTC time as ISO 8601 with a ``Z`` suffix."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class ProcessingLog:
    """Collects log entries of one session (one ``trace_id``) and appends them to a JSON array file."""

    def __init__(self, trace_id: str | None = None) -> None:
        self.trace_id = trace_id or str(uuid.uuid4())
        self.entries: list[LogEntry] = []

    def add(
        self,
        level: Level,
        component: str,
        message: str,
        *,
        document_id: str | None = None,
        error_code: str | None = None,
        recovery_action: str | None = None,
        detail: bool = False,
        **context: Any,
    ) -> LogEntry:
        """Record one event (and log it through :mod:`logging`).

        ``detail=True`` marks a per-document line: recorded at its level in the processing log, sent to
        :mod:`logging` at DEBUG only, so a run over thousands of papers prints its summaries, not one
        line per paper.
        """
        entry = LogEntry(
            timestamp=utc_now(),
            trace_id=self.trace_id,
            level=level,
            component=component,
            message=message,
            document_id=document_id,
            error_code=error_code,
            recovery_action=recovery_action,
            context=context or None,
        )
        self.entries.append(entry)
        echo = logging.DEBUG if detail else logging.getLevelNamesMapping()[level.upper()]
        _logger.log(echo, message)
        return entry

    @property
    def errors(self) -> list[LogEntry]:
        """Entries at level error or critical."""
        return [e for e in self.entries if e.level in ("error", "critical")]

    def filtered(self, keep: Callable[[LogEntry], bool]) -> ProcessingLog:
        """A log with the same trace id holding only the entries for which ``keep`` is true."""
        out = ProcessingLog(self.trace_id)
        out.entries = [e for e in self.entries if keep(e)]
        return out

    def save(self, path: str | Path) -> None:
        """Append this session's entries to the JSON array at ``path`` (created if missing)."""
        path = Path(path)
        old: list[Any] = read_json(path) if path.is_file() else []
        if not isinstance(old, list):  # pragma: no cover - foreign file
            old = []
        write_json(path, old + [e.dump() for e in self.entries])
