"""A LocalCluster for the store tests, run as ``python tests/store_workers.py ADDRESS_FILE N_WORKERS``.

The test starts it inside a mount namespace where the client's folder is an empty tmpfs, with a working
directory and ``HEPWB_HOME`` of its own (``tests/integration/test_sweep_store.py``). It writes the scheduler's
address to ``ADDRESS_FILE`` once its workers are up, and runs until it is signalled.
"""

from __future__ import annotations

import signal
import sys
from pathlib import Path


def main() -> None:
    """Start the cluster, publish its address, wait for SIGTERM."""
    from distributed import Client, LocalCluster

    out, n = Path(sys.argv[1]), int(sys.argv[2])
    cluster = LocalCluster(
        n_workers=n,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
        memory_limit="3GiB",
    )
    with Client(cluster) as client:
        client.wait_for_workers(n, timeout=120)
    part = out.with_suffix(".part")
    part.write_text(cluster.scheduler_address)
    part.replace(out)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        signal.pause()
    finally:
        cluster.close()


if __name__ == "__main__":
    main()
