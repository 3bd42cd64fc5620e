"""Ollama's native chat API: POST /api/chat, answered as NDJSON, one object per chunk."""

from __future__ import annotations

from collections.abc import Iterator

from memory.errors import ModelUnavailableError
from memory.models.base import ChatMessage
from memory.models.transport import cut_short, no_text, object_or_empty, parse_json_line, post_lines, text_of


class OllamaProvider:
    def __init__(self, name: str, base_url: str, model: str, *, timeout: float = 120.0):
        self.name = name
        self.url = base_url.rstrip("/") + "/api/chat"
        self.model = model
        self.timeout = timeout

    def stream(self, messages: list[ChatMessage], *, temperature: float | None = None) -> Iterator[str]:
        body: dict = {"model": self.model, "messages": [m.as_dict() for m in messages], "stream": True}
        if temperature is not None:
            body["options"] = {"temperature": temperature}
        label = f"model '{self.name}' (ollama)"
        said = False
        for line in post_lines(self.url, body, headers={}, timeout=self.timeout, label=label):
            data = parse_json_line(line, label=label)
            if data.get("error") is not None:  # a server may send "error": null beside a good chunk
                raise ModelUnavailableError(f"{label}: {data['error']}")
            message = object_or_empty(data.get("message"), label=label, line=line)
            if message.get("tool_calls"):
                raise ModelUnavailableError(f"{label} answered with a tool call, not text (it is offered no tools)")
            content = text_of(message.get("content"), label=label, line=line)
            if content:
                said = True
                yield content
            if data.get("done") is True:  # only JSON true: "false" (a string) is no end of the answer
                if error := cut_short(data.get("done_reason"), label):
                    raise error
                if not said:
                    raise no_text(label)
                return
        raise ModelUnavailableError(f"{label}: the answer ended before the server said it was done (cut off); try again")
