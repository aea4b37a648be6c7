from __future__ import annotations

from hepwb.processing.markdown import markdown_document, parse_blocks
from tests.helpers import SAMPLE_MD


def test_blocks_have_exact_offsets_and_kinds():
    blocks = parse_blocks(SAMPLE_MD)
    kinds = [b.kind for b in blocks]
    assert kinds == ["heading", "heading", "text", "math", "heading", "table", "code", "text"]
    for b in blocks:
        text = SAMPLE_MD[b.start : b.end]
        assert text == text.strip()
    assert [b.level for b in blocks if b.kind == "heading"] == [1, 2, 2]
    math = SAMPLE_MD[blocks[3].start : blocks[3].end]
    assert math.startswith("$$") and math.endswith("$$")


def test_latex_environment_and_unclosed_fence_are_atomic():
    text = "Intro.\n\n\\begin{align}\na &= b \\\\\nc &= d\n\\end{align}\n\nAfter.\n\n```\nnever closed"
    kinds = [(b.kind, text[b.start : b.end][:6]) for b in parse_blocks(text)]
    assert kinds == [("text", "Intro."), ("math", "\\begin"), ("text", "After."), ("code", "```\nne")]


def test_single_line_display_math_and_caption():
    text = "$$ E = mc^2 $$\n\nFigure 3: The asymmetry.\n\n- item one\n- item two"
    assert [b.kind for b in parse_blocks(text)] == ["math", "caption", "list"]


def test_markdown_document_ids_follow_content():
    a = markdown_document("# T\n\nBody.", "S1")
    assert a.document_id == markdown_document("# T\n\nBody.", "S2").document_id
    assert a.document_id != markdown_document("# T\n\nBody!", "S1").document_id
