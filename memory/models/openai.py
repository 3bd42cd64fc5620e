"""OpenAI-compatible chat completions (OpenAI, vLLM, llama.cpp server, LM Studio) over SSE."""

from __future__ import annotations

import os
from collections.abc import Iterator

from memory.errors import InvalidRequestError, ModelUnavailableError, UnsetVariableError
from memory.models.base import ChatMessage
from memory.models.transport import cut_short, no_text, object_or_empty, parse_json_line, post_lines, text_of

TOOL_CALLS = ("tool_calls", "function_call")
"""The finish reasons of an answer that is a call to a tool, not text."""


class OpenAIProvider:
    def __init__(
        self, name: str, base_url: str, model: str, *, api_key_env: str | None = None, timeout: float = 120.0
    ):
        self.name = name
        root = base_url.rstrip("/")
        # Both "http://host:8000" and "http://host:8000/v1" are common ways to write the endpoint.
        self.url = root + ("/chat/completions" if root.endswith("/v1") else "/v1/chat/completions")
        self.model = model
        self.api_key_env = api_key_env
        self.timeout = timeout

    def _headers(self) -> dict[str, str]:
        if self.api_key_env is None:
            return {}
        key = os.environ.get(self.api_key_env)
        if not key:
            raise UnsetVariableError(
                f"model '{self.name}' reads its API key from ${self.api_key_env}, which is not set; "
                f"export {self.api_key_env} with the key"
            )
        # A key is printable ASCII: a line break (a key file saved with CRLF) or a pasted curly quote
        # ended the request in a traceback that printed the whole key. Said without showing it.
        at = next((i for i, char in enumerate(key) if not " " < char < "\x7f"), None)
        if at is not None:
            raise InvalidRequestError(
                f"model '{self.name}': ${self.api_key_env} holds a character no API key has at position {at + 1} "
                f"(a line break, a space or a non-ASCII character); export {self.api_key_env} with the key alone"
            )
        return {"Authorization": f"Bearer {key}"}

    def stream(self, messages: list[ChatMessage], *, temperature: float | None = None) -> Iterator[str]:
        body: dict = {"model": self.model, "messages": [m.as_dict() for m in messages], "stream": True}
        if temperature is not None:
            body["temperature"] = temperature
        label = f"model '{self.name}' (openai)"
        reason = None  # why a choice said it ended: servers that never send [DONE] still end so
        said = False
        for line in post_lines(self.url, body, headers=self._headers(), timeout=self.timeout, label=label):
            if not line.startswith("data:"):
                continue  # SSE comments, event names and keep-alives
            payload = line[5:].strip()
            if payload == "[DONE]":
                break
            data = parse_json_line(payload, label=label)
            if data.get("error") is not None:  # a server may send "error": null beside a good chunk
                error = data["error"]
                raise ModelUnavailableError(f"{label}: {error.get('message', error) if isinstance(error, dict) else error}")
            choices = data.get("choices") or []
            if not isinstance(choices, list):
                raise ModelUnavailableError(f"{label} sent a chunk of an unexpected shape: {payload[:80]!r}")
            for choice in choices:
                choice = object_or_empty(choice, label=label, line=payload)
                delta = object_or_empty(choice.get("delta"), label=label, line=payload)
                if delta.get("tool_calls") or delta.get("function_call") or choice.get("finish_reason") in TOOL_CALLS:
                    raise ModelUnavailableError(f"{label} answered with a tool call, not text (it is offered no tools)")
                content = text_of(delta.get("content"), label=label, line=payload)
                if content:
                    said = True
                    yield content
                if choice.get("finish_reason") is not None:
                    reason = choice["finish_reason"]
        else:
            if reason is None:
                raise ModelUnavailableError(f"{label}: the answer ended before the server said it was done (cut off); try again")
        if error := cut_short(reason, label):
            raise error
        if not said:
            raise no_text(label)
