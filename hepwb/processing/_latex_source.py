"""Read a LaTeX project safely: comments stripped, ``\\input``/``\\include`` expanded, bibliography cut out.

Everything pandoc later sees is one string assembled here, so pandoc runs sandboxed (no file access):
includes are resolved only inside the project folder, symlinks pointing outside it are refused, and
files that are not UTF-8 raise :class:`~hepwb.exceptions.ProcessingError` ``PROC_BAD_ENCODING``.

Example:
    >>> strip_comments("a % note\\n  b 50\\\\% c")
    'a b 50\\\\% c'
    >>> rewrite_abstract("\\\\abstract{Hi {x}.}")
    '\\\\begin{abstract}Hi {x}.\\\\end{abstract}'
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from hepwb import limits
from hepwb.exceptions import ProcessingError
from hepwb.files.readers import FileTooLargeError, ReadError, read_bytes
from hepwb.limits import MAX_TEXT_FILE_BYTES
from hepwb.processing._latex_macros import prelude

__all__ = [
    "BibEntry",
    "LatexSource",
    "cited_keys",
    "decode",
    "matching_brace",
    "read_project",
    "read_source",
    "rewrite_abstract",
    "strip_comments",
]

_VERBATIM = re.compile(r"\\begin\{(verbatim\*?|Verbatim|lstlisting|minted|comment)\}")
_INCLUDE = re.compile(
    r"\\(input|include|subfile|import|subimport)(?![A-Za-z@])\s*"
    r"(?:\{([^{}]*)\}(?:\s*\{([^{}]*)\})?|([^\s{}\\%]+))"
)
_SKIP_EXT = {".pgf", ".tikz", ".pdf_tex", ".eps_tex", ".pstex_t", ".png", ".pdf", ".jpg", ".eps"}
_BIBENV = re.compile(r"\\begin\{thebibliography\}(.*?)\\end\{thebibliography\}", re.S)
_BIBITEM = re.compile(r"\\bibitem\s*(?:\[((?:[^\[\]]|\{[^{}]*\})*)\])?\s*\{([^{}]*)\}")
_BIBCMD = re.compile(r"\\(?:bibliography|addbibresource)\s*(?:\[[^\]]*\])?\s*\{([^{}]*)\}")
_PRINTBIB = re.compile(r"\\printbibliography(?:\[[^\]]*\])?")
_CITE = re.compile(r"\\(?:[A-Za-z]*cite[A-Za-z]*)\*?\s*(?:\[[^\]]*\]\s*){0,2}\{([^{}]*)\}")
# TeX box primitives pandoc cannot parse; their braces stay as a plain group
_BOXES = re.compile(r"\\(?:vbox|hbox|vtop)(?:\s*(?:to|spread)\s*-?[\d.]+\s*[a-z]{2})?\s*(?=\{)")
MAX_DEPTH = limits.MAX_LATEX_DEPTH


@dataclass
class BibEntry:
    """One ``\\bibitem``: its key, its LaTeX text and the marker put in its place."""

    key: str
    tex: str
    marker: str


@dataclass
class LatexSource:
    """The assembled project text handed to pandoc.

    Attributes:
        text: Main file with includes expanded, comments stripped, bibliography replaced by markers.
        files: Every file read (main first), as paths inside the project root.
        items: ``\\bibitem`` entries in document order.
        bib_files: ``.bib`` databases named by ``\\bibliography`` / ``\\addbibresource``.
        cited: Citation keys in order of first use (``*`` when ``\\nocite{*}``).
        warnings: Problems met while reading (missing includes, refused links ...).
    """

    text: str
    files: list[Path]
    items: list[BibEntry] = field(default_factory=list)
    bib_files: list[Path] = field(default_factory=list)
    cited: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def read_source(path: Path) -> str:
    """The text of the LaTeX source file ``path``, read by the bounded reader (comments kept).

    A regular file of at most :data:`~hepwb.limits.MAX_TEXT_FILE_BYTES`, UTF-8.

    Raises:
        ProcessingError: ``PROC_TOO_LARGE`` (over the cap), ``PROC_IO`` (missing, a FIFO or device,
            unreadable) or ``PROC_BAD_ENCODING``, naming ``path``.
    """
    try:
        data = read_bytes(path, "LaTeX source file", max_bytes=MAX_TEXT_FILE_BYTES, fix="remove or split it")
    except ReadError as exc:
        code = "PROC_TOO_LARGE" if isinstance(exc, FileTooLargeError) else "PROC_IO"
        raise ProcessingError(str(exc), code=code, path=str(path)) from None
    return decode(data, path)


def decode(data: bytes, path: Path) -> str:
    """Decode ``data`` as UTF-8 (BOM tolerated) or raise ``PROC_BAD_ENCODING`` naming ``path``."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        msg = (
            f"{path} is not UTF-8 (invalid byte 0x{data[exc.start]:02x} at offset {exc.start}); "
            "re-encode it, e.g. `iconv -f latin1 -t utf-8`, and retry."
        )
        raise ProcessingError(msg, code="PROC_BAD_ENCODING", path=str(path)) from exc


def _strip_line(line: str) -> tuple[str, bool]:
    """Cut ``line`` at its first comment ``%``; return the kept text and whether a comment was cut."""
    i, n = 0, len(line)
    while i < n:
        ch = line[i]
        if ch == "\\":
            m = re.match(r"\\([A-Za-z@]+)\*?", line[i:])
            if not m:
                i += 2
                continue
            i += m.end()
            name = m.group(1)
            if name == "verb" and i < n:
                end = line.find(line[i], i + 1)
                i = n if end < 0 else end + 1
            elif name in ("url", "href") and line[i : i + 1] == "{":
                end = matching_brace(line, i)
                i = n if end < 0 else end + 1
            continue
        if ch == "%":
            return line[:i], True
        i += 1
    return line, False


def strip_comments(text: str) -> str:
    """Remove TeX comments (and ``comment`` environments), keeping verbatim-like environments intact.

    As TeX does, a comment also swallows its line end and the next line's leading blanks.
    """
    out: list[str] = []
    env: str | None = None
    eat = False
    for line in text.splitlines():
        rest = line.lstrip(" \t") if eat else line
        if eat and not rest and env is None:
            out.append("\n\n")  # a blank line after a comment still ends the paragraph
            eat = False
            continue
        eat = False
        while True:
            if env is not None:
                end = f"\\end{{{env}}}"
                k = rest.find(end)
                if k < 0:
                    if env != "comment":
                        out.append(rest)
                    rest = ""
                    break
                if env != "comment":
                    out.append(rest[: k + len(end)])
                rest, env = rest[k + len(end) :], None
            kept, cut = _strip_line(rest)
            m = _VERBATIM.search(kept)
            if m is None:
                out.append(kept)
                eat = cut
                break
            env = m.group(1)
            if env != "comment":
                out.append(rest[: m.end()])
            else:
                out.append(rest[: m.start()])
            rest = rest[m.end() :]
        if (env is None and not eat) or (env is not None and env != "comment"):
            out.append("\n")
    joined = "".join(out)
    return joined if text.endswith("\n") else joined.removesuffix("\n")


def matching_brace(text: str, start: int) -> int:
    """Index of the ``}`` closing the ``{`` at ``text[start]`` (escaped braces skipped); -1 if none."""
    depth, i = 0, start
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


def rewrite_abstract(text: str) -> str:
    """Turn class-specific ``\\abstract{…}`` commands into ``abstract`` environments pandoc understands."""
    for m in reversed(list(re.finditer(r"\\abstract\s*\{", text))):
        end = matching_brace(text, m.end() - 1)
        if end > 0:
            body = text[m.end() : end]
            text = text[: m.start()] + "\\begin{abstract}" + body + "\\end{abstract}" + text[end + 1 :]
    return text


def cited_keys(text: str) -> list[str]:
    """Citation keys of ``\\cite``-like commands in order of first use."""
    keys: dict[str, None] = {}
    for m in _CITE.finditer(text):
        for k in m.group(1).split(","):
            if k.strip():
                keys.setdefault(k.strip(), None)
    return list(keys)


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root)
    except ValueError:
        return False
    return True


class _Reader:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.files: list[Path] = []
        self.warnings: list[str] = []

    def read(self, path: Path) -> str:
        if not _inside(path, self.root):
            msg = f"{path} lies outside the project folder {self.root} (symlink?); refusing to read it."
            raise ProcessingError(msg, code="PROC_UNSAFE_PATH", path=str(path))
        if path not in self.files:
            self.files.append(path)
        return strip_comments(read_source(path))

    def resolve(self, name: str, here: Path, exts: tuple[str, ...]) -> Path | None:
        name = name.strip().strip('"')
        if not name:
            return None
        for base in (self.root, here):
            for ext in exts:
                cand = base / (name + ext)
                if cand.is_file():
                    if not _inside(cand, self.root):
                        self.warnings.append(f"refused {cand}: it points outside the project folder")
                        return None
                    return cand
        return None

    def expand(self, path: Path, depth: int = 0, stack: tuple[Path, ...] = ()) -> str:
        text = self.read(path)

        def repl(m: re.Match[str]) -> str:
            cmd, a, b, bare = m.group(1), m.group(2), m.group(3), m.group(4)
            if cmd in ("import", "subimport"):
                if b is None:
                    return m.group(0)
                base = (self.root if cmd == "import" else path.parent) / a
                name, here = str(base / b), path.parent
            else:
                name, here = (a if a is not None else bare), path.parent
                if b is not None:  # "\input{x}{y}": only the first group is the file
                    name = a
            if Path(name).suffix.lower() in _SKIP_EXT:
                return ""
            exts = ("",) if name.endswith(".tex") else (".tex",) if cmd == "include" else (".tex", "")
            target = self.resolve(name, here, exts)
            if target is None:
                self.warnings.append(
                    f"\\{cmd}{{{name}}} in {path.name}: file not found in the project, skipped"
                )
                return ""
            if target in stack or depth >= MAX_DEPTH:
                self.warnings.append(f"\\{cmd}{{{name}}}: include cycle or nesting too deep, skipped")
                return ""
            body = self.expand(target, depth + 1, (*stack, path))
            if cmd == "subfile":
                m2 = re.search(r"\\begin\{document\}(.*)\\end\{document\}", body, re.S)
                body = m2.group(1) if m2 else body
            tail = "\n" if cmd != "input" else ""
            return tail + body + tail

        return _INCLUDE.sub(repl, text)


def _cut_bibliography(text: str, items: list[BibEntry]) -> str:
    def repl(m: re.Match[str]) -> str:
        body = m.group(1)
        parts: list[str] = []
        found = list(_BIBITEM.finditer(body))
        for j, it in enumerate(found):
            end = found[j + 1].start() if j + 1 < len(found) else len(body)
            tex = body[it.end() : end].strip()
            marker = f"HEPWBREF{len(items):05d}"
            items.append(BibEntry(key=it.group(2).strip(), tex=tex, marker=marker))
            parts.append(f"\n\n{marker}\n\n{tex.replace(chr(92) + 'newblock', ' HEPWBNB ')}\n\n")
        return "".join(parts) + "\n\nHEPWBREFEND\n\n" if parts else ""

    return _BIBENV.sub(repl, text)


def read_project(main: Path, root: Path) -> LatexSource:
    """Assemble the LaTeX text of the project whose main file is ``main`` (inside folder ``root``).

    Args:
        main: The main ``.tex`` file.
        root: The project folder; nothing outside it is read.

    Returns:
        The :class:`LatexSource`; bibliography entries are replaced by ``HEPWBREFnnnnn`` marker
        paragraphs (``\\newblock`` by `` HEPWBNB ``), and the list ends with ``HEPWBREFEND``.
    """
    root = root.resolve()
    reader = _Reader(root)
    text = reader.expand(main)
    bib_files: list[Path] = []

    def bib(m: re.Match[str]) -> str:
        bbl = main.with_suffix(".bbl")
        if (
            m.group(0).startswith("\\bibliography")
            and bbl.is_file()
            and "\\begin{thebibliography}" not in text
        ):
            return "\n" + reader.read(bbl) + "\n"
        for name in m.group(1).split(","):
            name = name.strip()
            p = reader.resolve(name.removesuffix(".bib"), main.parent, (".bib",)) if name else None
            if p is None and name:
                reader.warnings.append(f"bibliography database {name!r} not found")
            elif p is not None and p not in bib_files:
                bib_files.append(p)
        return "" if m.group(0).startswith("\\addbibresource") else "\n\nHEPWBBIBTEX\n\n"

    text = _BIBCMD.sub(bib, text)
    text = _PRINTBIB.sub("\n\nHEPWBBIBTEX\n\n", text)
    if "HEPWBBIBTEX" in text and not bib_files and "\\begin{thebibliography}" not in text:
        others = sorted(p for p in root.rglob("*.bib") if p.is_file() and _inside(p, root))
        if others:
            names = ", ".join(p.name for p in others)
            reader.warnings.append(f"named bibliography missing; using the project's .bib files ({names})")
            bib_files.extend(others)
    for p in bib_files:
        if p not in reader.files:
            reader.files.append(p)
    items: list[BibEntry] = []
    text = _cut_bibliography(text, items)
    text = _BOXES.sub("", text.replace("\\today", ""))
    text = re.sub(r"\\begin\{tabulary\}\s*\{[^{}]*\}", r"\\begin{tabular}", text).replace(
        "{tabulary}", "{tabular}"
    )
    text = prelude(text) + rewrite_abstract(text)
    src = LatexSource(
        text=text, files=reader.files, items=items, bib_files=bib_files, warnings=reader.warnings
    )
    src.cited = ["*"] if re.search(r"\\nocite\s*\{\s*\*\s*\}", text) else cited_keys(text)
    return src
