"""Helpers shared by the tests (one copy, imported everywhere)."""

from __future__ import annotations

from pathlib import Path

from hepwb.paths import shared_dir
from hepwb.types import Chunk, Document

SHARED = shared_dir(Path(__file__).resolve().parents[1])
PDF_DIR = SHARED / "corpus" / "papers" / "pdf"
QUESTIONS = SHARED / "eval" / "hepqa-dev.jsonl"
SCHEMAS = SHARED / "hepilot"

SAMPLE_MD = """# Deeply virtual Compton scattering

## 1 Introduction

The beam-spin asymmetry A_LU is measured with a 27.6 GeV positron beam. It is sensitive to GPDs.
Fig. 3 shows the result, e.g. for -t < 0.7 GeV^2. The analysis follows Ref. 12.

$$
A_{LU}(\\phi) = \\frac{1}{P_B}\\,\\frac{N^+(\\phi) - N^-(\\phi)}{N^+(\\phi) + N^-(\\phi)}
$$

## 2 Results

| bin | -t (GeV^2) | A_LU |
|-----|-----------|------|
| 1 | 0.10 | -0.23 |
| 2 | 0.30 | -0.18 |

```python
print("code is never split")
```

The CLAS12 detector recorded the data. The asymmetry is negative in all bins.
"""


def assert_chunk_invariants(doc: Document, chunks: list[Chunk], chunk_size: int) -> None:
    """Offsets exact, sizes bounded, atomic blocks whole, indices sequential, IDs unique."""
    assert [c.index for c in chunks] == list(range(len(chunks)))
    assert len({c.chunk_id for c in chunks}) == len(chunks)
    for c in chunks:
        assert doc.markdown[c.start : c.end] == c.text
        a, z = c.context
        assert 0 <= a <= c.start and c.end <= z <= len(doc.markdown), f"context of chunk {c.index} misses it"
        assert c.text.strip(), "empty chunk"
        assert c.token_count <= chunk_size or c.oversized, (c.index, c.token_count)
        for b in doc.blocks:
            if b.atomic and c.start < b.end and c.end > b.start:
                assert c.start <= b.start and c.end >= b.end, f"chunk {c.index} splits a {b.kind} block"
    # every non-blank character of a retrievable block is in some chunk; reference entries in none
    covered = [False] * len(doc.markdown)
    for c in chunks:
        covered[c.start : c.end] = [True] * (c.end - c.start)
    wanted = [False] * len(doc.markdown)
    for b in doc.blocks:
        wanted[b.start : b.end] = [b.retrievable] * (b.end - b.start)
    missing = [i for i, ch in enumerate(doc.markdown) if wanted[i] and not covered[i] and not ch.isspace()]
    assert not missing, f"text not in any chunk at offsets {missing[:5]}"
