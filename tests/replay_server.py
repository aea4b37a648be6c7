"""A real HTTP server on 127.0.0.1 replaying the recorded arXiv, OAI-PMH and INSPIRE responses.

Routes (recorded material from ``../shared/corpus/fixtures``, served byte for byte unless noted):

* ``/api/query`` - arXiv API: the ``arxiv_api/*.json`` recording whose URL has the same
  ``search_query``/``id_list``/``start``/``max_results`` (404 otherwise).
* ``/oai`` - OAI-PMH: ``GetRecord`` for the recorded identifiers (1401.2122, 1305.0014, physics/0112006;
  1305.9999 gives the recorded ``idDoesNotExist`` error), ``ListRecords`` for ``physics:hep-ex`` and
  ``physics:hep-th``; set ``physics:hep`` pages through both files joined by a resumption token
  (real records, repackaged: no recorded multi-page response exists).
* ``/api/literature`` - INSPIRE: a search envelope (``hits.hits``/``hits.total``) built from the recorded
  literature records (no recorded search response exists), paged by ``size``/``page``;
  ``/api/literature/<recid>`` one record.
* ``/pdf/<arxiv id>`` - the shared corpus PDF of that arXiv id (``papers.json``), with ``Range`` support;
  ``/e-print/<arxiv id>`` - a tar.gz of that paper's LaTeX folder, built on the fly.

Faults are queued per path prefix with :meth:`ReplayServer.fault` and consumed one per request:
``429``/``503`` (with ``Retry-After: 1``), ``reset`` (connection closed without a response),
``truncate`` (half the body, then close), ``corrupt`` (one byte flipped), ``html`` (an HTML error page
with status 200), ``malformed`` (cut XML/JSON), ``xxe``, ``laughs`` (billion laughs), ``tar_dotdot``,
``tar_symlink``, ``exhausted`` (the normal answer with ``X-RateLimit-Remaining: 0`` and a reset 1 s ahead).
"""

from __future__ import annotations

import io
import json
import re
import tarfile
import threading
import time
from collections import defaultdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

FAULT_BODIES = {
    "xxe": b'<?xml version="1.0"?><!DOCTYPE feed [<!ENTITY x SYSTEM "file:///etc/passwd">]><feed>&x;</feed>',
    "laughs": b'<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "lol"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;">'
    b'<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;">]><feed>&c;</feed>',
}


def _tar(entries: list[tuple[str, bytes | None, str | None]]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data, link in entries:
            info = tarfile.TarInfo(name)
            if link is not None:
                info.type, info.linkname = tarfile.SYMTYPE, link
                tar.addfile(info)
            else:
                info.size = len(data or b"")
                tar.addfile(info, io.BytesIO(data or b""))
    return buf.getvalue()


class ReplayServer:
    """Context manager; ``url`` is the base URL, ``requests`` the (method, path, headers) seen."""

    def __init__(self, shared: Path) -> None:
        self.fixtures = shared / "corpus" / "fixtures"
        self.papers = shared / "corpus" / "papers"
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self._faults: dict[str, list[str]] = defaultdict(list)
        self._arxiv = self._index_arxiv()
        self._inspire = self._index_inspire()
        meta = json.loads((self.papers / "papers.json").read_text(encoding="utf-8"))["papers"]
        self.by_arxiv = {p["arxiv"]: p for p in meta if p.get("arxiv")}
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                outer.requests.append(("GET", self.path, dict(self.headers)))
                outer._serve(self)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    # -- indexes ---------------------------------------------------------------------------------
    def _index_arxiv(self) -> dict[tuple[str, str, str, str], dict[str, Any]]:
        out = {}
        for f in sorted((self.fixtures / "arxiv_api").glob("*.json")):
            rec = json.loads(f.read_text(encoding="utf-8"))
            q = parse_qs(urlparse(rec["url"]).query, keep_blank_values=True)
            key = tuple(q.get(k, [""])[0] for k in ("search_query", "id_list", "start", "max_results"))
            out[key] = rec
        return out

    def _index_inspire(self) -> dict[int, dict[str, Any]]:
        out = {}
        for f in sorted((self.fixtures / "inspire").glob("*.json")):
            rec = json.loads(f.read_text(encoding="utf-8"))
            meta = rec.get("metadata", rec)
            out[int(meta["control_number"])] = rec
        return out

    # -- faults ----------------------------------------------------------------------------------
    def fault(self, prefix: str, *kinds: str) -> None:
        """Queue faults for the next requests whose path starts with ``prefix``."""
        self._faults[prefix].extend(kinds)

    def _take_fault(self, path: str) -> str | None:
        for prefix, queue in self._faults.items():
            if path.startswith(prefix) and queue:
                return queue.pop(0)
        return None

    # -- serving ---------------------------------------------------------------------------------
    def _serve(self, h: BaseHTTPRequestHandler) -> None:
        parsed = urlparse(h.path)
        q = {k: v[0] for k, v in parse_qs(parsed.query, keep_blank_values=True).items()}
        fault = self._take_fault(parsed.path)
        if fault in ("429", "503"):
            return self._send(h, int(fault), b"busy", {"Retry-After": "1"})
        if fault == "reset":
            h.close_connection = True
            h.connection.close()
            return None
        if fault in FAULT_BODIES:
            return self._send(h, 200, FAULT_BODIES[fault], {"Content-Type": "application/xml"})
        if fault in ("tar_dotdot", "tar_symlink"):
            entry = (
                ("../../evil.tex", b"x", None)
                if fault == "tar_dotdot"
                else ("paper.tex", None, "/etc/passwd")
            )
            return self._send(h, 200, _tar([("main.tex", b"\\documentclass{article}", None), entry]))
        if fault == "html":
            return self._send(
                h, 200, b"<html><body>Access denied</body></html>", {"Content-Type": "text/html"}
            )
        status, body, headers = self._route(parsed.path, q, h.headers.get("Range"))
        if fault == "malformed":
            body = body[: len(body) // 2]
        if fault == "corrupt" and body:
            body = bytes([body[0] ^ 0xFF]) + body[1:]
        if fault == "exhausted":
            reset = str(int(time.time()) + 2)  # whole seconds: at least 1 s ahead
            headers.update(
                {"X-RateLimit-Limit": "15", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": reset}
            )
        if fault == "truncate":
            headers["Content-Length"] = str(len(body))
            return self._send(h, status, body[: len(body) // 2], headers, close=True)
        return self._send(h, status, body, headers)

    def _route(self, path: str, q: dict[str, str], rng: str | None) -> tuple[int, bytes, dict[str, str]]:
        if path == "/api/query":
            key = tuple(q.get(k, "") for k in ("search_query", "id_list", "start", "max_results"))
            rec = self._arxiv.get(key)
            if rec is None:
                return 404, b"no recording for this query", {}
            return rec["status_code"], rec["body"].encode("latin-1"), {"Content-Type": "application/atom+xml"}
        if path == "/oai":
            return self._oai(q)
        if path == "/api/literature":
            hits = list(self._inspire.values())
            size, page = int(q.get("size", 10)), int(q.get("page", 1))
            body = {"hits": {"total": len(hits), "hits": hits[(page - 1) * size : page * size]}}
            limits = {
                "X-RateLimit-Limit": "15",
                "X-RateLimit-Remaining": "14",
                "X-RateLimit-Reset": "1900000000",
            }
            return 200, json.dumps(body).encode(), {"Content-Type": "application/json", **limits}
        m = re.fullmatch(r"/api/literature/(\d+)", path)
        if m:
            rec = self._inspire.get(int(m.group(1)))
            return (
                (200, json.dumps(rec).encode(), {"Content-Type": "application/json"})
                if rec
                else (404, b"{}", {})
            )
        m = re.fullmatch(r"/(pdf|e-print)/(.+?)(v\d+)?", path)
        if m and m.group(2) in self.by_arxiv:
            paper = self.by_arxiv[m.group(2)]
            if m.group(1) == "pdf":
                return self._ranged((self.papers.parent / paper["pdf"]).read_bytes(), rng)
            tex = self.papers / "tex" / str(paper.get("tex") or paper["pid"])
            files = sorted(p for p in tex.rglob("*") if p.is_file()) if tex.is_dir() else []
            return 200, _tar([(str(p.relative_to(tex)), p.read_bytes(), None) for p in files]), {}
        return 404, b"not found", {}

    def _oai(self, q: dict[str, str]) -> tuple[int, bytes, dict[str, str]]:
        d = self.fixtures / "arxiv_oai"
        xml = {"Content-Type": "text/xml"}
        if q.get("verb") == "GetRecord":
            files = {
                "oai:arXiv.org:1401.2122": "hepcrawl__arxiv-single.xml",
                "oai:arXiv.org:1305.0014": "inspire-next__1305.0014.xml",
                "oai:arXiv.org:physics/0112006": "inspire-next__oai_arxiv.xml",
                "oai:arXiv.org:1305.9999": "inspire-next__1305.9999.xml",
            }
            name = files.get(q.get("identifier", ""))
            return (200, (d / name).read_bytes(), xml) if name else (404, b"", {})
        if q.get("verb") == "ListRecords":
            sets = {
                "physics:hep-ex": "hepcrawl__arxiv-physics-hep-ex.xml",
                "physics:hep-th": "hepcrawl__arxiv-physics-hep-th.xml",
            }
            if q.get("set") in sets:
                return 200, (d / sets[q["set"]]).read_bytes(), xml
            if q.get("set") == "physics:hep" or q.get("resumptionToken") == "page2":
                page2 = q.get("resumptionToken") == "page2"
                body = (d / sets["physics:hep-th" if page2 else "physics:hep-ex"]).read_bytes()
                if not page2:
                    body = body.replace(
                        b"</ListRecords>", b"<resumptionToken>page2</resumptionToken></ListRecords>"
                    )
                return 200, body, xml
        return 400, b"badVerb", {}

    @staticmethod
    def _ranged(data: bytes, rng: str | None) -> tuple[int, bytes, dict[str, str]]:
        head = {"Content-Type": "application/pdf", "Accept-Ranges": "bytes"}
        m = re.fullmatch(r"bytes=(\d+)-(\d*)", rng or "")
        if not m:
            return 200, data, head
        start = int(m.group(1))
        end = int(m.group(2)) if m.group(2) else len(data) - 1
        if start >= len(data):
            return 416, b"", {"Content-Range": f"bytes */{len(data)}"}
        return 206, data[start : end + 1], {**head, "Content-Range": f"bytes {start}-{end}/{len(data)}"}

    @staticmethod
    def _send(h: BaseHTTPRequestHandler, status: int, body: bytes, headers: dict[str, str] | None = None,
              close: bool = False) -> None:  # fmt: skip
        headers = dict(headers or {})
        h.send_response(status)
        headers.setdefault("Content-Length", str(len(body)))
        for k, v in headers.items():
            h.send_header(k, v)
        if close:
            h.send_header("Connection", "close")
        h.end_headers()
        h.wfile.write(body)
        if close:
            h.close_connection = True

    def __enter__(self) -> ReplayServer:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
