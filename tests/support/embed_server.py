"""A real HTTP server on 127.0.0.1 speaking Ollama's ``POST /api/embed``.

Each served model maps to a function texts -> vectors; a function may raise
ValueError for an input it rejects (answered with HTTP 400, as Ollama does for
an over-long input). ``delay`` stalls every answer, to test timeouts.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

EmbedFn = Callable[[Sequence[str]], list[list[float]]]


def hashed_vectors(dimension: int) -> EmbedFn:
    """Deterministic vectors from a text's hash: a stand-in model of another family."""

    def embed(texts: Sequence[str]) -> list[list[float]]:
        out = []
        for text in texts:
            digest = hashlib.sha256(text.encode()).digest()
            out.append([(digest[i % len(digest)] - 127.5) / 127.5 for i in range(dimension)])
        return out

    return embed


class LoopbackEmbedServer:
    def __init__(self, models: dict[str, EmbedFn], *, delay: float = 0.0):
        self.models = dict(models)
        self.delay = delay
        self.requests: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                server.requests.append(body)
                if server.delay:
                    time.sleep(server.delay)
                fn = server.models.get(body.get("model"))
                if self.path != "/api/embed" or fn is None:
                    return self._reply(404, {"error": f"model '{body.get('model')}' not found"})
                texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                try:
                    vectors = fn(texts)
                except ValueError as exc:
                    return self._reply(400, {"error": str(exc)})
                return self._reply(200, {"model": body["model"], "embeddings": vectors})

            def _reply(self, status: int, payload: dict) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> LoopbackEmbedServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
