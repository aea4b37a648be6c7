"""The tunables of the two memory tiers, in one config with defaults (``hepwb tiers --help`` lists them).

Example:
    >>> cfg = TierConfig(ttl_s=60)
    >>> cfg.ttl_s, cfg.warm_max_docs, cfg.lt_table, cfg.hot_table
    (60.0, 5, 'lt', 'hot')
    >>> TierConfig.model_validate({"ttl": 1})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    pydantic_core._pydantic_core.ValidationError: 1 validation error for TierConfig
    ttl
      Extra inputs are not permitted ...
"""

from __future__ import annotations

import reprlib
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from hepwb import defaults, limits
from hepwb.components.options import bound_check
from hepwb.exceptions import ConfigError
from hepwb.files.yamlio import load_yaml, read_yaml_text

__all__ = ["TierConfig", "load_config"]


class TierConfig(BaseModel):
    """What the Document-RAG design leaves tunable."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    ttl_s: Annotated[float, bound_check(limits.TIER_TTL_S)] = Field(
        defaults.TIER_TTL_S, description="HOT rows older than this (seconds) are evicted."
    )
    warm_max_docs: Annotated[int, bound_check(limits.TIER_WARM_MAX_DOCS)] = Field(
        defaults.TIER_WARM_MAX_DOCS, description="Documents at most copied from LT per warming call."
    )
    warm_max_rows: Annotated[int, bound_check(limits.TIER_WARM_MAX_ROWS)] = Field(
        defaults.TIER_WARM_MAX_ROWS, description="Chunks at most copied from LT per warming call."
    )
    recency_s: Annotated[float, bound_check(limits.TIER_RECENCY_S)] = Field(
        defaults.TIER_RECENCY_S, description="Questions asked within this window (seconds) drive warming."
    )
    promote_min_questions: Annotated[int, bound_check(limits.TIER_PROMOTE_MIN_QUESTIONS)] = Field(
        defaults.TIER_PROMOTE_MIN_QUESTIONS,
        description="A HOT document retrieved for this many distinct questions earns promotion.",
    )
    job_max_rows: Annotated[int, bound_check(limits.TIER_JOB_MAX_ROWS)] = Field(
        defaults.TIER_JOB_MAX_ROWS, description="Rate limit: rows at most evicted or promoted by one job."
    )
    job_min_interval_s: Annotated[float, bound_check(limits.TIER_JOB_MIN_INTERVAL_S)] = Field(
        defaults.TIER_JOB_MIN_INTERVAL_S,
        description="Rate limit: seconds at least between two runs of the same job.",
    )
    lt_table: str = Field("lt", pattern=r"^[A-Za-z][A-Za-z0-9_]*$", description="Long-term table name.")
    hot_table: str = Field("hot", pattern=r"^[A-Za-z][A-Za-z0-9_]*$", description="HOT table name.")

    @model_validator(mode="after")
    def _distinct_tables(self) -> TierConfig:
        if self.lt_table == self.hot_table:
            msg = f"lt_table and hot_table must differ (both {self.lt_table!r}): eviction would empty LT"
            raise ValueError(msg)
        return self


def load_config(path: str | Path | None = None, **overrides: object) -> TierConfig:
    """The config of YAML file ``path`` (if any) with ``overrides`` (``None`` values ignored) on top."""
    data: dict[str, object] = {}
    if path is not None:
        loaded = load_yaml(read_yaml_text(path, "tier config"), source=f"tier config {path}") or {}
        if not isinstance(loaded, dict):
            msg = f"tier config {path} must be a mapping of {sorted(TierConfig.model_fields)}"
            raise ConfigError(msg)
        data.update(loaded)
    data.update({k: v for k, v in overrides.items() if v is not None})
    from pydantic import ValidationError

    try:
        return TierConfig.model_validate(data)
    except ValidationError as exc:  # one line per problem: the setting, its value (cut short) and the rule
        where = f" in {path}" if path else ""
        lines = [_line(e, where) for e in exc.errors()]
        raise ConfigError("\n".join(lines)) from None


def _line(error: Any, where: str) -> str:
    """One line of a pydantic error: the setting, its value (cut short) and the rule (a bound names both)."""
    name = ".".join(map(str, error["loc"])) or "config"
    msg = str(error["msg"]).removeprefix("Value error, ")
    if msg.startswith(f"{name} is "):
        return f"bad tier config{where}: {msg}"
    return f"bad tier config{where}: {name} = {reprlib.repr(error.get('input'))}: {msg}"
