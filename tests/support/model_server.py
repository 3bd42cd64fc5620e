"""A real HTTP server on 127.0.0.1 that speaks Ollama's /api/chat (NDJSON) and
OpenAI's /v1/chat/completions (SSE), streaming each answer in several chunks and
recording every request body so tests can assert on what a model was sent."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def echo_memory_answer(body: dict) -> str:
    """Default behaviour: answer with what the system prompt carried, so recall is observable."""
    system = next((m["content"] for m in body["messages"] if m["role"] == "system"), "")
    recalled = [line for line in system.splitlines() if line.startswith("- [")]
    return "I recall: " + (" | ".join(recalled) if recalled else "nothing yet") + "."


class LoopbackModelServer:
    def __init__(self, reply: Callable[[dict], str] = echo_memory_answer, *, chunk: int = 8, delay: float = 0.0):
        self.reply = reply
        self.chunk = chunk
        self.delay = delay
        self.requests: list[dict] = []  # {"path", "headers", "body", "raw"}
        self.fail_status: int | None = None
        self.stream_error: str | None = None  # sent in-stream after the first chunk
        self.finish_reason: str | None = None  # why the answer ended: OpenAI's finish_reason, Ollama's done_reason
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # keep test output clean
                pass

            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
                body = json.loads(raw)
                server.requests.append({"path": self.path, "headers": dict(self.headers), "body": body, "raw": raw})
                if server.fail_status:
                    payload = json.dumps({"error": {"message": "model exploded"}}).encode()
                    self.send_response(server.fail_status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                if server.delay:
                    time.sleep(server.delay)
                text = server.reply(body)
                pieces = [text[i : i + server.chunk] for i in range(0, len(text), server.chunk)] or [""]
                if self.path == "/api/chat":
                    lines = [json.dumps({"model": body["model"], "message": {"role": "assistant", "content": p}, "done": False}) for p in pieces]
                    if server.stream_error:
                        lines.insert(1, json.dumps({"error": server.stream_error}))
                    done = {"model": body["model"], "message": {"role": "assistant", "content": ""}, "done": True}
                    if server.finish_reason:
                        done["done_reason"] = server.finish_reason
                    lines.append(json.dumps(done))
                    self._stream("application/x-ndjson", [line + "\n" for line in lines])
                elif self.path == "/v1/chat/completions":
                    events = [": keep-alive\n\n"]
                    events += [f"data: {json.dumps({'choices': [{'index': 0, 'delta': {'content': p}}]})}\n\n" for p in pieces]
                    if server.stream_error:
                        events.insert(2, f"data: {json.dumps({'error': {'message': server.stream_error}})}\n\n")
                    if server.finish_reason:
                        events.append(f"data: {json.dumps({'choices': [{'index': 0, 'delta': {}, 'finish_reason': server.finish_reason}]})}\n\n")
                    events.append("data: [DONE]\n\n")
                    self._stream("text/event-stream", events)
                else:
                    self.send_error(404)

            def _stream(self, content_type: str, parts: list[str]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", content_type)
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                try:
                    for part in parts:
                        data = part.encode()
                        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                        self.wfile.flush()
                    self.wfile.write(b"0\r\n\r\n")
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True  # the client gave up (a timeout test); nothing to do

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> LoopbackModelServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def bodies(self) -> list[str]:
        return [r["raw"] for r in self.requests]


def free_port() -> int:
    """A port nothing listens on (bound, then released)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
