"""Serving on loopback only, behind a secret: what `arcana mcp --http` and `arcana ui` share.

The token is a local secret, not network authentication, so the address is
refused unless it is a loopback one; and since any web page the user opens
can aim requests at 127.0.0.1, every request must also name this server in
its Host header (a DNS-rebinding page names its own host) and, when a browser
sends an Origin, come from this server's own origin. Only then is the
credential compared, in constant time.
"""

from __future__ import annotations

import hmac
import os
import secrets
import socket
from collections.abc import Awaitable, Callable
from pathlib import Path

LOOPBACK = ("127.0.0.1", "::1", "localhost")


def parse_bind(value: str, flag: str, *, any_port: bool = False) -> tuple[str, int]:
    """``HOST:PORT`` on a loopback address only; ``any_port`` admits port 0 (a free one is picked)."""
    host, sep, port = value.rpartition(":")
    host = host.strip("[]")
    low = 0 if any_port else 1
    if not sep or not (port.isascii() and port.isdigit()) or not low <= int(port) < 65536:
        raise ValueError(f"{flag} takes HOST:PORT, e.g. 127.0.0.1:8765 (got '{value}')")
    if host not in LOOPBACK:
        raise ValueError(f"{flag} serves loopback only (127.0.0.1, ::1 or localhost), not '{host}'")
    return host, int(port)


def bind(host: str, port: int) -> socket.socket:
    """The listening socket (port 0: a free one); OSError when the address is taken."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    sock.setblocking(False)
    return sock


MIN_TOKEN_CHARS = 16  # new_token() makes 43; a token of your own, written to the file, needs as many


def new_token() -> str:
    return secrets.token_urlsafe(32)


def saved_token(path: Path) -> tuple[str, bool]:
    """The token kept at ``path`` (0600, its folder 0700), made on first use; (token, newly made).
    A file left empty or cut short (a full disk) holds no secret any client could send: refused."""
    if path.exists():
        token = path.read_text(encoding="utf-8", errors="replace").strip()
        if len(token) < MIN_TOKEN_CHARS:
            from memory.errors import ConfigError

            raise ConfigError(f"{path} holds no usable token ({len(token)} characters); delete it and run again "
                              "to make a new one (clients then need the new token)")
        return token, False
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    token = new_token()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(token + "\n")
    return token, True


def url_host(host: str) -> str:
    """``host`` as a URL names it: an IPv6 address in brackets (``http://::1:8765/`` is no URL)."""
    return f"[{host}]" if ":" in host else host


def host_names(port: int) -> set[str]:
    """The Host header values that name this server: every loopback spelling, on this port."""
    return {f"{name}:{port}" for name in ("127.0.0.1", "localhost", "[::1]")}


def same_secret(given: bytes | None, expected: bytes) -> bool:
    return given is not None and hmac.compare_digest(given, expected)


class LoopbackGuard:
    """ASGI middleware: Host, then Origin, then the credential, else a refusal.

    ``credential(scope)`` returns what the request presents (a bearer header,
    a cookie, a query parameter) to compare with ``secret``; ``reject(send,
    status, reason, challenge)`` writes the refusal (plain text by default; the web view draws a page).
    ``port`` may be set after binding (port 0 picks a free one).
    """

    def __init__(
        self,
        app,
        *,
        port: int,
        secret: str,
        credential: Callable[[dict], bytes | None],
        reject: Callable[[Callable, int, str], Awaitable[None]] | None = None,
        challenge: bytes | None = None,
    ):
        self.app = app
        self.port = port
        self.secret = secret.encode()
        self.credential = credential
        self.reject = reject or _plain
        self.challenge = challenge

    def refusal(self, scope: dict) -> tuple[int, str] | None:
        headers = dict(scope.get("headers") or ())
        host = headers.get(b"host", b"").decode("latin-1")
        names = host_names(self.port)
        if host not in names:
            return 421, f"the Host header must name this server ({sorted(names)[0]}), not '{host[:80]}'"
        origin = headers.get(b"origin")
        if origin is not None and origin.decode("latin-1") not in {f"http://{name}" for name in names}:
            return 403, "cross-origin requests are refused"
        if not same_secret(self.credential(scope), self.secret):
            return 401, "missing or wrong token"
        return None

    async def __call__(self, scope, receive, send):
        if scope["type"] == "websocket":  # neither server speaks it
            await send({"type": "websocket.close", "code": 1008})
            return
        if scope["type"] == "http":
            refused = self.refusal(scope)
            if refused is not None:
                status, reason = refused
                await self.reject(send, status, reason, self.challenge if status == 401 else None)
                return
        await self.app(scope, receive, send)


async def _plain(send, status: int, reason: str, challenge: bytes | None) -> None:
    headers = [(b"content-type", b"text/plain; charset=utf-8")]
    if challenge:
        headers.append((b"www-authenticate", challenge))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": reason.encode() + b"\n"})


def bearer(scope: dict) -> bytes | None:
    """``Authorization: Bearer <token>``'s token."""
    value = dict(scope.get("headers") or ()).get(b"authorization", b"")
    scheme, _, token = value.partition(b" ")
    return token if scheme == b"Bearer" and token else None
