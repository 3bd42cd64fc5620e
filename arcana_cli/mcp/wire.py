"""A request the SDK's JSON reader cannot read is answered on stdio, never dropped.

The SDK reads each stdin line with pydantic's JSON parser, which refuses what
JSON itself allows: a ``\\ud800`` escape of half a surrogate pair (what a
JavaScript host's ``JSON.stringify`` writes for a string cut inside an emoji)
and nesting deeper than its recursion limit (200 levels). Such a line reached
the dispatcher as an exception it only logs at debug level, so the request
was never answered and the host waited on it for good. Here the line is read
again with Python's parser, which takes both, and a request it names gets its
answer: a tool call a one-line tool error, any other request a JSON-RPC error.
Not :mod:`memory.strict_json`: this reading only looks for an id to send a
refusal to, so a line strict JSON refuses (a key twice, nesting past its
depth) must still be answered; nothing read here is ever acted on.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any

from pydantic import ValidationError

log = logging.getLogger("arcana.mcp")


def unreadable_answer(exc: ValidationError) -> Any | None:
    """The JSON-RPC message answering the line ``exc`` refused, or None when it names no request."""
    import mcp_types as types

    errors = exc.errors()
    raw = errors[0].get("input") if errors else None
    if not isinstance(raw, (str, bytes)):
        return None
    try:
        message = json.loads(raw, parse_int=_whole_or_none)
    except RecursionError:  # nested past Python's limit too: the head of a request as clients write it
        message = _head(raw if isinstance(raw, str) else raw.decode("utf-8", "replace"))
    except ValueError:
        return None  # not JSON at all: no id to answer
    request_id = message.get("id") if isinstance(message, dict) else None
    method = message.get("method")
    if isinstance(request_id, bool) or not isinstance(request_id, (str, int)) or not isinstance(method, str):
        return None
    why = _why(str(errors[0].get("msg", "")))
    params = message.get("params")
    name = params.get("name") if isinstance(params, dict) else None
    request_id, method = _sayable(request_id), _sayable(method)
    if method == "tools/call" and isinstance(name, str):
        text = " ".join(f"Error executing tool {_sayable(name)[:100]}: its arguments could not be read: {why}".split())
        result = types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)
        return types.JSONRPCResponse(jsonrpc="2.0", id=request_id, result=result.model_dump(by_alias=True, mode="json", exclude_none=True))
    error = types.ErrorData(code=types.INVALID_PARAMS, message=f"{method[:100]}: the request could not be read: {why}")
    return types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error)


_STRING = r'"(?:[^"\\]|\\.)*"'
_HEAD = re.compile(
    rf'\s*\{{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*(-?\d+|{_STRING})\s*,\s*"method"\s*:\s*({_STRING})'
    rf'(?:\s*,\s*"params"\s*:\s*\{{\s*"name"\s*:\s*({_STRING}))?'
)


def _whole_or_none(text: str) -> int | None:
    """A whole number, or None past the 4,300 digits ``int()`` converts: it raised ValueError, read as
    "not JSON", and a tool call holding such an argument was never answered."""
    try:
        return int(text)
    except ValueError:
        return None


def _head(raw: str) -> dict:
    """The id, method and tool name of a request too deeply nested to parse, read from its head in the
    order SDK clients write it (jsonrpc, id, method, params.name); {} when it does not start so."""
    found = _HEAD.match(raw)
    if found is None:
        return {}
    try:
        request_id, method, name = (json.loads(part) if part else None for part in found.groups())
    except ValueError:  # an id of more digits than int() reads
        return {}
    return {"id": request_id, "method": method, "params": {"name": name}}


def _sayable(value: Any) -> Any:
    """``value`` with any lone surrogate as its ``\\udXXX`` escape: the answer must itself be UTF-8."""
    return value.encode("utf-8", "backslashreplace").decode("utf-8") if isinstance(value, str) else value


def _why(parser_message: str) -> str:
    if "recursion limit" in parser_message:
        return "nested deeper than 200 levels; send flatter arguments"
    if "number out of range" in parser_message:
        return "a number too large to read; send a smaller one"
    if "escape" in parser_message or "surrogate" in parser_message:
        return "a \\u escape of half a UTF-16 surrogate pair, which is no character; send whole characters"
    return " ".join(parser_message.split())[:200]


class AnsweringReader:
    """The SDK's stdio read stream, answering (on ``write``) each request whose line it could not
    read instead of handing the dispatcher an exception it drops; every other item passes as read."""

    def __init__(self, inner: Any, write: Any):
        self._inner = inner
        self._write = write

    @property
    def last_context(self):  # the dispatcher restores the reader's context from here
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        from mcp.shared.message import SessionMessage

        while True:
            item = await self._inner.receive()
            if not isinstance(item, ValidationError):
                return item
            try:
                answer = unreadable_answer(item)
            except Exception:  # answering is a courtesy: never a reason to stop serving
                log.exception("answering an unreadable request")
                answer = None
            if answer is None:
                log.warning("a line on stdin is not a JSON-RPC request and was dropped: %s", _why(str(item.errors()[0].get("msg", ""))))
                return item
            await self._write.send(SessionMessage(answer))

    def __aiter__(self) -> AnsweringReader:
        return self

    async def __anext__(self) -> Any:
        import anyio

        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    def close(self) -> None:
        self._inner.close()

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> AnsweringReader:
        return self

    async def __aexit__(self, *exc_info) -> None:
        await self.aclose()


async def serve_stdio(server) -> None:
    """``server`` (an MCPServer) on stdio as its ``run_stdio_async`` serves it, through :class:`AnsweringReader`."""
    from mcp.server.stdio import stdio_server

    lowlevel = server._lowlevel_server  # the SDK's own run_stdio_async drives this; it has no public seam for the streams
    async with stdio_server() as (read_stream, write_stream):
        await lowlevel.run(AnsweringReader(read_stream, write_stream), write_stream, lowlevel.create_initialization_options())
