"""Sphinx configuration of hepwb's documentation site (``make docs`` builds it into ``docs/_build/html``).

Sphinx + MyST-NB + the PyData theme, as pyhf and hist. Pages are MyST markdown; the tutorials are the
notebooks of ``notebooks/tutorials/`` rendered with their committed outputs (never re-executed here); the API
reference is generated from the docstrings (autosummary + autodoc + napoleon) and the CLI reference from the
Typer app itself (``typer hepwb.cli utils docs``), both at build time, into git-ignored folders.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE / "_ext"))

from hepwb_api import api_context  # noqa: E402

project = "hepwb"
author = "hepwb developers"
copyright = "hepwb developers"

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
    "sphinx.ext.mathjax",
    "hepwb_api",
    "hepwb_results",
    "hepwb_config",
]

# -- sources ------------------------------------------------------------------------------------------------
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
exclude_patterns = [
    "_build",
    "**/.ipynb_checkpoints",
    # the results tables are written by the benches (bench/results.py) and included by results.md
    "results/*",
    # included by reference/cli.md
    "reference/_generated/cli.md",
]
templates_path = ["_templates"]
nitpicky = True
# Types of other libraries (no intersphinx inventories: the build is offline) and hepwb's private helpers
# (``hepwb.x._y``) are named without a link; every other unresolved reference is an error.
_THIRD_PARTY = (
    "pathlib|Path|collections|types|typing|datetime|concurrent|os|re|io|logging|threading|subprocess|argparse|"
    "numpy|np|NDArray|pandas|pd|pyarrow|pa|polars|pl|pydantic|pydantic_core|annotated_types|typer|click|distributed|dask|"
    "sentence_transformers|torch|transformers|lancedb|lance|duckdb|ipywidgets|IPython|httpx|matplotlib|jinja2|"
    "tqdm|html|http|socketserver|contextlib|json|Styler"
)
nitpick_ignore_regex = [
    (r"py:.*", rf"({_THIRD_PARTY})(\..*)?"),
    (r"py:.*", r"~?(hepwb(\.\w+)*\.)?_\w+.*"),
    (r"py:.*", r"~?(hepwb(\.\w+)*\.)?[A-Z]"),  # type variables (T, P)
]

# -- MyST and notebooks -------------------------------------------------------------------------------------
myst_enable_extensions = ["colon_fence", "deflist", "dollarmath"]
myst_heading_anchors = 5
nb_execution_mode = "off"  # the tutorials keep their committed outputs (tested by nbval in `make test`)
nb_merge_streams = True

# -- API reference ------------------------------------------------------------------------------------------
autosummary_generate = True
autosummary_imported_members = False
autosummary_ignore_module_all = False
autosummary_context = api_context()
autodoc_default_options = {"show-inheritance": True}
autodoc_typehints = "signature"
autodoc_typehints_format = "short"
autodoc_member_order = "bysource"
autodoc_preserve_defaults = False  # its source parser fails on some signatures ("pop from empty list")
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_rtype = False
napoleon_attr_annotations = False  # field types are in the signatures; Annotated metadata is not a type
napoleon_use_ivar = True  # an "Attributes:" section describes the fields autodoc documents, not new objects


# -- HTML ---------------------------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = "hepwb"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "header_links_before_dropdown": 8,
}
html_show_sourcelink = False

# -- links: external ones are never fetched (no network); `make docs` lists them with the linkcheck builder
linkcheck_ignore = [r"^[a-z][a-z0-9+.-]*:"]


def _write_cli_reference() -> None:
    """Write ``reference/_generated/cli.md`` from the Typer app (every command, its options and help)."""
    out = HERE / "reference" / "_generated" / "cli.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "TERMINAL_WIDTH": "100", "NO_COLOR": "1"}
    subprocess.run(
        [
            sys.executable,
            "-m",
            "typer",
            "hepwb.cli",
            "utils",
            "docs",
            "--name",
            "hepwb",
            "--output",
            str(out),
        ],
        check=True,
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
    )


def setup(app: object) -> None:
    """Generate the CLI reference before Sphinx reads the sources."""
    _write_cli_reference()
