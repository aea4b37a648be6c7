"""Which names each public hepwb module documents, for the API reference's autosummary template.

A package's ``__init__`` re-exports names defined in its modules (``from hepwb.experiment import
run_experiment``): each name is documented once, in the public module that defines it, and listed as a link
where it is re-exported. A name defined in a private module (``hepwb.chunking._packing``) is documented in the
first public module that exports it. Typer commands and apps are left to the CLI reference, which is generated
from the app itself.
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import operator
import pkgutil
import re
import sys
import types
import typing
from types import ModuleType
from typing import Any

import typer


def public_modules(package: str = "hepwb") -> list[ModuleType]:
    """Import every module of ``package`` whose dotted name has no part starting with ``_``."""
    root = importlib.import_module(package)
    names = [package] + [
        info.name
        for info in pkgutil.walk_packages(root.__path__, f"{package}.")
        if not any(part.startswith("_") for part in info.name.split("."))
    ]
    return [importlib.import_module(name) for name in sorted(names)]


def _exported(module: ModuleType) -> list[str]:
    """``__all__``, else the public names the module's own source defines at its top level."""
    names = getattr(module, "__all__", None)
    if names is None:
        tree = ast.parse(inspect.getsource(module))
        names = []
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.append(node.name)
            elif isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names.extend(t.id for t in targets if isinstance(t, ast.Name))
    return [name for name in dict.fromkeys(names) if not name.startswith("_")]


def _plain_type(tp: Any) -> Any:
    """``Annotated[int, Field(ge=1)] | None`` → ``int | None``, at any depth."""
    if typing.get_origin(tp) is typing.Annotated:
        return _plain_type(typing.get_args(tp)[0])
    args = typing.get_args(tp)
    plain = tuple(_plain_type(a) for a in args)
    if not args or plain == args:
        return tp
    origin = typing.get_origin(tp)
    if origin in (types.UnionType, typing.Union):
        return functools.reduce(operator.or_, plain)
    try:
        return origin[plain if len(plain) > 1 else plain[0]]
    except TypeError:
        return tp


def _plain_model_annotations(module: ModuleType) -> None:
    """Show a pydantic field's type as pydantic resolved it (``int``), not with its validators' reprs.

    autodoc renders ``Annotated[int, BeforeValidator(...)]`` with every piece of metadata as a would-be
    cross-reference; the validators and bounds are documented in each field's docstring instead.
    """
    from pydantic import BaseModel

    for obj in vars(module).values():
        if inspect.isclass(obj) and issubclass(obj, BaseModel) and obj.__module__ == module.__name__:
            own = obj.__dict__.get("__annotations__", {})  # noqa: RUF063 (edited in place: not a copy)
            for name, field in obj.model_fields.items():
                if name in own:
                    own[name] = _plain_type(field.annotation)


def _is_typer_option(hint: Any) -> bool:
    """``Annotated[str, typer.Option(...)]``: a command-line option type."""
    return typing.get_origin(hint) is typing.Annotated and any(
        isinstance(meta, typer.models.ParameterInfo) for meta in hint.__metadata__
    )


def _callbacks(app: typer.Typer) -> set[Any]:
    """Every function registered as a command or callback of ``app`` and its sub-apps."""
    found = {info.callback for info in app.registered_commands}
    if app.registered_callback is not None:
        found.add(app.registered_callback.callback)
    for group in app.registered_groups:
        if group.typer_instance is not None:
            found |= _callbacks(group.typer_instance)
    # hepwb's error boundary registers a wrapper (functools.wraps), leaving the module's name on the function
    return (found | {getattr(f, "__wrapped__", None) for f in found}) - {None}


def _is_cli(obj: Any) -> bool:
    """A Typer app, an option type, a registered command, or a function whose parameters are Typer options."""
    if isinstance(obj, typer.Typer) or (inspect.isclass(obj) and issubclass(obj, typer.Typer)):
        return True
    if inspect.isfunction(obj) and obj in _COMMANDS:
        return True
    if _is_typer_option(obj):
        return True
    if not inspect.isfunction(obj):
        return False
    try:
        params = inspect.signature(obj).parameters.values()
    except (TypeError, ValueError):
        return False
    if any(isinstance(p.default, typer.models.ParameterInfo) for p in params):
        return True
    try:
        hints = typing.get_type_hints(obj, include_extras=True)
    except (NameError, TypeError):  # an annotation only the type checker can resolve
        return any("typer." in str(p.annotation) for p in params)
    return any(_is_typer_option(hint) for hint in hints.values())


def _origin(obj: Any, module: ModuleType, modules: list[ModuleType]) -> str | None:
    """The module that defines ``obj``, when another public hepwb module does; else None (own)."""
    origin = getattr(obj, "__module__", None) if inspect.isclass(obj) or inspect.isroutine(obj) else None
    if origin is None and hasattr(module, "__path__"):  # data re-exported by a package: find its module
        for other in modules:
            inside = other is not module and other.__name__.startswith(module.__name__ + ".")
            if inside and any(value is obj for value in vars(other).values()):
                origin = other.__name__
                break
    if not origin or origin == module.__name__ or not origin.startswith("hepwb"):
        return None
    if any(part.startswith("_") for part in origin.split(".")):
        return None  # defined in a private module: documented here
    return origin


_COMMANDS: set[Any] = set()


def api_context() -> dict[str, dict[str, list[Any]]]:
    """What the API pages document: ``own``, ``data``, ``reexports`` and ``cli``.

    ``own``: module → names it documents (``data``: those of them that are data, documented one by one,
    since autodoc leaves a module's data without a doc comment out); ``reexports``: module → (name, target)
    links; ``cli``: names left to the command-line reference.
    """
    modules = public_modules()
    from hepwb.cli import app

    _COMMANDS.update(_callbacks(app))
    exported = {module.__name__: _exported(module) for module in modules}
    own: dict[str, list[str]] = {}
    data: dict[str, list[str]] = {}
    reexports: dict[str, list[tuple[str, str]]] = {}
    cli: dict[str, list[str]] = {}
    for module in modules:
        _plain_model_annotations(module)
        for name in exported[module.__name__]:
            obj = getattr(module, name, None)
            if _is_cli(obj):
                cli.setdefault(module.__name__, []).append(name)
                continue
            origin = _origin(obj, module, modules)
            if origin is None or name not in exported.get(origin, []):
                is_data = not (inspect.isclass(obj) or inspect.isroutine(obj) or inspect.ismodule(obj))
                (data if is_data else own).setdefault(module.__name__, []).append(name)
            else:
                reexports.setdefault(module.__name__, []).append((name, f"{origin}.{name}"))
    return {"hepwb_own": own, "hepwb_data": data, "hepwb_reexports": reexports, "hepwb_cli": cli}


# -- Sphinx hooks -----------------------------------------------------------------------------------------


def _plain_first_line(app: Any, what: str, name: str, obj: Any, options: Any, lines: list[str]) -> None:
    """Keep napoleon from reading ``Overlap as a fraction: ...`` in a constant's docstring as its type.

    Napoleon's Google style reads the part of an attribute docstring's first line before a colon as the
    type; hepwb's constants are documented in prose. An empty reST comment before it (napoleon skips blank
    lines, not comments) leaves the text as it is.
    """
    if what in ("data", "attribute") and not (inspect.isclass(obj) or inspect.isroutine(obj)):
        inherited = inspect.getdoc(type(obj))  # a constant without a doc comment gets its type's docstring
        if inherited and "\n".join(lines).strip() == inherited.strip():
            lines.clear()
    if what in ("data", "attribute", "property") and lines and ":" in lines[0]:
        lines[:0] = ["..", ""]


def strip_annotated(text: str) -> str:
    """``Annotated[int, Field(ge=1)]`` → ``int`` everywhere in a signature (brackets and quotes respected).

    Example:
        >>> strip_annotated("(k: Annotated[int, BeforeValidator(f)] = 5, x: dict[str, int]) -> None")
        '(k: int = 5, x: dict[str, int]) -> None'
    """
    out, i = [], 0
    while (start := text.find("Annotated[", i)) >= 0:
        out.append(text[i:start])
        j, depth, first_end, quote = start + len("Annotated["), 1, None, ""
        while j < len(text) and depth:
            c = text[j]
            if quote:
                quote = "" if c == quote and text[j - 1] != "\\" else quote
            elif c in "'\"":
                quote = c
            elif c in "[(":
                depth += 1
            elif c in "])":
                depth -= 1
            elif c == "," and depth == 1 and first_end is None:
                first_end = j
            j += 1
        out.append(strip_annotated(text[start + len("Annotated[") : first_end or j - 1]))
        i = j
    out.append(text[i:])
    return "".join(out)


def _require_docstring(app: Any, what: str, name: str, obj: Any, options: Any, lines: list[str]) -> None:
    """A public module, class, function or method of hepwb without a docstring fails the build."""
    from sphinx.util import logging

    documented = what in ("module", "class", "function", "method") and name.startswith("hepwb")
    if documented and not any(line.strip() for line in lines) and not name.rpartition(".")[2].startswith("_"):
        logging.getLogger(__name__).warning("%s %s has no docstring", what, name, type="hepwb", subtype="doc")


def _clean_signature(
    app: Any, what: str, name: str, obj: Any, options: Any, signature: str | None, annotation: str | None
) -> tuple[str, str | None] | None:
    """Signatures as readers need them: pydantic models without one, ``Annotated[T, ...]`` as ``T``.

    No constructor signature for pydantic models (their fields are documented one by one); elsewhere
    ``Annotated[T, validators]`` shows as ``T`` (the bounds are in the docstrings).
    """
    from pydantic import BaseModel

    if what == "class" and inspect.isclass(obj) and issubclass(obj, BaseModel):
        return "", annotation
    if not signature:
        return None
    # dataclass fields with a default factory show as ``= <factory>``, which no parser reads: ``= ...``
    cleaned = strip_annotated(signature).replace("= <factory>", "= ...").replace("~typing.~", "~")
    return cleaned, strip_annotated(annotation) if annotation else annotation


def _resolve_short_names(app: Any, env: Any, node: Any, contnode: Any) -> Any:
    """Resolve ``:class:`ConfigError``` and ``hepwb.evaluation.build_keyindexes`` to the one hepwb object.

    Docstrings name objects the way their module imports them (``ConfigError``, ``Unlocated.row``) or by the
    package that re-exports them. Such a reference is linked when exactly one documented hepwb object of a
    matching type has that name (within that package); otherwise it stays unresolved and fails the build.
    References to a Typer app or command link to the command-line reference.
    """
    from sphinx.util.nodes import make_refnode

    if node.get("refdomain") != "py":
        return None
    target = node["reftarget"].lstrip("~.")
    domain = env.get_domain("py")
    objtypes = domain.objtypes_for_role(node["reftype"]) or []
    module = node.get("py:module") or ""
    cli = app.config.autosummary_context.get("hepwb_cli", {})
    prefix, _, last = target.rpartition(".")
    if last in cli.get(prefix or module, []):
        return make_refnode(app.builder, node["refdoc"], "reference/cli", "", contnode, "hepwb command line")
    # ``hepwb.catalog.Catalog.metrics_wide``: the longest importable hepwb module of the target is the scope
    scope, rest = "hepwb", target
    parts = target.split(".")
    if parts[0] == "hepwb":
        for i in range(len(parts) - 1, 0, -1):
            if ".".join(parts[:i]) in sys.modules:
                scope, rest = ".".join(parts[:i]), ".".join(parts[i:])
                break
    matches = [
        name
        for name, entry in domain.objects.items()
        if name.startswith(scope + ".")
        and name.endswith("." + rest)
        and entry.objtype in objtypes
        and not entry.aliased
    ]
    if not matches:
        matches = _inherited(domain, scope, rest)
    if not matches and target.startswith("hepwb.") and "<locals>" in target:
        return (
            contnode  # a closure named in a type's metadata (a pydantic validator): it exists, it has no page
        )
    if not matches and _exists(target, module, node.get("py:class")):
        return contnode  # an internal name that exists (not in ``__all__``): shown as code, without a link
    if len(matches) != 1:
        return None
    entry = domain.objects[matches[0]]
    return make_refnode(app.builder, node["refdoc"], entry.docname, entry.node_id, contnode, matches[0])


def _lookup(dotted: str) -> bool:
    """Whether ``dotted`` names a live object: a module, then attributes (``hepwb.x.f``, ``hepwb.x.C.m``)."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        module = sys.modules.get(".".join(parts[:i]))
        if module is None:
            continue
        obj: Any = module
        for part in parts[i:]:
            if hasattr(obj, part):
                obj = getattr(obj, part)
            elif inspect.isclass(obj) and _instance_attribute(obj, part):
                obj = None  # set on instances: a field without a default, or ``self.name = ...`` in __init__
            else:
                return False
        return True
    return False


def _instance_attribute(klass: type, name: str) -> bool:
    """Whether instances of ``klass`` have ``name``: an annotated field, or assigned in ``__init__``."""
    if any(name in vars(k).get("__annotations__", {}) for k in klass.__mro__):
        return True
    try:
        source = inspect.getsource(klass.__init__)
    except (OSError, TypeError):
        return False
    return re.search(rf"\bself\.{re.escape(name)}\s*(:[^=]*)?=", source) is not None


def _exists(target: str, module: str, klass: str | None) -> bool:
    """Whether a reference names a hepwb object that exists, absolutely or from where it is written."""
    if target.startswith("hepwb.") and _lookup(target):
        return True
    if not module.startswith("hepwb"):
        return False
    scopes = [f"{module}.{klass}", module] if klass else [module]
    return any(_lookup(f"{scope}.{target}") for scope in scopes)


def _inherited(domain: Any, scope: str, rest: str) -> list[str]:
    """``Catalog.metrics_wide`` where the method is defined on a base class (a mixin): link the base's."""
    klass, _, attr = rest.rpartition(".")
    if not klass or not attr:
        return []
    found = []
    for name, entry in domain.objects.items():
        if entry.objtype != "class" or not name.startswith(scope + ".") or not name.endswith("." + klass):
            continue
        module_name, _, qualname = name.rpartition(".")
        obj = getattr(sys.modules.get(module_name), qualname, None)
        for base in getattr(obj, "__mro__", ())[1:]:
            if attr in vars(base):
                target = f"{base.__module__}.{base.__qualname__}.{attr}"
                if target in domain.objects:
                    found.append(target)
                break
    return sorted(set(found))


_METRIC_AT_K = re.compile(r"mailto:[\w.]+@\d+")


def _metrics_are_not_emails(app: Any, doctree: Any) -> None:
    """``MRR@10`` or ``found@5`` in a docstring is a metric, not an e-mail address: no ``mailto:`` link."""
    from docutils import nodes

    for ref in list(doctree.findall(nodes.reference)):
        if _METRIC_AT_K.fullmatch(ref.get("refuri", "")):
            ref.replace_self(nodes.Text(ref.astext()))


def setup(app: Any) -> dict[str, Any]:
    """Register the hooks (before napoleon's docstring processing, which has the default priority)."""
    app.connect("autodoc-process-docstring", _plain_first_line, priority=400)
    app.connect("autodoc-process-docstring", _require_docstring)
    app.connect("autodoc-process-signature", _clean_signature)
    app.connect("missing-reference", _resolve_short_names)
    app.connect("doctree-read", _metrics_are_not_emails)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
