"""Which questions of a set can be scored: every evidence quote located, ambiguous or not found, and why.

:func:`check_evidence` locates every quote of a question set in the converted documents
(:func:`~hepwb.evaluation.matching.locate_evidence`) and keeps the outcome of each. A question is
*scored* when at least one of its quotes is located; the others are reported by name, with the
document, page and reason, wherever a run is shown, and never dropped in silence.
:meth:`EvidenceCheck.require_scorable` stops a run in one line when fewer than half of the questions
can be scored (``accept_unscored`` lets it go on).

Example:
    >>> from hepwb.types import Block, Document
    >>> md = "The fitted amplitude is 0.42. The background is flat."
    >>> doc = Document("d", "N1", md, (Block("text", 0, len(md), 1),))
    >>> qs = [Question.from_dict({"qid": f"Q{i}", "question": "?", "evidence": [{"doc": "N1", "quote": t}]})
    ...       for i, t in enumerate(["The fitted amplitude is", "not in the note at all", "The"])]
    >>> check = check_evidence(qs, [doc])
    >>> [r["status"] for r in check.rows()], check.n_scored
    (['located', 'not_found', 'ambiguous'], 1)
    >>> print(check.summary())
    1 of 3 questions can be scored; 2 quotes not located (1 ambiguous, 1 not found)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hepwb.evaluation.keyindex import KeyIndex
from hepwb.evaluation.matching import Located, Unlocated, locate_all
from hepwb.evaluation.questions import Question
from hepwb.exceptions import ConfigError
from hepwb.types import Document, JSONObject

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["EvidenceCheck", "UnscoredError", "check_evidence", "unscored_frame"]

UNSCORED_COLUMNS = ("qid", "evidence", "doc", "page", "quote", "status", "reason", "matched_pages")
"""The columns of a table of quotes not located (:meth:`Unlocated.row`)."""


class UnscoredError(ConfigError):
    """Fewer than half of a question set's questions can be scored (their evidence is not located)."""


@dataclass(frozen=True)
class EvidenceCheck:
    """Every evidence quote of a question set, located or not.

    Attributes:
        questions: The questions checked.
        located: The located quotes.
        unlocated: The quotes not located, each with status and reason.
    """

    questions: tuple[Question, ...]
    located: tuple[Located, ...]
    unlocated: tuple[Unlocated, ...]

    @property
    def scored(self) -> list[str]:
        """The ids of the questions with at least one located quote, in file order."""
        have = {loc.qid for loc in self.located}
        return [q.qid for q in self.questions if q.qid in have]

    @property
    def n_scored(self) -> int:
        """How many questions can be scored."""
        return len(self.scored)

    @property
    def unscored(self) -> list[str]:
        """The ids of the questions none of whose quotes is located."""
        have = set(self.scored)
        return [q.qid for q in self.questions if q.qid not in have]

    def rows(self) -> list[JSONObject]:
        """One row per quote, in file order: question, evidence, document, page, status, where, reason."""
        located = {loc.eid: loc for loc in self.located}
        missing = {u.eid: u for u in self.unlocated}
        out: list[JSONObject] = []
        for q in self.questions:
            for ev in q.evidence:
                row: JSONObject = {"qid": q.qid, "evidence": ev.eid, "doc": ev.doc, "page": ev.page}
                if ev.eid in located:
                    loc = located[ev.eid]
                    how = {"strict": "verbatim", "tolerant": "90 % of its pieces", "unique": "short, unique"}
                    page_note = "" if loc.page_ok else f", not on page {ev.page}"
                    row |= {"status": "located", "found_on_page": loc.page,
                            "reason": f"{how[loc.method]}{page_note}"}  # fmt: skip
                else:
                    u = missing[ev.eid]
                    pages = sorted({p for p in u.pages if p is not None})
                    row |= {"status": u.status, "found_on_page": pages or None, "reason": u.reason}
                row["quote"] = ev.quote
                out.append(row)
        return out

    def frame(self) -> pd.DataFrame:
        """:meth:`rows` as a table (pandas)."""
        import pandas as pd

        return pd.DataFrame(self.rows())

    def summary(self) -> str:
        """One line: how many questions can be scored and why the others cannot."""
        n = len(self.questions)
        text = f"{self.n_scored} of {n} question{'s' if n != 1 else ''} can be scored"
        if not self.unlocated:
            return text + "; every quote located"
        counts = Counter(u.status.replace("_", " ") for u in self.unlocated)
        why = ", ".join(f"{v} {k}" for k, v in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
        m = len(self.unlocated)
        return f"{text}; {m} quote{'s' if m != 1 else ''} not located ({why})"

    def require_scorable(self, where: str, *, accept: bool = False) -> None:
        """Stop in one line when fewer than half of the questions can be scored (unless ``accept``).

        Raises:
            UnscoredError: Naming the questions not scored and the first reasons.
        """
        if accept or 2 * self.n_scored >= len(self.questions):
            return
        first = "; ".join(f"{u.qid}: {u.status.replace('_', ' ')}" for u in self.unlocated[:3])
        more = f"; and {len(self.unlocated) - 3} more" if len(self.unlocated) > 3 else ""
        msg = (
            f"{where}: only {self.summary()} ({first}{more}). See `hepwb questions check {where}` for each "
            "quote's reason; fix the quotes, or pass --accept-unscored (accept_unscored=True) to score the "
            "few that are located"
        )
        raise UnscoredError(msg)


def check_evidence(questions: Sequence[Question], documents: Iterable[Document | KeyIndex]) -> EvidenceCheck:
    """Locate every quote of ``questions`` in ``documents`` (see the module docstring)."""
    located, unlocated = locate_all(questions, documents)
    return EvidenceCheck(tuple(questions), tuple(located), tuple(unlocated))


def unscored_frame(rows: Iterable[JSONObject]) -> pd.DataFrame:
    """A table of the quotes not located (rows of :meth:`Unlocated.row`), empty with its columns if none."""
    import pandas as pd

    return pd.DataFrame(list(rows), columns=list(UNSCORED_COLUMNS))
