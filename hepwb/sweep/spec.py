"""Sweep specifications: a YAML file (or the same structure as notebook parameters) → validated cells.

A specification has fixed settings (applied to every cell), ``grid`` (a Cartesian product; a list of
grids is their union), ``include`` (explicit combinations) and ``exclude`` (cells matching every key
of an entry are dropped)::

    name: overlap-study
    max_docs: 8
    grid:
      chunker: [hepilot, {name: recursive}]
      chunk_size: [256, 512]
      chunk_overlap: [0.0, 0.2]
      retriever: [bm25, {name: hybrid_linear, weight: 0.5}]
    include:
      - {chunker: {name: hierarchical, parent_size: 1024}, chunk_size: 128, retriever: parent}
    exclude:
      - {chunker: recursive, retriever: hybrid_linear}

Dimensions (:data:`DIMENSIONS`): corpus, questions, chunker (a name or ``{name: ..., option: value}``),
chunk_size, chunk_overlap, tokenizer, embedding_model, retriever (a name or a mapping with options), k,
vector_index (``auto``, ``exact`` or an index type, a name or a mapping with options, see
:mod:`hepwb.index.ann`);
the settings max_docs, prefer_latex, min_coverage and ragas_llm may vary too. Everything is validated
before any work starts: every problem is reported at once, each naming the key, the value and the fix.

Example:
    >>> spec = SweepSpec.from_dict({"grid": {"chunk_size": [256, 512], "retriever": ["bm25", "dense"]}})
    >>> [(c.chunk_size, c.retriever) for c in spec.cells(check_inputs=False)]
    [(256, 'bm25'), (256, 'dense'), (512, 'bm25'), (512, 'dense')]
"""

from __future__ import annotations

import difflib
import hashlib
import itertools
import math
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from hepwb import defaults, limits
from hepwb.catalog.sweeps import option_label
from hepwb.components.callspec import named
from hepwb.components.options import bound_check
from hepwb.exceptions import ConfigError
from hepwb.experiment.config import DIMENSIONS, ExperimentConfig
from hepwb.files.yamlio import YamlError, load_yaml, read_yaml_text
from hepwb.models.device import check_device
from hepwb.sweep.cellcheck import InputCache, short, to_config
from hepwb.text.ids import canonical_json
from hepwb.text.names import check_name
from hepwb.text.plaintext import not_text, plain
from hepwb.types import JSONObject

__all__ = ["DIMENSIONS", "FIXED", "HalvingSettings", "SweepSpec", "SweepSpecError"]

FIXED = (*DIMENSIONS, "accept_unscored")
"""The fixed settings a specification takes: every dimension of the configuration (a new one is found here by
its name in :data:`~hepwb.experiment.config.DIMENSIONS`), and ``accept_unscored`` (go on when fewer than half
of the questions can be scored; a fixed setting, never a grid dimension)."""

_NAMED = ("chunker", "retriever", "vector_index")  # values: a name or {name: ..., **options}


class SweepSpecError(ConfigError):
    """A sweep specification is invalid; the message lists every problem with its fix."""


class HalvingSettings(BaseModel):
    """Successive halving (``search: halving``): rungs of growing question subsets, keeping the best."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    eta: Annotated[int, bound_check(limits.HALVING_ETA)] = Field(
        default=defaults.HALVING_ETA, description="keep the best 1/eta of the cells at every rung"
    )
    min_questions: Annotated[int, bound_check(limits.HALVING_MIN_QUESTIONS)] = Field(
        default=defaults.HALVING_MIN_QUESTIONS, description="questions of the first rung"
    )
    seed: int = 0


class SweepSpec(BaseModel):
    """A validated sweep specification (see the module docstring)."""

    # fixed settings are the keys of FIXED (every dimension): kept as they are given (pydantic's extras),
    # checked when the cells are built; the rest take ExperimentConfig's defaults
    model_config = ConfigDict(extra="allow", frozen=True)

    name: str = "sweep"
    description: str = ""
    metric: str = defaults.DECISION_METRIC
    search: Literal["grid", "halving"] = "grid"
    halving: HalvingSettings = HalvingSettings()
    max_cells: Annotated[int, bound_check(limits.SWEEP_MAX_CELLS)] = limits.MAX_SWEEP_CELLS
    """Refuse a sweep of more cells than this before any work (``--max-cells``; default 10,000)."""
    device: str | None = None
    """Where the workers embed: auto, cpu, cuda, cuda:N or mps (default ``$HEPWB_DEVICE`` or auto)."""
    grid: JSONObject | list[JSONObject] = Field(default_factory=dict)
    include: list[JSONObject] = Field(default_factory=list)
    exclude: list[JSONObject] = Field(default_factory=list)
    source: str = Field("parameters", exclude=True)

    @model_validator(mode="before")
    @classmethod
    def _known(cls, data: Any) -> Any:
        """Only the keys of :meth:`keys`: a misspelt one is an error, not an extra (as in from_dict)."""
        problems = cls.unknown_keys([k for k in data if k != "source"]) if isinstance(data, dict) else []
        if problems:
            raise ValueError("\n".join(problems))
        return data

    @classmethod
    def keys(cls) -> list[str]:
        """Every key a specification takes: its settings, the fixed ones (:data:`FIXED`), then its cells'."""
        own = [n for n in cls.model_fields if n not in ("grid", "include", "exclude", "source")]
        after = own.index("halving") + 1  # the fixed settings are listed after the search's own
        return [*own[:after], *FIXED, *own[after:], "grid", "include", "exclude"]

    @classmethod
    def unknown_keys(cls, keys: Iterable[Any], source: str = "parameters") -> list[str]:
        """One line per key of ``keys`` a specification does not take, with the nearest valid one."""
        known = cls.keys()
        return [
            f"{source}: unknown key {short(key)}{_suggest(str(key), known)}; valid keys: {', '.join(known)}"
            for key in keys
            if key not in known
        ]

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return check_name(value, "sweep", "my-grid")  # it names the sweep's report folder

    @field_validator("device")
    @classmethod
    def _device(cls, value: str | None) -> str | None:
        return None if value is None else check_device(value)

    # -- loading ---------------------------------------------------------------------------------
    @classmethod
    def from_dict(cls, data: JSONObject, source: str = "parameters") -> SweepSpec:
        """Build from a mapping (notebook parameters or parsed YAML), naming unknown keys and bad types."""
        if not isinstance(data, dict):
            got = short(data)
            msg = f"{source}: a sweep specification is a mapping of keys (name, grid, ...), got {got}"
            raise SweepSpecError(msg)
        bad = _not_text(data)
        if bad is not None:  # refused here, in one line, before any of it is shown, stored or run
            where, problem = bad
            fix = (
                "not Unicode text; write the character it stands for"
                if "surrogate" in problem
                else "remove it"
            )
            msg = f"{plain(source)}: {plain(where)} {problem}: {fix}"
            raise SweepSpecError(msg)
        problems = cls.unknown_keys(data, source)
        if problems:
            raise SweepSpecError("\n".join(problems))
        raw_grid = data.get("grid")
        grids: list[Any] = raw_grid if isinstance(raw_grid, list) else [raw_grid or {}]
        both = sorted({k for g in grids if isinstance(g, dict) for k in g} & (set(data) - {"grid", "source"}))
        if both:
            key = both[0]
            msg = (
                f"{source}: {key} is both a fixed setting ({short(data[key])}) and a grid dimension; "
                f"keep one (the grid's values, or the fixed one without a grid entry)"
            )
            raise SweepSpecError(msg)
        try:
            return cls(**data, source=source)
        except ValidationError as exc:
            lines = [  # a bound's own message (it names the value and the fix), not pydantic's wrapping of it
                f"{source}: {'.'.join(str(p) for p in e['loc'])} = {short(e.get('input'))}: "
                f"{(e.get('ctx') or {}).get('error') or e['msg']}"
                for e in exc.errors()
            ]
            raise SweepSpecError("\n".join(lines)) from None

    @classmethod
    def from_yaml(cls, path: str | Path) -> SweepSpec:
        """Read a YAML sweep file (see ``sweeps/default.yaml``) through the bounded loader."""
        path = Path(path)
        try:
            text = read_yaml_text(path, "sweep file", hint="start from sweeps/default.yaml")
            data = load_yaml(text, source=f"sweep file {path}") or {}
        except YamlError as exc:
            raise SweepSpecError(str(exc)) from None
        return cls.from_dict(data, source=str(path))

    def with_overrides(self, **overrides: Any) -> SweepSpec:
        """A copy with fixed settings replaced (``None`` values are ignored), e.g. from CLI options."""
        data = self.model_dump(exclude_unset=True)
        data.update({k: v for k, v in overrides.items() if v is not None})
        return SweepSpec.from_dict({k: v for k, v in data.items() if k != "source"}, self.source)

    def with_grid(self, **dims: Any) -> SweepSpec:
        """A copy whose grid(s) take these dimension values (e.g. from ``--chunk-sizes``)."""
        if not dims:
            return self
        grids = self.grid if isinstance(self.grid, list) else [self.grid]
        data = self.model_dump(exclude_unset=True)
        for key in dims:  # the command line's values replace a fixed setting of the file
            data.pop(key, None)
        new = [{**g, **dims} for g in grids]
        data["grid"] = new if isinstance(self.grid, list) else new[0]
        return SweepSpec.from_dict({k: v for k, v in data.items() if k != "source"}, self.source)

    # -- expansion ---------------------------------------------------------------------------------
    def _fixed(self) -> JSONObject:
        """The fixed settings the specification sets (the others take ExperimentConfig's defaults)."""
        extra = self.model_extra or {}
        return {d: extra[d] for d in FIXED if d in extra}

    def count(self) -> int:
        """Cells the grids and includes make, before excludes and duplicates: counted, not built.

        Example:
            >>> SweepSpec.from_dict({"grid": [{"k": [1, 2, 3]}, {"chunk_size": [256, 512]}]}).count()
            5
        """
        grids = self.grid if isinstance(self.grid, list) else [self.grid]
        return sum(math.prod(len(v) if isinstance(v, list) else 1 for v in g.values()) for g in grids) + len(
            self.include
        )

    def _combinations(self) -> Iterator[tuple[JSONObject, dict[str, str]]]:
        """Raw cell dicts, one at a time, with, per key, where its value came from (for messages)."""
        grids = self.grid if isinstance(self.grid, list) else [self.grid]
        fixed = self._fixed()
        for gi, grid in enumerate(grids):
            where = f"grid[{gi}]" if isinstance(self.grid, list) else "grid"
            dims = [(key, vals if isinstance(vals, list) else [vals]) for key, vals in grid.items()]
            for combo in itertools.product(*[range(len(v)) for _, v in dims]):
                cell = dict(fixed)
                origin = {k: k for k in cell}
                for (key, vals), i in zip(dims, combo, strict=True):
                    cell[key] = vals[i]
                    origin[key] = f"{where}.{key}[{i}]" if len(vals) > 1 else f"{where}.{key}"
                yield cell, origin
        for ii, extra in enumerate(self.include):
            cell = {**fixed, **extra}
            origin = {k: (f"include[{ii}].{k}" if k in extra else k) for k in cell}
            yield cell, origin

    def check(self) -> int:
        """Check the dimension names and the cell cap, before any cell is built; the cell count.

        Raises:
            SweepSpecError: An unknown dimension (with the closest name), or more cells than
                ``max_cells`` (naming the cap, the count and ``--search halving``).
        """
        problems: list[str] = []
        for section in ("grid", "include", "exclude"):
            for entry in _entries(getattr(self, section)):
                problems += [
                    f"{self.source}: {section} has unknown dimension "
                    f"{short(key)}{_suggest(str(key), DIMENSIONS)}"
                    for key in entry
                    if key not in DIMENSIONS
                ]
        grids = self.grid if isinstance(self.grid, list) else [self.grid]
        problems += [  # an empty list multiplies the grid by zero: no cell, whatever `exclude` says
            f"{self.source}: grid{f'[{i}]' if isinstance(self.grid, list) else ''}.{key} is an empty list; "
            "give it at least one value, or remove the key"
            for i, grid in enumerate(grids)
            if isinstance(grid, dict)
            for key, values in grid.items()
            if values == []
        ]
        if problems:
            raise SweepSpecError("\n".join(dict.fromkeys(problems)))
        n = self.count()
        if n > self.max_cells:
            msg = (
                f"{self.source}: the grid has {n:,} cells, more than the cap of {self.max_cells:,} "
                "(max_cells / --max-cells): narrow the grid, or search it by successive halving "
                "(--search halving) with a raised cap"
            )
            raise SweepSpecError(msg)
        return n

    def iter_canonical(self, *, check_inputs: bool = True) -> Iterator[tuple[ExperimentConfig, str]]:
        """Every cell of the sweep with its canonical JSON, validated and deduplicated, in file order.

        Memory stays flat in the number of cells (a 16-byte digest per cell is kept, to drop
        duplicates). Problems are collected over the whole grid and raised together once every
        valid cell has been yielded, so planning can stream and still report every problem at once.

        Args:
            check_inputs: Also check that corpus folders and question files exist (and resolve
                their default locations into absolute paths).

        Raises:
            SweepSpecError: Every problem of every cell (after the valid cells were yielded).
        """
        self.check()
        problems: dict[str, None] = {}
        seen: set[bytes] = set()
        inputs: InputCache = {}
        for raw, origin in self._combinations():
            if any(_matches(raw, ex) for ex in self.exclude):
                continue
            cfg, errs = to_config(raw, origin, self.source, inputs if check_inputs else None)
            problems.update(dict.fromkeys(errs))
            if cfg is None:
                continue
            text = canonical_json(cfg.to_dict())
            digest = hashlib.blake2b(text.encode(), digest_size=16).digest()
            if digest not in seen:
                seen.add(digest)
                yield cfg, text
        if problems:
            raise SweepSpecError("\n".join(problems))
        if not seen:
            msg = f"{self.source}: the sweep has no cells (every combination is excluded); relax `exclude`"
            raise SweepSpecError(msg)

    def iter_cells(self, *, check_inputs: bool = True) -> Iterator[ExperimentConfig]:
        """Every cell of the sweep, validated and deduplicated, one at a time (see :meth:`iter_canonical`).

        Args:
            check_inputs: Also check that corpus folders and question files exist (and resolve
                their default locations into absolute paths).
        """
        for cfg, _ in self.iter_canonical(check_inputs=check_inputs):
            yield cfg

    def cells(self, *, check_inputs: bool = True) -> list[ExperimentConfig]:
        """Every cell of the sweep, validated, deduplicated, in file order (see :meth:`iter_cells`).

        Args:
            check_inputs: Also check that corpus folders and question files exist (and resolve
                their default locations into absolute paths).
        """
        return list(self.iter_cells(check_inputs=check_inputs))

    def varying(self, cells: list[ExperimentConfig] | None = None) -> list[str]:
        """Dimensions that take more than one value over the cells (the axes of the report)."""
        cells = cells if cells is not None else self.cells(check_inputs=False)
        out = []
        for d in DIMENSIONS:
            vals = {_label(c, d) for c in cells}
            if len(vals) > 1:
                out.append(d)
        return out


def _entries(value: Any) -> list[JSONObject]:
    if isinstance(value, dict):
        return [value]
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _not_text(data: Any) -> tuple[str, str] | None:
    r"""The field (``description``, ``grid.retriever[1]``) of the first string that is no text, and why.

    A lone surrogate (``"\ud800"`` in YAML or JSON) is no Unicode text: no database, file or terminal
    takes it (the sweep's record failed deep in DuckDB); NUL neither. Keys are checked too.

    Example:
        >>> _not_text({"name": "s", "grid": {"retriever": ["bm25", "de\ud800nse"]}})
        ('grid.retriever[1]', 'holds a lone surrogate (U+D800)')
        >>> _not_text({"description": "Zoë's grid\nover sizes"}) is None
        True
    """
    stack: list[tuple[str, Any]] = [("", data)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, dict):
            for key in item:
                if isinstance(key, str) and (problem := not_text(key, control=False)):
                    return f"a key of {where or 'the specification'}", problem
            stack.extend((f"{where}.{k}" if where else str(k), v) for k, v in reversed(item.items()))
        elif isinstance(item, list):
            stack.extend((f"{where}[{i}]", v) for i, v in reversed(list(enumerate(item))))
        elif isinstance(item, str) and (problem := not_text(item, control=False)):
            return where, problem
    return None


def _suggest(key: str, names: Any) -> str:
    close = difflib.get_close_matches(key, list(names), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _matches(cell: JSONObject, pattern: JSONObject) -> bool:
    for key, want in pattern.items():
        have = cell.get(key)
        if key in _NAMED:
            (hn, ho), (wn, wo) = named(have), named(want)
            if hn != wn or any(ho.get(k) != v for k, v in wo.items()):
                return False
        elif have != want:
            return False
    return True


def _label(cfg: ExperimentConfig, dim: str) -> str:
    if dim in _NAMED:
        return option_label(str(getattr(cfg, dim)), getattr(cfg, f"{dim}_options"))
    return str(getattr(cfg, dim))
