"""The ``hepwb`` Typer application, its global options and the option types and parsers commands share.

Command modules (``hepwb.cli`` and ``hepwb.cli_*``) import from here; ``hepwb.cli`` registers them all.
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Callable
from typing import Annotated, Any, NoReturn

import typer

from hepwb import defaults
from hepwb.env import configure_runtime
from hepwb.exceptions import HepwbError
from hepwb.models.device import check_device
from hepwb.yamlio import YamlError, load_yaml


def fail(exc: Exception) -> NoReturn:
    """Print ``error: …`` in red on stderr and exit with status 2 (a usage or input error)."""
    typer.secho(f"error: {exc}", fg=typer.colors.RED, err=True)
    raise typer.Exit(2)


def _errors_exit_2(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The CLI's one error boundary: a :class:`HepwbError` becomes one red line and exit status 2."""

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except HepwbError as exc:
            fail(exc)

    return run


_Decorator = Callable[[Callable[..., Any]], Any]


class App(typer.Typer):
    """A Typer application whose commands and callbacks share :func:`_errors_exit_2`."""

    def command(self, *args: Any, **kwargs: Any) -> _Decorator:
        """Register a command (see :meth:`typer.Typer.command`) behind the error boundary."""
        return _behind_boundary(super().command(*args, **kwargs))

    def callback(self, *args: Any, **kwargs: Any) -> _Decorator:
        """Register a callback (see :meth:`typer.Typer.callback`) behind the error boundary."""
        return _behind_boundary(super().callback(*args, **kwargs))


def _behind_boundary(register: _Decorator) -> _Decorator:
    """Typer's ``register`` applied to ``fn`` wrapped in :func:`_errors_exit_2`; returns ``fn``."""

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        register(_errors_exit_2(fn))
        return fn

    return deco


app = App(
    name="hepwb",
    help="Measure how chunking and retrieval strategies find evidence in High-Energy-Physics papers.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)

Corpus = Annotated[
    str | None,
    typer.Option(
        help="Folder of PDF/markdown files (default: $HEPWB_CORPUS or ../shared/corpus/papers/pdf)."
    ),
]
Questions = Annotated[
    str | None,
    typer.Option(
        help="hepqa-style JSONL test set (default: $HEPWB_QUESTIONS or ../shared/eval/hepqa-dev.jsonl)."
    ),
]
MaxDocs = Annotated[int | None, typer.Option(help="Only the first N files of the corpus (default: all).")]
Sizes = Annotated[str, typer.Option(help="Comma-separated chunk sizes in tokens.")]
Overlap = Annotated[
    float, typer.Option(help="Overlap as a fraction of the chunk size (HEPilot: 0 <= x < 1).")
]
Retrievers = Annotated[
    str,
    typer.Option(
        help="Comma-separated retriever names (dense, bm25, bm25_plain, hybrid, hybrid_linear, entity, "
        "rerank, multi_query, hyde, parent; `hepwb retrievers` says which can run here), each a name or "
        "NAME(KEY=VALUE, ...), e.g. 'bm25(fields=context),hybrid'."
    ),
]
TopK = Annotated[int, typer.Option(help="Chunks retrieved per question.")]
Chunkers = Annotated[
    str,
    typer.Option(
        help="Comma-separated chunking strategies (hepwb.chunking.CHUNKERS), e.g. hepilot,recursive."
    ),
]
Latex = Annotated[
    bool,
    typer.Option(
        "--latex/--pdf-only", help="Use a paper's LaTeX source (named in papers.json) over its PDF."
    ),
]


def parse_ints(text: str) -> list[int]:
    """``"256,512"`` → ``[256, 512]``; anything else is a usage error saying what to write."""
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        msg = f"expected comma-separated integers such as 256,512,1024, got {text!r}"
        raise typer.BadParameter(msg) from None


def parse_words(text: str) -> list[str]:
    """``"dense, bm25"`` → ``["dense", "bm25"]`` (empty items dropped; commas inside parentheses kept).

    Example:
        >>> parse_words("dense(read=max, top_m=2), bm25,")
        ['dense(read=max, top_m=2)', 'bm25']
    """
    items, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += (ch == "(") - (ch == ")")
        if ch == "," and depth <= 0:
            items.append(text[start:i])
            start = i + 1
    items.append(text[start:])
    return [x.strip() for x in items if x.strip()]


def parse_options(items: list[str]) -> dict[str, object]:
    """``["read=max", "weight=0.3"]`` → ``{"read": "max", "weight": 0.3}`` (values parsed as YAML scalars)."""
    out: dict[str, object] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            msg = f"option {item!r}: write KEY=VALUE, e.g. read=max"
            raise typer.BadParameter(msg)
        try:
            out[key.strip()] = load_yaml(value, source=f"option {key.strip()}")
        except YamlError as exc:
            raise typer.BadParameter(str(exc)) from None
    return out


@app.callback()
def _main(
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log debug messages.")] = False,
    ner_url: Annotated[
        str,
        typer.Option(
            envvar="HEPWB_NER_URL",
            help="NER service (`hepwb ner-serve`) giving entities at ingest and query time; "
            "empty: the in-process HEP dictionary.",
        ),
    ] = "",
    device: Annotated[
        str,
        typer.Option(
            envvar="HEPWB_DEVICE",
            help="Where models embed and train: auto (CUDA, then MPS, then CPU), cpu, cuda, cuda:N or mps.",
        ),
    ] = defaults.DEVICE,
    ner_fail_soft: Annotated[
        bool,
        typer.Option(
            "--ner-fail-soft",
            envvar="HEPWB_NER_FAIL_SOFT",
            help="When the NER service fails, index with empty entities (logged) instead of stopping.",
        ),
    ] = False,
) -> None:
    os.environ["HEPWB_DEVICE"] = check_device(device)  # read by hepwb.models.device, here and in workers
    if ner_url:  # read by hepwb.ner.source.ner_source, here and in worker processes
        os.environ["HEPWB_NER_URL"] = ner_url
    if ner_fail_soft:
        os.environ["HEPWB_NER_FAIL_SOFT"] = "1"
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO, format="%(levelname)s %(name)s: %(message)s"
    )
    configure_runtime()
