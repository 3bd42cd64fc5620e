"""The pages: each reads its parameters (a 400 when malformed), asks :class:`Reader`, renders a template."""

from __future__ import annotations

from datetime import UTC, datetime
from importlib import resources
from urllib.parse import quote, urlencode

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from arcana_cli.output import printable
from arcana_cli.ui import params, plots
from arcana_cli.ui.reads import ListRequest, Reader
from arcana_cli.ui.targets import Target
from memory.operator.edits import Edit, open_editor
from memory.types import MAX_QUERY_LIMIT, MemoryEntry, MemoryType, RetrievalMode, Visibility


def _printable(value):
    """Every value a page prints shows its control and direction characters as escapes instead of
    obeying them: memory text, tags, note names and echoed parameters are someone else's text.
    Markup too (a joined list, an SVG's labels): an escape adds no markup of its own."""
    if isinstance(value, Markup):
        return Markup(printable(str(value)))
    return printable(value) if isinstance(value, str) else value


TEMPLATES = Environment(loader=PackageLoader("arcana_cli.ui", "templates"), autoescape=select_autoescape(default=True),
                        finalize=_printable)
TEMPLATES.globals["qs"] = lambda **kw: urlencode(kw)
TEMPLATES.filters["segment"] = lambda value: quote(str(value), safe="")  # an id in a path: imported ids are any string

# action -> (button, the core edit, what the done message says, what the confirmation explains)
ACTIONS = {
    "hide": ("Hide", "set_visibility", Visibility.HIDDEN, "hidden",
             "A hidden memory is never recalled or put in a prompt, here or in its global copy; an operator can unhide it."),
    "unhide": ("Unhide", "set_visibility", Visibility.VISIBLE, "visible again",
               "It becomes visible: recalled again, and its global copy with it."),
    "forget": ("Forget", "archive", None, "archived",
               "It is archived, as `arcana memory forget`: kept, not recalled, restorable; its global copy too."),
    "restore": ("Restore", "restore", None, "restored", "It comes back into recall, and its global copy with it."),
    "pin": ("Pin", "set_pinned", True, "pinned", "Pinned memories are never pruned and rank first."),
    "unpin": ("Unpin", "set_pinned", False, "unpinned", "It is no longer kept from pruning or ranked first."),
}
LIST_MODES = ("keyword", "semantic", "hybrid")
RECALL_MOST = 1000  # as `arcana recall --limit`


def render(reader: Reader, name: str, code: int = 200, *, trusted: bool = True, **context) -> HTMLResponse:
    """``trusted=False``: a page for a request not yet let in, which must not say where the home is,
    nor the run's path (with it, a server on another port could have the cookie sent to it)."""
    html = TEMPLATES.get_template(name).render(home=str(reader.home.root) if trusted else "",
                                               root=reader.root if trusted else "", trusted=trusted, **context)
    return HTMLResponse(html, status_code=code, headers=SECURITY_HEADERS)


SECURITY_HEADERS = {
    # Nothing but this server, no scripts at all, no framing by another page.
    "Content-Security-Policy": "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",  # so a form post carries its Origin (no-referrer sends "null")
    "Cache-Control": "no-store",
}


def offered(entry: MemoryEntry) -> list[tuple[str, str]]:
    """The actions that change something for this memory, as (action, button)."""
    names = [
        "unhide" if entry.visibility is Visibility.HIDDEN else "hide",
        "restore" if entry.archived else "forget",
        "unpin" if entry.pinned else "pin",
    ]
    return [(name, ACTIONS[name][0]) for name in names]


HOME_PAGE = 50  # agents, pools and vaults a home page shows of each


async def home(request: Request) -> Response:
    reader: Reader = request.app.state.reader
    page = params.integer(request.query_params, "page", 1, 1, 100_000)
    data = await reader.overview(page, HOME_PAGE)
    return render(reader, "home.html", title="Home", agents=data["agents"], unreadable=data["unreadable"], pools=data["pools"],
                  global_=data["global"], vaults=data["vaults"], counts=data["counts"], more=data["more"], page=page,
                  per=HOME_PAGE, first=(page - 1) * HOME_PAGE)


def list_request(query) -> ListRequest:
    mode = params.choice(query, "mode", ("", *LIST_MODES), "")
    types = []
    for value in query.getlist("type"):
        if value:
            types.append(MemoryType(params.choice({"type": value}, "type", [t.value for t in MemoryType], "")))
    ask = ListRequest(
        text=params.text(query, "q", limit=500).strip(),
        operator=params.choice(query, "view", ("recall", "operator"), "recall") == "operator",
        archived=params.flag(query, "archived"),
        mode=RetrievalMode(mode) if mode else None,
        types=types,
        tags=params.text(query, "tag", limit=300).split(),
        since=params.moment(query, "since"),
        page=params.integer(query, "page", 1, 1, 10_000),
        per=params.integer(query, "per", 50, 1, 200),
    )
    if ask.text and not ask.operator and ask.page * ask.per > RECALL_MOST:
        raise params.bad(f"recall returns at most {RECALL_MOST} memories: ask fewer pages, or narrow the search")
    # Trigger: an operator's keyword search, a page far down. Why: a search is not paged in SQL; it
    # reads every row up to page x per. Outcome: at most a query's bound, as the core allows, else a 400.
    if ask.text and ask.operator and ask.page * ask.per > MAX_QUERY_LIMIT:
        raise params.bad(f"the operator's search reads at most {MAX_QUERY_LIMIT:,} memories: ask fewer pages, "
                         "or narrow the search")
    return ask


async def memories(request: Request) -> Response:
    reader: Reader = request.app.state.reader
    target = Target.of(request.query_params)
    ask = list_request(request.query_params)
    listing = await reader.memories(target, ask)
    recalled = bool(ask.text and not ask.operator)

    def place(entry: MemoryEntry) -> Target | None:
        if recalled and target.kind == "agent":
            return Target.of_tier(entry.tiers[0] if entry.tiers else "private", target.name)
        return target

    def page_query(page: int) -> str:
        return target.query(
            q=ask.text, mode=ask.mode.value if ask.mode else "", type=[t.value for t in ask.types], tag=" ".join(ask.tags),
            since=ask.since.date().isoformat() if ask.since else "", view="operator" if ask.operator else "",
            archived="1" if ask.archived else "", per=ask.per if ask.per != 50 else "", page=page,
        )

    return render(
        reader, "memories.html", title=f"Memories of {target.label}", target=target, ask=ask, listing=listing,
        modes=LIST_MODES, default_mode=reader.config.recall.mode_for().value, types=[t.value for t in MemoryType],
        chosen_types=[t.value for t in ask.types], place=place, page_query=page_query,
    )


DONE = {name: message for name, (_, _, _, message, _) in ACTIONS.items()}


async def memory(request: Request) -> Response:
    reader: Reader = request.app.state.reader
    target = Target.of(request.query_params)
    done = params.choice(request.query_params, "done", ("", *DONE), "")
    message = ""
    if done:
        other = "the agent's own memory" if target.kind == "global" else "its global copy"
        message = f"Done: {DONE[done]}" + (f" (and {other})" if params.flag(request.query_params, "copies") else "")
    view = await reader.memory(target, _memory_id(request))
    return render(reader, "memory.html", title=f"Memory {view.entry.id[:8]}", view=view, actions=offered(view.entry), done=message)


MAX_ID_CHARS = 2000


def _memory_id(request: Request) -> str:
    """The id in the path, any string: `remember --from` keeps a line's own id ("notes/2024#3")."""
    memory_id = request.path_params["memory_id"]
    if not 1 <= len(memory_id) <= MAX_ID_CHARS:
        raise params.bad(f"a memory id (or a prefix of 6+ characters of one) of at most {MAX_ID_CHARS:,} characters; "
                         "`arcana memory show` takes a longer one")
    return memory_id


async def confirm(request: Request) -> Response:
    reader: Reader = request.app.state.reader
    query = request.query_params
    target = Target.of(query)
    action = params.choice(query, "action", tuple(ACTIONS), "")
    seq = _seq(query)
    async with open_editor(reader.home, reader.config, target.operator, actor="ui") as editor:
        entry = await editor.resolve(_memory_id(request))
    button, _, _, _, explain = ACTIONS[action]
    return render(reader, "confirm.html", title=f"{button} memory", label=f"{button} this memory", entry=entry,
                  explain=explain, target=target, action=action, seq=seq)


def _seq(values) -> int:
    seq = params.integer(values, "seq", 0, 1, 2**62)
    if not seq:
        raise params.bad("seq: the memory's newest ledger row, as the page that offered the action showed it")
    return seq


async def act(request: Request) -> Response:
    """Apply a confirmed action through the operator's editor, refused if the memory changed since (409)."""
    reader: Reader = request.app.state.reader
    form = await params.form(request)
    target = Target.of(form)
    action = params.choice(form, "action", tuple(ACTIONS), "")
    _, op, value, message, _ = ACTIONS[action]
    edit = Edit(op, value, expect_seq=_seq(form))
    async with open_editor(reader.home, reader.config, target.operator, actor="ui") as editor:
        entry = await editor.resolve(_memory_id(request))
        report = await editor.apply(entry.id, edit, verb=message)
    copies = any(c.changed for c in report.copies)
    return RedirectResponse(f"{reader.root}/memory/{quote(entry.id, safe='')}?{target.query(done=action, copies='1' if copies else '')}", status_code=303)


async def activity(request: Request) -> Response:
    reader: Reader = request.app.state.reader
    target = Target.of(request.query_params)
    found = await reader.activity(target)
    growth = plots.line_plot(found.growth.stored(), label=f"memories stored in {target.label}")
    recalls = plots.bar_plot([(d.day, d.recalls, d.hits) for d in found.recalls], label=f"recalls answered by {target.label}")
    return render(reader, "activity.html", title=f"Activity of {target.label}", target=target, growth_svg=growth,
                  recall_svg=recalls)


async def graph(request: Request) -> Response:
    from memory.vaults.graph import link_graph
    from memory.vaults.registry import VaultRegistry

    reader: Reader = request.app.state.reader
    registry = VaultRegistry(reader.home)
    names = [v.name for v in registry.list()]
    name = params.text(request.query_params, "vault", limit=100)
    if not name:
        return render(reader, "graph.html", title="Vault graph", vaults=names, graph=None)
    found = await link_graph(registry.get(name), limit=params.integer(request.query_params, "nodes", 150, 1, 400))
    svg = plots.link_graph(found.nodes, found.edges, label=f"links between the notes of vault {name}")
    return render(reader, "graph.html", title=f"Vault graph: {name}", vaults=names, graph=found, svg=svg)


AUDIT_PAGE = 100


async def audit(request: Request) -> Response:
    reader: Reader = request.app.state.reader
    page = params.integer(request.query_params, "page", 1, 1, 100_000)
    from memory.audit import AuditLog

    found = AuditLog(reader.home.audit_log).newest((page - 1) * AUDIT_PAGE, AUDIT_PAGE + 1)
    events = [
        {
            "at": _when(e.get("at")),
            "event": str(e.get("event", "?")),
            "details": " ".join(f"{k}={v}" for k, v in e.items() if k not in ("at", "event")),
        }
        for e in found[:AUDIT_PAGE]
    ]
    return render(reader, "audit.html", title="Audit log", events=events, page=page, more=len(found) > AUDIT_PAGE)


def _when(at) -> str:
    try:
        return datetime.fromtimestamp(float(at), UTC).isoformat(timespec="seconds")
    except (TypeError, ValueError, OverflowError):
        return "?"


STATIC = {"style.css": "text/css; charset=utf-8", "icon.svg": "image/svg+xml"}


async def static(request: Request) -> Response:
    name = request.path_params["name"]
    if name not in STATIC:
        raise params.bad(f"no asset '{name[:60]}'", 404)
    body = resources.files("arcana_cli.ui").joinpath("static", name).read_bytes()
    return Response(body, media_type=STATIC[name], headers={"Cache-Control": "max-age=3600", "X-Content-Type-Options": "nosniff"})
