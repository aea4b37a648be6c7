"""Mark evidence where you read: select a passage of the page text, say the question, add it to a file.

``page_text_widget`` renders the document view's HTML in an anywidget that sends the text a person
selects in it (with the mouse or the keyboard) to Python: only the text of the blocks counts, not their
kind labels, offsets or link lines. ``EvidenceMarker`` is the row the document browser shows below the
page: the selected passage (editable: a passage can also be pasted), the question (typed, or one of the
file's questions picked), the question file and an *Add selected text as evidence* button, which calls
:func:`hepwb.evaluation.question_file.add_evidence` and shows ``added to FILE: QID (page N)`` or the
one-line refusal (duplicate, ambiguous or unknown quote, unknown document, empty selection or question).

Example:
    >>> from hepwb.processing.markdown import markdown_document
    >>> doc = markdown_document("# Fit\\n\\nThe fitted amplitude is 0.42 with an error of 0.05.", "N1")
    >>> import tempfile
    >>> marker = EvidenceMarker(lambda: (doc, None), Path(tempfile.mkdtemp()) / "mine.jsonl")
    >>> marker.selected.value, marker.question.value = "amplitude is 0.42", "What does the fit give?"
    >>> marker.add() is not None, marker.status.value.endswith("N1-01</span>")
    (True, True)
    >>> marker.add() is None and "already quotes" in marker.status.value
    True
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hepwb import defaults
from hepwb.evaluation.question_file import add_evidence, read_question_file
from hepwb.evaluation.questions import QUESTION_KINDS, Question
from hepwb.exceptions import ConfigError
from hepwb.paths import Layout
from hepwb.runtime.deps import extra
from hepwb.text.plaintext import escape_html
from hepwb.types import Document

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["DEFAULT_QUESTION_FILE", "EvidenceMarker", "default_question_file", "page_text_widget"]

DEFAULT_QUESTION_FILE = "questions/my-questions.jsonl"
"""Where marked evidence goes when no file is named: under the project's ``data/``."""

_NEW = ""
_ESM = r"""
// The text of the page blocks (<pre>) inside the selection, when the selection touches this view.
function selectedText(el) {
  const sel = window.getSelection();
  if (!sel || sel.rangeCount === 0 || sel.isCollapsed) return "";
  const range = sel.getRangeAt(0).cloneRange();
  if (!range.intersectsNode(el)) return "";
  if (!el.contains(range.startContainer)) range.setStart(el, 0);
  if (!el.contains(range.endContainer)) range.setEnd(el, el.childNodes.length);
  const frag = range.cloneContents();
  const pres = frag.querySelectorAll("pre");
  if (pres.length) return Array.from(pres, (p) => p.textContent).join("\n");
  const node = range.commonAncestorContainer;
  const host = node.nodeType === Node.ELEMENT_NODE ? node : node.parentElement;
  return host && host.closest("pre") ? frag.textContent : "";
}

function render({ model, el }) {
  el.classList.add("hw-page-text");
  const draw = () => { el.innerHTML = model.get("value"); };
  draw();
  model.on("change:value", draw);
  let timer = 0;
  const send = () => {
    const text = selectedText(el).trim();
    // a selection elsewhere (the question box, another cell) keeps the last passage chosen here
    if (text && text !== model.get("selection")) {
      model.set("selection", text);
      model.save_changes();
    }
  };
  const later = () => { clearTimeout(timer); timer = setTimeout(send, 120); };
  document.addEventListener("selectionchange", later);
  return () => {
    clearTimeout(timer);
    document.removeEventListener("selectionchange", later);
    model.off("change:value", draw);
  };
}

export default { render };
"""


@functools.cache
def _page_text_class() -> type[Any]:
    with extra("lab", "the document browser"):
        import anywidget
        import traitlets

    class PageText(anywidget.AnyWidget):
        """HTML (``value``) whose selected block text the browser sends back as ``selection``."""

        _esm = _ESM
        value = traitlets.Unicode("").tag(sync=True)
        selection = traitlets.Unicode("").tag(sync=True)

    return PageText


def page_text_widget(value: str = "") -> Any:
    """An HTML view (``.value``) whose selected text reaches Python as ``.selection`` (an anywidget)."""
    return _page_text_class()(value=value)


def default_question_file(layout: Layout | None = None) -> Path:
    """``data/questions/my-questions.jsonl`` under the project root (or ``layout``'s).

    Example:
        >>> default_question_file(Layout("/tmp/x")).as_posix()
        '/tmp/x/data/questions/my-questions.jsonl'
    """
    return (layout or Layout.default()).data / DEFAULT_QUESTION_FILE


def _short(text: str, n: int = defaults.DISPLAY_QUESTION_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


class EvidenceMarker:
    """A row below a page view: the selected passage, its question, the question file, an add button.

    Args:
        current: Returns the document shown and its page (``None`` for a document without pages).
        path: The question file (``.jsonl``); default :func:`default_question_file` of ``layout``.
        layout: Project layout for the default file.
    """

    def __init__(
        self,
        current: Callable[[], tuple[Document, int | None]],
        path: str | Path | None = None,
        *,
        layout: Layout | None = None,
    ) -> None:
        with extra("lab", "the document browser"):
            import ipywidgets as w

        self.current = current
        self._view: Any = None
        self._questions: dict[str, Question] = {}
        wide = {"description_width": "initial"}
        self.selected = w.Textarea(
            description="selected text",
            placeholder="select a passage of the page text above (or paste it here)",
            layout=w.Layout(width="98%", height="4.5em"),
            style=wide,
        )
        self.existing = w.Dropdown(
            options=[("new question", _NEW)], value=_NEW, description="add to", style=wide
        )
        self.question = w.Text(
            description="question",
            placeholder="type the question the passage answers",
            layout=w.Layout(width="60%"),
            style=wide,
        )
        self.answer = w.Text(
            description="answer",
            placeholder="the reference answer (optional; answer metrics count only questions with one)",
            layout=w.Layout(width="60%"),
            style=wide,
        )
        self.kind = w.Combobox(
            description="kind",
            placeholder="numeric, definition, … (optional)",
            options=list(QUESTION_KINDS),
            ensure_option=False,
            style=wide,
        )
        self.file = w.Text(
            value=str(path or default_question_file(layout)),
            description="question file",
            continuous_update=False,
            layout=w.Layout(width="60%"),
            style=wide,
        )
        self.button = w.Button(
            description="Add selected text as evidence",
            button_style="primary",
            icon="plus",
            layout=w.Layout(width="auto"),
        )
        self.status = w.HTML()
        self.status.add_class("hw-evidence-status")
        self.existing.observe(self._on_existing, names="value")
        self.file.observe(lambda _change: self.reload(), names="value")
        self.button.on_click(lambda _button: self.add())
        self.widget = w.VBox(
            [
                w.HTML(
                    "<b>Mark evidence</b>: select a passage of the page text, say which question it answers"
                ),
                self.selected,
                w.HBox([self.existing, self.question]),
                w.HBox([self.answer, self.kind]),
                w.HBox([self.file, self.button]),
                self.status,
            ]
        )
        self.widget.add_class("hw-evidence-marker")
        self.reload()

    def watch(self, view: Any) -> None:
        """Fill the selected-text box from ``view``'s selection (a :func:`page_text_widget`)."""
        self._view = view
        view.observe(self._on_selection, names="selection")

    def clear(self) -> None:
        """Forget the selected passage (the page changed under it)."""
        self.selected.value = ""
        if self._view is not None:
            self._view.selection = ""

    def _on_selection(self, change: dict[str, Any]) -> None:
        if change["new"]:
            self.selected.value = " ".join(str(change["new"]).split())

    def _on_existing(self, change: dict[str, Any]) -> None:
        question = self._questions.get(change["new"])
        self.question.value = question.question if question is not None else ""
        self.answer.value = question.answer if question is not None else ""
        self.kind.value = question.kind if question is not None else ""
        for box in (self.question, self.answer, self.kind):  # an existing question's are its own
            box.disabled = question is not None

    def _say(self, text: str, ok: bool) -> None:
        colour = "#146c43" if ok else "#b02a37"
        self.status.value = f"<span style='color:{colour}'>{escape_html(text)}</span>"

    def reload(self) -> None:
        """Re-read the question file: its questions become the choices of *add to*."""
        try:
            questions = read_question_file(self.file.value.strip())
        except ConfigError as exc:
            questions = []
            self._say(str(exc), ok=False)
        self._questions = {q.qid: q for q in questions}
        keep = self.existing.value if self.existing.value in self._questions else _NEW
        self.existing.options = [
            ("new question", _NEW),
            *((f"{q.qid} · {_short(q.question)}", q.qid) for q in questions),
        ]
        self.existing.value = keep

    def add(self) -> Question | None:
        """Add the selected text as evidence; the status line says where, or why not (then None)."""
        path = Path(self.file.value.strip()).expanduser()
        doc, page = self.current()
        try:
            question = add_evidence(
                path,
                question=self.question.value,
                doc=doc,
                page=page,
                quote=self.selected.value,
                qid=self.existing.value or None,
                answer=self.answer.value,
                kind=self.kind.value,
            )
        except ConfigError as exc:
            self._say(str(exc), ok=False)
            return None
        where = question.evidence[-1].page
        self.reload()  # the new question joins the choices; the question typed stays: it is that question now
        self._say(f"added to {path}: {question.qid}" + (f" (page {where})" if where else ""), ok=True)
        return question
