"""The ``results-table`` directive: a results file of ``docs/results/`` with the stamp shown to readers.

Benches write each published table as ``docs/results/<name>.md`` (``bench/results.py``): a first line
``<!-- hepwb-results {json} -->`` (command, commit, machine, date, SHA-256), a caption line, the table. The
directive includes the caption and table as markdown, like MyST's ``{include}``, and adds one line saying
which command, commit and machine made it, and when (the stamp is an HTML comment, invisible on the page)::

    ```{results-table} transfer
    :command: python -m bench.transfer
    ```

A file not generated in this checkout is shown as a note naming ``:command:``, so the site builds before
every bench has run; nothing is made up in its place. Options naming the bench's scratch folders
(``--home /tmp/…``, ``--json /tmp/…``: where it wrote, not what it measured) are left out of the commands
shown, so each reads as one anyone can run here.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective

_STAMP = re.compile(r"<!-- hepwb-results (\{.*\}) -->")
_SCRATCH = re.compile(r" --(?:home|json|work|seed|out|output)[ =](?:/|~)\S*")


def public_command(text: str) -> str:
    """``text`` without the options that name a bench's scratch folders by absolute path.

    Example:
        >>> public_command("python -m bench.transfer --sizes 256 --home /tmp/b/home --json /tmp/b/t.json")
        'python -m bench.transfer --sizes 256'
    """
    return _SCRATCH.sub("", text)


def stamp_line(stamp: dict[str, Any]) -> str:
    """One markdown line: command, commit, machine and date of a results file."""
    machine = stamp.get("machine") or {}
    parts = [f"{machine.get('cores', '?')} cores", str(machine.get("cpu", "unknown CPU"))]
    parts.append(f"GPU {machine['gpu']}" if machine.get("gpu") else "no GPU")
    date = str(stamp.get("date", "?"))[:10]
    command = public_command(str(stamp.get("command", "?")))
    return (
        f"*Made by* `{command}` *at commit* `{stamp.get('commit', '?')}` *on* {', '.join(parts)} *({date})*."
    )


class ResultsTable(SphinxDirective):
    """Include ``docs/results/<name>.md`` (caption and table) and say how it was made."""

    required_arguments = 1
    option_spec = {"command": directives.unchanged_required}  # noqa: RUF012 (docutils' interface)

    def run(self) -> list[nodes.Node]:
        """Parse the file's caption and table as markdown, followed by its stamp line."""
        name = self.arguments[0]
        folder = Path(self.env.srcdir) / "results"
        path = folder / f"{name}.md"
        self.env.note_dependency(str(path))
        if not path.is_file():
            command = self.options.get("command", "the bench that writes it")
            text = (
                f":::{{note}}\nThe table `{name}` has not been generated in this checkout: "
                f"`{command}` writes `docs/results/{name}.md`.\n:::"
            )
        else:
            first, _, rest = path.read_text(encoding="utf-8").partition("\n")
            match = _STAMP.fullmatch(first)
            if match is None:
                msg = f"docs/results/{name}.md: its first line is not a hepwb-results stamp"
                raise self.error(msg)
            text = public_command(rest.rstrip("\n")) + "\n\n" + stamp_line(json.loads(match.group(1))) + "\n"
        container = nodes.container(classes=["hepwb-results"])
        self.state.nested_parse(StringList(text.splitlines(), str(path)), self.content_offset, container)
        return [container]


def setup(app: Any) -> dict[str, Any]:
    """Register the directive."""
    app.add_directive("results-table", ResultsTable)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
