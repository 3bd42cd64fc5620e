"""HTTP to a local service (a model, an embedder) that may misbehave: no redirect followed (it would
carry the request's headers, an API key among them, to another host) and every answer under a
deadline that holds in every phase (status line, headers, body), since a socket timeout bounds
one wait only and a server trickling a byte per wait would otherwise never end."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import urllib.error
import urllib.request

from memory import strict_json
from memory.errors import ModelUnavailableError

ERROR_BODY_BYTES = 64 << 10
"""How much of an HTTP error's body is read for its message."""
READ_BYTES = 64 << 10


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A model endpoint that redirects is answered with its status, not followed: urllib would resend
    the request's headers, the API key among them, to whatever host the redirect names, and turn the
    POST into a GET that no chat API answers."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


class Watchdog:
    """Shuts the answer's socket at the whole answer's deadline, whichever phase the read is in: the
    timeout bounds one wait, so a status line or headers sent a byte per wait would never end, and
    only the body's reads could check the clock."""

    def __init__(self, seconds: float):
        self.fired = False
        self._sock: socket.socket | None = None
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._fire)
        self._timer.daemon = True

    def __enter__(self) -> Watchdog:
        self._timer.start()
        return self

    def __exit__(self, *exc) -> None:
        self._timer.cancel()

    def attach(self, sock: socket.socket) -> None:
        with self._lock:
            self._sock = sock
            if self.fired:
                self._shut()

    def _fire(self) -> None:
        with self._lock:
            self.fired = True
            self._shut()

    def _shut(self) -> None:
        if self._sock is not None:
            try:  # the plain socket's shutdown, under TLS too: a blocked read returns at once
                socket.socket.shutdown(self._sock, socket.SHUT_RDWR)
            except OSError:
                pass


class _WatchedConnections:
    """Mixed into urllib's HTTP and HTTPS handlers: each connection hands its socket to the watchdog."""

    def __init__(self, watchdog: Watchdog, **kwargs):
        super().__init__(**kwargs)
        self.watchdog = watchdog

    def do_open(self, http_class, req, **kwargs):
        watchdog = self.watchdog

        class Watched(http_class):
            def connect(self):
                super().connect()
                watchdog.attach(self.sock)

        return super().do_open(Watched, req, **kwargs)


class _WatchedHTTP(_WatchedConnections, urllib.request.HTTPHandler):
    pass


class _WatchedHTTPS(_WatchedConnections, urllib.request.HTTPSHandler):
    pass


def opener(watchdog: Watchdog) -> urllib.request.OpenerDirector:
    return urllib.request.build_opener(_NoRedirects, _WatchedHTTP(watchdog), _WatchedHTTPS(watchdog))


def post_json(url: str, body: dict, *, timeout: float, deadline: float, max_bytes: int, label: str) -> object:
    """POST ``body`` and parse the whole JSON answer: at most ``max_bytes`` of it, all within ``deadline``
    seconds (each wait within ``timeout``), no redirect followed; else ModelUnavailableError.
    For endpoints that answer in one piece (an embedder), where :func:`post_lines` streams."""
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}, method="POST"
    )
    who = f"{label} at {url}"

    def late() -> ModelUnavailableError:  # the watchdog shut the socket, whatever the read then saw
        return ModelUnavailableError(f"{who} was still answering after {deadline:g}s; cut off")

    with Watchdog(deadline) as watchdog:
        try:
            with open_response(opener(watchdog), request, timeout, who) as response:
                payload = bytearray()
                while piece := response.read1(READ_BYTES):
                    payload += piece
                    if len(payload) > max_bytes:
                        raise ModelUnavailableError(f"{who} sent more than {max_bytes >> 20} MiB; cut off")
            if watchdog.fired:
                raise late()
            return strict_json.loads(strict_json.decode(bytes(payload)))
        except (TimeoutError, socket.timeout):
            raise ModelUnavailableError(f"{who} stopped answering (timeout {timeout:g}s)") from None
        except (OSError, http.client.HTTPException) as exc:
            if watchdog.fired:
                raise late() from None
            raise ModelUnavailableError(f"{who} dropped the connection: {type(exc).__name__}") from None
        except strict_json.JSONRefused as exc:
            raise ModelUnavailableError(f"{who} answered with something that is not JSON: {exc}") from None
        except ModelUnavailableError:
            if watchdog.fired:
                raise late() from None
            raise


def open_response(opener, request, timeout: float, who: str):
    """The response to ``request``, or ModelUnavailableError saying why there is none."""
    try:
        return opener.open(request, timeout=timeout)
    except urllib.error.HTTPError as exc:
        location = exc.headers.get("Location") if 300 <= exc.code < 400 and exc.headers else None
        if location:
            raise ModelUnavailableError(
                f"{who} answered HTTP {exc.code}, a redirect to {location[:200]} (not followed: "
                "configure the server's own URL)"
            ) from None
        try:
            detail = _error_detail(exc.read(ERROR_BODY_BYTES))
        except (OSError, http.client.HTTPException):  # a body that never ends or breaks off: the status will do
            detail = ""
        raise ModelUnavailableError(f"{who} answered HTTP {exc.code}{detail}") from None
    except urllib.error.URLError as exc:
        reason = exc.reason.strerror if isinstance(exc.reason, OSError) and exc.reason.strerror else exc.reason
        raise ModelUnavailableError(f"{who} is unreachable: {reason}") from None
    except (TimeoutError, socket.timeout):
        raise ModelUnavailableError(f"{who} did not answer within {timeout:g}s") from None
    except OSError as exc:
        raise ModelUnavailableError(f"{who} is unreachable: {exc}") from None
    except http.client.HTTPException as exc:  # a status line that is no HTTP's, a header past the limits
        raise ModelUnavailableError(f"{who} did not answer in HTTP: {type(exc).__name__}") from None


def _error_detail(payload: bytes) -> str:
    """The server's own error message when it sent one, briefly."""
    text = payload.decode("utf-8", errors="replace").strip()
    try:
        data = strict_json.loads(text)
        error = data.get("error", data) if isinstance(data, dict) else data
        text = error.get("message", json.dumps(error)) if isinstance(error, dict) else str(error)
    except (strict_json.JSONRefused, AttributeError):  # refused (nested past the parser's depth too): shown as sent
        pass
    text = " ".join(text.split())[:200]
    return f": {text}" if text else ""
