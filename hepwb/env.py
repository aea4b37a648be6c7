"""Process environment for offline, telemetry-free runs.

Nothing here runs at import time; pipeline entry points call :func:`configure_runtime`.
"""

from __future__ import annotations

import logging
import os

__all__ = ["configure_runtime"]

_DEFAULTS = {
    # never phone home (see ../shared/stack/STACK.md)
    "RAGAS_DO_NOT_TRACK": "true",
    "ORT_DISABLE_TELEMETRY": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "DO_NOT_TRACK": "1",
    "TOKENIZERS_PARALLELISM": "false",
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
    for noisy in ("httpx", "urllib3", "sentence_transformers", "numba"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
