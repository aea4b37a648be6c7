"""``fusion``: the hybrid retriever with weights fitted by cross-validation (``hepwb fit-fusion``).

``fitted`` names a fit saved under ``data/models/fusion/<name>.json`` (or is a path to one): its method
(``rrf`` weighted, or ``linear``), dense share, lexical fields and dense reading (each fold its own).
Evaluated on the very question set it was fitted on, the retriever answers each question with the
weights of the fold that left that question's paper out (:meth:`FusionRetriever.out_of_fold`), so no
question is scored with weights fitted on itself.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Annotated, Any, get_args

from pydantic import AfterValidator

from hepwb import defaults, limits
from hepwb.exceptions import ConfigError
from hepwb.files.parsers import read_json_file
from hepwb.files.publish import IncompleteArtefactError
from hepwb.files.readers import ReadError
from hepwb.models.embedder import Embedder, model_slug
from hepwb.models.tokenizers import model_identity
from hepwb.paths import Layout
from hepwb.retrieval.base import register_retriever
from hepwb.retrieval.hybrid import HybridRetriever
from hepwb.retrieval.options import Fusion, LexicalFields, Read
from hepwb.text.names import under
from hepwb.types import Hit, JSONObject

__all__ = ["FusionRetriever", "check_fit", "fit_path", "fit_problem", "fit_reads", "load_fit"]


def fit_path(fitted: str) -> Path:
    """A fitted fusion's file: ``fitted`` when it is a file, else ``data/models/fusion/<fitted>.json``."""
    path = Path(fitted)
    if path.suffix == ".json" and path.is_file():
        return path
    return under(Layout.default().data / "models" / "fusion", fitted, "fusion fit", ".json")


def load_fit(fitted: str) -> JSONObject:
    """A fitted fusion as saved by ``hepwb fit-fusion`` (a clear error naming the fix when missing)."""
    if not fitted:
        msg = (
            "fusion needs fitted=<a fit> here: run `hepwb fit-fusion --name NAME` first (only a run whose "
            "retriever is plain `fusion`, in evaluate or a sweep, fits one itself, out of fold)"
        )
        raise ConfigError(msg)
    path = fit_path(fitted)
    if not path.exists():
        msg = f"no fitted fusion {fitted!r} ({path}): fit one with `hepwb fit-fusion --name {fitted}`"
        raise ConfigError(msg)
    try:
        fit = read_json_file(path, "fusion fit", max_bytes=limits.MAX_FIT_BYTES)
    except ReadError as exc:
        why = str(exc).removeprefix(f"fusion fit {path}").lstrip(",: ").split("; ")[0]
        raise IncompleteArtefactError(_damaged(path, f"it does not parse: {why}")) from None
    problem = fit_problem(fit)
    if problem:
        raise IncompleteArtefactError(_damaged(path, problem))
    return fit  # type: ignore[no-any-return]


def _damaged(path: Path, why: str) -> str:
    """One line: the fit ``path`` is damaged (``why``) and the command that makes it again."""
    if path.stem.startswith("run-"):  # fitted by a run: the next run fits it again when it is gone
        fix = "delete it and run again (the run fits it again), or pass fitted=NAME of a fit of yours"
    else:
        fix = f"fit it again with `hepwb fit-fusion --name {path.stem} ...` (its chunk set and questions)"
    return f"fusion fit {path} is damaged ({why}): {fix}"


def _params_problem(p: Any, where: str) -> str | None:
    if not isinstance(p, dict):
        return f"{where} is not an object"
    if p.get("method") not in get_args(Fusion):
        return f"{where}method is {p.get('method')!r}, not one of {', '.join(get_args(Fusion))}"
    w = p.get("weight")
    if isinstance(w, bool) or not isinstance(w, int | float) or not (math.isfinite(w) and 0 <= w <= 1):
        return f"{where}weight is {w!r}, not a number from 0 to 1"
    if "dense_read" in p and p["dense_read"] not in get_args(Read):
        return f"{where}dense_read is {p['dense_read']!r}, not one of {', '.join(get_args(Read))}"
    return None


def fit_problem(fit: Any) -> str | None:
    """What is wrong with a fit as read from its file (``None``: every field the retriever uses is valid).

    Example:
        >>> fit_problem({"method": "rrf", "weight": "x"})
        "weight is 'x', not a number from 0 to 1"
    """
    if not isinstance(fit, dict):
        return "not a JSON object"
    problem = _params_problem(fit, "")
    if problem:
        return problem
    if fit.get("dense_read") not in get_args(Read):
        return f"dense_read is {fit.get('dense_read')!r}, not one of {', '.join(get_args(Read))}"
    if fit.get("fields") not in get_args(LexicalFields):
        return f"fields is {fit.get('fields')!r}, not one of {', '.join(get_args(LexicalFields))}"
    for key, top in (("top_m", 100), ("fetch", 10_000)):
        v = fit.get(key)
        if type(v) is not int or not 1 <= v <= top:
            return f"{key} is {v!r}, not a whole number from 1 to {top}"
    for key in ("embedding_model", "chunkset_id", "questions_sha256"):
        if not isinstance(fit.get(key), str):
            return f"{key} is {fit.get(key)!r}, not a string"
    folds, params = fit.get("folds"), fit.get("fold_params")
    if not isinstance(folds, dict) or not all(type(v) is int for v in folds.values()):
        return "folds is not an object of papers to fold numbers"
    if not isinstance(params, dict):
        return "fold_params is not an object"
    for fold, p in params.items():
        problem = _params_problem(p, f"fold_params[{fold}].")
        if problem:
            return problem
    if any(str(v) not in params for v in folds.values()):
        return "folds names a fold that fold_params lacks"
    return _folds_problem(fit, folds, params)


def _folds_problem(fit: JSONObject, folds: dict[str, int], params: dict[str, Any]) -> str | None:
    """Whether the folds agree with each other: a fold whose papers were lost would be scored in sample.

    Every paper of the fit's questions has its fold in ``folds``; ``fold_params[f].papers`` lists the same
    papers for fold ``f``; there are ``n_folds`` folds and at least one question per paper.

    Example:
        >>> fold = {"method": "rrf", "weight": 0.5, "papers": ["A"]}
        >>> _folds_problem({"n_folds": 1, "n_questions": 3}, {"A": 0}, {"0": fold})
        >>> _folds_problem({"n_folds": 1, "n_questions": 3}, {}, {"0": fold})
        'folds is empty: no paper has weights fitted without it'
    """
    if not folds:
        return "folds is empty: no paper has weights fitted without it"
    papers: dict[str, set[str]] = {}
    for paper, number in folds.items():
        papers.setdefault(str(number), set()).add(paper)
    for fold, p in params.items():
        listed = p.get("papers")
        if not isinstance(listed, list) or not all(isinstance(x, str) for x in listed):
            return f"fold_params[{fold}].papers is not a list of papers"
        if set(listed) != papers.get(fold, set()):
            return f"fold_params[{fold}].papers and folds disagree on the papers of fold {fold}"
    n_folds, n_questions = fit.get("n_folds"), fit.get("n_questions")
    if type(n_folds) is not int or n_folds != len(params):
        return f"n_folds is {n_folds!r}, fold_params has {len(params)} folds"
    if type(n_questions) is not int or n_questions < len(folds):
        return f"n_questions is {n_questions!r}, fewer than the {len(folds)} papers of its folds"
    return None


def fit_reads(fit: JSONObject) -> set[str]:
    """How the fit's dense branch reads chunks (its own and every fold's ``dense_read``)."""
    folds = fit["fold_params"].values()
    return {str(fit["dense_read"]), *(str(p.get("dense_read", fit["dense_read"])) for p in folds)}


def check_fit(fit: JSONObject, fitted: str, table: Any, embedder: Embedder | None) -> None:
    """Refuse a fit used with another embedding model or chunk set than it was fitted on (one line, the fix).

    A fit's weights are chosen for one embedder's scores over one chunk set; with another they are
    numbers fitted to something else, and the run would not say so.
    """

    def vectors_of(model: str) -> str:  # what names a model's vectors (its tables use the same)
        return model_slug(model_identity(model))

    if embedder is not None and vectors_of(embedder.model) != vectors_of(fit["embedding_model"]):
        msg = (
            f"fusion fit {fitted!r} was fitted with embedding model {fit['embedding_model']!r}, this run "
            f"embeds with {embedder.model!r}: pass --embedding-model {fit['embedding_model']}, or fit again "
            f"with `hepwb fit-fusion --name NAME --embedding-model {embedder.model}`"
        )
        raise ConfigError(msg)
    name = getattr(table, "name", None)
    searched = name.split("__")[0] if isinstance(name, str) and "__" in name else None
    if searched is not None and searched != fit["chunkset_id"]:
        was, now = _size(fit["chunkset_id"]), _size(searched)
        why = (
            f"({was}), this run searches {searched} ({now}): use that chunker, size and overlap"
            if was != now or fit["chunkset_id"].rsplit("-", 1)[0] != searched.rsplit("-", 1)[0]
            else f"({was} too, but its papers or hepwb's chunking code have changed since)"
        )
        msg = (
            f"fusion fit {fitted!r} was fitted on chunk set {fit['chunkset_id']} {why}, or fit again on "
            f"this chunk set: `hepwb fit-fusion --name {fitted} --chunk-size ...`"
        )
        raise ConfigError(msg)


def _size(chunkset_id: str) -> str:
    m = re.search(r"-cs(\d+)-", chunkset_id)
    return f"chunk size {m.group(1)}" if m else "another chunking"


def _fit_exists(fitted: str) -> str:
    if fitted:  # empty: the run fits one itself (hepwb.experiment.fusion_fit.fit_in_run)
        load_fit(fitted)
    return fitted


Fit = Annotated[str, AfterValidator(_fit_exists)]
"""The name or path of a saved fit, checked to exist before a sweep starts; empty: fitted in the run."""


@register_retriever("fusion")
class FusionRetriever:
    """Hybrid retrieval with the fusion chosen by cross-validation (see the module docstring).

    Args:
        table: LanceDB chunk table.
        embedder: Query embedder.
        fitted: Name (under ``data/models/fusion/``) or path of a fit. An evaluation run (``run_cell``)
            of ``fusion`` without one fits one on its own inputs first and passes its path here.
    """

    name = "fusion"

    @staticmethod
    def parts(options: JSONObject) -> set[str]:
        """The table parts it reads: the vectors and both lexical fields (a fit may choose either)."""
        return {"vector", "search_text"}

    def __init__(self, table: Any, embedder: Embedder | None = None, fitted: Fit = "") -> None:
        self.fit = load_fit(fitted)
        check_fit(self.fit, fitted, table, embedder)
        self.table = table
        self.embedder = embedder
        self._inner = self._make(self.fit["method"], self.fit["weight"], self.fit["dense_read"])
        self._folds: dict[int, Any] = {}

    def _make(self, method: str, weight: float, dense_read: Read) -> HybridRetriever:
        f = self.fit
        fuse: Fusion = "rrf" if method == "rrf" else "linear"
        r = HybridRetriever(self.table, self.embedder, fetch=f["fetch"], weight=weight, dense_read=dense_read,
                            top_m=f["top_m"], fields=f["fields"], method=fuse)  # fmt: skip
        r.name = self.name
        return r

    def out_of_fold(self, question: Any, questions_sha256: str) -> HybridRetriever | None:
        """The retriever for ``question`` when it belongs to the fit's own question set (else ``None``)."""
        if questions_sha256 != self.fit["questions_sha256"]:
            return None
        paper = str(question.evidence[0].doc) if question.evidence else "-"
        fold = self.fit["folds"].get(paper)
        if fold is None:  # a paper the fit never saw: no weights were fitted on its questions
            return None
        if fold not in self._folds:
            p = self.fit["fold_params"][str(fold)]
            self._folds[fold] = self._make(
                p["method"], p["weight"], p.get("dense_read", self.fit["dense_read"])
            )
        return self._folds[fold]  # type: ignore[no-any-return]

    def search(self, query: str, k: int = defaults.EVAL_K) -> list[Hit]:
        """Top ``k`` chunks by the fitted fusion."""
        return self._inner.search(query, k)
