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

from hepwb import defaults, limits
from hepwb.exceptions import ConfigError, HepwbError
from hepwb.files.yamlio import load_yaml
from hepwb.models.device import check_device
from hepwb.ner.client import check_url
from hepwb.runtime.env import configure_runtime
from hepwb.text.plaintext import plain


def one_line(exc: BaseException | str, limit: int = limits.MAX_MESSAGE_CHARS) -> str:
    r"""``exc``'s message on one line: control sequences removed, whitespace runs one space, cut at ``limit``.

    Example:
        >>> one_line(ValueError("bad\n  value\x1b]52;c;eA==\x07 here"))
        'bad value here'
    """
    text = " ".join(plain(str(exc)).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def fail(exc: Exception | str) -> NoReturn:
    """Print ``error: …`` in red on stderr, on one line, and exit with status 2 (a usage or input error)."""
    typer.secho(f"error: {one_line(exc)}", fg=typer.colors.RED, err=True)
    raise typer.Exit(2)


current_command = ["hepwb"]
"""The command running now (``hepwb tiers search``): :func:`hepwb.cli.main` names its traceback file."""


def _errors_exit_2(fn: Callable[..., Any], name: str = "hepwb") -> Callable[..., Any]:
    """The CLI's one error boundary: a :class:`HepwbError` becomes one red line and exit status 2.

    Anything else propagates to :func:`hepwb.cli.main`, which saves its traceback and exits with status 3;
    ``name`` (the command, ``hepwb tiers search``) is recorded in :data:`current_command` for it.
    """

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        current_command[:] = [name]
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
        given = args[0] if args else kwargs.get("name")
        return _behind_boundary(super().command(*args, **kwargs), self._path(), given)

    def callback(self, *args: Any, **kwargs: Any) -> _Decorator:
        """Register a callback (see :meth:`typer.Typer.callback`) behind the error boundary."""
        return _behind_boundary(super().callback(*args, **kwargs), self._path(), "")

    def _path(self) -> str:
        """``hepwb`` for the application, ``hepwb NAME`` for a group of commands (``hepwb tiers``)."""
        name = self.info.name if isinstance(self.info.name, str) else ""
        return "hepwb" if name in ("", "hepwb") else f"hepwb {name}"


def _behind_boundary(register: _Decorator, path: str, name: str | None) -> _Decorator:
    """Typer's ``register`` applied to ``fn`` wrapped in :func:`_errors_exit_2`; returns ``fn``.

    ``name`` is the command's (``None``: from the function's name, as Typer makes it; ``""``: a callback).
    """

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        command = fn.__name__.strip("_").replace("_", "-") if name is None else name
        register(_errors_exit_2(fn, f"{path} {command}".strip()))
        return fn

    return deco


app = App(
    name="hepwb",
    help="Measure how chunking and retrieval strategies find evidence in High-Energy-Physics papers.\n\n"
    "Runs offline: no Hugging Face hub lookups unless HEPWB_ONLINE=1 (or HF_HUB_OFFLINE=0) is set.",
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
Background = Annotated[
    str | None,
    typer.Option(
        help="Your papers (--corpus) among these: a folder of papers, or 'shipped' (the 32 shipped papers). "
        "With few papers found@5 saturates; a haystack (data/interim/haystacks/) lets it discriminate."
    ),
]
Sizes = Annotated[str, typer.Option(help="Comma-separated chunk sizes in tokens.")]
Overlap = Annotated[float, typer.Option(help="Overlap as a fraction of the chunk size, 0 to 0.75.")]
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


def parse_ints(text: str, flag: str = "--chunk-sizes") -> list[int]:
    """``"256,512"`` → ``[256, 512]``; anything else, or no number at all, is a :class:`ConfigError`.

    The message names the option ``flag`` and what to write (the CLI prints it in one line, exit 2).

    Example:
        >>> parse_ints(" 256, 512,")
        [256, 512]
        >>> parse_ints(",,,")
        Traceback (most recent call last):
        ...
        hepwb.exceptions.ConfigError: --chunk-sizes ',,,' names no chunk size: give comma-separated \
integers such as 256,512,1024
    """
    fix = "give comma-separated integers such as 256,512,1024"
    shown = repr(text) if len(text) <= 60 else repr(text[:59] + "…")
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        msg = f"{flag} {shown}: expected comma-separated integers such as 256,512,1024"
        raise ConfigError(msg) from None
    if not values:
        msg = f"{flag} {shown} names no chunk size: {fix}"
        raise ConfigError(msg)
    return values


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


def parse_options(items: list[str], flag: str = "--option") -> dict[str, object]:
    """``["read=max", "weight=0.3"]`` → ``{"read": "max", "weight": 0.3}`` (values parsed as YAML scalars).

    A malformed item, a value the YAML reader refuses (whatever it raises) and a key given twice with
    different values are each a :class:`ConfigError` naming the option.

    Example:
        >>> parse_options(["read=max", "weight=0.3", "read=max"])
        {'read': 'max', 'weight': 0.3}
        >>> parse_options(["weight=0.1", "weight=0.9"])  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        hepwb.exceptions.ConfigError: --option weight is given twice (0.1 and 0.9): keep one
    """
    out: dict[str, object] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            msg = f"{flag} {item[:80]!r}: write KEY=VALUE, e.g. read=max"
            raise ConfigError(msg)
        try:
            parsed = load_yaml(value, source=f"{flag} {key}")
        except HepwbError as exc:  # the YAML reader's words are for files: say it of the option
            why = one_line(exc, 200).split(": ", 1)[-1].split("; fix", 1)[0]
            msg = f"{flag} {key}: cannot read the value ({plain(why)}); write a number, a word or true/false"
            raise ConfigError(msg) from None
        except Exception as exc:  # whatever else the YAML reader raises (a date, a huge number) is input
            msg = (
                f"{flag} {key}: cannot read the value {value[:80]!r} ({one_line(exc, 200)}); "
                "write a number, a word or true/false"
            )
            raise ConfigError(msg) from None
        if key in out and out[key] != parsed:
            msg = f"{flag} {key} is given twice ({out[key]!r} and {parsed!r}): keep one"
            raise ConfigError(msg)
        out[key] = parsed
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
        os.environ["HEPWB_NER_URL"] = check_url(ner_url, "--ner-url (HEPWB_NER_URL)")
    if ner_fail_soft:
        os.environ["HEPWB_NER_FAIL_SOFT"] = "1"
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO, format="%(levelname)s %(name)s: %(message)s"
    )
    configure_runtime()
