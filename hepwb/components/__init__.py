"""Components by name: registries, ``name(option=value)`` specifications and their declared options.

Chunkers, retrievers, rerankers and vector indexes register by name (:mod:`hepwb.components.registry`),
so papermill parameters and CLI options stay plain strings; :mod:`hepwb.components.callspec` parses what
a user writes and :mod:`hepwb.components.options` checks it against the component's signature.
"""
