"""A widget to approve a tier hit for promotion to LT: the human approval the design asks for.

The click records an ``approved`` signal (who, when, a note) in the tiers' audit file; the promotion
job then copies the hit's document into LT and cites that approval as its evidence.
"""

from __future__ import annotations

from collections.abc import Sequence

from hepwb.exceptions import HepwbError
from hepwb.runtime.deps import extra
from hepwb.text.plaintext import escape_html
from hepwb.tiers.store import Tiers
from hepwb.types import Hit

__all__ = ["ApprovalWidget"]


def _label(h: Hit) -> str:
    pages = ",".join(map(str, h.pages))
    return f"#{h.rank} [{h.tier}] {h.label} p.{pages} — {' '.join(h.text.split())[:70]}…"


class ApprovalWidget:
    """Pick a hit, say who you are, press *approve for LT*."""

    def __init__(self, tiers: Tiers, hits: Sequence[Hit], actor: str = "") -> None:
        with extra("lab", "the explorers"):
            import ipywidgets as w

        self.tiers = tiers
        self.hits = list(hits)
        self.choice = w.Dropdown(
            options=[(_label(h), i) for i, h in enumerate(self.hits)],
            description="hit",
            layout=w.Layout(width="95%"),
        )
        self.actor = w.Text(value=actor, description="you", placeholder="your name (recorded)")
        self.note = w.Text(
            description="note", placeholder="why it belongs in LT", layout=w.Layout(width="60%")
        )
        self.button = w.Button(description="approve for LT", button_style="success", icon="check")
        self.out = w.HTML()
        self.button.on_click(self._approve)
        self.widget = w.VBox([self.choice, w.HBox([self.actor, self.note, self.button]), self.out])

    def select(self, rank: int) -> None:
        """Select the hit of rank ``rank``."""
        self.choice.value = next(i for i, h in enumerate(self.hits) if h.rank == rank)

    def _approve(self, *_: object) -> None:
        if not self.actor.value.strip():
            self.out.value = "<b style='color:#b00'>say who approves (the audit trail records it)</b>"
            return

        h = self.hits[int(self.choice.value)]
        try:
            self.tiers.approve(h.chunk_id, actor=self.actor.value.strip(), note=self.note.value)
        except HepwbError as exc:
            self.out.value = f"<b style='color:#b00'>{escape_html(str(exc))}</b>"
            return
        n = len(self.tiers.candidates())
        self.out.value = (
            f"approved <b>{escape_html(h.label)}</b> ({escape_html(h.tier)}) as "
            f"{escape_html(self.actor.value.strip())}; {n} document(s) now earn promotion"
        )

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)
