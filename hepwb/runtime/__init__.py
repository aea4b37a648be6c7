"""The process and its services: environment, optional dependencies, event loops, HTTP services, LLMs.

:mod:`hepwb.runtime.env` keeps runs offline and telemetry-free, :mod:`hepwb.runtime.deps` names the extra
that installs a missing package, :mod:`hepwb.runtime.aio` runs coroutines beside a kernel's loop,
:mod:`hepwb.runtime.urls` checks every service URL, :mod:`hepwb.runtime.jsonpost` posts with retries and
:mod:`hepwb.runtime.llm` talks to OpenAI-compatible endpoints.
"""
