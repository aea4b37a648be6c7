"""Training pairs (query, passage) built from the corpus itself, never from a question set.

Kinds, each a way papers already pair a short text with the passage it summarises or names:

* ``heading`` - "<paper title>: <section heading>" → the section's first paragraph;
* ``caption`` - a figure/table caption → the paragraph that refers to that figure or table;
* ``abstract`` - a sentence of the abstract → the body paragraph most similar to it (TF-IDF, same paper);
* ``acronym`` - a defined long form ("deeply virtual Compton scattering (DVCS)") → a paragraph using only
  the acronym, so the model learns that the two name the same thing;
* ``sentence`` - one sentence of a paragraph → the rest of that paragraph (the inverse cloze task);
* ``generated`` - with an LLM endpoint, a question the LLM writes for a paragraph → that paragraph
  (GPL-style pseudo-questions, :mod:`hepwb.adapt.generated`).

Only prose paragraphs count (author lists, affiliations and tables are skipped). The pairs are shuffled
with a fixed seed and capped per kind, so the same corpus always gives the same pairs (their SHA-256 is
recorded in the model card).

Example:
    >>> from hepwb.processing.markdown import markdown_document
    >>> md = ("# A study of deeply virtual Compton scattering\\n\\n## 2 Results\\n\\n"
    ...       + "Deeply virtual Compton scattering (DVCS) was measured with a polarised positron beam at "
    ...       + "HERMES. The asymmetry is large and negative in every kinematic bin of the analysis. "
    ...       + "It agrees with the models of generalised parton distributions within the errors.\\n\\n"
    ...       + "The DVCS amplitude was extracted from the azimuthal dependence of the asymmetry in each "
    ...       + "bin and compared with the predictions of several models at the same kinematics here.")
    >>> sorted({p.kind for p in corpus_pairs([markdown_document(md, "P01")])})
    ['acronym', 'heading', 'sentence']
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass

from hepwb import defaults
from hepwb.chunking.sentences import sentence_spans
from hepwb.index.lexicon import ACRONYM, long_form
from hepwb.text.ids import canonical_json, text_sha256
from hepwb.types import Document

__all__ = ["KINDS", "Pair", "corpus_pairs", "cut", "pairs_sha256", "paragraphs"]

KINDS = ("heading", "caption", "abstract", "acronym", "sentence")
_WORD = re.compile(r"[a-z][a-z\-]+")
_CAPTION = re.compile(r"^\s*\**\s*(fig(?:ure|s)?\.?|table|tab\.?)\s*(\d+)", re.IGNORECASE)
_PASSAGE_WORDS = 180


@dataclass(frozen=True)
class Pair:
    """A query and the passage it should retrieve, from paper ``label``."""

    kind: str
    query: str
    passage: str
    label: str


def _prose(text: str) -> bool:
    """A paragraph of running text (not an author list, affiliations, a table or numbers)."""
    words = text.split()
    if len(words) < 25:
        return False
    plain = sum(1 for w in words if _WORD.fullmatch(w.strip(".,;:()")))
    return plain / len(words) > 0.55


def cut(text: str, n: int = _PASSAGE_WORDS) -> str:
    """The first ``n`` words of ``text`` (a passage of the length the model trains on)."""
    return " ".join(text.split()[:n])


def paragraphs(doc: Document) -> list[tuple[int, str]]:
    """``(offset, text)`` of every prose paragraph of ``doc``."""
    return [(b.start, doc.markdown[b.start : b.end]) for b in doc.blocks if b.kind == "text"
            and _prose(doc.markdown[b.start : b.end])]  # fmt: skip


def _sentences(text: str) -> list[str]:
    return [text[a:b].strip() for a, b in sentence_spans(text)]


def _heading_pairs(doc: Document, paras: list[tuple[int, str]]) -> list[Pair]:
    out = []
    for b in doc.blocks:
        if b.kind != "heading" or b.level < 2:
            continue
        head = doc.markdown[b.start : b.end].lstrip("#").strip()
        after = [t for s, t in paras if s > b.end]
        if after and len(head.split()) >= 2:
            out.append(Pair("heading", f"{doc.title}: {head}", cut(after[0]), doc.label))
    return out


def _caption_pairs(doc: Document, paras: list[tuple[int, str]]) -> list[Pair]:
    out = []
    for b in doc.blocks:
        if b.kind != "caption":
            continue
        cap = doc.markdown[b.start : b.end]
        m = _CAPTION.match(cap)
        if not m:
            continue
        word = "table" if m.group(1).lower().startswith("tab") else r"fig(?:ure|s)?\.?"
        mention = re.compile(rf"\b{word}\s*{m.group(2)}\b", re.IGNORECASE)
        refs = [t for _, t in paras if mention.search(t)]
        if refs:
            out.append(Pair("caption", cut(cap, 60), cut(refs[0]), doc.label))
    return out


def _abstract_pairs(doc: Document, paras: list[tuple[int, str]]) -> list[Pair]:
    if len(paras) < 3:
        return []
    from sklearn.feature_extraction.text import TfidfVectorizer

    abstract, body = paras[0][1], [t for _, t in paras[1:]]
    sents = [s for s in _sentences(abstract) if len(s.split()) >= 8]
    if not sents:
        return []
    vec = TfidfVectorizer(stop_words="english").fit(body + sents)
    sims = (vec.transform(sents) @ vec.transform(body).T).toarray()
    return [
        Pair("abstract", s, cut(body[int(row.argmax())]), doc.label)
        for s, row in zip(sents, sims, strict=True)
        if row.max() > 0.1
    ]


def _acronym_pairs(doc: Document, paras: list[tuple[int, str]]) -> list[Pair]:
    out, seen = [], set()
    for _, text in paras:
        for m in ACRONYM.finditer(text):
            short = m.group(2)
            long = long_form(m.group(1), short)
            if long is None or short in seen:
                continue
            uses = re.compile(rf"\b{re.escape(short)}\b")
            users = [t for _, t in paras if uses.search(t) and long.lower() not in t.lower()]
            if users:
                seen.add(short)
                out.append(Pair("acronym", long, cut(users[0]), doc.label))
    return out


def _sentence_pairs(doc: Document, paras: list[tuple[int, str]], rng: random.Random) -> list[Pair]:
    out = []
    for _, text in paras:
        sents = _sentences(text)
        if len(sents) < 3:
            continue
        # one sentence per paragraph: two pairs of one paragraph would be each other's false negatives
        i = rng.randrange(len(sents))
        if len(sents[i].split()) >= 8:
            rest = " ".join(s for j, s in enumerate(sents) if j != i)
            out.append(Pair("sentence", sents[i], cut(rest), doc.label))
    return out


def corpus_pairs(
    documents: Sequence[Document],
    *,
    seed: int = 0,
    max_pairs: int = defaults.ADAPT_MAX_PAIRS,
    max_share: float = defaults.ADAPT_MAX_KIND_SHARE,
) -> list[Pair]:
    """Training pairs from ``documents`` (see the module docstring), shuffled with ``seed``.

    Args:
        documents: Converted papers.
        seed: Seed of the shuffle and of the sentence choice.
        max_pairs: At most this many pairs in all.
        max_share: No kind takes more than this share of ``max_pairs`` (the rare kinds all stay).
    """
    rng = random.Random(seed)
    by_kind: dict[str, list[Pair]] = {k: [] for k in KINDS}
    for doc in documents:
        paras = paragraphs(doc)
        for p in (*_heading_pairs(doc, paras), *_caption_pairs(doc, paras), *_abstract_pairs(doc, paras),
                  *_acronym_pairs(doc, paras), *_sentence_pairs(doc, paras, rng)):  # fmt: skip
            by_kind[p.kind].append(p)
    cap = max(1, int(max_pairs * max_share))
    out: list[Pair] = []
    for kind in KINDS:
        pairs = by_kind[kind]
        rng.shuffle(pairs)
        out += pairs[:cap]
    rng.shuffle(out)
    return out[:max_pairs]


def pairs_sha256(pairs: Sequence[Pair]) -> str:
    """SHA-256 of the pairs (recorded in the model card)."""
    return text_sha256(canonical_json([[p.kind, p.query, p.passage, p.label] for p in pairs]))
