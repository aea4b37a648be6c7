"""Text models every stage shares: tokenizer, sentence embedder, HEP analyzer and entity dictionary.

They sit below chunking, indexing, NER and retrieval (see the import-linter contracts in ``pyproject.toml``):
``tokenizers`` counts tokens the way the embedding model does, ``embedder`` turns text into vectors
(sentence-transformers, cached per model), ``analyzer`` is the HEP-aware text normaliser behind BM25, and
``entities`` is the dictionary-based HEP entity extractor (``hep_entities.yaml``).
"""
