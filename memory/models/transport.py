"""POST a JSON body and iterate the response line by line, with errors a user can act on."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator

from memory.errors import ModelUnavailableError


MAX_LINE_BYTES = 1 << 20
"""The longest line (one NDJSON object, one SSE field) an answer may have: a chunk is a few tokens."""
MAX_ANSWER_BYTES = 16 << 20
"""The most an answer's stream may carry, about a hundred thousand streamed tokens: a server that
sends more (a runaway model, a body without end) is cut off before it fills memory."""
ERROR_BODY_BYTES = 64 << 10
"""How much of an HTTP error's body is read for its message."""
ANSWER_WAITS = 10
"""A whole answer may take this many times the model's ``timeout_seconds`` (20 minutes at the default
120 s): the timeout bounds each wait, and a server trickling a byte at a time would otherwise never end."""
READ_BYTES = 64 << 10


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A model endpoint that redirects is answered with its status, not followed: urllib would resend
    the request's headers, the API key among them, to whatever host the redirect names, and turn the
    POST into a GET that no chat API answers."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


class _Watchdog:
    """Shuts the answer's socket at the whole answer's deadline, whichever phase the read is in: the
    timeout bounds one wait, so a status line or headers sent a byte per wait would never end, and
    only the body's reads could check the clock."""

    def __init__(self, seconds: float):
        self.fired = False
        self._sock: socket.socket | None = None
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._fire)
        self._timer.daemon = True

    def __enter__(self) -> _Watchdog:
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

    def __init__(self, watchdog: _Watchdog, **kwargs):
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


def _opener(watchdog: _Watchdog) -> urllib.request.OpenerDirector:
    return urllib.request.build_opener(_NoRedirects, _WatchedHTTP(watchdog), _WatchedHTTPS(watchdog))


def post_lines(url: str, body: dict, *, headers: dict[str, str], timeout: float, label: str) -> Iterator[str]:
    """Yield decoded, non-blank response lines; raise ModelUnavailableError naming ``label`` and ``url``."""
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers},
        method="POST",
    )
    who = f"{label} at {url}"
    with _Watchdog(timeout * ANSWER_WAITS) as watchdog:
        try:
            yield from _lines(_opener(watchdog), request, timeout, who, watchdog)
        except ModelUnavailableError:
            if watchdog.fired:  # whatever the shut socket looked like to the reader, the clock ran out
                raise _too_long(who) from None
            raise


def _too_long(who: str) -> ModelUnavailableError:
    return ModelUnavailableError(f"{who} was still answering at {ANSWER_WAITS} times its timeout; cut off")


def _lines(opener, request, timeout: float, who: str, watchdog: _Watchdog) -> Iterator[str]:
    try:
        response = opener.open(request, timeout=timeout)
    except urllib.error.HTTPError as exc:
        location = exc.headers.get("Location") if 300 <= exc.code < 400 and exc.headers else None
        if location:
            raise ModelUnavailableError(
                f"{who} answered HTTP {exc.code}, a redirect to {location[:200]} (not followed: "
                "set the model's base_url to the server itself)"
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
    with response:
        try:
            for raw in _raw_lines(response, watchdog, who):
                line = raw.decode("utf-8", errors="replace").strip()
                if line:
                    yield line
        except (TimeoutError, socket.timeout):
            raise ModelUnavailableError(f"{who} stopped answering (timeout {timeout:g}s)") from None
        except OSError as exc:
            raise ModelUnavailableError(f"{who} dropped the connection: {exc}") from None
        except http.client.HTTPException as exc:  # IncompleteRead: the body ended mid-chunk
            raise ModelUnavailableError(f"{who} dropped the connection mid-answer ({type(exc).__name__})") from None


def _raw_lines(response, watchdog: _Watchdog, who: str) -> Iterator[bytes]:
    """The answer's lines, read a piece at a time (one wait each) so that its size, its longest line
    and its whole duration stay bounded, however slowly the bytes come."""
    pending = bytearray()
    received = 0
    while piece := response.read1(READ_BYTES):
        received += len(piece)
        if received > MAX_ANSWER_BYTES:
            raise ModelUnavailableError(f"{who} sent more than {MAX_ANSWER_BYTES >> 20} MiB; cut off")
        if watchdog.fired:
            raise _too_long(who)
        scan = len(pending)
        pending += piece
        while 0 <= (end := pending.find(b"\n", scan)) <= MAX_LINE_BYTES:
            yield bytes(pending[:end])
            del pending[: end + 1]
            scan = 0
        if len(pending) > MAX_LINE_BYTES:  # its first line, ended or not, is longer
            raise ModelUnavailableError(f"{who} sent a line longer than {MAX_LINE_BYTES >> 20} MiB")
    if watchdog.fired:  # the shut socket reads as an answer that ended: it was cut off
        raise _too_long(who)
    if pending:
        yield bytes(pending)


def _error_detail(payload: bytes) -> str:
    """The server's own error message when it sent one, briefly."""
    text = payload.decode("utf-8", errors="replace").strip()
    try:
        data = json.loads(text)
        error = data.get("error", data) if isinstance(data, dict) else data
        text = error.get("message", json.dumps(error)) if isinstance(error, dict) else str(error)
    except (json.JSONDecodeError, AttributeError):
        pass
    text = " ".join(text.split())[:200]
    return f": {text}" if text else ""


def text_of(value: object, *, label: str, line: str) -> str:
    """A chunk's text: a string, or nothing (``None``); anything else is a malformed answer."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ModelUnavailableError(f"{label} sent a chunk whose text is not a string: {line[:80]!r}")
    return value


def object_or_empty(value: object, *, label: str, line: str) -> dict:
    """A nested object of a chunk (``message``, ``delta``, a choice), ``{}`` when absent or empty;
    anything else is malformed."""
    if not value:
        return {}
    if not isinstance(value, dict):
        raise ModelUnavailableError(f"{label} sent a chunk of an unexpected shape: {line[:80]!r}")
    return value


def no_text(label: str) -> ModelUnavailableError:
    """An answer that ended properly without a word: nothing to print or remember, so a failure
    (exit 69), not an empty success a script would take for an answer."""
    return ModelUnavailableError(f"{label} answered with no text")


def parse_json_line(line: str, *, label: str) -> dict:
    try:
        data = json.loads(line)
    except json.JSONDecodeError:
        raise ModelUnavailableError(f"{label} sent a line that is not JSON: {line[:80]!r}") from None
    if not isinstance(data, dict):
        raise ModelUnavailableError(f"{label} sent JSON that is not an object: {line[:80]!r}")
    return data
