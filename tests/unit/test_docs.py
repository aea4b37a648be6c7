"""The documentation keeps working: every command it shows exists, its examples run, nothing is left out.

Checked without building the site (that is `make docs`), in seconds:

* every `hepwb ...` line of a shell block in README.md and docs/ names real commands and options of the Typer
  app (parsed like the command line would, nothing run), and every `make X` a real Makefile target;
* every Python block compiles, and the `>>>` examples of the getting-started and how-to pages run (doctest);
* the shell blocks marked `<!-- docs-test: run -->` run and exit 0;
* every retriever, chunker, sweep dimension and HEPWB_* variable of the package is documented;
* no page types a results number (three decimals) outside docs/results/, where the benches write them.
"""

from __future__ import annotations

import doctest
import functools
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import typer

from hepwb.chunking import CHUNKERS
from hepwb.cli import app
from hepwb.experiment.config import DIMENSIONS
from hepwb.retrieval import RETRIEVERS

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
SKIP = ("_build", "_generated", "results")
PAGES = sorted(p for p in DOCS.rglob("*.md") if not set(p.relative_to(DOCS).parts) & set(SKIP))
README = ROOT / "README.md"
TESTED = [DOCS / "getting-started.md", *sorted((DOCS / "howto").glob("*.md"))]
SHELL = ("console", "bash", "shell", "sh")
RUN_MARK = "<!-- docs-test: run -->"


@dataclass(frozen=True)
class Block:
    """A fenced code block: its page, first line number, language, text, and whether it is marked to run."""

    page: Path
    line: int
    lang: str
    text: str
    run: bool


def blocks(page: Path) -> list[Block]:
    """The fenced code blocks of a markdown page (MyST directives such as ```{image} are not code)."""
    found, lines = [], page.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        m = re.match(r"^(\s*)(`{3,})(\S*)", lines[i])
        if not m:
            i += 1
            continue
        indent, fence, lang = m.groups()
        start, body = i, []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            body.append(lines[i][len(indent) :] if lines[i].startswith(indent) else lines[i])
            i += 1
        marked = start > 0 and lines[start - 1].strip() == RUN_MARK
        found.append(Block(page, start + 1, lang, "\n".join(body), marked))
        i += 1
    return found


ALL_BLOCKS = [b for page in [README, *PAGES] for b in blocks(page)]


def command_lines(block: Block) -> list[str]:
    """The shell commands of a block: `$ ` prompts stripped, comments and output lines left out."""
    prompted = any(line.startswith("$ ") for line in block.text.splitlines())
    out = []
    for line in block.text.splitlines():
        if prompted and not line.startswith("$ "):
            continue  # output shown under a prompt
        line = line.removeprefix("$ ").strip()
        if line and not line.startswith("#"):
            out.append(line)
    return out


def hepwb_args(line: str) -> list[str] | None:
    """The arguments after `hepwb` in a command line (`VAR=1 .venv/bin/hepwb ...`), or None."""
    try:
        words = shlex.split(line, comments=True)
    except ValueError:
        return None
    while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[0]):
        words = words[1:]
    if not words or Path(words[0]).name != "hepwb":
        return None
    return words[1:]


@functools.cache
def root_command() -> typer.core.TyperGroup:
    return typer.main.get_command(app)


def check_command(args: list[str]) -> list[str]:
    """What is wrong with `hepwb ARGS`: unknown commands or options, one line each (nothing is run)."""
    cmd = root_command()
    path, problems, i = ["hepwb"], [], 0
    while i < len(args):
        word = args[i]
        if word == "--help":
            break
        if word.startswith("-") and word != "-":
            name = word.split("=", 1)[0]
            param = next((p for p in cmd.params if name in (*p.opts, *p.secondary_opts)), None)
            if param is None:
                problems.append(f"{' '.join(path)}: no option {name}")
            elif "=" not in word and not (getattr(param, "is_flag", False) or getattr(param, "count", False)):
                i += 1  # its value
        elif hasattr(cmd, "commands") and word in cmd.commands:
            cmd, path = cmd.commands[word], [*path, word]
        elif hasattr(cmd, "commands"):
            problems.append(f"{' '.join(path)}: no command {word}")
            break
        i += 1
    return problems


def where(block: Block) -> str:
    return f"{block.page.relative_to(ROOT)}:{block.line}"


def test_the_pages_and_their_blocks_are_found():
    assert DOCS / "getting-started.md" in PAGES and len(PAGES) > 20
    assert sum(1 for b in ALL_BLOCKS if b.lang in SHELL) > 30


def test_every_documented_hepwb_command_and_option_exists():
    problems, seen = [], 0
    for block in (b for b in ALL_BLOCKS if b.lang in SHELL):
        for line in command_lines(block):
            args = hepwb_args(line)
            if args is not None:
                seen += 1
                problems += [f"{where(block)}: {p}  ({line})" for p in check_command(args)]
    assert seen > 50
    assert not problems, "\n".join(problems)


def test_the_command_checker_finds_a_mistake():
    assert check_command(["evaluate", "--retriever", "bm25", "--k", "5"]) == []
    assert check_command(["tiers", "search", "q", "--strict"]) == []
    assert check_command(["evaluate", "--retriver", "bm25"]) == ["hepwb evaluate: no option --retriver"]
    assert check_command(["defaults", "pinn"]) == ["hepwb defaults: no command pinn"]


def test_every_documented_make_target_exists():
    targets = set(re.findall(r"^([a-z][a-z-]*):", (ROOT / "Makefile").read_text(encoding="utf-8"), re.M))
    missing = []
    for block in (b for b in ALL_BLOCKS if b.lang in SHELL):
        for line in command_lines(block):
            words = line.split()
            target = words[1] if words[0] == "make" and len(words) > 1 else ""
            if target and not target.startswith("-") and "=" not in target and target not in targets:
                missing.append(f"{where(block)}: make {target}")
    assert not missing, "\n".join(missing)


def test_every_python_block_compiles():
    for block in (b for b in ALL_BLOCKS if b.lang == "python"):
        compile(block.text, where(block), "exec")


@pytest.mark.parametrize("page", TESTED, ids=lambda p: str(p.relative_to(DOCS)))
def test_the_examples_of_the_getting_started_and_how_to_pages_run(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    examples = [b.text for b in blocks(page) if b.lang in ("pycon", "python") and ">>>" in b.text]
    text = "\n\n".join(examples)  # one namespace per page, as a reader runs them in order
    test = doctest.DocTestParser().get_doctest(text, {}, page.name, str(page), 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    assert runner.failures == 0, f"{runner.failures} of {runner.tries} examples of {page.name} failed"


RUN = [(b, line) for b in ALL_BLOCKS if b.run for line in command_lines(b)]


def test_some_commands_are_marked_to_run():
    assert RUN, f"no shell block is marked {RUN_MARK}"


@pytest.mark.parametrize("block,line", RUN, ids=[f"{b.page.name}:{b.line}" for b, _ in RUN])
def test_the_commands_marked_to_run_exit_0(block, line):
    args = hepwb_args(line)
    assert args is not None, f"{where(block)}: only hepwb commands are run: {line}"
    hepwb = Path(sys.executable).with_name("hepwb")
    env = {**os.environ, "NO_COLOR": "1"}
    done = subprocess.run(
        [str(hepwb), *args], capture_output=True, text=True, env=env, timeout=120, check=False
    )
    assert done.returncode == 0, f"{where(block)}: {line}\n{done.stdout}\n{done.stderr}"


def _text(*pages: str) -> str:
    return "\n".join((DOCS / p).read_text(encoding="utf-8") for p in pages)


def test_every_retriever_and_chunker_is_documented():
    retrievers = _text("reference/retrievers.md")
    chunkers = _text("howto/chunking.md")
    assert [n for n in RETRIEVERS.names() if f"`{n}`" not in retrievers] == []
    assert [n for n in CHUNKERS.names() if f"`{n}`" not in chunkers] == []


def test_every_sweep_dimension_is_documented_by_its_fields_docstring():
    assert "```{config-dimensions}" in _text("reference/sweep-file.md")  # the table made from the fields
    sys.path.insert(0, str(DOCS / "_ext"))
    from hepwb_config import dimension_rows

    rows = dimension_rows()  # raises for a dimension without a docstring
    assert [d for d in DIMENSIONS if not any(r.startswith(f"| `{d}` |") for r in rows)] == []


def test_every_environment_variable_the_package_reads_is_documented():
    used = set()
    for path in (ROOT / "hepwb").rglob("*.py"):
        used |= set(re.findall(r"\bHEPWB_[A-Z][A-Z0-9_]*[A-Z0-9]\b", path.read_text(encoding="utf-8")))
    documented = set(re.findall(r"\bHEPWB_[A-Z][A-Z0-9_]*\b", _text("reference/files-and-settings.md")))
    assert sorted(used - documented) == []


def prose(page: Path) -> str:
    """A page without its code blocks and inline code."""
    text = re.sub(r"^(\s*)(`{3,}).*?^\1\2", "", page.read_text(encoding="utf-8"), flags=re.M | re.S)
    return re.sub(r"`[^`\n]*`", "", text)


@pytest.mark.parametrize("page", [README, *PAGES], ids=lambda p: str(p.relative_to(ROOT)))
def test_no_results_number_is_typed_by_hand(page):
    typed = re.findall(r"(?<![\d.])[01]\.\d{3}(?!\d)", prose(page))
    assert typed == [], f"{page.relative_to(ROOT)} types results numbers {typed}: refer to docs/results.md"


def _chroma_scored() -> set[int]:
    """The number of Chroma questions the results files say were scored (their captions)."""
    found = set()
    for path in (DOCS / "results").glob("transfer*.md"):
        found |= {
            int(n) for n in re.findall(r"Chroma's question set \((\d+) questions", path.read_text("utf-8"))
        }
    return found


def test_every_page_gives_the_same_count_of_chromas_questions_as_the_results():
    """A count said in prose is the one the results were made with ("472 questions, 469 scored")."""
    from hepwb.report.links import SOURCES

    scored = _chroma_scored()
    assert len(scored) == 1, f"the results files disagree on Chroma's scored questions: {scored}"
    (n,) = scored
    texts = {str(p.relative_to(ROOT)): prose(p) for p in [README, *PAGES]}
    texts["hepwb/report/links.py (the report's key)"] = SOURCES["Chroma"][1]
    for where, text in texts.items():
        for sentence in re.findall(r"[^.]*Chroma[^.]*\.", text.replace("\n", " ")):
            counts = [int(c) for c in re.findall(r"\b(4\d\d) (?:scored )?questions\b", sentence)]
            counts += [int(c) for c in re.findall(r"\b(4\d\d) (?:of them )?scored\b", sentence)]
            for c in counts:
                assert c in (n, 472), f"{where} says {c} Chroma questions; the results scored {n} of 472"
            if 472 in counts or "472 questions" in sentence:
                assert str(n) in sentence or str(n) in text, f"{where}: 472 questions without the {n} scored"


def test_a_results_stamp_shows_commit_machine_and_date_and_no_scratch_folder():
    sys.path.insert(0, str(DOCS / "_ext"))
    from hepwb_results import stamp_line

    line = stamp_line(
        {"command": "python -m bench.transfer --sizes 512 --home /tmp/b/home --json /tmp/b/t.json",
         "commit": "abc1234", "date": "2026-12-07T04:00:00+00:00",
         "machine": {"cores": 2, "cpu": "AMD EPYC", "gpu": None}}
    )  # fmt: skip
    assert line == (
        "*Made by* `python -m bench.transfer --sizes 512` *at commit* `abc1234` *on* 2 cores, AMD EPYC, "
        "no GPU *(2026-12-07)*."
    )
