"""Embedding and adaptation throughput on whatever device is present, against a bare PyTorch loop.

Usage::

    python -m bench.bench_gpu --export bench-gpu-inputs   # here: the main job's texts and pairs
    python -m bench.bench_gpu --inputs bench-gpu-inputs   # on the GPU machine (or here)

Method:

* Inputs: the chunk texts of the main job's chunk sets (HEPilot, 256/512/1024 tokens, 10 % overlap, the
  shared corpus converted with LaTeX preferred) and the adaptation pairs ``hepwb adapt`` builds from the
  same papers (:func:`hepwb.adapt.pairs.corpus_pairs`, seed 0). ``--export DIR`` writes them (``texts.json``,
  ``pairs.json``: a few MiB) so a machine without the corpus can run the rest with ``--inputs DIR``.
* hepwb: :class:`hepwb.models.embedder.Embedder` on the auto-selected device (``--device`` to force one) with
  its batch size for that device, vectors normalised, fp32. One warm-up pass on 64 texts, then one timed pass
  over all texts (``torch.cuda.synchronize`` before the clock stops).
* Reference, same run and device: a bare loop — the same model's ``AutoModel``/``AutoTokenizer``, 256 word
  pieces, batch 256, ``torch.no_grad``, mean pooling and L2 normalisation, the tokenizer on every core (the
  library's default) — what sentence-transformers adds nothing to. hepwb runs as its commands do
  (``TOKENIZERS_PARALLELISM=false``, which the Embedder lifts on an accelerator). Target (GPU): hepwb >= 60 %
  of the bare loop's texts/s.
* Agreement: cosine of hepwb's vectors on this device and on the CPU for the first ``--check`` texts
  (target >= 0.9999; on a CPU-only machine the two are the same run).
* Adaptation: one epoch of :func:`hepwb.adapt.finetune.adapt_embedder` over the pairs on this device
  (batch 32, hard negatives), wall time (target on an H100/H200: <= 30 s).

Prints a markdown table and writes JSON to ``reports/bench/gpu.json`` (or ``--json``). On a CUDA GPU it also
writes the results file ``docs/results/gpu.md`` (stamped; the docs' Results page shows it; ``--no-write``:
none): hepwb against the bare loop, the agreement and the epoch, each beside its target. Elsewhere it says in
one line that there is no GPU and writes no results file. With the defaults, on a GPU machine with the corpus:
a few minutes, most of them the export (the papers converted and chunked); from ``--inputs``, about a minute.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import REPORTS
from bench.results import command_line, git_commit, write_results
from hepwb import defaults
from hepwb.adapt.finetune import AdaptSettings, adapt_embedder
from hepwb.adapt.pairs import Pair, corpus_pairs
from hepwb.corpus import default_questions
from hepwb.evaluation import load_questions
from hepwb.experiment import build_chunkset, ingest
from hepwb.files.io import write_json
from hepwb.models.embedder import Embedder
from hepwb.models.tokenizers import resolve_model_path
from hepwb.paths import Layout
from hepwb.runtime.env import configure_runtime

MAIN_JOB_SIZES = (256, 512, 1024)
"""The chunk sizes of the main job (``sweeps/default.yaml``): their chunk texts are what it embeds."""


def export(folder: Path, max_docs: int | None) -> None:
    """Write the main job's chunk texts and adaptation pairs to ``folder``."""
    layout = Layout.default()
    docs = ingest(None, layout=layout, max_docs=max_docs, prefer_latex=True, progress=True, require=True)
    texts = [
        c.text
        for size in MAIN_JOB_SIZES
        for c in build_chunkset(docs, "hepilot", chunk_size=size, chunk_overlap=defaults.CHUNK_OVERLAP).chunks
    ]
    pairs = corpus_pairs(docs, seed=0)
    questions_path = default_questions()
    questions = [q.question for q in load_questions(questions_path)] if questions_path else []
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "questions.json").write_text(json.dumps(questions), encoding="utf-8")
    (folder / "texts.json").write_text(json.dumps(texts), encoding="utf-8")
    (folder / "papers.json").write_text(json.dumps([d.label for d in docs]), encoding="utf-8")
    rows = [[p.kind, p.query, p.passage, p.label] for p in pairs]
    (folder / "pairs.json").write_text(json.dumps(rows), encoding="utf-8")
    print(
        f"{folder}: {len(texts)} chunk texts of {len(docs)} papers, {len(pairs)} pairs, "
        f"{len(questions)} questions"
    )


def _sync(device: str) -> None:
    """Wait for the GPU's queued work (nothing to wait for elsewhere)."""
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def bare_loop(texts: list[str], device: str, batch: int = 256) -> tuple[float, Any]:
    """Texts/s of a plain PyTorch mean-pooling loop over ``texts`` (and its vectors)."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    path = str(resolve_model_path(defaults.EMBEDDING_MODEL))
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModel.from_pretrained(path).to(device).eval()

    def run(part: list[str]) -> Any:
        out = []
        with torch.no_grad():
            for i in range(0, len(part), batch):
                enc = tok(
                    part[i : i + batch], padding=True, truncation=True, max_length=256, return_tensors="pt"
                )
                enc = {k: v.to(device) for k, v in enc.items()}
                hidden = model(**enc).last_hidden_state
                mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                vec = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
                out.append(torch.nn.functional.normalize(vec, dim=1).cpu())
        return torch.cat(out).numpy()

    was = os.environ.get("TOKENIZERS_PARALLELISM")
    os.environ["TOKENIZERS_PARALLELISM"] = "true"  # what a plain script gets: the library's default
    try:
        run(texts[:64])
        _sync(device)
        t0 = time.perf_counter()
        vecs = run(texts)
        _sync(device)
    finally:
        os.environ["TOKENIZERS_PARALLELISM"] = was or "false"
    return len(texts) / (time.perf_counter() - t0), vecs


def hepwb_embed(texts: list[str], device: str | None) -> tuple[float, Any, Embedder]:
    """Texts/s of hepwb's Embedder over ``texts`` (and its vectors)."""
    emb = Embedder(device=device)
    emb.embed(texts[:64])
    _sync(emb.device)
    t0 = time.perf_counter()
    vecs = emb.embed(texts)
    _sync(emb.device)
    return len(texts) / (time.perf_counter() - t0), vecs, emb


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; returns the exit code."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--export", type=Path, help="write the inputs to this folder and stop")
    ap.add_argument(
        "--inputs", type=Path, help="read the inputs from this folder (default: export to a temp one)"
    )
    ap.add_argument("--device", default=None, help="auto (default), cpu, cuda, cuda:N or mps")
    ap.add_argument("--limit", type=int, default=None, help="only the first N texts (a CPU smoke run)")
    ap.add_argument("--check", type=int, default=256, help="texts compared with CPU vectors")
    ap.add_argument("--max-docs", type=int, default=None, help="export: only the first N papers")
    ap.add_argument("--no-adapt", action="store_true", help="skip the adaptation epoch")
    ap.add_argument("--json", type=Path, default=REPORTS / "gpu.json")
    ap.add_argument(
        "--vectors",
        type=Path,
        help="write hepwb's vectors of the texts (vectors.npy) and of each question embedded alone, as a "
        "query is (queries.npy), to this folder: bench.gpu_agreement compares them with CPU vectors",
    )
    ap.add_argument("--no-write", action="store_true", help="no results file (docs/results/gpu.md)")
    ap.add_argument("--results-folder", type=Path, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    commit = git_commit()
    configure_runtime()  # as hepwb's commands run: TOKENIZERS_PARALLELISM=false outside the Embedder
    if args.export:
        export(args.export, args.max_docs)
        return 0
    folder = args.inputs
    if folder is None:
        folder = Path(tempfile.mkdtemp(prefix="bench-gpu-"))
        export(folder, args.max_docs)
    texts = json.loads((folder / "texts.json").read_text(encoding="utf-8"))[: args.limit]
    pairs = [Pair(*row) for row in json.loads((folder / "pairs.json").read_text(encoding="utf-8"))]

    rate, vecs, emb = hepwb_embed(texts, args.device)
    device = emb.device
    ref_rate, ref_vecs = bare_loop(texts, device)
    n = min(args.check, len(texts))
    cpu_vecs = vecs[:n] if device == "cpu" else Embedder(device="cpu").embed(texts[:n])
    agree = float(np.min(np.sum(np.asarray(vecs[:n]) * np.asarray(cpu_vecs), axis=1)))
    bare_agree = float(np.min(np.sum(np.asarray(vecs[:n]) * np.asarray(ref_vecs[:n]), axis=1)))
    if args.vectors:
        questions_file = folder / "questions.json"
        questions = json.loads(questions_file.read_text(encoding="utf-8")) if questions_file.is_file() else []
        args.vectors.mkdir(parents=True, exist_ok=True)
        np.save(args.vectors / "vectors.npy", np.asarray(vecs, dtype=np.float32))
        queries = [emb.embed([q])[0] for q in questions]
        np.save(args.vectors / "queries.npy", np.asarray(queries, dtype=np.float32).reshape(len(queries), -1))
    adapt_s, steps = None, None
    if not args.no_adapt:
        with tempfile.TemporaryDirectory() as out:
            t0 = time.perf_counter()
            card = adapt_embedder(
                pairs, defaults.EMBEDDING_MODEL, out, name="bench", progress=False,
                settings=AdaptSettings(epochs=1.0, device=device),
            )  # fmt: skip
            adapt_s = time.perf_counter() - t0
            steps = card.steps
    card_name = "cpu"
    if device.startswith("cuda"):
        import torch

        card_name = torch.cuda.get_device_name(0)
    result: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d"),
        "device": device,
        "card": card_name,
        "platform": platform.platform(),
        "texts": len(texts),
        "hepwb_texts_per_s": round(rate, 1),
        "hepwb_batch": emb.batch_size,
        "bare_loop_texts_per_s": round(ref_rate, 1),
        "ratio_hepwb_vs_bare": round(rate / ref_rate, 3),
        "min_cosine_vs_cpu": agree,
        "min_cosine_vs_bare_loop": bare_agree,
        "adapt_epoch_s": None if adapt_s is None else round(adapt_s, 1),
        "adapt_pairs": len(pairs),
        "adapt_steps": steps,
    }
    write_json(args.json, result)
    print(
        "| device | texts | hepwb texts/s (batch) | bare loop texts/s | hepwb / bare | cos vs CPU | epoch s |"
    )
    print("|---|---|---|---|---|---|---|")
    print(
        f"| {card_name} ({device}) | {len(texts)} | {rate:.1f} ({emb.batch_size}) | {ref_rate:.1f} | "
        f"{rate / ref_rate:.2f} | {agree:.6f} | {'-' if adapt_s is None else f'{adapt_s:.1f}'} |"
    )
    gpu = device.startswith("cuda")
    ok = agree >= 0.9999 and (not gpu or rate / ref_rate >= 0.6) and (not gpu or (adapt_s or 0) <= 30)
    print(
        "targets (GPU: hepwb >= 60 % of the bare loop, epoch <= 30 s; all: cosine >= 0.9999):",
        "met" if ok else "MISSED",
    )
    papers_file = folder / "papers.json"
    papers = json.loads(papers_file.read_text(encoding="utf-8")) if papers_file.is_file() else None
    if not gpu:
        print(f"no GPU (device {device}): no results file written (docs/results/gpu.md is measured on CUDA)")
    elif not args.no_write:
        body = results_table(result, n)
        write_results(
            "gpu",
            body,
            caption=caption(result, papers, args.limit),
            folder=args.results_folder,
            commit=commit,
        )
    return 0 if ok else 1


def results_table(result: dict[str, Any], checked: int) -> str:
    """Markdown: each figure of ``result`` (a run on a GPU) beside its target."""
    rate, ref = result["hepwb_texts_per_s"], result["bare_loop_texts_per_s"]
    epoch = result["adapt_epoch_s"]
    steps = "" if epoch is None else f", {result['adapt_steps']} steps"
    lines = [
        (f"hepwb `Embedder`, texts/s (batch {result['hepwb_batch']})", f"{rate:.1f}", ""),
        ("bare PyTorch loop, texts/s (batch 256)", f"{ref:.1f}", ""),
        ("hepwb against the bare loop", f"{result['ratio_hepwb_vs_bare']:.2f}×", "≥ 0.60×"),
        (f"minimum cosine, hepwb's vectors on {result['device']} against the CPU's ({checked} texts)",
         f"{result['min_cosine_vs_cpu']:.7f}", "≥ 0.9999"),
        (f"minimum cosine, hepwb's vectors against the bare loop's ({checked} texts)",
         f"{result['min_cosine_vs_bare_loop']:.7f}", ""),
        (f"one adaptation epoch ({result['adapt_pairs']} pairs{steps}), seconds",
         "not run (--no-adapt)" if epoch is None else f"{epoch:.1f}", "≤ 30"),
    ]  # fmt: skip
    return "| figure | value | target |\n|---|---:|---|\n" + "".join(
        f"| {a} | {b} | {c} |\n" for a, b, c in lines
    )


def caption(result: dict[str, Any], papers: list[str] | None, limit: int | None) -> str:
    """One line: the texts (and the papers they come from), the card, the baseline, the command."""
    listed = (", ".join(papers) if len(papers) <= 8 else f"{papers[0]}–{papers[-1]}") if papers else ""
    of = f"the {len(papers)} shared papers ({listed})" if papers else "the exported papers"
    first = f"the first {result['texts']:,}" if limit is not None else f"the {result['texts']:,}"
    return (
        f"Embedding {first} chunk texts of the main job (HEPilot at 256, 512 and 1024 tokens, 10 % overlap, "
        f"{of}, LaTeX preferred) on {result['card']} ({result['device']}): hepwb's `Embedder` against a bare "
        "PyTorch loop (the same model, mean pooling, batch 256) in the same run, and one adaptation epoch; "
        f"`{command_line()}`."
    )


if __name__ == "__main__":
    raise SystemExit(main())
