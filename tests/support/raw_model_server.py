"""A real loopback HTTP endpoint that answers every request with whatever bytes a test scripts:
a malformed chunk, a connection dropped mid-answer, a body without end. For the model server
that misbehaves; :mod:`model_server` is the one that behaves."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterable

CHUNKED_OK = b"HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\n\r\n"


def chunk(data: bytes) -> bytes:
    """One HTTP/1.1 chunk of ``data``."""
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


LAST_CHUNK = b"0\r\n\r\n"


class RawModelServer:
    """``respond()`` gives the bytes to send, piece by piece, after the request is read; the
    connection closes when it is exhausted (or the client goes away)."""

    def __init__(self, respond: Callable[[], Iterable[bytes]]):
        self.respond = respond
        self.requests = 0
        self.sent = 0  # bytes written, all connections
        self._sock = socket.socket()
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        self._stop = threading.Event()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                got = conn.recv(65536)
                if not got:
                    return
                data += got
            head, _, body = data.partition(b"\r\n\r\n")
            length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                           if line.lower().startswith(b"content-length:")), 0)
            while len(body) < length:
                body += conn.recv(65536)
            self.requests += 1
            try:
                for piece in self.respond():
                    if self._stop.is_set():
                        return
                    conn.sendall(piece)
                    self.sent += len(piece)
            except OSError:
                return  # the client gave up

    def __enter__(self) -> RawModelServer:
        threading.Thread(target=self._serve, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._sock.close()
