"""The ``config-dimensions`` directive: the table of sweep dimensions, made from the configuration itself.

Each row is a name of :data:`hepwb.experiment.config.DIMENSIONS` and the docstring of that field of
:class:`~hepwb.experiment.config.ExperimentConfig`, so a new dimension is documented where it is declared::

    ```{config-dimensions}
    ```
"""

from __future__ import annotations

import re
from typing import Any

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective

from hepwb.experiment.config import DIMENSIONS, ExperimentConfig


def dimension_rows() -> list[str]:
    """The markdown table: a row per dimension, its field's docstring (reST literals as markdown code).

    Example:
        >>> print(dimension_rows()[2])
        | `corpus` | A folder of papers; `null`: `HEPWB_CORPUS` or the shipped corpus. |
    """
    rows = ["| key | values |", "|---|---|"]
    for name in DIMENSIONS:
        text = ExperimentConfig.model_fields[name].description
        if not text:
            msg = f"the configuration field {name!r} is a sweep dimension without a docstring: give it one"
            raise ValueError(msg)
        text = re.sub(r"``(.+?)``", r"`\1`", " ".join(text.split())).replace("|", "\\|")
        rows.append(f"| `{name}` | {text} |")
    return rows


class ConfigDimensions(SphinxDirective):
    """Insert the table of :func:`dimension_rows`."""

    def run(self) -> list[nodes.Node]:
        """Parse the table as markdown."""
        container = nodes.container()
        rows = StringList(dimension_rows(), "config-dimensions")
        self.state.nested_parse(rows, self.content_offset, container)
        return [container]


def setup(app: Any) -> dict[str, Any]:
    """Register the directive."""
    app.add_directive("config-dimensions", ConfigDimensions)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
