"""One call from a query to a corpus folder: discover, acquire, write the HEPilot outputs and sidecar.

Example (in a notebook)::

    res = acquire_corpus("data/raw/dvcs", source="inspire", query="t dvcs and cn hermes", max_results=10)
    res.corpus   # data/raw/dvcs/pdf, ready for ingest(...)

``source`` is ``arxiv`` (REST API search and/or ``ids``), ``oai`` (a set and date range),
``inspire`` (INSPIRE literature search; PDFs and LaTeX come from arXiv) or ``local`` (a folder of
PDFs, copied and verified the same way). The output folder holds
``discovery_output.json``, ``acquisition_output.json``, ``acquisition_config.json`` (the settings
and their ``config_hash``, computed as for ``adapter_config.json``; credentials never written),
``processing_log.json``, ``papers.json``, ``pdf/`` and ``tex/``.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hepwb import defaults, limits
from hepwb.acquisition.acquire import (
    acquire,
    discovered,
    discovered_inspire,
    discovered_local,
    discovery_output,
    write_sidecar,
)
from hepwb.acquisition.arxiv import ArxivAPI, ArxivOAI
from hepwb.acquisition.http import PoliteClient
from hepwb.acquisition.inspire import InspireAPI
from hepwb.exceptions import ConfigError, ProcessingError
from hepwb.files.io import read_json, write_json
from hepwb.hepilot.log import ProcessingLog
from hepwb.hepilot.schemas import validate_record
from hepwb.paths import shared_dir
from hepwb.runtime.urls import check_http_url
from hepwb.text.ids import config_hash
from hepwb.text.plaintext import plain
from hepwb.types import JSONObject

__all__ = ["AcquireConfig", "AcquireResult", "acquire_corpus", "load_credentials"]

_log = logging.getLogger(__name__)

SOURCES = ("arxiv", "oai", "inspire", "local")


def _env(name: str, default: str) -> str:
    return os.environ.get(name) or default


def _env_seconds(name: str, default: float) -> float:
    """``$name`` as seconds (``default`` when unset); text that is no number is refused, naming it."""
    text = os.environ.get(name)
    if not text:
        return default
    try:
        return float(text)
    except ValueError:
        msg = f"{name}={plain(text)[:40]!r} is no number of seconds; set it to e.g. 3, or unset it"
        raise ConfigError(msg) from None


_URL_OPTIONS = (
    ("arxiv_url", "--arxiv-url (HEPWB_ARXIV_API_URL)", "https://export.arxiv.org/api/query"),
    ("oai_url", "--oai-url (HEPWB_ARXIV_OAI_URL)", "https://oaipmh.arxiv.org/oai"),
    ("inspire_url", "--inspire-url (HEPWB_INSPIRE_URL)", "https://inspirehep.net/api"),
    ("pdf_base", "--pdf-base (HEPWB_ARXIV_PDF_BASE)", "https://arxiv.org"),
)
"""Each service URL of the configuration: its field, where it is set, and the public service's URL."""


@dataclass(frozen=True)
class AcquireConfig:
    """Where and how to acquire (plain values: notebook parameters, CLI options).

    Base URLs default to the public services; ``HEPWB_ARXIV_API_URL``, ``HEPWB_ARXIV_OAI_URL``,
    ``HEPWB_INSPIRE_URL`` and ``HEPWB_ARXIV_PDF_BASE`` point them at mirrors; ``HEPWB_MIN_INTERVAL_S``
    changes the pause between requests to one host (3 s, as arXiv asks).
    """

    source: str = "arxiv"
    query: str = ""
    ids: tuple[str, ...] = ()
    oai_set: str = ""
    date_from: str = ""
    date_until: str = ""
    max_results: int = defaults.ACQUIRE_MAX_RESULTS
    sources: bool = True
    arxiv_url: str = field(default_factory=lambda: _env("HEPWB_ARXIV_API_URL", _URL_OPTIONS[0][2]))
    oai_url: str = field(default_factory=lambda: _env("HEPWB_ARXIV_OAI_URL", _URL_OPTIONS[1][2]))
    inspire_url: str = field(default_factory=lambda: _env("HEPWB_INSPIRE_URL", _URL_OPTIONS[2][2]))
    pdf_base: str = field(default_factory=lambda: _env("HEPWB_ARXIV_PDF_BASE", _URL_OPTIONS[3][2]))
    min_interval_s: float = field(
        default_factory=lambda: _env_seconds("HEPWB_MIN_INTERVAL_S", defaults.ACQUIRE_MIN_INTERVAL_S)
    )
    credential_id: str = ""
    folder: str = ""

    def validate(self) -> None:
        """Refuse inconsistent settings with a message saying what to set."""
        if self.source not in SOURCES:
            msg = f"unknown source {self.source!r}; choose one of {SOURCES}"
            raise ConfigError(msg)
        if self.source == "arxiv" and not (self.query or self.ids):
            msg = "source 'arxiv' needs a query (--query 'cat:hep-ex AND ti:DVCS') or ids (--ids 1707.08567)"
            raise ConfigError(msg)
        if self.source == "inspire" and not self.query:
            msg = "source 'inspire' needs a query in INSPIRE syntax, e.g. --query 't dvcs and cn hermes'"
            raise ConfigError(msg)
        if self.source == "oai" and not (self.oai_set or self.date_from):
            msg = (
                "source 'oai' needs a set (--oai-set physics:hep-ex) and/or a date range (--from 2024-01-01)"
            )
            raise ConfigError(msg)
        if self.source == "local" and not self.folder:
            msg = "source 'local' needs a folder of PDFs: folder='...' (CLI: --folder DIR)"
            raise ConfigError(msg)
        for bound, value in (
            (limits.ACQUIRE_MAX_RESULTS, self.max_results),
            (limits.ACQUIRE_MIN_INTERVAL_S, self.min_interval_s),
        ):
            problem = bound.problem(value)
            if problem:  # a NaN or negative interval would drop the pause arXiv asks for, in silence
                raise ConfigError(problem)
        for name, what, public in _URL_OPTIONS:  # refused before anything connects (file:// included)
            check_http_url(getattr(self, name), what, fix=f"give the service's base URL, e.g. {public}")


@dataclass
class AcquireResult:
    """What :func:`acquire_corpus` produced."""

    out_dir: Path
    entries: list[JSONObject]
    acquisition: JSONObject
    log: ProcessingLog = field(repr=False)

    @property
    def corpus(self) -> Path:
        """The folder of PDFs to ingest."""
        return self.out_dir / "pdf"

    @property
    def n_ok(self) -> int:
        """Documents acquired and verified."""
        return sum(d["validation_status"] != "failed" for d in self.acquisition["acquired_documents"])


def load_credentials(
    path: str | Path, credential_id: str, schema_dir: str | Path | None = None
) -> dict[str, str]:
    """HTTP headers for credential ``credential_id`` of a ``credentials.json`` (validated; never logged)."""
    path = Path(path)
    if not path.is_file():
        what = "not found" if not path.exists() else "not a regular file (a folder, device or pipe)"
        msg = (
            f"credentials file {path} is {what}; give the path of a credentials.json (git-ignored) or "
            "drop --credential-id"
        )
        raise ConfigError(msg)
    data = read_json(path)
    if schema_dir is not None:
        errors = validate_record(data, "credentials", schema_dir)
        if errors:
            where = errors[0].split(":")[0]
            msg = f"{path} does not follow credentials.schema.json at {where} (values not shown)"
            raise ConfigError(msg)
    for cred in data.get("credentials", []):
        if cred.get("id") == credential_id:
            if cred.get("type") == "api_key":
                return {"X-API-Key": str(cred["key"])}
            if cred.get("type") == "bearer_token":
                return {"Authorization": f"Bearer {cred['token']}"}
            kind = cred.get("type")
            msg = f"credential {credential_id!r} has type {kind!r}; hepwb supports api_key and bearer_token"
            raise ConfigError(msg)
    msg = f"no credential with id {credential_id!r} in {path}"
    raise ConfigError(msg)


def _discover(cfg: AcquireConfig, client: Any, log: ProcessingLog) -> list[JSONObject]:
    from itertools import islice

    if cfg.source == "arxiv":
        api = ArxivAPI(client, cfg.arxiv_url)
        records = list(api.iter_search(cfg.query, list(cfg.ids) or None, limit=cfg.max_results))
        oai = ArxivOAI(client, cfg.oai_url)  # the spec asks arXiv adapters for both interfaces:
        for r in records:  # OAI-PMH arXivRaw adds the version history
            try:
                raw = oai.get_record(r.arxiv_id, prefix="arXivRaw")
            except (ProcessingError, ValueError) as exc:  # HTTP failure or a malformed OAI answer
                raw = None
                note = f"{r.arxiv_id}: no OAI-PMH version history ({exc}); versions from the arXiv API only"
                _log.warning("%s", note)
                log.add("warning", "discovery", note)
            if raw is not None:
                r.versions = raw.versions
        return discovered(records)
    if cfg.source == "local":
        return discovered_local(cfg.folder, cfg.max_results)
    if cfg.source == "oai":
        oai = ArxivOAI(client, cfg.oai_url)
        recs = oai.list_records(cfg.oai_set or None, cfg.date_from or None, cfg.date_until or None)
        return discovered(islice(recs, cfg.max_results))
    return discovered_inspire(InspireAPI(client, cfg.inspire_url).search(cfg.query, limit=cfg.max_results))


def acquire_corpus(
    out_dir: str | Path,
    cfg: AcquireConfig | None = None,
    *,
    credentials: str | Path | None = None,
    log: ProcessingLog | None = None,
    **params: Any,
) -> AcquireResult:
    """Discover and acquire per ``cfg`` (or keyword parameters of :class:`AcquireConfig`)."""
    import dataclasses

    if cfg is None:
        names = {f.name for f in dataclasses.fields(AcquireConfig)}
        unknown = sorted(set(params) - names)
        if unknown:
            msg = f"unknown parameter(s) {unknown}; valid: {sorted(names)}"
            raise ConfigError(msg)
        if isinstance(params.get("ids"), list | str):
            ids = params["ids"]
            params["ids"] = tuple(
                i.strip() for i in (ids.split(",") if isinstance(ids, str) else ids) if i.strip()
            )
        cfg = AcquireConfig(**params)
    cfg.validate()
    headers = None
    if credentials and cfg.credential_id:  # refused before anything is written
        schemas = shared_dir() / defaults.SCHEMA_FOLDER
        headers = load_credentials(credentials, cfg.credential_id, schemas if schemas.is_dir() else None)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    log = log or ProcessingLog()
    with PoliteClient(min_interval_s=cfg.min_interval_s, headers=headers) as client:
        entries = _discover(cfg, client, log)
        for e in entries if cfg.source != "local" else []:  # PDFs and sources from the arXiv host
            ax = e.get("arxiv", {})
            version = f"v{ax['version']}" if ax.get("version") else ""
            e["source_url"] = f"{cfg.pdf_base}/pdf/{ax['id']}{version}"
            ax["source_url"] = f"{cfg.pdf_base}/e-print/{ax['id']}{version}"
        write_json(out / "discovery_output.json", discovery_output(entries, client))
        acquisition = acquire(entries, out, client, sources=cfg.sources, log=log)
    write_sidecar(entries, acquisition, out)
    settings = {k: v for k, v in dataclasses.asdict(cfg).items() if k != "credential_id"}
    write_json(out / "acquisition_config.json", {**settings, "config_hash": config_hash(settings)})
    return AcquireResult(out, entries, acquisition, log)
