"""The LLM endpoint (``HEPWB_LLM_URL``): a malformed URL makes it unavailable with one line, never a crash."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("url", ["http://[::1/v1", "file:///etc/passwd", "http://h:99999/v1"])
def test_a_malformed_llm_url_is_unavailable_with_one_line(monkeypatch, url):
    from hepwb.exceptions import RetrieverUnavailableError
    from hepwb.runtime.llm import LLMEndpoint

    monkeypatch.setenv("HEPWB_LLM_URL", url)
    monkeypatch.setenv("HEPWB_LLM_MODEL", "x")
    with pytest.raises(RetrieverUnavailableError, match=r"HEPWB_LLM_URL \(llm_url\)"):
        LLMEndpoint.from_env()
