"""The configuration of one evaluation run: one validated, frozen object, checked once.

:class:`ExperimentConfig` is what the CLI (``hepwb evaluate``), sweep files (each cell), notebook
parameters, the widgets and the Python API build. Its defaults come from :mod:`hepwb.defaults` and
its bounds from :mod:`hepwb.limits` (one message per bound); chunker and retriever names and their
options are checked against their registries and declarations (:mod:`hepwb.components.options`). Nothing
downstream checks them again; public functions a user may call directly with raw values
(:func:`~hepwb.evaluation.metrics.evaluate`, ``Tiers.search``) check theirs with the same bounds.

Example:
    >>> ExperimentConfig.from_params(chunk_size=256, retriever="bm25").chunk_size
    256
    >>> ExperimentConfig.from_params(chunker={"name": "recursive"}).chunker
    'recursive'
    >>> ExperimentConfig.from_params(chunksize=256)
    Traceback (most recent call last):
    ...
    hepwb.exceptions.ConfigError: unknown parameter(s) ['chunksize']; valid: ...
    >>> sorted(config_problems({"chunk_size": 4, "k": 0}))
    ['chunk_size', 'k']
"""

from __future__ import annotations

import functools
import inspect
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from hepwb import defaults, limits
from hepwb.chunking import CHUNKERS, Chunker, get_chunker
from hepwb.components.callspec import Spec, call_string, named
from hepwb.components.options import bound_check
from hepwb.exceptions import ConfigError, HepwbError
from hepwb.index.ann import KINDS, VectorIndex
from hepwb.models.tokenizers import model_problem
from hepwb.project_defaults import current_defaults
from hepwb.retrieval import RETRIEVERS, check_retriever_options
from hepwb.text.ids import canonical_json
from hepwb.types import JSONObject

__all__ = ["DIMENSIONS", "CorpusInputs", "ExperimentConfig", "config_problems", "named", "validated"]

DIMENSIONS = (
    "corpus",
    "questions",
    "chunker",
    "chunk_size",
    "chunk_overlap",
    "tokenizer",
    "embedding_model",
    "retriever",
    "k",
    "max_docs",
    "prefer_latex",
    "min_coverage",
    "ragas_llm",
    "vector_index",
)
"""Configuration keys a sweep may vary over cells (its grid dimensions, and the report's columns)."""

_NAMED = ("chunker", "retriever", "vector_index")
_TOKENIZERS = ("words", "cl100k", "cl100k_base")


def _flag(value: Any) -> bool:
    if not isinstance(value, bool):
        msg = f"a flag is true or false, got {value!r}"
        raise ValueError(msg)
    return value


def _path(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, Path):
        return str(value)
    msg = f"a path (a folder or file name) or null for the default, got {value!r}"
    raise ValueError(msg)


def _model_name(value: Any) -> str:
    if not isinstance(value, str) or not value:
        msg = (
            f"a sentence-transformers model name or folder, e.g. {defaults.EMBEDDING_MODEL!r}; got {value!r}"
        )
        raise ValueError(msg)
    problem = model_problem(value)
    if problem:
        raise ValueError(problem)
    return value


def _tokenizer(value: Any) -> str:
    if isinstance(value, str) and value in _TOKENIZERS:
        return value
    return _model_name(value)


def _options(value: Any) -> JSONObject:
    if value is None:
        return {}
    if not isinstance(value, dict):
        msg = f"options map names to values, e.g. {{'weight': 0.5}}; got {value!r}"
        raise ValueError(msg)
    return dict(value)


def _refuse_conflicts(key: str, given: Any, opts: JSONObject, extra: JSONObject) -> None:
    """A :class:`ConfigError` when ``key``'s call form and ``{key}_options`` set one option differently.

    ``--retriever 'hybrid(weight=0.1)'`` with ``--option weight=0.9`` is refused, naming both; the same
    value in both places is accepted.
    """
    clash = sorted(k for k in opts.keys() & extra.keys() if opts[k] != extra[k])
    if clash:
        shown = given if isinstance(given, str) else f"{{name: {given.get('name')!r}, ...}}"
        flag = {"retriever": " (--option)", "vector_index": " (--index-option)"}.get(key, "")
        both = "; ".join(f"{k}={opts[k]!r} in {key} {str(shown)[:80]!r} and {k}={extra[k]!r} in "
                         f"{key}_options{flag}" for k in clash)  # fmt: skip
        msg = f"{key} options given twice with different values: {both}; keep one"
        raise ConfigError(msg)


_CHUNK_SETTINGS = ("chunk_size", "chunk_overlap", "tokenizer")


def _chunker_settings(data: JSONObject) -> JSONObject:
    """``chunker=<a chunker object>`` → its name, size, overlap, tokenizer and options (given twice: refused).

    Example:
        >>> from hepwb.chunking import HierarchicalChunker
        >>> out = _chunker_settings({"chunker": HierarchicalChunker(chunk_size=128, tokenizer="words")})
        >>> out["chunker"], out["chunk_size"], out["chunker_options"]
        ('hierarchical', 128, {})
        >>> _chunker_settings({"chunker": HierarchicalChunker(parent_size=2048)})["chunker_options"]
        {'parent_size': 2048}
    """
    chunker = data["chunker"]
    params = dict(chunker.params())
    settings = {key: params.pop(key) for key in _CHUNK_SETTINGS if key in params}
    declared = inspect.signature(type(chunker)).parameters
    params = {k: v for k, v in params.items() if k not in declared or declared[k].default != v}  # as by name
    clash = sorted(k for k, v in settings.items() if k in data and data[k] != v)
    clash += sorted(k for k, v in params.items() if k in _options(data.get("chunker_options")))
    if clash:
        msg = f"chunker {chunker.name!r}: {clash} given both in the chunker object and beside it; keep one"
        raise ConfigError(msg)
    out = {**data, **settings, "chunker": chunker.name}
    out["chunker_options"] = {**_options(data.get("chunker_options")), **params}
    return out


Path_ = Annotated[str | None, BeforeValidator(_path)]
Flag = Annotated[bool, BeforeValidator(_flag)]
Options = Annotated[JSONObject, BeforeValidator(_options)]


@dataclass(frozen=True)
class CorpusInputs:
    """The papers and questions of a configuration, and how they are read.

    :attr:`ExperimentConfig.corpus_inputs`; the loaders take these fields alone: what a run reads before
    chunking does not depend on its chunk size or retriever.
    """

    corpus: str | None = None
    questions: str | None = None
    max_docs: int | None = None
    prefer_latex: bool = defaults.PREFER_LATEX
    accept_unscored: bool = False


class ExperimentConfig(BaseModel):
    """Everything that defines one evaluation run (plain values, so papermill can pass them).

    ``chunker`` and ``retriever`` are registered names; as in sweep files, each may also be given as a
    mapping ``{"name": ..., **options}``, a call string ``"bm25(fields=context)"``, or an object: a spec
    (:class:`~hepwb.retrieval.specs.RetrieverSpec`, e.g. ``BM25(fields="context")``) or a chunker
    (``HierarchicalChunker(chunk_size=128)``, whose size, overlap and tokenizer then apply).
    ``chunker_options`` and ``retriever_options`` are keyword options of the chunker and retriever (e.g.
    ``{"parent_size": 1024}``, ``{"weight": 0.5}``).
    """

    model_config = ConfigDict(
        frozen=True, extra="forbid", validate_default=False, use_attribute_docstrings=True
    )

    corpus: Path_ = None
    """A folder of papers; ``null``: ``HEPWB_CORPUS`` or the shipped corpus."""
    questions: Path_ = None
    """A question file; ``null``: ``HEPWB_QUESTIONS`` or the shipped hepqa-dev."""
    chunk_size: Annotated[int, bound_check(limits.CHUNK_SIZE)] = defaults.CHUNK_SIZE
    """Tokens (bounded by ``hepwb.limits.CHUNK_SIZE``; HEPilot-compliant sizes are 512–4096)."""
    chunk_overlap: Annotated[float, bound_check(limits.CHUNK_OVERLAP)] = defaults.CHUNK_OVERLAP
    """A fraction of the chunk size, 0 ≤ x ≤ 0.75 (each chunk keeps a quarter of new text)."""
    tokenizer: Annotated[str, BeforeValidator(_tokenizer)] = defaults.EMBEDDING_MODEL
    """The tokenizer that counts chunk tokens (an embedding model's name, ``cl100k`` or ``words``)."""
    embedding_model: Annotated[str, BeforeValidator(_model_name)] = defaults.EMBEDDING_MODEL
    """A sentence-transformers name or folder, or an adapted model's name."""
    chunker_options: Options = Field(default_factory=dict)
    chunker: str = defaults.CHUNKER
    """A chunker name, or ``{name: NAME, OPTION: VALUE}`` (the chunkers are in the how-to on chunking)."""
    retriever_options: Options = Field(default_factory=dict)
    retriever: str = defaults.RETRIEVER
    """A retriever name, ``NAME(KEY=VALUE, …)``, or ``{name: NAME, KEY: VALUE}`` (see the retrievers)."""
    k: Annotated[int, bound_check(limits.K)] = defaults.EVAL_K
    """Chunks retrieved per question."""
    max_docs: Annotated[int | None, bound_check(limits.MAX_DOCS, optional=True)] = None
    """Only the first N papers of the corpus (``null``: all)."""
    prefer_latex: Flag = defaults.PREFER_LATEX
    """Use a paper's LaTeX source over its PDF when it is the PDF's source."""
    min_coverage: Annotated[float, bound_check(limits.MIN_COVERAGE)] = defaults.MIN_COVERAGE
    """The share of a quote a chunk must hold to be relevant (0.5)."""
    ragas_llm: Flag = False
    """Also LLM-judged ragas metrics (needs an endpoint)."""
    accept_unscored: Flag = False
    """Go on when fewer than half of the questions can be scored (their quotes not located)."""
    vector_index_options: Options = Field(default_factory=dict)
    vector_index: str = defaults.VECTOR_INDEX
    """``auto``, ``exact``, or an index type with options (``{name: ivf_sq, nprobes: 20}``)."""
    run_dir: Path_ = None

    @model_validator(mode="before")
    @classmethod
    def _split_named(cls, data: Any) -> Any:
        """``chunker: {name: recursive, ...}`` → ``chunker`` and ``chunker_options`` (so for retrievers).

        An unset (or ``None``) retriever or chunk size takes the project's pinned default (``hepwb defaults
        pin``), else the package's (:mod:`hepwb.defaults`).
        """
        if not isinstance(data, dict):
            return data
        data = {k: v for k, v in data.items() if v is not None or k not in ("retriever", "chunk_size")}
        if isinstance(data.get("chunker"), Chunker):  # a chunker object: its settings, checked like any
            data = _chunker_settings(data)
        if "retriever" not in data or "chunk_size" not in data:  # the project's defaults, else the package's
            chosen = current_defaults()
            data.setdefault("chunk_size", chosen.chunk_size)
            if "retriever" not in data:  # options given without a retriever apply to the default one
                name, opts = named(chosen.retriever)
                data["retriever"] = name
                data["retriever_options"] = {**opts, **_options(data.get("retriever_options"))}
        for key in _NAMED:
            value = data.get(key)
            if isinstance(value, dict | Spec) or (isinstance(value, str) and "(" in value):
                given = data[key]
                name, opts = named(given)
                extra = _options(data.get(f"{key}_options"))
                _refuse_conflicts(key, given, opts, extra)
                data[key] = name
                data[f"{key}_options"] = {**extra, **opts}
        return data

    @field_validator("chunker", mode="before")
    @classmethod
    def _check_chunker(cls, name: Any, info: ValidationInfo) -> Any:
        if not isinstance(name, str):
            msg = f"a chunker is a name or a mapping with a 'name'; choose one of {CHUNKERS.names()}"
            raise ValueError(msg)
        have = info.data
        if {"chunk_size", "chunk_overlap", "tokenizer", "chunker_options"} <= set(have):
            # a bad size, overlap or tokenizer is reported once, by its own field
            args = (have["chunk_size"], have["chunk_overlap"], have["tokenizer"])
            problem = _chunker_problem(name, *args, canonical_json(have["chunker_options"]))
        else:  # the name alone
            problem = _chunker_problem(name, 0, 0.0, "", "{}")
        if problem:
            raise ValueError(problem)
        return name

    @field_validator("retriever", mode="before")
    @classmethod
    def _check_retriever(cls, name: Any, info: ValidationInfo) -> Any:
        if not isinstance(name, str):
            msg = f"a retriever is a name or a mapping with a 'name'; choose one of {RETRIEVERS.names()}"
            raise ValueError(msg)
        try:
            check_retriever_options(name, info.data.get("retriever_options", {}))
        except HepwbError as exc:
            raise ValueError(str(exc)) from None
        return name

    @field_validator("vector_index", mode="before")
    @classmethod
    def _check_vector_index(cls, name: Any, info: ValidationInfo) -> Any:
        if not isinstance(name, str):
            msg = f"a vector index is a name or a mapping with a 'name'; choose one of {', '.join(KINDS)}"
            raise ValueError(msg)
        try:
            VectorIndex.of(name, info.data.get("vector_index_options", {}))
        except HepwbError as exc:
            raise ValueError(str(exc)) from None
        return name

    @property
    def index(self) -> VectorIndex:
        """The vector index searched (:mod:`hepwb.index.ann`)."""
        return VectorIndex.of(self.vector_index, self.vector_index_options)

    @classmethod
    def from_params(cls, **params: Any) -> ExperimentConfig:
        """Build from keyword parameters; every unknown name and bad value is reported at once.

        Raises:
            ConfigError: One line per problem, each naming the parameter, the value and the fix.
        """
        unknown = sorted(set(params) - set(cls.model_fields))
        if unknown:
            msg = f"unknown parameter(s) {unknown}; valid: {list(cls.model_fields)}"
            raise ConfigError(msg)
        config, problems = validated(params)
        if config is None:
            raise ConfigError(
                "\n".join(f"{k}: {v}" if not v.startswith(k) else v for k, v in problems.items())
            )
        return config

    @property
    def corpus_inputs(self) -> CorpusInputs:
        """The fields that say which papers and questions a run reads (all that loading them needs)."""
        return CorpusInputs(
            self.corpus, self.questions, self.max_docs, self.prefer_latex, self.accept_unscored
        )

    @property
    def retriever_spec(self) -> str:
        """The retriever as one string, ``NAME`` or ``NAME(KEY=VALUE, ...)`` (what ``--retriever`` takes).

        Example:
            >>> ExperimentConfig.from_params(retriever="bm25(fields=context)").retriever_spec
            'bm25(fields=context)'
        """
        return call_string(self.retriever, self.retriever_options)

    def replace(self, **changes: Any) -> ExperimentConfig:
        """A copy with ``changes`` applied, validated like any other configuration."""
        return ExperimentConfig.from_params(**{**self.to_dict(), **changes})

    def to_dict(self) -> JSONObject:
        """Plain dict of the parameters.

        The vector index is left out while it is the default (``auto``), and ``accept_unscored`` while it
        is off, so configurations, run names and cache keys from before they existed stay the same.
        """
        out = self.model_dump()
        if not out["accept_unscored"]:
            del out["accept_unscored"]
        if out["vector_index"] == "auto" and not out["vector_index_options"]:
            del out["vector_index"], out["vector_index_options"]
        return out


@functools.lru_cache(maxsize=4096)
def _chunker_problem(name: str, size: int, overlap: float, tokenizer: str, options: str) -> str | None:
    """Why chunker ``name`` cannot be built with these settings (``None``: it can); once per distinct set.

    A sweep of 10^5 cells has a few distinct chunker configurations: each is built once, not per cell.
    """
    try:
        CHUNKERS.get(name)
        if size:
            get_chunker(
                name, chunk_size=size, chunk_overlap=overlap, tokenizer=tokenizer, **json.loads(options)
            )
    except HepwbError as exc:
        return str(exc)
    return None


def validated(params: JSONObject) -> tuple[ExperimentConfig | None, dict[str, str]]:
    """Validate ``params`` once: the configuration and ``{}``, or ``None`` and each bad parameter's problem.

    Example:
        >>> validated({"k": 0})[1]["k"].startswith("k ")
        True
    """
    try:
        return ExperimentConfig.model_validate(params), {}
    except ValidationError as exc:
        out: dict[str, str] = {}
        for err in exc.errors():
            key = str(err["loc"][0]) if err["loc"] else "config"
            ctx = err.get("ctx") or {}
            text = str(ctx["error"]) if err["type"] == "value_error" and "error" in ctx else err["msg"]
            out.setdefault(key, text)
        return None, out


def config_problems(params: JSONObject) -> dict[str, str]:
    """Each bad parameter of ``params`` → its problem (the fix included); ``{}`` when all are valid."""
    return validated(params)[1]
