"""The web view's server: routes, the token, one-line error pages, and serving on loopback.

The token arrives once in the URL that ``arcana ui`` prints; the first request
with it is answered with a cookie (HttpOnly, SameSite=Strict, so another
site's form cannot send it) and a redirect to the same page without the
token, so the token does not stay in the address bar or the history.

Cookies ignore ports: a browser sends one set by 127.0.0.1:8765 to every server
on 127.0.0.1, whatever its port, so a dev server or any other local process the
user browses to would be handed the token. So every page lives under a path of
its own, random for each run (``/<root>/``), and the cookie is scoped to it
(``Path``): another port only gets it for a request under that path, which it
cannot name, as no page of ours sends its address elsewhere (``Referrer-Policy``).
"""

from __future__ import annotations

import logging
import secrets
import socket
import sys
from collections.abc import Callable
from http import HTTPStatus
from urllib.parse import parse_qsl, urlencode

from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request, cookie_parser
from starlette.responses import PlainTextResponse, RedirectResponse
from starlette.routing import Mount, Route

from arcana_cli.loopback import LoopbackGuard, bind, url_host  # noqa: F401 - `arcana ui` listens through bind
from arcana_cli.ui import pages, params
from arcana_cli.ui.reads import Reader
from memory.errors import (
    ArcanaMemoryError,
    ConfigError,
    InvalidRequestError,
    MemoryStorageError,
    NotFoundError,
    StaleEditError,
)
from memory.home import Home
from memory.operator.edits import LiveCopyError

log = logging.getLogger("arcana.ui")


def cookie_name(port: int) -> str:
    """One cookie per port: cookies ignore ports, and two views of two homes must not share one."""
    return f"arcana_ui_{port}"


def _status_of(exc: BaseException) -> int:
    if isinstance(exc, HTTPException):
        return exc.status_code
    if isinstance(exc, StaleEditError):
        return 409
    if isinstance(exc, NotFoundError):
        return 404
    if isinstance(exc, (InvalidRequestError, ValidationError, ValueError)):
        return 400
    if isinstance(exc, (LiveCopyError, MemoryStorageError)):
        return 503
    return 500


def _reason(exc: BaseException) -> str:
    if isinstance(exc, HTTPException):
        text = exc.detail
    elif isinstance(exc, ValidationError):
        first = exc.errors()[0]
        text = f"invalid {'.'.join(str(p) for p in first['loc']) or exc.title}: {first['msg']}"
    elif isinstance(exc, (ArcanaMemoryError, ValueError)) and not isinstance(exc, ConfigError):
        text = str(exc)
    elif isinstance(exc, ConfigError):
        text = f"the configuration is malformed: {exc}"
    else:
        text = f"internal error ({type(exc).__name__}); see the server's stderr"
    return " ".join(str(text).split())[:500]


def guarded(endpoint: Callable) -> Callable:
    """Every failure becomes an error page with its status and a one-line reason; nothing escapes."""

    async def call(request: Request):
        try:
            params.once(request.query_params.multi_items())
            return await endpoint(request)
        except ClientDisconnect:  # the browser went away mid-body: no one to answer, nothing of ours failed
            return PlainTextResponse("", status_code=400)
        except Exception as exc:  # the page says why; the server keeps serving
            status = _status_of(exc)
            if status == 500:
                log.error("%s %s failed: %s: %s", request.method, request.url.path, type(exc).__name__, exc)
            return error_page(request.app.state.reader, status, _reason(exc))

    return call


def error_page(reader: Reader, status: int, reason: str, *, trusted: bool = True):
    phrase = HTTPStatus(status).phrase
    try:
        return pages.render(reader, "error.html", status, trusted=trusted, title=f"{status} {phrase}", status=status,
                            phrase=phrase, reason=reason)
    except Exception as exc:  # the page itself failed to draw: the reason still goes out, as text
        log.error("drawing the %s page failed: %s: %s", status, type(exc).__name__, exc)
        return PlainTextResponse(f"{status} {phrase}: {reason}\n", status_code=status)


ROUTES = [
    ("/", pages.home, ["GET"]),
    ("/memories", pages.memories, ["GET"]),
    # An id may hold a "/" (an imported one): matched as a path, the actions first.
    ("/memory/{memory_id:path}/confirm", pages.confirm, ["GET"]),
    ("/memory/{memory_id:path}/act", pages.act, ["POST"]),
    ("/memory/{memory_id:path}", pages.memory, ["GET"]),
    ("/activity", pages.activity, ["GET"]),
    ("/graph", pages.graph, ["GET"]),
    ("/audit", pages.audit, ["GET"]),
    ("/static/{name}", pages.static, ["GET"]),
]


def new_root() -> str:
    """The run's path, e.g. ``/v-3q0TfK8w2xYbA1cd``: the cookie is sent under it alone."""
    return f"/v-{secrets.token_urlsafe(12)}"


def build_app(home: Home, token: str, port: int, root: str):
    """The web view of ``home`` for a server on ``port`` with its pages under ``root``, behind the
    loopback guard and ``token``."""
    reader = Reader(home, root)

    async def not_routed(request: Request, exc: HTTPException):
        reason = "no such page" if exc.status_code == 404 else f"{request.method} is not allowed here"
        return error_page(reader, exc.status_code, reason)

    app = Starlette(
        routes=[Mount(root, routes=[Route(path, guarded(fn), methods=methods) for path, fn, methods in ROUTES])],
        exception_handlers={404: not_routed, 405: not_routed},
    )
    app.state.reader = reader
    name = cookie_name(port)

    async def refuse(send, status: int, reason: str, challenge) -> None:
        # Trigger: no token, a foreign Host (DNS rebinding) or Origin. Why: the asking page reads this
        # answer, and the home's path names the user. Outcome: the reason, not the home.
        response = error_page(reader, status, reason, trusted=False)
        await response({"type": "http"}, None, send)

    return LoopbackGuard(_TokenToCookie(app, name, root), port=port, secret=token, credential=_credential(name), reject=refuse)


def _credential(name: str):
    def credential(scope: dict) -> bytes | None:
        """The token in the query (the printed URL), else the cookie it was swapped for."""
        for key, value in parse_qsl(scope.get("query_string", b"").decode("latin-1")):
            if key == "token":
                return value.encode("latin-1")
        for header, value in scope.get("headers") or ():
            if header == b"cookie":  # parsed as browsers write it: other ports' cookies come too, any shape
                found = cookie_parser(value.decode("latin-1")).get(name)
                if found is not None:
                    return found.encode("latin-1")
        return None

    return credential


class _TokenToCookie:
    """A request that carried the token (already checked) is redirected without it, with the cookie
    set for ``root`` only (a request outside it is sent to ``root``'s home page)."""

    def __init__(self, app, name: str, root: str):
        self.app = app
        self.name = name
        self.root = root

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
            token = next((v for k, v in query if k == "token"), None)
            if token is not None:
                rest = urlencode([(k, v) for k, v in query if k != "token"])
                path = scope["path"] if scope["path"].startswith(self.root + "/") else self.root + "/"
                response = RedirectResponse(path + (f"?{rest}" if rest else ""), status_code=303)
                response.set_cookie(self.name, token, httponly=True, samesite="strict", path=self.root)
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


async def serve(home: Home, sock: socket.socket, token: str, announce: Callable[[str], None]) -> None:
    """Serve until interrupted; ``announce`` is given the URL with the token, once."""
    import uvicorn

    host, port = sock.getsockname()[:2]
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("arcana ui: %(levelname)s %(message)s"))
    log.handlers[:] = [handler]
    log.propagate = False
    root = new_root()
    app = build_app(home, token, port, root)
    announce(f"http://{url_host(host)}:{port}{root}/?token={token}")
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
    await uvicorn.Server(config).serve(sockets=[sock])
