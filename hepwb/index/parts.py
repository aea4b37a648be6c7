"""The parts of a chunk table that are built only when a retriever reads them.

Every table holds the chunks' text, metadata, reader's context and HEP search terms with their paper's title
and section path (``search_context``, what the default ``bm25(fields=context)`` reads) with its full-text
index. The other parts (:data:`PARTS`) are built when a run first needs them
(:func:`~hepwb.retrieval.base.table_parts` says which a retriever reads):

* ``vector``: the chunks embedded (the only part that loads a model);
* ``search_text``: the chunks' HEP search terms alone, with their full-text index (``fields=text``);
* ``entities``: the chunks' HEP entities (the ``entity`` retriever);
* ``text_index``: the full-text index of the raw text (``bm25_plain``).

A part is added to the same table in place (Lance's ``add_columns``; an index on a new column), so the rows,
their order and the indexes built before stay as they are. The table's completion marker lists its parts;
a table whose marker lists none was built whole.

Example:
    >>> sorted(missing_parts({"index_key": "k", "parts": ["vector"]}, {"vector", "entities"}))
    ['entities']
    >>> sorted(missing_parts({"index_key": "k"}, {"vector", "entities"}))  # built whole
    []
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from pathlib import Path
from typing import Any

from hepwb.files.io import read_json_object
from hepwb.models.analyzer import search_terms
from hepwb.types import JSONObject

__all__ = [
    "COLUMNS",
    "PARTS",
    "has_vectors",
    "missing_parts",
    "part_udf",
    "present_parts",
    "table_marker",
    "table_parts_present",
]

PARTS = frozenset({"vector", "search_text", "entities", "text_index"})
"""The parts of a chunk table built only when a retriever reads them (see the module docstring)."""

COLUMNS = ("vector", "search_text", "entities")
"""The parts that are columns (``text_index`` is an index on the ``text`` column every table has)."""


def present_parts(marker: JSONObject) -> frozenset[str]:
    """The parts a completion marker says its table has (every part when it lists none)."""
    listed = marker.get("parts")
    return frozenset(str(p) for p in listed) if isinstance(listed, list) else PARTS


def missing_parts(marker: JSONObject, wanted: Collection[str]) -> frozenset[str]:
    """The parts of ``wanted`` the marker's table does not have yet."""
    return frozenset(wanted) - present_parts(marker)


def table_marker(db_path: str | Path, name: str) -> JSONObject:
    """The completion marker of table ``name`` in the LanceDB folder ``db_path``."""
    return read_json_object(Path(db_path) / "_complete" / f"{name}.json", "completion marker")


def table_parts_present(db_path: str | Path, name: str) -> frozenset[str]:
    """The parts the complete table ``name`` in the LanceDB folder ``db_path`` has (none if unreadable)."""
    try:
        return present_parts(table_marker(db_path, name))
    except ValueError:
        return frozenset()


def has_vectors(db_path: str | Path, name: str) -> bool:
    """Whether the complete table ``name`` holds its chunks' vectors."""
    return "vector" in table_parts_present(db_path, name)


def part_udf(
    columns: Iterable[str],
    dim: int,
    embed: Callable[[list[str]], Any],
    entities: Callable[[list[str]], list[list[str]]],
) -> Any:
    """A Lance batch function computing ``columns`` (of :data:`COLUMNS`) from each batch's ``text``.

    ``embed`` maps texts to an ``(n, dim)`` array of vectors; ``entities`` texts to their entity lists.
    """
    import lance
    import pyarrow as pa

    wanted = [c for c in COLUMNS if c in set(columns)]
    types = {
        "vector": pa.list_(pa.float32(), dim),
        "search_text": pa.string(),
        "entities": pa.list_(pa.string()),
    }
    schema = pa.schema([pa.field(c, types[c]) for c in wanted])

    @lance.batch_udf(output_schema=schema)
    def compute(batch: pa.RecordBatch) -> pa.RecordBatch:
        texts = batch.column("text").to_pylist()
        arrays = []
        for c in wanted:
            if c == "vector":
                vecs = embed(texts)
                arrays.append(pa.FixedSizeListArray.from_arrays(pa.array(vecs.ravel(), pa.float32()), dim))
            elif c == "search_text":
                arrays.append(pa.array([search_terms(t) for t in texts], pa.string()))
            else:
                arrays.append(pa.array(entities(texts), pa.list_(pa.string())))
        return pa.RecordBatch.from_arrays(arrays, wanted)

    return compute
