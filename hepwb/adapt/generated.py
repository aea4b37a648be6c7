"""Pseudo-questions written by an LLM for passages of the corpus (GPL style), when an endpoint is configured.

For a sample of prose paragraphs of every paper, the LLM (any OpenAI-compatible endpoint,
:class:`hepwb.runtime.llm.LLMEndpoint`) is asked for one question that the paragraph answers, in a physicist's
words rather than the paper's. Each (question, paragraph) becomes a training pair of kind ``generated``.
Nothing here reads a question set: the questions are about the corpus only.

Example:
    >>> first_question("Q: What sets the drift velocity of the TPC?\\nIt depends on ...")
    'What sets the drift velocity of the TPC?'
    >>> first_question("no question here") is None
    True
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

from hepwb import defaults
from hepwb.adapt.pairs import Pair, cut, paragraphs
from hepwb.runtime.llm import LLMEndpoint
from hepwb.types import Document

__all__ = ["PROMPT", "first_question", "generated_pairs"]

SYSTEM = "You write search questions that physicists would ask. Reply with the question only."
PROMPT = (
    "Here is a passage from a high-energy-physics paper.\n\nPassage: {passage}\n\n"
    "Write one question that this passage answers, as a physicist searching the literature would ask it, "
    "in your own words rather than the passage's."
)
_QUESTION = re.compile(r"([A-Z][^?\n]{8,300}\?)")


def first_question(reply: str) -> str | None:
    """The first question (a sentence ending in ``?``) of an LLM reply, without list or ``Q:`` prefixes."""
    text = re.sub(r"^\s*(?:\d+[.)]|[-*]|q(?:uestion)?\s*:)\s*", "", reply, flags=re.IGNORECASE | re.MULTILINE)
    m = _QUESTION.search(text)
    return " ".join(m.group(1).split()) if m else None


def generated_pairs(
    documents: Sequence[Document],
    llm: LLMEndpoint,
    *,
    per_doc: int = defaults.ADAPT_LLM_QUESTIONS,
    seed: int = 0,
) -> list[Pair]:
    """Up to ``per_doc`` (LLM question, paragraph) pairs per paper; paragraphs sampled with ``seed``."""
    rng = random.Random(seed)
    out = []
    for doc in documents:
        paras = paragraphs(doc)
        for _, text in rng.sample(paras, min(per_doc, len(paras))):
            passage = cut(text)
            question = first_question(llm.chat(PROMPT.format(passage=passage), system=SYSTEM, max_tokens=96))
            if question:
                out.append(Pair("generated", question, passage, doc.label))
    return out
