"""The report's tables for people: human column names, the best value marked, nothing cut or hidden.

``headline_html`` renders the runs of a sweep as one HTML table (never cut with "…"), each metric's best
value in bold on green. With ``sticky=True`` the configuration column stays in view while a wide table
scrolls sideways. ``verdict_html`` renders a :class:`~hepwb.report.verdict.Verdict` (best first, the
indistinguishable rows shaded, the recommended one starred, with costs). ``inputs_table`` shows the
corpus and question set of the runs with paths relative to the project and ``None`` as "all".

Example:
    >>> import pandas as pd
    >>> wide = pd.DataFrame({"chunk_size": [256, 256], "retriever": ["bm25", "dense"],
    ...                      "hit_rate@5": [0.8, 0.6], "run_id": ["a", "b"]})
    >>> html = headline_html(wide, ["chunk_size", "retriever", "hit_rate@5"], "hit_rate@5")
    >>> "found@5" in html and "hw-best" in html and "…" not in html
    True
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from hepwb import defaults
from hepwb.report.links import HEADER_TERMS, term_link
from hepwb.report.verdict import INDEX_RECALL, Verdict
from hepwb.text.labels import LABELS, config_label, human
from hepwb.text.plaintext import escape_html, plain

if TYPE_CHECKING:
    import pandas as pd
    from pandas.io.formats.style import Styler


__all__ = [
    "DECISION_METRICS",
    "IDENTITY_COLUMNS",
    "LABELS",
    "config_label",
    "headline_html",
    "human",
    "inputs_table",
    "styled",
    "verdict_html",
]

IDENTITY_COLUMNS = ("chunker", "chunk_size", "chunk_overlap", "retriever")
"""The columns that say which configuration a row is."""
DECISION_METRICS = (defaults.DECISION_METRIC, "recall@5", "mrr@10", "ndcg@10", "doc_recall@5")
"""The five metrics of the compact decision table, the decision metric first."""

_LOWER_IS_BETTER = {
    "share_chunks_truncated",
    "index_mib",
    "query_p50_ms",
    "query_p95_ms",
    "compute_s",
    "ann_p50_ms",
    "ann_p95_ms",
    "exact_p50_ms",
    "exact_p95_ms",
    "ann_mib",
}
_NOT_SCORES = {
    "n_questions",
    "n_chunks",
    "mean_chunk_tokens",
    "n_evidence_located",
    "chunk_size",
    "chunk_overlap",
    "k",
}
_STYLE = (
    "<style>.hw-scroll{overflow-x:auto;max-width:100%}"
    ".hw-headline{border-collapse:separate;border-spacing:0;font-size:13px}"
    ".hw-headline th,.hw-headline td{padding:3px 8px;border-bottom:1px solid #ddd;text-align:right;"
    "white-space:nowrap;background:#fff}.hw-headline th{background:#f4f4f8}"
    ".hw-headline td.hw-text{text-align:left}"
    ".hw-headline td.hw-best{font-weight:bold;background:#d9f2d9}"
    "table.hw-headline th.hw-sticky,table.hw-headline td.hw-sticky{position:sticky;left:0;z-index:1;"
    "text-align:left;border-right:2px solid #ccc}table.hw-headline td.hw-text{text-align:left}"
    ".hw-headline tr.hw-same td{background:#eef6ee}"
    ".hw-headline tr.hw-top td{background:#d9f2d9;font-weight:bold}"
    ".hw-verdict{font-size:15px;line-height:1.5;border-left:4px solid #2a7;padding:6px 12px;"
    "background:#f6fbf7}</style>"
)


def _fmt(value: object) -> str:
    if value is None:
        return "all"
    if str(value) == "<NA>":  # pandas' missing whole number (the chunk size of a run file at paper level)
        return "–"
    if isinstance(value, float):
        return f"{value:.3f}" if not math.isnan(value) else "–"
    return escape_html(str(value))


def headline_html(wide: pd.DataFrame, columns: Sequence[str], metric: str, *, sticky: bool = False) -> str:
    """The runs as one HTML table sorted by ``metric``, best value of every score column marked.

    With ``sticky`` the identity columns among ``columns`` are folded into one *configuration* column
    that stays in place while the table scrolls sideways (for the full table of every metric).
    """
    import pandas as pd

    cols = [c for c in columns if c in wide.columns]
    frame = wide.sort_values(metric, ascending=False) if metric in wide.columns else wide
    if sticky:
        ident = [c for c in cols if c in IDENTITY_COLUMNS or c == "embedding_model"]
        cols = [c for c in cols if c not in ident]
        labels = [config_label(r) for r in frame.to_dict("records")]
    best: dict[str, float] = {}
    for c in cols:
        if c in _NOT_SCORES or not pd.api.types.is_numeric_dtype(frame[c]) or frame[c].isna().all():
            continue
        best[c] = float(frame[c].min() if c in _LOWER_IS_BETTER else frame[c].max())
    head = "".join(f"<th>{escape_html(human(c))}</th>" for c in cols)
    if sticky:
        head = f'<th class="hw-sticky">configuration</th>{head}'
    rows = []
    for i, rec in enumerate(frame[cols].itertuples(index=False)):
        cells = [f'<td class="hw-sticky">{escape_html(labels[i])}</td>'] if sticky else []
        for c, v in zip(cols, rec, strict=True):
            cls = "hw-text" if isinstance(v, str) else ""
            if c in best and isinstance(v, int | float) and abs(float(v) - best[c]) < 1e-12:
                cls += " hw-best"
            cells.append(f'<td class="{cls.strip()}">{_fmt(v)}</td>')
        rows.append(f"<tr>{''.join(cells)}</tr>")
    table = f'<table class="hw-headline"><tr>{head}</tr>{"".join(rows)}</table>'
    return f'{_STYLE}<div class="hw-scroll">{table}</div>'


def verdict_html(v: Verdict, *, max_rows: int = defaults.DISPLAY_VERDICT_ROWS) -> str:
    """The verdict: one sentence, then the best ``max_rows`` runs with interval, test and cost.

    Rows that cannot be told apart from the best are shaded; the recommended one is starred. *detectable* is
    the smallest difference from the best that its questions could tell from chance (half the width of the
    interval of the paired test inverted, :func:`~hepwb.evaluation.stats.paired_test`); the difference is
    shown with that interval, and the last column counts the questions a run does better, worse and the
    same on than the best (``pt.Experiment``'s ``+`` and ``-``).
    """
    name = human(v.metric)
    shown = v.table.head(max_rows)
    ann = INDEX_RECALL in shown and bool(shown[INDEX_RECALL].notna().any())  # a sweep over vector indexes
    cols = ["configuration", name, "95 % interval", "difference", "p (Holm)", "detectable", "verdict",
            human("index_mib"), human("query_p50_ms"), human("compute_s")]  # fmt: skip
    cols += [human(INDEX_RECALL)] if ann else []
    cols += ["questions + / − / ="]
    head = "".join(
        f'<th class="hw-sticky">{c}</th>' if c == "configuration" else f"<th>{_header(c)}</th>" for c in cols
    )
    rows = []
    for rec in shown.to_dict("records"):
        star = " ★" if rec["run_id"] == v.recommended else ""
        cls = {"best": "hw-top", "indistinguishable": "hw-same"}.get(str(rec["verdict"]), "")
        cells = [
            f'<td class="hw-sticky">{escape_html(str(rec["configuration"]) + star)}</td>',
            f"<td>{rec[name]:.3f}</td>",
            f"<td>{rec['ci_low']:.3f} – {rec['ci_high']:.3f}</td>",
            f"<td>{_difference(rec)}</td>" if rec["verdict"] != "best" else "<td></td>",
            f"<td>{_fmt(rec['p (Holm)'])}</td>",
            f"<td>{_fmt(rec.get('detectable'))}</td>",
            f'<td class="hw-text">{escape_html(str(rec["verdict"]))}</td>',
            f"<td>{_fmt(rec.get('index_mib'))}</td>",
            f"<td>{_fmt(rec.get('query_p50_ms'))}</td>",
            f"<td>{_fmt(rec.get('compute_s'))}</td>",
        ]
        cells += [f"<td>{_fmt(rec.get(INDEX_RECALL))}</td>"] if ann else []
        cells += [f"<td>{_counts(rec)}</td>"]
        rows.append(f'<tr class="{cls}">{"".join(cells)}</tr>')
    more = len(v.table) - len(shown)
    note = f"<p>… and {more} more run(s), all in the full table below.</p>" if more > 0 else ""
    return (
        f'{_STYLE}<p class="hw-verdict">{v.sentence()}</p><div class="hw-scroll">'
        f'<table class="hw-headline"><tr>{head}</tr>{"".join(rows)}</table></div>{note}'
    )


def _header(column: str) -> str:
    """A verdict column's header, linked to its glossary term where it has one (:data:`HEADER_TERMS`)."""
    term = HEADER_TERMS.get(column)
    return term_link(term, column) if term else escape_html(column)


def _difference(rec: dict[Hashable, object]) -> str:
    """``+0.050 [−0.020, +0.120]``: a run's difference to the best, with its interval when the row has one."""
    diff, low, high = (rec.get(k) for k in ("difference", "diff_low", "diff_high"))
    text = f"{float(str(diff)):+.3f}"
    if isinstance(low, float) and isinstance(high, float) and not (math.isnan(low) or math.isnan(high)):
        text += f" [{low:+.3f}, {high:+.3f}]"
    return text


def _counts(rec: dict[Hashable, object]) -> str:
    """``12 / 3 / 85``: the questions a run does better, worse and the same on than the best (or ``""``)."""
    values = [rec.get(k) for k in ("better", "worse", "same")]
    if not all(isinstance(v, int | float) and not math.isnan(float(v)) for v in values):
        return ""
    return " / ".join(str(int(float(str(v)))) for v in values)


def inputs_table(wide: pd.DataFrame, root: str | Path | None = None) -> pd.DataFrame:
    """Corpus, question set, papers and model of the runs: paths relative to ``root``, ``None`` as "all".

    Example:
        >>> import pandas as pd
        >>> wide = pd.DataFrame({"corpus": ["/w/proj/data/pdf", "/elsewhere/pdf"],
        ...                      "questions": ["/w/shared/q.jsonl"] * 2, "max_docs": [None, 3],
        ...                      "embedding_model": ["m"] * 2, "tokenizer": ["m"] * 2})
        >>> t = inputs_table(wide, "/w/proj")
        >>> t["corpus"].tolist(), t["questions"].tolist(), t["papers"].tolist()
        (['data/pdf', '/elsewhere/pdf'], ['../shared/q.jsonl', '../shared/q.jsonl'], ['all', 'first 3'])
    """
    import pandas as pd

    base = Path(root).resolve() if root is not None else None

    def rel(value: object) -> str:
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return "default"
        p = Path(str(value))
        if base is not None and p.is_absolute():
            try:
                return p.resolve().relative_to(base).as_posix()
            except ValueError:
                if base.parent == Path(base.anchor):
                    return str(p)
                try:  # ../shared beside the project
                    return Path("..", p.resolve().relative_to(base.parent)).as_posix()
                except ValueError:
                    return str(p)
        return str(p)

    def docs(value: object) -> str:
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return "all"
        return f"first {int(float(str(value)))}"

    out = pd.DataFrame(
        {
            "corpus": [rel(v) for v in wide.get("corpus", [])],
            "questions": [rel(v) for v in wide.get("questions", [])],
            "papers": [docs(v) for v in wide.get("max_docs", [])],
            "embedding model": list(wide.get("embedding_model", [])),
            "tokenizer": list(wide.get("tokenizer", [])),
        }
    )
    return out.drop_duplicates().reset_index(drop=True)


def styled(
    frame: pd.DataFrame, precision: int = defaults.DISPLAY_DECIMALS, wrap: Sequence[str] = ()
) -> Styler:
    """``frame`` for people: human column names, no index column, cells HTML-escaped, numbers rounded.

    Columns named in ``wrap`` (snippets, explanations) are left-aligned and wrap instead of widening
    the table. pandas' ``Styler`` does not escape by default: a paper title or file name holding
    ``<script>`` would run; this one shows it as text, without control sequences (:func:`plain`).

    Example:
        >>> import pandas as pd
        >>> frame = pd.DataFrame({"file": ["<img src=x onerror=alert(1)>"], "hit_rate@5": [0.12345]})
        >>> html = styled(frame).to_html()
        >>> "&lt;img" in html and "<img" not in html and "0.123" in html and "found@5" in html
        True
    """
    frame = frame.rename(columns=lambda c: human(str(c)))  # hit_rate@5 -> found@5, as everywhere
    frame = frame.map(lambda v: plain(v) if isinstance(v, str) else v)  # corpus text: no ESC sequences
    wrap = [human(c) for c in wrap]
    out = frame.style.hide(axis="index").format(precision=precision, escape="html")
    text: list[Hashable] = [c for c in frame.columns if frame[c].dtype == object and c not in wrap]
    if text:  # words read from the left
        out = out.set_properties(subset=text, **{"text-align": "left"})
    cols: list[Hashable] = [c for c in wrap if c in frame.columns]
    if cols:
        out = out.set_properties(
            subset=cols, **{"text-align": "left", "white-space": "normal", "min-width": "16em"}
        )
    return out
