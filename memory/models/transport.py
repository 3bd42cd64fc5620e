"""POST a JSON body and iterate the response line by line, with errors a user can act on."""

from __future__ import annotations

import http.client
import json
import socket
import urllib.request
from collections.abc import Iterator

from memory import strict_json
from memory.bounded_http import READ_BYTES, Watchdog, open_response, opener
from memory.errors import ModelUnavailableError


MAX_LINE_BYTES = 1 << 20
"""The longest line (one NDJSON object, one SSE field) an answer may have: a chunk is a few tokens."""
MAX_ANSWER_BYTES = 16 << 20
"""The most an answer's stream may carry, about a hundred thousand streamed tokens: a server that
sends more (a runaway model, a body without end) is cut off before it fills memory."""
ANSWER_WAITS = 10
"""A whole answer may take this many times the model's ``timeout_seconds`` (20 minutes at the default
120 s): the timeout bounds each wait, and a server trickling a byte at a time would otherwise never end."""


def post_lines(url: str, body: dict, *, headers: dict[str, str], timeout: float, label: str) -> Iterator[str]:
    """Yield decoded, non-blank response lines; raise ModelUnavailableError naming ``label`` and ``url``."""
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers},
        method="POST",
    )
    who = f"{label} at {url}"
    with Watchdog(timeout * ANSWER_WAITS) as watchdog:
        try:
            yield from _lines(opener(watchdog), request, timeout, who, watchdog)
        except ModelUnavailableError:
            if watchdog.fired:  # whatever the shut socket looked like to the reader, the clock ran out
                raise _too_long(who) from None
            raise


def _too_long(who: str) -> ModelUnavailableError:
    return ModelUnavailableError(f"{who} was still answering at {ANSWER_WAITS} times its timeout; cut off")


def _lines(client, request, timeout: float, who: str, watchdog: Watchdog) -> Iterator[str]:
    response = open_response(client, request, timeout, who)
    with response:
        try:
            for raw in _raw_lines(response, watchdog, who):
                try:  # strict: replacement characters would be printed and remembered as the model's words
                    line = raw.decode("utf-8").strip()
                except UnicodeDecodeError as exc:
                    raise ModelUnavailableError(f"{who} sent bytes that are not UTF-8 ({exc.reason} at byte "
                                                f"{exc.start} of a line): a malformed answer") from None
                if line:
                    yield line
        except (TimeoutError, socket.timeout):
            raise ModelUnavailableError(f"{who} stopped answering (timeout {timeout:g}s)") from None
        except OSError as exc:
            raise ModelUnavailableError(f"{who} dropped the connection: {exc}") from None
        except http.client.HTTPException as exc:  # IncompleteRead: the body ended mid-chunk
            raise ModelUnavailableError(f"{who} dropped the connection mid-answer ({type(exc).__name__})") from None


def _raw_lines(response, watchdog: Watchdog, who: str) -> Iterator[bytes]:
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


def text_of(value: object, *, label: str, line: str) -> str:
    """A chunk's text: a string, or nothing (``None``); anything else is a malformed answer, a string
    with a lone surrogate (``"\\ud800"`` is valid JSON) among them: no UTF-8 can carry it, so printing
    or storing it would fail later with a traceback."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ModelUnavailableError(f"{label} sent a chunk whose text is not a string: {line[:80]!r}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ModelUnavailableError(f"{label} sent text with a lone surrogate, which is not Unicode: {line[:80]!r}") from None
    return value


def object_or_empty(value: object, *, label: str, line: str) -> dict:
    """A nested object of a chunk (``message``, ``delta``, a choice), ``{}`` when absent or empty;
    anything else is malformed."""
    if not value:
        return {}
    if not isinstance(value, dict):
        raise ModelUnavailableError(f"{label} sent a chunk of an unexpected shape: {line[:80]!r}")
    return value


CUT_SHORT = {
    "length": "reached the server's length limit (max_tokens, num_predict)",
    "content_filter": "was stopped by the server's content filter",
}
"""Why a server says it stopped an answer before its end (OpenAI's ``finish_reason``, Ollama's ``done_reason``)."""


def cut_short(reason: object, label: str) -> ModelUnavailableError | None:
    """The error for an answer the server itself says it stopped short, else None: half a JSON
    list or half a summary is never taken (extraction and summaries fall back to the heuristic,
    `arcana run` records no turn), however properly the stream ended."""
    if reason not in CUT_SHORT:
        return None
    return ModelUnavailableError(f"{label}: the answer {CUT_SHORT[reason]}, so it is cut off; raise the limit or try again")


def no_text(label: str) -> ModelUnavailableError:
    """An answer that ended properly without a word: nothing to print or remember, so a failure
    (exit 69), not an empty success a script would take for an answer."""
    return ModelUnavailableError(f"{label} answered with no text")


def parse_json_line(line: str, *, label: str) -> dict:
    try:
        data = strict_json.loads(line)
    except strict_json.JSONRefused as exc:  # a key given twice, too: which value counts is then the reader's guess
        raise ModelUnavailableError(f"{label} sent a line that is not JSON ({exc}): {line[:80]!r}") from None
    if not isinstance(data, dict):
        raise ModelUnavailableError(f"{label} sent JSON that is not an object: {line[:80]!r}")
    return data
