"""Files: bounded reading and parsing, atomic writes, YAML, locks, DuckDB files and folder publication.

Every file a user or an earlier run gives hepwb is read through :mod:`hepwb.files.readers` and parsed by
:mod:`hepwb.files.parsers` (JSON, JSONL, CSV) or :mod:`hepwb.files.yamlio`; writes are atomic
(:mod:`hepwb.files.io`), artefacts of several files are published manifest last
(:mod:`hepwb.files.publish`), expensive builds take a lock (:mod:`hepwb.files.locks`).
"""
