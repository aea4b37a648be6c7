"""Between ``.ragmd`` files and LanceDB: export any indexed chunk table, import a file as a searchable table.

An imported table has the columns and indexes of every hepwb chunk table (two HEP full-text indexes,
entities from the active NER source, vectors as stored in the file), so every retriever searches it. The
file's front matter and document list travel in the table's schema metadata, so exporting an imported
table gives back the same bytes.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from hepwb.exceptions import ConfigError
from hepwb.files.io import read_json_object, write_json
from hepwb.index.chunk_store import ChunkStore, build_indexes, chunk_arrow, open_chunk_table
from hepwb.index.lance import connect, replace_table, table_names
from hepwb.index.lexicon import acronyms_of, save_lexicon
from hepwb.index.parts import PARTS
from hepwb.models.embedder import get_embedder, model_slug
from hepwb.models.tokenizers import model_identity
from hepwb.ner.source import EntitySource, ner_source
from hepwb.ragmd.model import RagChunk, RagDocument, RagFile
from hepwb.ragmd.reader import load_searchable
from hepwb.ragmd.writer import dump, front_matter
from hepwb.text.ids import file_sha256
from hepwb.text.names import check_name
from hepwb.types import Chunk, Document, JSONObject

__all__ = ["META_KEY", "export_table", "import_file", "imported_name", "recorded_model", "table_file"]

META_KEY = b"hepwb.ragmd"


def _iso(ts: Any) -> str:
    if isinstance(ts, datetime):
        dt = ts if ts.tzinfo else ts.replace(tzinfo=UTC)
        return dt.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    return str(ts)


def _saved(tbl: Any) -> JSONObject:
    """What an imported file left in the table's schema metadata (``{}`` for other tables)."""
    return dict(json.loads((tbl.schema.metadata or {}).get(META_KEY, b"{}")))


def recorded_model(tbl: Any) -> str | None:
    """The embedding model an imported ``.ragmd`` file named (``None`` for other tables)."""
    model = _saved(tbl).get("front_matter", {}).get("model_name")
    return str(model) if model else None


def table_file(tbl: Any, model_name: str, chunkset_id: str) -> RagFile:
    """The contents of chunk table ``tbl`` as a :class:`RagFile` (timestamps from the table's versions)."""
    data = tbl.to_arrow()
    saved = _saved(tbl)
    cols = data.to_pydict()
    docs: dict[str, RagDocument] = {}
    for did, label, title, arxiv in zip(
        cols["document_id"], cols["label"], cols["title"], cols["arxiv"], strict=True
    ):
        docs.setdefault(did, RagDocument(did, label, title, arxiv))
    for d in saved.get("documents", []):  # an imported file's own records (titles as written, chunkless ones)
        docs[d["document_id"]] = RagDocument(**d)
    chunks = []
    for i in range(data.num_rows):
        own = (cols["context_start"][i], cols["context_end"][i]) == (cols["start"][i], cols["end"][i])
        chunks.append(
            RagChunk(
                cols["chunk_id"][i],
                cols["document_id"][i],
                int(cols["chunk_index"][i]),
                int(cols["start"][i]),
                int(cols["end"][i]),
                cols["text"][i],
                tuple(cols["pages"][i] or ()),
                cols["section"][i],
                int(cols["token_count"][i]),
                -1 if own else int(cols["context_start"][i]),
                -1 if own else int(cols["context_end"][i]),
                "" if own else cols["context_text"][i],
            )
        )
    if data.num_rows:
        col = data["vector"].combine_chunks()
        vecs = col.flatten().to_numpy().astype("<f4", copy=False).reshape(data.num_rows, col.type.list_size)
    else:
        vecs = np.zeros((0, 0), "<f4")
    fm = saved.get("front_matter", {})
    if fm:
        created, updated = fm["created_at"], fm["updated_at"]
        model_name, chunkset_id = fm["model_name"], fm["chunkset_id"]
    else:
        versions = sorted(tbl.list_versions(), key=lambda v: v["version"])
        created, updated = _iso(versions[0]["timestamp"]), _iso(versions[-1]["timestamp"])
    return RagFile(model_name, chunkset_id, created, updated, list(docs.values()), chunks, vecs).sorted()


def export_table(db_path: str | Path, chunkset_id: str, model: str, out: str | Path) -> Path:
    """Write the table of ``chunkset_id`` embedded with ``model`` (or the table so named) to ``out``."""
    db = connect(db_path)
    if chunkset_id in table_names(db):  # a table name (an imported file, say)
        tbl = db.open_table(chunkset_id)
        cs_id = chunkset_id.split("__", 1)[0]
    else:
        tbl = open_chunk_table(db_path, chunkset_id, model)
        cs_id = chunkset_id
        # a table built for lexical search: its vectors (and the other parts a file holds) are added now
        tbl = ChunkStore(db_path, get_embedder(model)).with_parts(tbl.name, PARTS)
    return dump(table_file(tbl, model, cs_id), out)


def imported_name(path: str | Path, model: str) -> str:
    """The default table name of an imported file: ``ragmd-<file stem>__<model slug>``."""
    import re

    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", Path(path).stem) or "file"
    return f"ragmd-{stem}__{model_slug(model_identity(model))}"


def import_file(
    path: str | Path, db_path: str | Path, *, table: str | None = None, ner: EntitySource | None = None
) -> tuple[str, int]:
    """Load ``path`` (checked whole first) into LanceDB table ``table``; return (table name, rows).

    The table is replaced only after the whole file has been read and checked; its completion marker,
    written last, holds the file's SHA-256 (an unchanged file is not imported twice).
    """
    rf = load_searchable(path)  # raises with every problem before anything is written
    name = check_name(table, "table") if table is not None else imported_name(path, rf.model_name)
    if "__" not in name:
        example = imported_name(path, rf.model_name)
        msg = f"table name {name!r} must look like <chunkset>__<model>, e.g. {example}"
        raise ConfigError(msg)
    sha = file_sha256(path)
    marker = Path(db_path) / "_complete" / f"{name}.json"
    db = connect(db_path)
    done = read_json_object(marker, "completion marker") if marker.is_file() else {}
    if done.get("source_sha256") == sha and name in table_names(db):
        return name, int(done["rows"])
    ner = ner if ner is not None else ner_source()
    docs = {
        d.document_id: Document(d.document_id, d.label, "", (), {"title": d.title, "arxiv": d.arxiv})
        for d in rf.documents
    }
    chunks = [
        Chunk(
            c.chunk_id,
            c.document_id,
            c.chunk_index,
            c.i_start,
            c.i_end,
            c.text,
            c.token_count,
            tuple(s for s in c.section.split(" > ") if s),
            c.pages,
            context_start=c.context_start,
            context_end=c.context_end,
        )
        for c in rf.chunks
    ]
    arrow = chunk_arrow(
        chunks, docs, rf.vectors, ner.batch([c.text for c in rf.chunks]), [c.context_text for c in rf.chunks]
    )
    saved = {"front_matter": front_matter(rf), "documents": [vars(d) for d in rf.documents]}
    arrow = arrow.replace_schema_metadata({META_KEY: json.dumps(saved, sort_keys=True).encode()})
    tbl = replace_table(db, name, arrow)
    build_indexes(tbl)
    per_doc: dict[str, list[str]] = {}
    for c in rf.chunks:
        per_doc.setdefault(c.document_id, []).append(c.text)
    save_lexicon(db_path, name.split("__", 1)[0], acronyms_of("\n".join(t) for t in per_doc.values()))
    write_json(
        marker,
        {
            "index_key": f"ragmd:{sha[:12]}",
            "rows": len(chunks),
            "ner_model": ner.model,
            "source": str(Path(path).resolve()),
            "source_sha256": sha,
        },
    )
    return name, len(chunks)
