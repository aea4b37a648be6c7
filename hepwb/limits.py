"""The bounds of every user input, in one place: no parameter or file can exhaust the machine.

Each bounded parameter is a :class:`Bound`: its range, its unit and an example. Its
:meth:`Bound.problem` is the one message the configuration, sweep files, the CLI, the widgets and the
chunkers report for a value out of range.

Example:
    >>> MIN_CHUNK_SIZE, MAX_CHUNK_SIZE, MAX_K, MAX_QUESTION_CHARS
    (8, 32768, 1000, 4000)
    >>> CHUNK_SIZE.problem(4)
    'chunk_size is a whole number of tokens from 8 to 32768, got 4 (e.g. 512)'
    >>> CHUNK_OVERLAP.problem(0.25) is None
    True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hepwb.exceptions import ConfigError

__all__ = [
    "ACQUIRE_MAX_RESULTS",
    "ACQUIRE_MIN_INTERVAL_S",
    "ADAPT_MAX_BATCH",
    "ADAPT_MAX_EPOCHS",
    "ADAPT_MAX_LLM_QUESTIONS",
    "ADAPT_MAX_PAIRS_CAP",
    "ADAPT_MIN_EPOCHS",
    "ADAPT_MIN_PAIRS",
    "BOOST",
    "BREAKPOINT_PERCENTILE",
    "CHUNK_OVERLAP",
    "CHUNK_SIZE",
    "COUNT",
    "EF",
    "EF_CONSTRUCTION",
    "FETCH",
    "GATEWAY_MAX_WORKER_CORES",
    "GATEWAY_MAX_WORKER_GIB",
    "GATEWAY_MIN_WORKER_GIB",
    "GATEWAY_START_S",
    "GATEWAY_WAIT_S",
    "HALVING_ETA",
    "HALVING_MIN_QUESTIONS",
    "HEPILOT_CHUNK_OVERLAP",
    "HEPILOT_CHUNK_SIZE",
    "HNSW_M",
    "MAX_ACTOR_CHARS",
    "MAX_CHUNK_OVERLAP",
    "MAX_CHUNK_SIZE",
    "MAX_CHUNK_SIZES",
    "MAX_COLLECTION_BYTES",
    "MAX_COLLECTION_DOCS",
    "MAX_COLLECTION_DOC_CHARS",
    "MAX_DOCS",
    "MAX_EMBEDDING_DIM",
    "MAX_FIT_BYTES",
    "MAX_GPUS",
    "MAX_IMAGE_CHARS",
    "MAX_K",
    "MAX_LATEX_DEPTH",
    "MAX_MANIFEST_BYTES",
    "MAX_MANIFEST_FILES",
    "MAX_MESSAGE_CHARS",
    "MAX_MODULES_JSON_BYTES",
    "MAX_NAME",
    "MAX_NOTE_CHARS",
    "MAX_PORT",
    "MAX_PROJECT_DEFAULTS_BYTES",
    "MAX_QID_CHARS",
    "MAX_QUESTION_CHARS",
    "MAX_QUESTION_FILE_BYTES",
    "MAX_QUOTE_CHARS",
    "MAX_QUOTE_OCCURRENCES",
    "MAX_RANK",
    "MAX_RELEVANCE_GRADE",
    "MAX_RUN_FILE_BYTES",
    "MAX_RUN_LINES",
    "MAX_RUN_LINE_CHARS",
    "MAX_SEQUENCE_REACH",
    "MAX_STORE_SETTING_BYTES",
    "MAX_SWEEP_CELLS",
    "MAX_TEXT_FILE_BYTES",
    "MAX_TEX_BYTES",
    "MAX_TEX_FILES",
    "MAX_TIER_ROWS",
    "MAX_TIER_SECONDS",
    "MAX_URL_CHARS",
    "MAX_WORKERS",
    "MAX_YAML_BYTES",
    "MAX_YAML_DEPTH",
    "MAX_YAML_NODES",
    "MIN_CHUNK_SIZE",
    "MIN_COVERAGE",
    "MIN_SECTION_FILL",
    "NER_MAX_BODY_BYTES",
    "NER_MAX_BUSY",
    "NER_MAX_CONNECTIONS",
    "NER_MAX_REPLY_BYTES",
    "NER_MAX_REQUEST_CHARS",
    "NER_MAX_TEXTS",
    "NPROBES",
    "PAGE",
    "PARENT_SIZE",
    "PARTITIONS",
    "PIECE_SIZE",
    "PORT",
    "REFINE_FACTOR",
    "SCHEDULER_HANDSHAKE_BYTES",
    "SCHEDULER_WAIT_S",
    "SHARE",
    "SQL_MAX_CELL_CHARS",
    "SQL_MAX_COLUMNS",
    "SQL_MAX_MEMORY_MB",
    "SQL_MAX_RESULT_BYTES",
    "SQL_MAX_ROWS",
    "SQL_MAX_TIMEOUT_S",
    "SQL_MEMORY_MB",
    "SQL_MIN_MEMORY_MB",
    "SQL_MIN_TIMEOUT_S",
    "SQL_ROWS_CAP",
    "SQL_THREADS",
    "SQL_TIMEOUT_S",
    "STORE_PROBE_S",
    "STORE_READ_S",
    "STORE_RETRIES",
    "SUB_VECTORS",
    "SWEEP_MAX_CELLS",
    "TIER_HISTORY_LIMIT",
    "TIER_JOB_MAX_ROWS",
    "TIER_JOB_MIN_INTERVAL_S",
    "TIER_PROMOTE_MIN_QUESTIONS",
    "TIER_RECENCY_S",
    "TIER_TTL_S",
    "TIER_WARM_MAX_DOCS",
    "TIER_WARM_MAX_ROWS",
    "TOP_N",
    "VIEW_MAX_CHARS",
    "WINDOW",
    "Bound",
    "K",
    "pages_of",
]


@dataclass(frozen=True)
class Bound:
    """A closed or half-open range of a numeric parameter, with the words that explain it.

    Args:
        name: Parameter name, as users write it.
        low: Smallest value (excluded when ``low_open``).
        high: Largest value (excluded when ``high_open``); ``None``: unbounded.
        what: What the value is, e.g. ``"a whole number of tokens"``.
        example: A good value, shown in the message.
        integer: Whole numbers only (``True`` and ``False`` are never numbers here).
        slider: ``(min, max, step)`` of a widget's slider: the usual part of the range, easy to pick from
            (``None``: the whole range). A value outside it is still allowed, and the slider widens to it.
    """

    name: str
    low: float
    high: float | None
    what: str
    example: str
    integer: bool = False
    low_open: bool = False
    high_open: bool = False
    slider: tuple[float, float, float] | None = None

    def _range(self) -> str:
        lo, hi = f"{self.low:g}", f"{self.high:g}" if self.high is not None else ""
        if self.high is None:
            return f">{'' if self.low_open else '='} {lo}"
        if not (self.low_open or self.high_open):
            return f"from {lo} to {hi}"
        return f"{lo} {'<' if self.low_open else '<='} x {'<' if self.high_open else '<='} {hi}"

    def problem(self, value: Any) -> str | None:
        """``None`` when ``value`` lies in range; otherwise the one message for it (naming the fix)."""
        numeric = (int,) if self.integer else (int, float)
        ok = isinstance(value, numeric) and not isinstance(value, bool)
        if ok:
            ok = (value > self.low if self.low_open else value >= self.low) and (
                self.high is None or (value < self.high if self.high_open else value <= self.high)
            )
        if ok:
            return None
        span = self._range()
        sep = " " if span.startswith("from") else ", "
        return f"{self.name} is {self.what}{sep}{span}, got {value!r} (e.g. {self.example})"

    def check(self, value: Any) -> Any:
        """``value`` when in range; else a :class:`~hepwb.exceptions.ConfigError` with :meth:`problem`."""
        problem = self.problem(value)
        if problem:
            raise ConfigError(problem)
        return value

    def slider_range(self, value: float) -> tuple[float, float, float]:
        """``(min, max, step)`` of a slider for this parameter that shows ``value``.

        Example:
            >>> CHUNK_SIZE.slider_range(512), CHUNK_SIZE.slider_range(4096)
            ((64, 2048, 32), (64, 4096, 32))
        """
        low, high, step = self.slider or (self.low, self.high if self.high is not None else self.low, 1)
        return min(low, value), max(high, value), step


MIN_CHUNK_SIZE = 8
"""Smallest chunk size (tokens)."""

MAX_CHUNK_SIZE = 32_768
"""Largest chunk size (tokens): more than any paper section; the embedders read 256-512."""

MAX_K = 1_000
"""Most chunks retrieved per question."""

CHUNK_SIZE = Bound(
    "chunk_size",
    MIN_CHUNK_SIZE,
    MAX_CHUNK_SIZE,
    "a whole number of tokens",
    "512",
    integer=True,
    slider=(64, 2048, 32),
)
"""Chunk size in tokens of the chunker's tokenizer."""

HEPILOT_CHUNK_SIZE = Bound(
    "chunk_size", 512, 4096, "in HEPilot-compliant mode a whole number of tokens", "1024", integer=True
)
"""Chunk sizes the HEPilot specification allows (``--hepilot-only``, the spec's ``chunk_size``)."""

MAX_CHUNK_OVERLAP = 0.75
"""Largest overlap hepwb chunks with: each chunk still brings a quarter of its size as new text. Just below 1
(HEPilot's bound) a chunk brought a token or two, and a corpus became as many chunks as it has tokens."""

CHUNK_OVERLAP = Bound(
    "chunk_overlap",
    0,
    MAX_CHUNK_OVERLAP,
    "a fraction of the chunk size (each chunk keeps a quarter of new text)",
    "0.1 for 10%, 0.5 for 125 of 250 tokens",
    slider=(0.0, 0.5, 0.05),
)
"""Overlap between neighbouring chunks, as a fraction of the chunk size."""

HEPILOT_CHUNK_OVERLAP = Bound(
    "chunk_overlap", 0, 1, "in a HEPilot file a fraction of the chunk size", "0.1", high_open=True
)
"""The overlaps the HEPilot specification allows in a file (``adapter_config.processing_config``)."""

MIN_SECTION_FILL = Bound("min_section_fill", 0, 1, "a share of the chunk's token budget", "0.5")
"""When a section heading starts a new chunk (``hepilot``): once the current chunk is this full."""

PARENT_SIZE = Bound(
    "parent_size", MIN_CHUNK_SIZE, MAX_CHUNK_SIZE, "a whole number of tokens per parent", "1024", integer=True
)
"""The parent chunk's size (``hierarchical``); larger than the children's ``chunk_size``."""

WINDOW = Bound("window", 0, 100, "a whole number of sentences on each side", "2", integer=True)
"""Sentences of context either side of a ``sentence_window`` chunk."""

BREAKPOINT_PERCENTILE = Bound(
    "breakpoint_percentile", 0, 100, "a percentile of the neighbour distances in a paper", "90"
)
"""``semantic``: distances above this percentile of a paper's neighbour distances start a new chunk."""

PIECE_SIZE = Bound(
    "piece_size", MIN_CHUNK_SIZE, MAX_CHUNK_SIZE, "a whole number of tokens per piece", "50", integer=True
)
"""``cluster_semantic``: the size of the pieces grouped into chunks; at most the ``chunk_size``."""

K = Bound(
    "k",
    1,
    MAX_K,
    "the number of chunks retrieved per question, a whole number",
    "10",
    integer=True,
    slider=(1, 20, 1),
)
"""Chunks retrieved per question."""

MAX_DOCS = Bound("max_docs", 1, None, "a whole number of papers", "8, or null for all", integer=True)
"""Papers read from a corpus at most."""

PAGE = Bound(
    "page", 1, 999_999, "the 1-based page the passage was selected on", "3, or None without pages",
    integer=True,
)  # fmt: skip
"""The page of a passage marked as evidence (at most the paper's last page, when it has pages; six digits:
a million pages is no paper)."""


def pages_of(n: int) -> Bound:
    """The pages of a paper of ``n`` pages (1 to ``n``), for a page a user gives.

    >>> pages_of(12).problem(13)
    'page is a page of the paper from 1 to 12, got 13 (e.g. 1)'
    """
    return Bound("page", 1, n, "a page of the paper", "1", integer=True)


VIEW_MAX_CHARS = Bound(
    "max_chars", 1, None, "a whole number of characters", "30000, or None for all", integer=True
)
"""Characters of a paper the chunk view renders (``chunks_html``, ``ChunkExplorer``); ``None``: all."""

FETCH = Bound("fetch", 1, 10_000, "a whole number of candidates per branch", "50", integer=True)
"""Candidates a retriever takes from a base retriever or branch."""

COUNT = Bound("count", 1, 100, "a small whole number (documents, terms, windows, queries, papers)", "3",
              integer=True)  # fmt: skip
"""A small number of items a retriever reads or adds (``prf_docs``, ``top_m``, ``n_queries``, ``papers``)."""

SHARE = Bound("share", 0, 1, "a mixing share", "0.5")
"""A share in [0, 1], e.g. the dense branch's weight."""

BOOST = Bound("boost", 1, 100, "a score multiplier", "1.5")
"""The multiplier of the ``entity`` retriever's score for a chunk holding every entity of the question."""

TOP_N = Bound("top_n", 1, MAX_K, "a whole number of candidates re-scored", "30", integer=True)
"""Candidates ``rerank`` re-scores with the cross-encoder."""

PARTITIONS = Bound("partitions", 1, 65_536, "a whole number of IVF partitions", "64", integer=True)
"""IVF partitions of an approximate vector index (``vector_index``; unset: about √rows)."""

SUB_VECTORS = Bound(
    "sub_vectors", 1, 4_096, "a whole number of product-quantisation sub-vectors", "24", integer=True
)
"""Product-quantisation sub-vectors (``ivf_pq``, ``ivf_hnsw_pq``); they must divide the dimension."""

HNSW_M = Bound("m", 2, 256, "a whole number of HNSW neighbours per node", "16", integer=True)
"""HNSW graph degree (``ivf_hnsw_sq``, ``ivf_hnsw_pq``)."""

EF_CONSTRUCTION = Bound(
    "ef_construction", 10, 10_000, "a whole number of HNSW build candidates", "300", integer=True
)
"""Candidates an HNSW build considers per node."""

NPROBES = Bound("nprobes", 1, 65_536, "a whole number of IVF partitions probed", "16", integer=True)
"""IVF partitions a query probes."""

EF = Bound("ef", 1, 100_000, "a whole number of HNSW search candidates", "64", integer=True)
"""Candidates an HNSW search keeps."""

REFINE_FACTOR = Bound("refine_factor", 1, 100, "a whole multiple of k re-ranked exactly", "10", integer=True)
"""A query re-ranks ``k × refine_factor`` candidates by their exact distance."""

MIN_COVERAGE = Bound(
    "min_coverage", 0, 1, "the share of a quote a chunk must hold", "0.5 for half, 1 for whole", low_open=True
)
"""Share of an evidence quote's key characters a retrieved chunk must hold to count as relevant."""

MAX_TIER_SECONDS = 1e9
"""Longest tier duration (seconds, about 31 years): stamps are milliseconds in 64-bit integers."""

MAX_TIER_ROWS = 100_000
"""Most rows one tier job copies, evicts or promotes per run (a warming call reads four times as many)."""

TIER_TTL_S = Bound(
    "ttl_s",
    0,
    MAX_TIER_SECONDS,
    "a duration in seconds (at most about 31 years)",
    "86400 for a day",
    low_open=True,
)
"""How long HOT rows live (``hepwb tiers --ttl-s``)."""

TIER_RECENCY_S = Bound(
    "recency_s", 0, MAX_TIER_SECONDS, "a duration in seconds (at most about 31 years)", "3600", low_open=True
)
"""The window of recent questions that drive warming (``hepwb tiers --recency-s``)."""

TIER_JOB_MIN_INTERVAL_S = Bound(
    "job_min_interval_s", 0, MAX_TIER_SECONDS, "a duration in seconds (at most about 31 years)", "0 or 60"
)
"""Seconds at least between two runs of one tier job (``hepwb tiers --job-min-interval-s``)."""

TIER_WARM_MAX_DOCS = Bound("warm_max_docs", 1, 10_000, "a whole number of documents", "5", integer=True)
"""Documents at most copied from LT per warming call."""

TIER_WARM_MAX_ROWS = Bound("warm_max_rows", 1, MAX_TIER_ROWS, "a whole number of chunks", "200", integer=True)
"""Chunks at most copied from LT per warming call."""

TIER_JOB_MAX_ROWS = Bound("job_max_rows", 1, MAX_TIER_ROWS, "a whole number of rows", "5000", integer=True)
"""Rows at most evicted or promoted by one tier job."""

TIER_PROMOTE_MIN_QUESTIONS = Bound(
    "promote_min_questions", 1, 100_000, "a whole number of questions", "3", integer=True
)
"""Distinct questions that earn a HOT document its promotion."""

MAX_ACTOR_CHARS = 128
"""Longest actor name of a tier job or signal (``hepwb tiers … --actor``): a user or service name."""

MAX_NOTE_CHARS = 10_000
"""Longest note kept with a tier signal (``hepwb tiers mark --note``): a paragraph."""

TIER_HISTORY_LIMIT = Bound(
    "limit", 1, MAX_TIER_ROWS, "a whole number of audit events shown", "20", integer=True
)
"""Audit events ``hepwb tiers history --limit`` shows (newest first)."""

MAX_CHUNK_SIZES = 64
"""Most chunk sizes one ``hepwb ingest --chunk-sizes`` builds (each is a whole chunk set of the corpus)."""

SQL_MEMORY_MB = 2_048
"""DuckDB memory (MiB) of user-typed SQL (``hepwb sql --memory-mb``); locked, so SQL cannot raise it."""

SQL_THREADS = 2
"""DuckDB threads of user-typed SQL (``hepwb sql``); locked, so SQL cannot raise it."""

MAX_PORT = 65_535
"""The largest TCP port (``hepwb ner-serve --port``; 0 asks the system for a free one)."""

PORT = Bound("port", 0, MAX_PORT, "a TCP port (0: a free one)", "8877", integer=True)
"""The port a service of hepwb listens on (``hepwb ner-serve --port``)."""

NER_MAX_TEXTS = 1_000
"""Most texts in one ``POST /ner`` request (the client sends larger batches in parts)."""

NER_MAX_REQUEST_CHARS = 1_000_000
"""Most characters of text in one ``POST /ner`` request: a few seconds of tagging (the client splits)."""

NER_MAX_REPLY_BYTES = 16 * 1_048_576
"""Largest ``POST /ner`` reply (bytes of JSON); a request whose entities would exceed it gets HTTP 413."""

NER_MAX_BODY_BYTES = 16 * 1_048_576
"""Largest ``POST /ner`` body (bytes); a larger Content-Length gets HTTP 413 before anything is read."""

NER_MAX_BUSY = 2
"""Requests the NER service tags at once; more wait up to the read timeout, then get HTTP 503 (retried)."""

NER_MAX_CONNECTIONS = 32
"""Connections the NER service holds open at once; one more is closed at once (the client retries)."""

MAX_QUESTION_CHARS = 4_000
"""Longest question (characters): a paragraph; BM25 over a 10 MB query aborts natively in the FTS engine."""

MAX_MESSAGE_CHARS = 1_000
"""Longest error message printed (characters, on one line; a longer one is cut with …)."""

MAX_SEQUENCE_REACH = 512
"""How far before a snippet's edge (characters) the escape sequence it may cut is looked for."""

MAX_QID_CHARS = 256
"""Longest question id (characters): an id like ``P01-03``, printed in messages and kept in every run."""

MAX_QUESTION_FILE_BYTES = 50_000_000
"""Largest question file read (bytes): some 100 000 questions."""

MAX_QUOTE_CHARS = 4_000
"""Longest evidence quote (characters): a passage. hepqa-dev's longest is 393, Chroma's 775; locating a quote
costs its length times the paper's, so a quote of a whole section is refused, not matched for minutes."""

MAX_RAGMD_BYTES = 256 * 1_048_576
"""The largest .ragmd file read (bytes): about 100,000 chunks of 384-dimensional vectors with their text.
Reading holds a few copies of the text; larger indexes stay in LanceDB."""

MAX_YAML_BYTES = 1_048_576
"""The largest YAML text hepwb reads (sweep files, tier configs, entity dictionaries, .ragmd front matter)."""

MAX_YAML_NODES = 100_000
"""The most YAML nodes (scalars, lists, mappings) one YAML text may hold."""

MAX_YAML_DEPTH = 64
"""The deepest nesting of lists and mappings in one YAML text."""

SQL_TIMEOUT_S = 60.0
"""``hepwb sql`` stops a statement after this many seconds (``--timeout-s``), releasing the catalog."""

SQL_MAX_ROWS = 10_000
"""``hepwb sql`` fetches at most this many rows (``--max-rows``): the query itself is limited."""

SQL_MAX_CELL_CHARS = 20_000
"""``hepwb sql`` cuts a longer cell (text, or a list or struct as text) to this many characters, in DuckDB: a
long chunk's text fits; ``repeat('a', 400000000)`` is never copied into Python."""

SQL_MAX_COLUMNS = 200
"""``hepwb sql`` refuses a result with more columns (more than a terminal can show side by side)."""

SQL_MAX_RESULT_BYTES = 64 * 1_048_576
"""``hepwb sql`` fetches rows until their cells hold this many bytes, and says the rest were left out."""

SCHEDULER_WAIT_S = 10.0
"""Seconds ``--scheduler`` waits for a Dask scheduler to accept the connection and greet (then: one line)."""

GATEWAY_WAIT_S = 10.0
"""Seconds ``--cluster gateway`` waits for the Dask Gateway to accept the connection and answer HTTP, and for
its cluster options to arrive (then: one line naming the address)."""

GATEWAY_START_S = 600.0
"""Seconds ``--cluster gateway`` waits for the gateway to start a cluster (a facility may queue it for
minutes; then: one line naming the address, and the gateway's idle timeout reclaims one that starts later)."""

STORE_READ_S = 30.0
"""Seconds the artefact store's S3 client waits for a reply to one request (two tries, two rounds of s3fs
retries: a store that stops answering mid-sweep is one line within a few minutes, never a hang)."""

STORE_RETRIES = 2
"""Rounds of s3fs's own retries of a timed-out store request (each of two botocore tries)."""

STORE_PROBE_S = 5.0
"""Seconds the first look at an S3 store (one listing, one try) waits for a reply: a store that accepts
connections and never answers is one line within seconds."""

SCHEDULER_HANDSHAKE_BYTES = 65_536
"""The longest greeting read from a ``--scheduler`` address before any Dask client exists (a Dask scheduler's
is under 100 bytes): a peer announcing more is no scheduler, and nothing of that size is allocated."""

MAX_SWEEP_CELLS = 10_000
"""Most cells a sweep may have unless its file or ``--max-cells`` raises the cap (refused before planning)."""

ACQUIRE_MAX_RESULTS = Bound("max_results", 1, 100_000, "a whole number of papers", "10", integer=True)
"""Papers ``hepwb acquire`` fetches at most."""

ACQUIRE_MIN_INTERVAL_S = Bound(
    "min_interval", 0, 3600, "seconds between two requests to one host (arXiv asks for 3)", "3"
)
"""The pause between two requests to one host."""

SWEEP_MAX_CELLS = Bound("max_cells", 1, None, "a whole number of cells", "10000", integer=True)
"""The cap a sweep file or ``--max-cells`` may set (any whole number of cells from 1)."""

HALVING_ETA = Bound(
    "eta", 2, 100, "a whole number (each rung keeps the best 1/eta of the cells)", "3", integer=True
)
"""Successive halving's reduction factor."""

HALVING_MIN_QUESTIONS = Bound(
    "min_questions", 2, 1_000_000, "a whole number of questions", "12", integer=True
)
"""Questions of successive halving's first rung."""

MAX_JSON_BYTES = 256 * 1_048_576
"""The most bytes hepwb reads from one JSON, JSONL or CSV file (:mod:`hepwb.files.readers`; question files
have their own, smaller cap)."""

MAX_JSON_DEPTH = 100
"""The deepest nesting of lists and objects hepwb reads from JSON (HEPilot's files nest fewer than 10)."""

MAX_INT_DIGITS = 64
"""The most digits of an integer in a JSON or YAML file hepwb reads (offsets and sizes need fewer than 20)."""

MAX_CSV_FIELD_CHARS = 100_000
"""The longest field of a CSV file hepwb reads (a quote or a question is far shorter)."""

MAX_RUN_FILE_BYTES = 256 * 1_048_576
"""The largest TREC run, qrels or topics file and BEIR ``qrels``/``queries`` file read (bytes)."""

MAX_RUN_LINES = 1_000_000
"""The most lines of a TREC run or qrels file: 1,000 hits for each of 1,000 questions. A longer file is
refused after counting its lines, before anything is parsed or a paper converted (``evaluate --run-file``)."""

MAX_RUN_LINE_CHARS = 4_096
"""The longest line of a TREC run, qrels or topics file (six short columns need a few dozen characters)."""

MAX_COLLECTION_DOCS = 100_000
"""The most documents an imported BEIR folder or ``ir_datasets`` collection may hold: each becomes a markdown
file that is converted and chunked."""

MAX_COLLECTION_BYTES = 1_073_741_824
"""The largest ``corpus.jsonl`` (or documents file) of an imported collection (bytes), read line by line."""

MAX_COLLECTION_DOC_CHARS = 10_000_000
"""The longest document of an imported collection (characters; a long paper has some 100,000)."""

MAX_TEXT_FILE_BYTES = 64 * 1_048_576
"""The largest text file read whole from a corpus (a ``.md`` paper, a LaTeX source file) or from the
conversion cache (``full_document.md`` of a cache entry that does not record its size): a long paper's text
is a few MB. A larger corpus file is skipped (``PROC_TOO_LARGE``) before it is hashed or read."""

MAX_TEX_FILES = 20_000
"""Most files of one paper's LaTeX source folder (figures included)."""

MAX_TEX_BYTES = 2_000_000_000
"""Most bytes of one paper's LaTeX source folder (2 GB: sources with their figures)."""

MAX_IMAGE_CHARS = 512
"""Longest container image reference ``hepwb sweep --image`` takes."""

SQL_MIN_TIMEOUT_S = 0.1
"""Shortest statement timeout ``hepwb sql --timeout-s`` takes (seconds)."""

SQL_MAX_TIMEOUT_S = 86_400
"""Longest statement timeout ``hepwb sql --timeout-s`` takes (a day)."""

SQL_ROWS_CAP = 10_000_000
"""Most rows ``hepwb sql --max-rows`` may ask to fetch."""

SQL_MIN_MEMORY_MB = 16
"""Least DuckDB memory ``hepwb sql --memory-mb`` gives a statement (MiB)."""

SQL_MAX_MEMORY_MB = 1_048_576
"""Most DuckDB memory ``hepwb sql --memory-mb`` gives a statement (MiB, 1 TiB)."""

ADAPT_MIN_PAIRS = 10
"""Fewest training pairs ``hepwb adapt --max-pairs`` takes."""

ADAPT_MAX_PAIRS_CAP = 1_000_000
"""Most training pairs ``hepwb adapt --max-pairs`` takes."""

ADAPT_MIN_EPOCHS = 0.01
"""Fewest passes over the pairs ``hepwb adapt --epochs`` takes."""

ADAPT_MAX_EPOCHS = 100
"""Most passes over the pairs ``hepwb adapt --epochs`` takes."""

ADAPT_MAX_BATCH = 4096
"""Largest training batch ``hepwb adapt --batch-size`` takes."""

ADAPT_MAX_LLM_QUESTIONS = 1000
"""Most LLM pseudo-questions per paper ``hepwb adapt --llm-questions`` asks for."""

MAX_WORKERS = 4096
"""Most workers (or batch jobs, or a gateway's adaptive bounds) a sweep asks for."""

MAX_GPUS = 64
"""Most GPU workers of a LocalCluster, or GPUs per batch job."""

GATEWAY_MAX_WORKER_CORES = 256
"""Most cores per Dask Gateway worker."""

GATEWAY_MIN_WORKER_GIB = 0.25
"""Least memory per Dask Gateway worker (GiB)."""

GATEWAY_MAX_WORKER_GIB = 4096
"""Most memory per Dask Gateway worker (GiB)."""


# --- caps on files and values read by one module each (one home: here) ---

MAX_NAME = 128
"""The longest name a user gives that becomes a file or folder name (characters; :mod:`hepwb.text.names`)."""

MAX_URL_CHARS = 2048
"""The longest service URL accepted (what browsers and servers commonly accept; :mod:`hepwb.runtime.urls`)."""

MAX_RELEVANCE_GRADE = 10**9
"""A relevance grade has at most 9 digits, as in a BEIR qrels file (a longer number is no grade)."""

MAX_RANK = 2**31 - 1
"""The largest rank: the catalog's ``hits.rank`` is a 32-bit INTEGER (no run ranks two billion chunks)."""

MAX_LATEX_DEPTH = 20
"""How deep ``\\input``/``\\include`` may nest in a LaTeX source (deeper is a loop or a bomb)."""

MAX_FIT_BYTES = 4 * 1_048_576
"""The largest fusion fit file read: a fit holds a few numbers per fold, anything larger is not one."""

MAX_MANIFEST_BYTES = 8 << 20
"""The largest manifest read, of a published folder or a store object (it lists names, not data)."""

MAX_MANIFEST_FILES = 100_000
"""The most files one published folder's manifest may list."""

MAX_MODULES_JSON_BYTES = 1 << 20
"""The largest ``modules.json`` of a sentence-transformers model folder read."""

MAX_EMBEDDING_DIM = 65_536
"""The widest vectors a ``.ragmd`` file may declare (checked before any array is made)."""

MAX_STORE_SETTING_BYTES = 16 * 1024
"""The largest artefact-store setting file read."""

MAX_PROJECT_DEFAULTS_BYTES = 64 * 1024
"""The largest project-defaults file (``hepwb-defaults.json``) read."""

MAX_QUOTE_OCCURRENCES = 200
"""Most occurrences of a quote's piece tried as the start of a match, and most places one quote is located."""
