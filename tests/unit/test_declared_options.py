"""One way to declare options (issue #39): defaults in hepwb/defaults.py, bounds in hepwb/limits.py only.

Every function, method and class field of ``hepwb/`` (registered components and typer commands first among
them) names a :mod:`hepwb.defaults` or :mod:`hepwb.limits` constant for every numeric default, but the few
sentinels and facts of :data:`ALLOWED_LITERAL_DEFAULTS`; no module but those two words a bound of its own (a
pydantic ``Field(ge=...)``, a ``Bound(...)``, a chained comparison with a number that raises ``ConfigError``).
Read with :mod:`ast`, so a new module, component or command is covered without touching this test.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import hepwb
from hepwb.chunking import CHUNKERS, HepilotChunker, get_chunker
from hepwb.exceptions import ConfigError
from hepwb.index import ann
from hepwb.retrieval import RETRIEVERS, rerankers

PACKAGE = Path(hepwb.__file__).parent
HOMES = {"defaults.py", "limits.py"}

ALLOWED_BOUND_CHECKS = {
    # the HEPilot file model reads its ranges from limits (HEPILOT_CHUNK_SIZE, HEPILOT_CHUNK_OVERLAP)
    ("hepilot/records.py", "Field(ge=HEPILOT_CHUNK_SIZE.low, le=HEPILOT_CHUNK_SIZE.high)"),
    ("hepilot/records.py", "Field(ge=HEPILOT_CHUNK_OVERLAP.low, lt=HEPILOT_CHUNK_OVERLAP.high)"),
    # a TCP port of a URL or address: TCP's range, not an option of a component
    ("runtime/urls.py", "parsed.port is not None and (not 0 < parsed.port <= 65535)"),
    # control characters (C0, DEL and C1): Unicode's ranges, not a setting
    ("runtime/urls.py", "any((ch.isspace() or ord(ch) < 32 or 127 <= ord(ch) < 160 for ch in url))"),
    ("sweep/executors/connect.py", "not host or not 1 <= int(port) <= 65535"),
    # the page of a PDF: the file's range
    ("viz/document_view.py", "not 1 <= page <= d.page_count"),
    # facts, not settings: an index needs two rows to train, a comparison two systems, grouped folds two
    # papers; a TREC run names one system; a batch directive holds no control character
    ("index/ann.py", "rows < 2"),
    ("experiment/compare.py", "len(named) < 2"),
    ("experiment/fusion_fit.py", "len(papers) < 2"),
    ("interop/runfile.py", "len(run.tags) > 1"),
    ("sweep/jobqueue.py", "value is not None and any((ord(ch) < 32"),
}
"""Bound checks outside hepwb/defaults.py and hepwb/limits.py that are allowed: (module, the code's start)."""


def _number(node: ast.expr) -> bool:
    """A number written out (``10``, ``-1``, ``3.0``); ``True``, ``False`` and ``None`` are no numbers."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        node = node.operand
    return isinstance(node, ast.Constant) and type(node.value) in (int, float)


def _numeric_literal(node: ast.expr) -> bool:
    """A number written out other than 0 (a default of 0, "none", needs no name)."""
    return _number(node) and not (isinstance(node, ast.Constant) and node.value == 0)


def _literal_pairs(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[tuple[str, str]]:
    """``(parameter, number)`` of each parameter of ``fn`` whose default is a number written out."""
    args = fn.args
    positional = [*args.posonlyargs, *args.args]
    pairs = list(zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True))
    pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None]
    return [(a.arg, ast.unparse(d)) for a, d in pairs if _numeric_literal(d)]


def _literal_defaults(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    return [f"{fn.name}({arg}={value})" for arg, value in _literal_pairs(fn)]


def _tree(obj: object) -> ast.Module:
    return ast.parse(textwrap.dedent(inspect.getsource(obj)))  # type: ignore[arg-type]


def _where(obj: object) -> str:
    return f"{Path(inspect.getfile(obj)).relative_to(PACKAGE)}"  # type: ignore[arg-type]


def _methods(registry_classes: list[type], names: tuple[str, ...]) -> Iterator[tuple[str, object]]:
    """``(where, method)`` of each hepwb class in the classes' MROs that defines one of ``names``."""
    seen = set()
    for cls in registry_classes:
        for klass in cls.__mro__:
            if not klass.__module__.startswith("hepwb."):
                continue
            for name in names:
                method = klass.__dict__.get(name)
                if method is not None and (klass, name) not in seen:
                    seen.add((klass, name))
                    yield f"{_where(klass)}:{klass.__name__}", inspect.unwrap(method)


def _component_defaults() -> Iterator[str]:
    chunkers = [CHUNKERS.get(n) for n in CHUNKERS.names()]
    retrievers = [RETRIEVERS.get(n) for n in RETRIEVERS.names()]
    callables = [
        *_methods(chunkers, ("__init__",)),
        *_methods(retrievers, ("__init__", "search")),
        *_methods([ann.VectorIndex], ("of",)),
    ]
    for where, fn in callables:
        (node,) = _tree(fn).body
        assert isinstance(node, ast.FunctionDef)
        yield from (f"{where}.{found}" for found in _literal_defaults(node))
    for node in ast.walk(_tree(ann.VectorIndex)):  # the vector index's options are its fields
        if isinstance(node, ast.AnnAssign) and node.value is not None and _numeric_literal(node.value):
            yield f"index/ann.py:VectorIndex.{ast.unparse(node.target)} = {ast.unparse(node.value)}"
    for node in ast.walk(_tree(rerankers)):  # weighted_rrf and the LanceDB reranker it builds
        if isinstance(node, ast.FunctionDef):
            yield from (f"retrieval/rerankers.py:{found}" for found in _literal_defaults(node))


def _command_defaults() -> Iterator[str]:
    for path in sorted((PACKAGE / "cli").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.FunctionDef):
                continue
            commands = [
                d
                for d in node.decorator_list
                if isinstance(d, ast.Call)
                and isinstance(d.func, ast.Attribute)
                and d.func.attr in ("command", "callback")
            ]
            if commands:
                yield from (f"cli/{path.name}:{found}" for found in _literal_defaults(node))


def _option_bounds(path: Path) -> Iterator[str]:
    """``typer.Option(min=..., max=...)`` written with a number (a lower bound of 0 or 1 needs no name)."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        name = getattr(node.func, "attr", getattr(node.func, "id", "")) if isinstance(node, ast.Call) else ""
        if name == "Option":
            for kw in node.keywords:  # type: ignore[attr-defined]
                trivial = kw.arg == "min" and isinstance(kw.value, ast.Constant) and kw.value.value in (0, 1)
                if kw.arg in ("min", "max") and _number(kw.value) and not trivial:
                    yield f"{path.name}:{node.lineno}: {kw.arg}={ast.unparse(kw.value)}"


def test_every_option_range_of_a_command_names_a_limit(tmp_path):
    toy = tmp_path / "cli_toy.py"
    toy.write_text("x = typer.Option(min=5, max=9)\ny = typer.Option(min=1, max=limits.CAP)\n")
    assert list(_option_bounds(toy)) == ["cli_toy.py:1: min=5", "cli_toy.py:1: max=9"]  # the scan sees them
    found = [hit for path in sorted((PACKAGE / "cli").glob("*.py")) for hit in _option_bounds(path)]
    assert found == [], f"name these ranges in hepwb/limits.py: {found}"


def _raises_config_error(body: list[ast.stmt]) -> bool:
    return any(
        isinstance(n, ast.Raise)
        and isinstance(n.exc, ast.Call)
        and isinstance(n.exc.func, ast.Name)
        and n.exc.func.id == "ConfigError"
        for stmt in body
        for n in ast.walk(stmt)
    )


def _bound_checks(tree: ast.Module) -> Iterator[ast.AST]:
    """Pydantic ``Field(ge/le/gt/lt=...)``, ``Bound(...)``, ``if x < 1: raise ConfigError`` (or chained)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = getattr(node.func, "id", getattr(node.func, "attr", ""))
            ranged = {k.arg for k in node.keywords} & {"ge", "le", "gt", "lt"}
            if (name == "Field" and ranged) or name == "Bound":
                yield node
        elif isinstance(node, ast.If) and _raises_config_error(node.body):
            ranges = [
                c
                for c in ast.walk(node.test)
                if isinstance(c, ast.Compare)
                and any(isinstance(op, ast.Lt | ast.LtE | ast.Gt | ast.GtE) for op in c.ops)
                and any(_number(x) for x in (c.left, *c.comparators))
            ]
            if ranges:
                yield node.test


def test_every_numeric_default_of_a_component_names_a_constant():
    found = list(_component_defaults())
    assert found == [], f"move these defaults to hepwb/defaults.py (or limits): {found}"


ALLOWED_LITERAL_DEFAULTS = {
    # -1: "no context window" sentinels of a chunk's record, not settings
    ("types.py", "Chunk", "context_start"),
    ("types.py", "Chunk", "context_end"),
    ("ragmd/model.py", "RagChunk", "context_start"),
    ("ragmd/model.py", "RagChunk", "context_end"),
    # a parsed block's line count starts at one line: a record's field, not a setting
    ("processing/_blocks.py", "RenderedBlock", "lines"),
    # page 1: pages are numbered from 1 (markdown has no pages; a document view opens on the first)
    ("processing/markdown.py", "parse_blocks", "page"),
    ("viz/document_view.py", "page_view_html", "page"),
    ("viz/document_view.py", "DocumentBrowser.__init__", "page"),
    ("viz/document_view.py", "DocumentBrowser.from_corpus", "page"),
    # 12 hex digits: the length of hepwb's ids and cache keys (chunk sets, cells), a format, not a setting;
    # another length would rename every stored artefact
    ("text/ids.py", "short_hash", "n"),
    ("text/ids.py", "ListHash.short", "n"),
}
"""Numeric literal defaults allowed outside hepwb/defaults.py and hepwb/limits.py, sentinels and facts only:
``(module, function or class, parameter or field)``."""


def _is_settings_class(node: ast.ClassDef) -> bool:
    """A pydantic model or a dataclass: a record of settings whose field defaults are the user's defaults."""
    bases = {getattr(b, "id", getattr(b, "attr", "")) for b in node.bases}
    decorators = {
        getattr(d, "id", getattr(getattr(d, "func", None), "id", getattr(d, "attr", "")))
        for d in node.decorator_list
    }
    return "BaseModel" in bases or "dataclass" in decorators


def _field_literals(tree: ast.Module) -> Iterator[str]:
    """``Class.field = value`` of each numeric literal default of a pydantic model's or dataclass's field."""
    for cls in ast.walk(tree):
        if not (isinstance(cls, ast.ClassDef) and _is_settings_class(cls)):
            continue
        for node in cls.body:
            value = _field_default(node)
            if value is not None and _numeric_literal(value):
                yield f"{cls.name}.{ast.unparse(node.target)} = {ast.unparse(value)}"  # type: ignore[attr-defined]


def _field_default(node: ast.stmt) -> ast.expr | None:
    """The default of a class body's annotated field (``x: int = 3``, ``Field(3)``, ``Field(default=3)``)."""
    if not (isinstance(node, ast.AnnAssign) and node.value is not None):
        return None
    value = node.value
    if isinstance(value, ast.Call) and getattr(value.func, "id", "") == "Field":
        given = [*value.args[:1], *(k.value for k in value.keywords if k.arg == "default")]
        value = given[0] if given else value
    return value


def test_every_numeric_default_of_a_settings_record_names_a_constant():
    allowed = {f"{where}:{owner}.{name}" for where, owner, name in ALLOWED_LITERAL_DEFAULTS}
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        where = str(path.relative_to(PACKAGE))
        if where not in HOMES:
            found += [f"{where}:{f}" for f in _field_literals(ast.parse(path.read_text(encoding="utf-8")))]
    unexpected = sorted(f for f in found if f.split(" = ")[0] not in allowed)
    assert unexpected == [], f"move these defaults to hepwb/defaults.py: {unexpected}"


def _module_literals(tree: ast.Module) -> Iterator[tuple[str, str, str]]:
    """``(function or class, parameter or field, number)`` of each numeric literal default in ``tree``.

    Every function and method at any depth, by its dotted name (``Class.method``), and the annotated fields of
    every class (dataclasses, pydantic models, named tuples) but ``ClassVar`` ones.
    """

    def visit(node: ast.AST, prefix: str) -> Iterator[tuple[str, str, str]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = prefix + child.name
                yield from ((name, arg, value) for arg, value in _literal_pairs(child))
                yield from visit(child, f"{name}.")
            elif isinstance(child, ast.ClassDef):
                name = prefix + child.name
                for stmt in child.body:
                    value = _field_default(stmt)
                    if value is None or not _numeric_literal(value):
                        continue
                    assert isinstance(stmt, ast.AnnAssign)
                    if "ClassVar" not in ast.unparse(stmt.annotation):
                        yield name, ast.unparse(stmt.target), ast.unparse(value)
                yield from visit(child, f"{name}.")
            else:
                yield from visit(child, prefix)

    return visit(tree, "")


def _package_literals() -> Iterator[tuple[str, str, str, str]]:
    """``(module, function or class, parameter or field, number)`` of every module but the two homes."""
    for path in sorted(PACKAGE.rglob("*.py")):
        where = str(path.relative_to(PACKAGE))
        if where not in HOMES:
            tree = ast.parse(path.read_text(encoding="utf-8"))
            yield from ((where, owner, name, value) for owner, name, value in _module_literals(tree))


def test_every_numeric_default_in_hepwb_names_a_constant(tmp_path):
    """Every function, method and field of hepwb/ (not only components and commands) names its default."""
    toy = tmp_path / "toy.py"
    toy.write_text(
        textwrap.dedent(
            """
            def f(a=3, b=0, *, c=-1.5, d=True, e=defaults.X):
                def inner(x=2): ...

            class K:
                n: int = 4
                m: ClassVar[int] = 5
                s: float = Field(default=0.5)
                t: str = "x"

                async def g(self, w=120, /): ...
            """
        )
    )
    planted = list(_module_literals(ast.parse(toy.read_text(encoding="utf-8"))))
    assert planted == [  # the scan sees them
        ("f", "a", "3"),
        ("f", "c", "-1.5"),
        ("f.inner", "x", "2"),
        ("K", "n", "4"),
        ("K", "s", "0.5"),
        ("K.g", "w", "120"),
    ]
    found = list(_package_literals())
    unexpected = [f"{w}: {o} {n}={v}" for w, o, n, v in found if (w, o, n) not in ALLOWED_LITERAL_DEFAULTS]
    assert unexpected == [], f"name these in hepwb/defaults.py (a bound: hepwb/limits.py): {unexpected}"
    gone = ALLOWED_LITERAL_DEFAULTS - {(w, o, n) for w, o, n, _ in found}
    assert not gone, f"allowed but gone (drop them): {sorted(gone)}"


def test_every_numeric_default_of_a_command_names_a_constant():
    found = list(_command_defaults())
    assert found == [], f"move these CLI defaults to hepwb/defaults.py: {found}"


def test_no_module_but_limits_words_a_bound():
    found, used = [], set()
    for path in sorted(PACKAGE.rglob("*.py")):
        where = str(path.relative_to(PACKAGE))
        if where in HOMES:
            continue
        for node in _bound_checks(ast.parse(path.read_text(encoding="utf-8"))):
            code = ast.unparse(node)
            allowed = [a for a in ALLOWED_BOUND_CHECKS if a[0] == where and code.startswith(a[1])]
            used.update(allowed)
            if not allowed:
                found.append(f"{where}:{node.lineno}: {code[:100]}")  # type: ignore[attr-defined]
    assert found == [], f"declare these bounds in hepwb/limits.py and check with them: {found}"
    assert used == ALLOWED_BOUND_CHECKS, f"allowed but gone (drop them): {ALLOWED_BOUND_CHECKS - used}"


def test_the_guard_sees_what_it_guards_against():
    """The scans find a literal default, a Field bound, a chained and a one-sided check written for it."""
    code = textwrap.dedent(
        """
        class Toy:
            low: int = Field(default=1, ge=1)

            def __init__(self, size: int = 128, overlap: float = 0.0, flag: bool = True) -> None:
                if not 0 <= size <= 100:
                    raise ConfigError("size")
                if overlap < 1:
                    raise ConfigError("overlap")
        """
    )
    tree = ast.parse(code)
    init = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef))
    assert _literal_defaults(init) == ["__init__(size=128)"]
    assert [ast.unparse(n) for n in _bound_checks(tree)] == [
        "Field(default=1, ge=1)",
        "not 0 <= size <= 100",
        "overlap < 1",
    ]
    record = ast.parse("@dataclass\nclass R:\n    a: int = 3\n    b: int = 0\n    c: str = 'x'")
    assert list(_field_literals(record)) == ["R.a = 3"]


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda: HepilotChunker(min_section_fill=2),
            "chunker 'hepilot': min_section_fill is a share of the chunk's token budget from 0 to 1, got 2 "
            "(e.g. 0.5)",
        ),
        (
            lambda: get_chunker("sentence_window", window=-1),
            "chunker 'sentence_window': window is a whole number of sentences on each side from 0 to 100, "
            "got -1 (e.g. 2)",
        ),
        (
            lambda: get_chunker("hepilot", chunksize=64),
            "chunker 'hepilot' has no option(s) ['chunksize']; its options are "
            "['chunk_overlap', 'chunk_size', 'min_section_fill', 'tokenizer']",
        ),
        (
            lambda: ann.VectorIndex.of("ivf_pq", {"nprobes": 0}),
            "vector index 'ivf_pq': nprobes is a whole number of IVF partitions probed from 1 to 65536, "
            "got 0 (e.g. 16)",
        ),
    ],
)
def test_direct_and_named_construction_give_the_bounds_one_message(build, message):
    with pytest.raises(ConfigError) as err:
        build()
    assert str(err.value) == message


def test_every_bad_option_is_one_line():
    with pytest.raises(ConfigError) as err:
        get_chunker("semantic", chunk_size=4, breakpoint_percentile=101.0)
    assert str(err.value).splitlines() == [
        "chunker 'semantic': chunk_size is a whole number of tokens from 8 to 32768, got 4 (e.g. 512)",
        "chunker 'semantic': breakpoint_percentile is a percentile of the neighbour distances in a paper "
        "from 0 to 100, got 101.0 (e.g. 90)",
    ]
