"""Refuse an option given twice on one command line (click would silently keep the last one).

``hepwb evaluate --k 3 --k 5`` ran with k = 5 and ``--latex --pdf-only`` with the last flag: a typo or a
pasted command then measures something else than the user believes. :func:`repeated_option` scans the
arguments against the command's own declarations (options that may repeat, ``--option KEY=VALUE``, are
left alone) and :func:`hepwb.cli.main` refuses the line before any work.

Example:
    >>> import click
    >>> opts = [click.Option(["--k"], type=int), click.Option(["--tag"], multiple=True)]
    >>> cmd = click.Command("run", params=opts)
    >>> print(repeated_option(cmd, ["--k", "3", "--tag", "a", "--tag", "b", "--k=5"]))
    --k given twice (3 and 5); keep one
    >>> repeated_option(cmd, ["--k", "3", "--tag", "a", "--tag", "b"]) is None
    True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["repeated_option"]


def _options(command: Any) -> dict[str, Any]:
    """``{option string: option}`` of a click ``command`` (``--k``, ``-k``, ``--latex``, ``--pdf-only`` …).

    Duck-typed: typer ships its own copy of click, whose classes are not ``click``'s.
    """
    out: dict[str, Any] = {}
    for param in command.params:
        if getattr(param, "param_type_name", "") == "option":
            for opt in (*param.opts, *param.secondary_opts):
                out[opt] = param
    return out


def repeated_option(root: Any, args: Sequence[str]) -> str | None:
    """The one-line refusal of an option given twice for the same (sub)command, or ``None``.

    Options declared ``multiple`` or as counters may repeat; a flag and its negation (``--latex`` and
    ``--pdf-only``) count as the same option given twice.
    """
    command = root
    options = _options(command)
    seen: dict[str, tuple[str, str]] = {}
    i = 0
    while i < len(args):
        token = args[i]
        i += 1
        if token == "--":
            break
        if token.startswith("-") and token != "-":
            flag, eq, inline = token.partition("=")
            param = options.get(flag)
            if param is None:
                continue  # unknown: click says so
            value = inline
            if not param.is_flag and not eq:
                value = args[i] if i < len(args) else ""
                i += 1
            elif param.is_flag:
                value = flag
            if param.multiple or param.count:
                continue
            key = f"{id(command)}:{param.name}"
            if key in seen:
                first_flag, first = seen[key]
                if param.is_flag and first_flag != flag:
                    return f"{first_flag} and {flag} contradict each other; keep one"
                return f"{flag} given twice ({first} and {value}); keep one"
            seen[key] = (flag, value)
        elif token in getattr(command, "commands", {}):
            command = command.commands[token]
            options = _options(command)
    return None
