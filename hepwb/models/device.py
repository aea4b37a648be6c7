"""Where models run: CUDA when present, then Apple MPS, then the CPU — or the device a user names.

The choice is ``--device`` on the command line, the ``device`` key of a sweep file or ``$HEPWB_DEVICE``
(``auto`` by default). Batch sizes follow the device (:data:`hepwb.defaults.EMBED_BATCH`): small on a CPU,
where they are as fast and hold less memory, large on a GPU, where throughput grows with the batch.
Vectors made on any device agree to cosine >= 0.9999 (fp32 everywhere), so the embedding cache shares
its entries across devices.

Example:
    >>> check_device("cuda:1"), check_device("auto")
    ('cuda:1', 'auto')
    >>> check_device("gpu")
    Traceback (most recent call last):
    ...
    hepwb.exceptions.ConfigError: device 'gpu': choose auto, cpu, cuda, cuda:N or mps (or set HEPWB_DEVICE)
    >>> batch_size("cpu"), batch_size("cuda:0")
    (4, 256)
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager

from hepwb import defaults
from hepwb.exceptions import ConfigError

__all__ = ["PRECISION", "batch_size", "check_device", "parallel_tokenizers", "resolve_device"]

PRECISION = "fp32"
"""Precision of every forward pass (bf16 agreed to 0.999998 but was slower for MiniLM on an H200)."""

_DEVICE_RE = re.compile(r"^(auto|cpu|mps|cuda(:\d{1,2})?)$")


def check_device(device: str) -> str:
    """``device`` when it is a device name hepwb knows; else :class:`ConfigError` naming the choices."""
    if not isinstance(device, str) or not _DEVICE_RE.match(device):
        msg = f"device {device!r}: choose auto, cpu, cuda, cuda:N or mps (or set HEPWB_DEVICE)"
        raise ConfigError(msg)
    return device


def resolve_device(device: str | None = None) -> str:
    """The device to run on: ``device``, else ``$HEPWB_DEVICE``, else ``auto`` (CUDA, MPS, CPU in that order).

    Raises:
        ConfigError: A device named but not present here (e.g. ``cuda`` on a machine without a GPU).
    """
    wanted = check_device(device or os.environ.get("HEPWB_DEVICE") or defaults.DEVICE)
    if wanted == "cpu":
        return "cpu"
    import torch

    cuda = torch.cuda.is_available()
    mps = bool(getattr(torch.backends, "mps", None) and torch.backends.mps.is_available())
    if wanted == "auto":
        return "cuda" if cuda else "mps" if mps else "cpu"
    if wanted.startswith("cuda") and not cuda:
        msg = f"device {wanted!r} is not available here (no CUDA GPU); use --device auto or cpu"
        raise ConfigError(msg)
    if wanted.startswith("cuda") and ":" in wanted and int(wanted.split(":")[1]) >= torch.cuda.device_count():
        msg = f"device {wanted!r}: this machine has {torch.cuda.device_count()} CUDA device(s)"
        raise ConfigError(msg)
    if wanted == "mps" and not mps:
        msg = "device 'mps' is not available here (no Apple GPU); use --device auto or cpu"
        raise ConfigError(msg)
    return wanted


def batch_size(device: str) -> int:
    """Texts per forward pass on ``device`` (``cuda:1`` counts as ``cuda``)."""
    return defaults.EMBED_BATCH[device.split(":")[0]]


@contextmanager
def parallel_tokenizers(device: str) -> Iterator[None]:
    """Let Hugging Face's fast tokenizers use every core while a model on an accelerator reads their output.

    hepwb runs with ``TOKENIZERS_PARALLELISM=false`` (:func:`~hepwb.runtime.env.configure_runtime`): on a CPU
    the model is the bottleneck and forked workers stay quiet. On a GPU one core tokenizing is the bottleneck
    (an H100 embedded 1,059 texts/s with it, the forward passes alone would allow several times that), so on
    ``cuda``/``mps`` the variable is ``true`` for the duration (the library reads it on each call) and
    restored after. On the CPU nothing changes.

    Example:
        >>> os.environ["TOKENIZERS_PARALLELISM"] = "false"
        >>> with parallel_tokenizers("cuda"):
        ...     os.environ["TOKENIZERS_PARALLELISM"]
        'true'
        >>> os.environ["TOKENIZERS_PARALLELISM"]
        'false'
    """
    if device == "cpu":
        yield
        return
    was = os.environ.get("TOKENIZERS_PARALLELISM")
    os.environ["TOKENIZERS_PARALLELISM"] = "true"
    try:
        yield
    finally:
        if was is None:
            os.environ.pop("TOKENIZERS_PARALLELISM", None)
        else:
            os.environ["TOKENIZERS_PARALLELISM"] = was
