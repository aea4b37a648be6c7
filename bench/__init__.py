"""hepwb's benchmarks: one module per question, each run from the repository root as ``python -m bench.NAME``.

Every module imports hepwb's public API at its top (no ``sys.path`` edits), shares its helpers through
:mod:`bench.common`, and a bench that publishes a table writes it with :func:`bench.results.write_results`
(``docs/results/<name>.md``, stamped with the command, commit, machine and date). ``bench/README.md`` lists
the rules and the results files. hepwb never imports this package.
"""
