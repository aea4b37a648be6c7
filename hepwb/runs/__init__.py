"""Run folders: the typed record of one evaluation run and its tables, written once and read everywhere.

:mod:`~hepwb.runs.record` (``run.json``: configuration, versions, inputs' hashes, metrics) and
:mod:`~hepwb.runs.folder` (``hits.parquet`` and ``per_question.parquet``, read with their values checked).
"""
