"""A TCP forwarder on 127.0.0.1 that a test can take down and bring back (an object store going away).

:class:`TcpProxy` forwards every connection to ``127.0.0.1:target``. :meth:`TcpProxy.down` resets every open
connection and every new one until :meth:`TcpProxy.up`: to its clients the server behind it is gone, and they
learn so at once (a reset, not a silence).
"""

from __future__ import annotations

import contextlib
import select
import socket
import struct
import threading

__all__ = ["TcpProxy"]

_RESET = struct.pack("ii", 1, 0)  # SO_LINGER on, 0 s: close() sends a reset


def _reset(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _RESET)
    with contextlib.suppress(OSError):
        sock.close()


class TcpProxy:
    """Forward ``127.0.0.1:port`` to ``127.0.0.1:target`` in threads of this process (see the module doc)."""

    def __init__(self, target: int) -> None:
        self.target = target
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        self._down = threading.Event()
        self._stop = threading.Event()
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def endpoint(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return f"http://127.0.0.1:{self.port}"

    def down(self) -> None:
        """Reset every connection, open or new, until :meth:`up`."""
        self._down.set()
        with self._lock:
            for sock in list(self._open):
                _reset(sock)
            self._open.clear()

    def up(self) -> None:
        """Forward again."""
        self._down.clear()

    def close(self) -> None:
        """Stop listening and reset every connection."""
        self._stop.set()
        self.down()
        with contextlib.suppress(OSError):
            self._listener.close()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if self._down.is_set():
                _reset(client)
                continue
            try:
                server = socket.create_connection(("127.0.0.1", self.target), timeout=5)
            except OSError:
                _reset(client)
                continue
            with self._lock:
                self._open.update((client, server))
            threading.Thread(target=self._pipe, args=(client, server), daemon=True).start()

    def _pipe(self, a: socket.socket, b: socket.socket) -> None:
        try:
            while not self._down.is_set():
                ready, _, _ = select.select([a, b], [], [], 0.2)
                for src in ready:
                    data = src.recv(1 << 16)
                    if not data:
                        return
                    (b if src is a else a).sendall(data)
        except (OSError, ValueError):
            return
        finally:
            with self._lock:
                self._open.discard(a)
                self._open.discard(b)
            for sock in (a, b):
                if self._down.is_set():
                    _reset(sock)
                else:
                    with contextlib.suppress(OSError):
                        sock.close()
