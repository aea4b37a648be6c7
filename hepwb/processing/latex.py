"""Convert a LaTeX source project into a :class:`~hepwb.types.Document` with pandoc.

The project is read by hepwb (comments stripped, ``\\input``/``\\include``/``\\subfile`` expanded
inside the folder only, ``\\abstract{…}`` normalised, the bibliography cut out), then converted by the
pandoc bundled with ``pypandoc-binary`` in ``--sandbox`` mode (no file access, no shell escapes)
with a Lua filter (:mod:`hepwb.processing._latex_filter`) producing plain CommonMark: ATX headings
(title ``#``, sections ``##`` …), ``$…$`` inline math, each display equation as its own ``$$`` block
(``align``/``gather``/… environments kept inside), GFM pipe tables, ``Figure N:``/``Table N:``
caption paragraphs, citations as ``[@key]``, footnotes, no images or HTML. The bibliography
(``thebibliography``, the main file's ``.bbl``, or cited entries of the ``.bib`` files) follows as a
``## References`` section whose entries are blocks of kind ``reference``; ``meta["references"]``
holds them as CSL-JSON. With ``pdf=`` each block gets the PDF page where its text is found.

Example:
    >>> from pathlib import Path
    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp()) / "X01_demo"; d.mkdir()
    >>> _ = (d / "main.tex").write_text(
    ...     "\\\\documentclass{article}\\\\title{Demo}\\\\begin{document}\\\\maketitle\\n"
    ...     "\\\\section{Intro}\\nMass $m$ is \\\\cite{k1}.\\n\\\\begin{equation}E=mc^2\\\\end{equation}\\n"
    ...     "\\\\begin{thebibliography}{9}\\\\bibitem{k1} A. Einstein, Ann. Phys. (1905).\\n"
    ...     "\\\\end{thebibliography}\\n"
    ...     "\\\\end{document}\\n")
    >>> doc = latex_to_document(d)
    >>> doc.label, [b.kind for b in doc.blocks]
    ('X01', ['heading', 'heading', 'text', 'math', 'heading', 'reference'])
    >>> print(doc.markdown)
    # Demo
    <BLANKLINE>
    ## Intro
    <BLANKLINE>
    Mass $m$ is [@k1].
    <BLANKLINE>
    $$
    \\begin{equation}
    E=mc^2
    \\end{equation}
    $$
    <BLANKLINE>
    ## References
    <BLANKLINE>
    [@k1] A. Einstein, Ann. Phys. (1905).
"""

from __future__ import annotations

import hashlib
import re
import subprocess
import tempfile
from pathlib import Path

from hepwb.exceptions import ProcessingError
from hepwb.files.readers import ReadError, read_bytes
from hepwb.limits import MAX_TEXT_FILE_BYTES
from hepwb.processing._latex_filter import LUA_FILTER, WRITER_FORMAT
from hepwb.processing._latex_pages import locate_pages, pdf_page_keys
from hepwb.processing._latex_refs import bib_to_csl, csl_text, entry_csl, split_references
from hepwb.processing._latex_source import BibEntry, LatexSource, read_project, read_source, strip_comments
from hepwb.processing.links import annotate
from hepwb.processing.markdown import parse_blocks
from hepwb.text.ids import content_uuid
from hepwb.types import Block, Document, JSONObject

__all__ = ["find_main_tex", "latex_source", "latex_to_document", "pdf_page_keys"]

_PREFERRED = ("main.tex", "ms.tex", "paper.tex", "article.tex")
PANDOC_TIMEOUT = 300.0
MAX_WARNINGS = 50
_FRAGMENT_CLASS = re.compile(r"\\documentclass\s*(\[[^\]]*\])?\s*\{(subfiles|standalone)\}")
_ODD_SPACE = re.compile("[\u00a0\u2000-\u200a\u202f\u205f]")  # ~ and \\, as plain spaces
_INCLUDED = re.compile(r"\\(?:input|include|subfile)\s*\{([^{}]+)\}")


def _fail(path: str | Path, code: str, message: str) -> ProcessingError:
    return ProcessingError(message, code=code, path=str(path))


def find_main_tex(folder: str | Path) -> Path:
    """Return a LaTeX project's main file: the ``.tex`` with ``\\documentclass`` and ``\\begin{document}``.

    Top-level files are preferred over sub-folders; among several candidates, ``main.tex`` (then
    ``ms``/``paper``/``article``), a file named like the folder, then the largest wins. Fallbacks, in
    order: a file with only one of the two markers, then a top-level file that no other file
    ``\\input``s and that itself inputs files or has ``\\section``s (projects whose preamble lives in a
    build script). A ``.tex`` path is returned as is.

    Raises:
        ProcessingError: ``PROC_NO_MAIN_TEX`` when no such file exists (or the folder is missing).
    """
    p = Path(folder)
    if p.is_file() and p.suffix.lower() == ".tex":
        return p
    if not p.is_dir():
        msg = f"no LaTeX main file: {p} is neither a .tex file nor a folder; pass a LaTeX project."
        raise _fail(p, "PROC_NO_MAIN_TEX", msg)
    root = p.resolve()
    texts: dict[Path, str] = {}
    for f in sorted(p.rglob("*.tex")):
        if f.is_file() and f.resolve().is_relative_to(root):
            try:
                data = read_bytes(f, "LaTeX source file", max_bytes=MAX_TEXT_FILE_BYTES)
            except ReadError:  # a huge or unreadable file is no main file (it is named if \input)
                continue
            texts[f] = strip_comments(data.decode("utf-8", "replace"))
    found: list[tuple[tuple[int | str, ...], Path]] = []
    for f, head in texts.items():
        has_class = "\\documentclass" in head
        has_doc = "\\begin{document}" in head
        if not (has_class or has_doc) or _FRAGMENT_CLASS.search(head):
            continue
        rel = f.relative_to(p)
        rank = (
            not has_class,
            not has_doc,
            len(rel.parts),
            f.name.lower() not in _PREFERRED,
            f.stem != p.name,
        )
        found.append(((*rank, -f.stat().st_size, str(rel)), f))
    if not found:
        included = {Path(m.group(1)).stem for t in texts.values() for m in _INCLUDED.finditer(t)}
        for f, head in texts.items():
            score = len(_INCLUDED.findall(head)) + len(re.findall(r"\\section\*?\{", head))
            if f.parent == p and f.stem not in included and score:
                found.append(((-score, str(f.name)), f))
    if not found:
        msg = (
            f"no LaTeX main file in {p}: no .tex file there has \\documentclass and \\begin{{document}}; "
            "pass the main file's path instead, or convert the PDF."
        )
        raise _fail(p, "PROC_NO_MAIN_TEX", msg)
    return min(found)[1]


def latex_source(folder: str | Path) -> str:
    """A LaTeX project's whole source, comments removed: its main file with every included file inlined.

    The text the converter reads (:func:`find_main_tex`, then the project's ``\\input``/``\\include``
    files in place), before pandoc: what a check against the source, such as counting its captioned
    figures, should read.

    Raises:
        ProcessingError: ``PROC_NO_MAIN_TEX`` when the folder has no main file.
    """
    main = find_main_tex(folder)
    return strip_comments(read_project(main, main.parent).text)


def _pandoc() -> tuple[str, str]:
    """Path and version of pandoc (from ``pypandoc``)."""
    import pypandoc

    try:
        return str(pypandoc.get_pandoc_path()), str(pypandoc.get_pandoc_version())
    except OSError as exc:  # pragma: no cover - depends on the installation
        msg = f"pandoc is not available ({exc}); install `pypandoc-binary`."
        raise ProcessingError(msg, code="PROC_LATEX_FAILED", path="pandoc") from exc


def _warnings(stderr: str) -> tuple[list[str], JSONObject]:
    """Split pandoc's stderr into warning messages and the filter's ``HEPWB-META`` record."""
    import json

    meta: JSONObject = {}
    out: list[str] = []
    for line in stderr.splitlines():
        if line.startswith("HEPWB-META "):
            meta = json.loads(line[len("HEPWB-META ") :])
        elif line.startswith("[WARNING]"):
            out.append(line[len("[WARNING]") :].strip())
        elif out and line.strip() and not line.lstrip().startswith("^"):
            out[-1] = f"{out[-1]} {line.strip()}"
    return [f"pandoc: {w}" for w in out], meta


def _run_pandoc(text: str, main: Path, pandoc: str) -> tuple[str, str]:
    with tempfile.TemporaryDirectory(prefix="hepwb-latex-") as tmp:
        lua = Path(tmp) / "hepwb.lua"
        lua.write_text(LUA_FILTER, encoding="utf-8")
        args = [
            pandoc,
            "--sandbox",
            "-f",
            "latex",
            "-t",
            WRITER_FORMAT,
            "--wrap=none",
            "--lua-filter",
            str(lua),
        ]
        try:
            res = subprocess.run(
                args,
                input=text.encode("utf-8"),
                capture_output=True,
                cwd=tmp,
                timeout=PANDOC_TIMEOUT,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            msg = f"pandoc did not finish {main} within {PANDOC_TIMEOUT:.0f} s; convert the PDF instead."
            raise _fail(main, "PROC_LATEX_FAILED", msg) from exc
    err = res.stderr.decode("utf-8", "replace")
    if res.returncode != 0:
        detail = " ".join(err.strip().split())[:500]
        msg = (
            f"pandoc could not convert {main} (exit {res.returncode}): {detail}. Fix the LaTeX at the "
            "reported place (or simplify the macro there) or convert the PDF instead."
        )
        raise _fail(main, "PROC_LATEX_FAILED", msg)
    return res.stdout.decode("utf-8"), err


def _sources_hash(main: Path, files: list[Path], root: Path) -> tuple[str, int]:
    """SHA-256 over the main file's bytes then the other files' bytes sorted by relative path; total size."""
    h = hashlib.sha256()
    size = 0
    others = sorted((f for f in files if f != main), key=lambda f: f.resolve().relative_to(root).as_posix())
    for f in (main, *others):
        with f.open("rb") as fh:  # a block at a time: a project may hold large files
            while data := fh.read(1 << 20):
                h.update(data)
                size += len(data)
    return h.hexdigest(), size


def _assemble(body: str, refs: list[str]) -> tuple[str, int]:
    """Join body and reference entries; return the markdown and the offset where the entries start."""
    body = re.sub(r"\n{3,}", "\n\n", body.replace("HEPWBBIBTEX", "")).strip()
    body = _ODD_SPACE.sub(" ", body)
    if not refs:
        return body, len(body) + 1
    head = body + "\n\n## References\n\n"
    return head + "\n\n".join(refs), len(head)


def _number_citations(body: str, refs: list[str], ids: list[str]) -> tuple[str, list[str]]:
    """Replace ``[@a; @b]`` by ``[1, 2]`` (unknown keys stay ``@key``) and entry prefixes by ``[n]``."""
    num = {k: str(i) for i, k in enumerate(ids, 1)}

    def repl(m: re.Match[str]) -> str:
        keys = [k.strip().removeprefix("@") for k in m.group(1).split(";")]
        return "[" + ", ".join(num.get(k, "@" + k) for k in keys) + "]"

    body = re.sub(r"\[(@[^\[\]]+)\]", repl, body)
    return body, [f"[{i}] {r.split('] ', 1)[1]}" for i, r in enumerate(refs, 1)]


def latex_to_document(
    folder_or_file: str | Path,
    *,
    label: str | None = None,
    meta: JSONObject | None = None,
    pdf: str | Path | None = None,
    citations: str = "key",
) -> Document:
    """Convert a LaTeX project (folder or main ``.tex`` file) into a :class:`~hepwb.types.Document`.

    Args:
        folder_or_file: The project folder (its main file is found by :func:`find_main_tex`) or the
            main ``.tex`` file (its folder is the project).
        label: Short name; defaults to the folder name's part before the first ``_`` (``P23``).
        meta: Extra metadata; the provenance fields (``source_file``, ``file_hash``, ``file_size``,
            ``processor``, ``source_format``, ``conversion_warnings``, ``references``) override it,
            ``title``/``authors`` found in the source only fill gaps.
        pdf: The matching PDF; when given, blocks get the page where their text is found in it.
        citations: ``"key"`` writes citations as ``[@key]`` (entries as ``[@key] text``);
            ``"number"`` writes ``[1, 2]`` as a numeric bibliography style would (entries ``[1] text``),
            numbered in bibliography order (``thebibliography``) or order of first citation (``.bib``).

    Returns:
        The document; ``document_id`` derives from the SHA-256 of the source files read.

    Raises:
        ProcessingError: ``PROC_NO_MAIN_TEX`` (no main file), ``PROC_BAD_ENCODING`` (a file read is
            not UTF-8), ``PROC_UNSAFE_PATH`` (main file outside the folder) or ``PROC_LATEX_FAILED``
            (pandoc failed or timed out).
    """
    given = Path(folder_or_file)
    main = find_main_tex(given)
    root = (given if given.is_dir() else main.parent).resolve()
    pandoc, version = _pandoc()
    read_source(main)  # a huge, special or non-UTF-8 main file is refused before pandoc runs
    src = read_project(main, root)
    out, err = _run_pandoc(src.text, main, pandoc)
    pandoc_warnings, info = _warnings(err)
    warnings = [*src.warnings, *pandoc_warnings]
    body, found = split_references(out, src.items)
    refs_md, references = _bibliography(found, src, "HEPWBBIBTEX" in body, pandoc, warnings)
    if citations == "number":
        body, refs_md = _number_citations(body, refs_md, [str(r["id"]) for r in references])
    elif citations != "key":
        raise ValueError(f"citations must be 'key' or 'number', not {citations!r}")  # noqa: EM102
    markdown, refs_at = _assemble(body, refs_md)
    blocks = [
        Block("reference", b.start, b.end, b.page, 0, b.page_end) if b.start >= refs_at else b
        for b in parse_blocks(markdown)
    ]
    extra: JSONObject = {}
    if pdf is not None:
        blocks, extra = _with_pages(markdown, blocks, pdf)
    else:
        warnings.append("no PDF: page numbers unknown")
    if len(warnings) > MAX_WARNINGS:
        warnings = [*warnings[:MAX_WARNINGS], f"... and {len(warnings) - MAX_WARNINGS} more warnings"]
    sha, size = _sources_hash(main, src.files, root)
    doc = Document(
        document_id=content_uuid("document", sha),
        label=label if label is not None else root.name.split("_", 1)[0],
        markdown=markdown,
        blocks=tuple(blocks),
        meta={
            **_found_meta(info),
            **(meta or {}),
            **extra,
            "source_file": str(main),
            "file_hash": sha,
            "file_size": size,
            "processor": f"pandoc/{version}",
            "source_format": "latex",
            "conversion_warnings": warnings,
            "references": references,
        },
    )
    return annotate(doc, pdf=pdf)


def _bibliography(
    found: list[tuple[BibEntry, str, list[str]]],
    src: LatexSource,
    bibtex: bool,
    pandoc: str,
    warnings: list[str],
) -> tuple[list[str], list[JSONObject]]:
    """The reference entries as markdown (``[@key] text``) and as CSL-JSON, numbered in order.

    ``found``: the ``thebibliography`` entries cut out of pandoc's output (:func:`split_references`); with
    ``bibtex`` (the output still holds the marker of a ``\\bibliography`` command), the cited entries of
    the project's ``.bib`` files follow, read by pandoc. Cited keys missing from them are added to
    ``warnings``.
    """
    refs_md: list[str] = []
    references: list[JSONObject] = []
    for entry, text, parts in found:
        refs_md.append(f"[@{entry.key}] {text}")
        references.append(entry_csl(entry, text, parts))
    if src.bib_files and bibtex:
        csl = bib_to_csl(src.bib_files, pandoc, warnings)
        by_id = {str(c["id"]): c for c in csl}
        keys = list(by_id) if "*" in src.cited else [k for k in src.cited if k in by_id]
        missing = [k for k in src.cited if k != "*" and k not in by_id]
        if missing:
            warnings.append(f"{len(missing)} cited keys not in the .bib files, e.g. {', '.join(missing[:5])}")
        for k in keys:
            text = csl_text(by_id[k])
            refs_md.append(f"[@{k}] {text}")
            references.append({"type": "article", "note": text, **by_id[k]})
    for n, ref in enumerate(references, 1):
        ref["citation-number"] = n
    return refs_md, references


def _with_pages(markdown: str, blocks: list[Block], pdf: str | Path) -> tuple[list[Block], JSONObject]:
    """``blocks`` with the PDF page (and last page) where their text is found, and the PDF's metadata."""
    keys_per_page = pdf_page_keys(pdf)
    located = locate_pages([markdown[b.start : b.end] for b in blocks], keys_per_page)
    paged = [
        Block(b.kind, b.start, b.end, pg, b.level, pe) for b, (pg, pe) in zip(blocks, located, strict=True)
    ]
    return paged, {"pages": len(keys_per_page), "pdf_file": str(pdf)}


def _found_meta(info: JSONObject) -> JSONObject:
    """The title and authors the Lua filter found in the source (only those it found).

    Example:
        >>> _found_meta({"title": "Demo", "authors": ("A. Einstein",)})
        {'title': 'Demo', 'authors': ['A. Einstein']}
        >>> _found_meta({"title": ""})
        {}
    """
    found: JSONObject = {k: v for k, v in (("title", info.get("title")),) if v}
    if info.get("authors"):
        found["authors"] = list(info["authors"])
    return found
