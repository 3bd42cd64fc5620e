"""`arcana mcp` through the SDK's own client over a real stdio subprocess.

Most servers here run keyword-only (no embedder configured) so each test
starts in about a second. The host configuration the README documents is
started as a host would by tests/process/test_walkthroughs.py.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time

import pytest
from mcp import ClientSession
from mcp_client import call, seed, session
from runner import arcana, keyword_only

from memory.adapters.sqlite import SQLiteAdapter
from memory.agents import AgentRegistry
from memory.types import Audience, Visibility

ALL_TOOLS = {"remember", "recall", "forget", "list", "context", "get", "update", "history"}


@pytest.fixture
async def zoo(arcana_home):
    """alice: visible, hidden, private and archived memories that all say 'zebra'; bob: a private one too."""
    keyword_only(arcana_home)
    _, alice = await seed(
        arcana_home,
        "alice",
        [
            {"content": "visible zebra stripes are black and white", "tags": ["zoo"]},
            {"content": "hidden zebra secret: the vault code is 4711", "visibility": Visibility.HIDDEN},
            {"content": "private zebra diary entry", "visibility": Visibility.PRIVATE},
            {"content": "archived zebra fact from last year", "archived": True},
        ],
    )
    _, bob = await seed(arcana_home, "bob", [{"content": "bob zebra password hunter2"}])
    return alice, bob


async def test_tools_listed_with_schemas_and_each_happy_path(zoo, arcana_home):
    alice, _ = zoo
    async with session("--agent", "alice") as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == ALL_TOOLS  # no vault attached: no vault_search
        assert all(t.description and "\n" not in t.description for t in tools.values())
        assert tools["remember"].input_schema["required"] == ["content"]
        assert tools["recall"].input_schema["required"] == ["query"]

        error, stored = await call(client, "remember", content="giraffes sleep standing up", type="semantic",
                                   importance=0.7, tags=["zoo"])
        assert not error and stored["accepted"] == ["private"]

        error, found = await call(client, "recall", query="giraffes", limit=5, mode="keyword", types=["semantic"], since="1d")
        assert not error
        hit = found["results"][0]
        assert hit["id"] == stored["id"] and hit["content"] == "giraffes sleep standing up"
        assert {"type", "score", "tier", "age"} <= set(hit) and hit["tier"] == "private"

        error, listed = await call(client, "list", limit=10, tags=["zoo"])
        assert not error
        assert {m["id"] for m in listed["memories"]} == {stored["id"], alice["visible"]}

        error, block = await call(client, "context", query="zebra stripes", budget_tokens=300)
        assert not error and block["ids"] == [alice["visible"]]
        assert "[private · episodic · user_confirmed 1.00] visible zebra stripes" in block["context"]
        assert block["tokens"] <= 300

        error, gone = await call(client, "forget", id=stored["id"])
        assert not error and gone == {"id": stored["id"], "archived": True, "changed": True, "copies": [], "restorable": True}
        error, found = await call(client, "recall", query="giraffes")
        assert not error and found["results"] == []
    # archived, not deleted: the operator can still see and restore it
    store = SQLiteAdapter.for_agent(AgentRegistry(arcana_home).resolve("alice").id, home=arcana_home)
    kept = await store.get(stored["id"], audience=Audience.OPERATOR, include_archived=True)
    await store.aclose()
    assert kept is not None and kept.archived


async def test_hidden_private_archived_and_other_agents_memories_never_leave(zoo):
    alice, bob = zoo
    secret = re.compile(r"4711|diary|hunter2|last year")
    async with session("--agent", "alice") as client:
        for tool, args in [
            ("recall", {"query": "zebra"}),
            ("recall", {"query": "zebra", "mode": "hybrid", "limit": 100}),
            ("list", {"limit": 100}),
            ("context", {"query": "zebra", "budget_tokens": 5000}),
        ]:
            error, answer = await call(client, tool, **args)
            assert not error, answer
            text = json.dumps(answer)
            assert alice["visible"] in text  # positive control: the visible one comes back
            assert not secret.search(text), (tool, text)
            for name in ("hidden", "private", "archived"):
                assert alice[name] not in text
            assert bob["bob"] not in text
        # by id is no way in either: hidden, private, archived and bob's look unknown
        for memory_id in (alice["hidden"], alice["private"], bob["bob"]):
            error, message = await call(client, "forget", id=memory_id)
            assert error and "no memory with id" in message and "\n" not in message
        error, message = await call(client, "forget", id=alice["visible"])
        assert error and "is the user's own" in message  # positive control: found, and the user's to forget


HOSTILE = [
    'zebra" OR 1=1; DROP TABLE memories; --',
    "NEAR(zebra secret) * ^ AND OR NOT",
    "zebra' UNION SELECT content FROM memories WHERE visibility='hidden' --",
    "\x00\u202e🦓" + "z" * 5000,
]


async def test_hostile_queries_are_answered_safely(zoo, arcana_home):
    alice, _ = zoo
    async with session("--agent", "alice") as client:
        for hostile in HOSTILE:
            for tool in ("recall", "context", "list"):
                args = {"recall": {"query": hostile}, "context": {"query": hostile, "budget_tokens": 2000},
                        "list": {"tags": [hostile]}}[tool]
                error, answer = await call(client, tool, **args)
                text = answer if error else json.dumps(answer)
                assert "4711" not in text and "hunter2" not in text, (hostile, tool)
                if error:
                    assert "\n" not in text
            error, answer = await call(client, "recall", query="zebra stripes")
            assert not error and answer["results"][0]["id"] == alice["visible"]
    store = SQLiteAdapter.for_agent(AgentRegistry(arcana_home).resolve("alice").id, home=arcana_home)
    assert await store.count() == 4  # nothing dropped
    await store.aclose()


async def test_tool_errors_are_one_line_and_the_server_keeps_serving(zoo):
    alice, _ = zoo
    async with session("--agent", "alice") as client:
        bad_calls = [
            ("recall", {"query": "zebra", "limit": "many"}, "invalid limit"),
            ("recall", {"query": "zebra", "limit": 0}, "invalid limit"),
            ("recall", {}, "invalid query"),
            ("recall", {"query": "zebra", "since": "last tuesday"}, "since"),
            ("recall", {"query": "zebra", "types": ["gossip"]}, "invalid types"),
            ("remember", {"content": "   "}, "invalid content"),
            ("remember", {"content": "x", "importance": 7}, "invalid importance"),
            ("remember", {"content": "x", "scope": "private", "pool": "team"}, "cannot be combined"),
            ("remember", {"content": "x", "scope": "shared"}, "pool"),
            ("forget", {"id": "no-such-id"}, "no memory with id 'no-such-id'"),
            ("context", {"query": "zebra", "budget_tokens": 1}, "invalid budget_tokens"),
            ("vault_search", {"vault": "x", "query": "y"}, "vault_search"),
        ]
        for tool, args, expected in bad_calls:
            result = await client.call_tool(tool, args)
            message = result.content[0].text
            assert result.is_error, (tool, args, message)
            assert expected in message and "\n" not in message, message
            # still serving, and still right
            error, answer = await call(client, "recall", query="zebra stripes")
            assert not error and answer["results"][0]["id"] == alice["visible"]


async def test_a_type_filter_repeated_many_times_is_one_filter_and_never_opens_the_breaker(zoo):
    """300,000 repeats of one type became as many SQL variables: SQLite refused them, the answer blamed
    a degraded store, and three such calls opened the breaker, so the next plain recall failed too. Now
    each type counts once: the filter answers (and still filters: 'semantic' leaves the episodic one out)."""
    alice, _ = zoo
    async with session("--agent", "alice") as client:
        for _ in range(4):  # past the breaker's threshold of failures
            error, listed = await call(client, "list", types=["episodic"] * 300_000, limit=100)
            assert not error, listed
            assert alice["visible"] in {m["id"] for m in listed["memories"]}
        error, found = await call(client, "recall", query="zebra", types=["semantic"] * 300_000)
        assert not error and found["results"] == []  # the control: the filter still applies
        error, found = await call(client, "recall", query="zebra stripes")
        assert not error and [r["id"] for r in found["results"]] == [alice["visible"]]


async def test_an_argument_the_tool_does_not_take_is_a_tool_error_and_nothing_is_written(zoo, arcana_home):
    """The SDK dropped unknown argument names: `remember` with `pinned` and `confidence_source:
    user_confirmed` answered as stored, and the agent believed its memory pinned and confirmed.
    Each such call is refused now, naming the argument; the same call without it (the control) stores."""
    async with session("--agent", "alice") as client:
        for tool, args in [
            ("remember", {"content": "pelican claims to be pinned", "pinned": True, "confidence_source": "user_confirmed"}),
            ("remember", {"content": "pelican written for another agent", "agent_id": "bob"}),
            ("update", {"id": zoo[0]["visible"], "tags": ["zoo"], "visibility": "hidden"}),
            ("recall", {"query": "zebra", "limt": 5}),
        ]:
            failed, message = await call(client, tool, **args)
            assert failed and "unknown argument" in message and "\n" not in message, (tool, message)
            assert f"{tool} takes " in message
        failed, stored = await call(client, "remember", content="pelican stored without extras")
        assert not failed and stored["accepted"] == ["private"]
        failed, found = await call(client, "recall", query="pelican", mode="keyword", limit=10)
    assert not failed and [r["content"] for r in found["results"]] == ["pelican stored without extras"]
    shown = json.loads(arcana("memory", "show", zoo[0]["visible"], "--agent", "alice", "--json"))
    assert shown["visibility"] == "visible"  # the refused update changed nothing


def _raw_requests(lines: list[str]) -> list[dict]:
    """`arcana mcp --agent alice` fed ``lines`` as raw stdio after the handshake; its answers, in order.
    Each request is answered before the next is sent (an unanswered one fails on the read's guard)."""
    import select
    import subprocess

    from runner import ARCANA

    proc = subprocess.Popen([*ARCANA, "mcp", "--agent", "alice"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)

    def ask(line: str) -> dict:
        proc.stdin.write(line.encode() + b"\n")
        proc.stdin.flush()
        ready, _, _ = select.select([proc.stdout], [], [], 120)  # a guard against a hang, not a measurement
        assert ready, f"no answer to {line[:80]}"
        return json.loads(proc.stdout.readline())

    try:
        ask(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}))
        proc.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        return [ask(line) for line in lines]
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)


def test_a_request_the_sdk_cannot_parse_is_answered_and_nothing_is_written(zoo, arcana_home):
    """JSON allows a lone surrogate escape (what JavaScript's JSON.stringify writes for a string cut
    inside an emoji) and any depth; the SDK's parser takes neither and dropped the line, so the host
    waited for good; so did a whole number of over 4,300 digits, which Python's parser refuses too.
    Each is answered now (a tool call with a one-line tool error), nothing is written,
    and the next call is served; an emoji written whole (the control) is stored."""
    call = lambda i, name, arguments: (
        f'{{"jsonrpc": "2.0", "id": {i}, "method": "tools/call", "params": {{"name": "{name}", "arguments": {arguments}}}}}'
    )
    answers = _raw_requests([
        call(1, "remember", '{"content": "half an emoji \\ud83e zebra"}'),
        call(2, "remember", '{"content": "nested zebra", "tags": ' + "[" * 300 + "]" * 300 + "}"),
        call(3, "recall", '{"query": "zebra", "tags": ' + "[" * 5000 + "]" * 5000 + "}"),
        '{"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": {"cursor": "\\udc00"}}',
        call(5, "remember", '{"content": "a whole emoji \\ud83e\\udd93 zebra"}'),
        call(6, "recall", '{"query": "emoji", "mode": "keyword"}'),
        call(7, "remember", '{"content": "huge number zebra", "importance": ' + "9" * 5000 + "}"),  # was never answered
    ])
    assert [a["id"] for a in answers] == [1, 2, 3, 4, 5, 6, 7]
    assert answers[6]["result"]["isError"] and "could not be read: a number too large" in answers[6]["result"]["content"][0]["text"]
    for answer, why in zip(answers[:3], ["surrogate", "nested deeper", "nested deeper"]):
        assert answer["result"]["isError"], answer
        text = answer["result"]["content"][0]["text"]
        assert "could not be read" in text and why in text and "\n" not in text, text
    assert answers[3]["error"]["code"] == -32602 and "surrogate" in answers[3]["error"]["message"]
    assert not answers[4]["result"]["isError"]
    found = json.loads(answers[5]["result"]["content"][0]["text"])["results"]
    assert [r["content"] for r in found] == ["a whole emoji \U0001f993 zebra"]
    stored = json.loads(arcana("memory", "list", "--agent", "alice", "--json", "--limit", "100"))
    assert not any("half an emoji" in m["content"] or "nested" in m["content"] or "huge" in m["content"] for m in stored)


async def test_read_only_serves_reads_only(zoo, arcana_home):
    alice, _ = zoo
    async with session("--agent", "alice", "--read-only") as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert names == {"recall", "list", "context", "get", "history"}
        for tool, args in (("remember", {"content": "sneaky write"}), ("forget", {"id": alice["visible"]})):
            result = await client.call_tool(tool, args)
            assert result.is_error and "\n" not in result.content[0].text
        error, answer = await call(client, "recall", query="zebra")
        assert not error and [r["id"] for r in answer["results"]] == [alice["visible"]]
    store = SQLiteAdapter.for_agent(AgentRegistry(arcana_home).resolve("alice").id, home=arcana_home)
    assert await store.count() == 4 and not (await store.get(alice["visible"])).archived
    await store.aclose()


def _tree(root) -> dict[str, bytes | None]:
    return {str(p.relative_to(root)): p.read_bytes() if p.is_file() else None for p in sorted(root.rglob("*"))}


async def test_read_only_for_an_agent_without_a_store_makes_nothing(arcana_home, tmp_path):
    """A read leaves the home as it was: `--read-only` made the agent's memory.db (and its lock
    files) before answering that it held nothing. Every read tool answers empty; a write is still
    refused; once another process stores the agent's first memory, the same server reads it. The
    control: bob, with a store, is read through the same tools first."""
    keyword_only(arcana_home)
    AgentRegistry(arcana_home).create("alice")
    await seed(arcana_home, "bob", [{"content": "bob keeps one zebra"}])
    for who, found in (("bob", ["bob keeps one zebra"]), ("alice", [])):
        before = _tree(arcana_home.root)
        async with session("--agent", who, "--read-only") as client:
            error, answer = await call(client, "recall", query="zebra")
            assert not error and [r["content"] for r in answer["results"]] == found, answer
            error, answer = await call(client, "list")
            assert not error and [r["content"] for r in answer["memories"]] == found, answer
            error, answer = await call(client, "context", query="zebra")
            assert not error and ("zebra" in answer["context"]) == bool(found), answer
            for tool in ("get", "history"):
                error, message = await call(client, tool, id="0123456789abcdef")
                assert error and "no memory with id" in message, message
            result = await client.call_tool("remember", {"content": "sneaky write"})
            assert result.is_error
            if who == "alice":
                after = _tree(arcana_home.root)
                assert after == before, {k for k in after.keys() | before.keys() if after.get(k, 0) != before.get(k, 0)}
                arcana("remember", "alice saw a zebra later", "--agent", "alice")  # another process makes her store
                error, answer = await call(client, "recall", query="zebra")
                assert not error and [r["content"] for r in answer["results"]] == ["alice saw a zebra later"], answer


async def test_a_corrupt_private_store_is_reported_and_the_server_still_works(arcana_home, tmp_path):
    keyword_only(arcana_home)
    agent_id, _ = await seed(arcana_home, "alice", [{"content": "soon to be damaged"}])
    db = arcana_home.agent_db(agent_id)
    with db.open("r+b") as handle:
        handle.write(b"\xde\xad" * 2048)
    errlog = (tmp_path / "stderr.txt").open("w+")
    async with session("--agent", "alice", stderr=errlog) as client:
        error, stored = await call(client, "remember", content="written after the quarantine")
        assert not error and "was corrupt and was moved to" in stored["warnings"][0]
        error, found = await call(client, "recall", query="quarantine")
        assert not error and [r["id"] for r in found["results"]] == [stored["id"]]
        assert found["warnings"]
    errlog.seek(0)
    logged = errlog.read()
    assert "was corrupt" in logged
    assert list(arcana_home.quarantine_dir.rglob("*memory*"))  # the damaged file was kept, not deleted


async def test_context_on_a_private_tier_that_cannot_be_read_is_a_tool_error(arcana_home):
    """man/mcp.md: a degraded private tier comes back as a tool error, from `context` as from `recall`,
    never as an empty block that reads as "this agent remembers nothing"."""
    from memory.sqlite.connection import dbapi

    keyword_only(arcana_home)
    agent_id, alice = await seed(arcana_home, "alice", [{"content": "otters hold hands while sleeping"}])
    async with session("--agent", "alice") as client:  # control: the same store, readable
        error, block = await call(client, "context", query="otters")
        assert not error and block["ids"] == [alice["otters"]]
    raw = dbapi().connect(str(arcana_home.agent_db(agent_id)))
    raw.execute("DROP TABLE memories_fts")  # every text search of the private tier now fails
    raw.commit()
    raw.close()
    async with session("--agent", "alice") as client:
        for tool in ("recall", "context"):
            error, message = await call(client, tool, query="otters")
            assert error and "the private memory store is degraded" in message and "\n" not in message, (tool, message)
        error, listed = await call(client, "list")  # still serving: a listing needs no text search
        assert not error and [m["id"] for m in listed["memories"]] == [alice["otters"]]


async def test_too_many_tags_are_a_bad_argument_not_a_failing_store(arcana_home):
    """A recall requiring more tags than one statement can hold is refused as bad input, on one line;
    it used to reach SQLite, come back as "the private memory store is degraded", and three such calls
    opened the tier's circuit breaker, failing every recall of the agent for the next 30 s."""
    from runner import run_arcana

    keyword_only(arcana_home)
    _, alice = await seed(arcana_home, "alice", [{"content": "otters hold hands while sleeping", "tags": ["zoo"]}])
    many = [f"tag{i}" for i in range(1200)]
    async with session("--agent", "alice") as client:
        for tool, args in (("recall", {"query": "otters"}), ("recall", {"query": "otters"}), ("list", {}), ("recall", {"query": "otters"})):
            error, message = await call(client, tool, tags=many, **args)
            assert error and "invalid tags: List should have at most 100 items" in message and "\n" not in message, message
        error, found = await call(client, "recall", query="otters", tags=["zoo"] * 100)  # control: the tier still answers
        assert not error and [r["id"] for r in found["results"]] == [alice["otters"]] and not found["degraded"]
    done = run_arcana("recall", "otters", "--agent", "alice", *[arg for tag in many for arg in ("--tag", tag)])
    assert done.returncode == 2 and "at most 100 items" in done.stderr and "degraded" not in done.stderr, done.stderr
    audit = arcana_home.audit_log.read_text() if arcana_home.audit_log.exists() else ""
    assert "memory_degraded" not in audit


async def test_vault_search_over_an_attached_vault(arcana_home, make_vault, cli):
    keyword_only(arcana_home)
    AgentRegistry(arcana_home).create("alice")
    vault = make_vault({"Garden.md": "Tomatoes need full sun and deep watering.", "Other.md": "unrelated"})
    assert cli("vault", "add", str(vault), "--name", "notes", "--agent", "alice").exit_code == 0
    async with session("--agent", "alice") as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert "vault_search" in names
        error, found = await call(client, "vault_search", vault="notes", query="tomatoes sun", limit=5)
        assert not error and found["results"][0]["path"] == "Garden.md"
        error, message = await call(client, "vault_search", vault="elsewhere", query="tomatoes")
        assert error and "attached: notes" in message
        # A name that retitles the host's terminal and runs to 100 kB came back whole and raw.
        error, message = await call(client, "vault_search", vault="\x1b]0;pwned\x07" + "v" * 100_000, query="tomatoes")
        assert error and "attached: notes" in message and len(message) < 300, message[:300]
        assert "\x1b" not in message and "\x07" not in message and "(100,010 characters)" in message


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def test_http_transport_needs_the_bearer_token(zoo, arcana_home, tmp_path):
    import subprocess

    import anyio
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    alice, _ = zoo
    port = free_port()
    errlog = (tmp_path / "http-stderr.txt").open("w+")
    proc = subprocess.Popen([sys.executable, "-m", "arcana_cli.main", "mcp", "--agent", "alice", "--http",
                             f"127.0.0.1:{port}"], stdout=subprocess.PIPE, stderr=errlog, env=dict(os.environ))
    try:
        token_file = arcana_home.root / "mcp" / "token"
        url = f"http://127.0.0.1:{port}/mcp"
        async with httpx2.AsyncClient() as raw:
            for _ in range(300):
                try:
                    refused = await raw.post(url, json={})
                    break
                except httpx2.TransportError:
                    await anyio.sleep(0.1)
            assert refused.status_code == 401  # no token
            wrong = await raw.post(url, json={}, headers={"Authorization": "Bearer guess"})
            assert wrong.status_code == 401
        token = token_file.read_text().strip()
        assert oct(token_file.stat().st_mode & 0o777) == "0o600" and len(token) >= 40
        errlog.seek(0)
        assert errlog.read().count(token) == 1  # printed once, on stderr
        headers = {"Authorization": f"Bearer {token}"}
        async with httpx2.AsyncClient() as raw:  # the shared loopback guard: Host, then Origin, then the token
            rebound = await raw.post(url, json={}, headers={**headers, "Host": f"rebind.example:{port}"})
            assert rebound.status_code == 421
            foreign = await raw.post(url, json={}, headers={**headers, "Origin": "http://rebind.example"})
            assert foreign.status_code == 403
        async with httpx2.AsyncClient(headers=headers) as authed, \
                streamable_http_client(url, http_client=authed) as (read, write, *_), \
                ClientSession(read, write) as client:
            await client.initialize()
            assert {t.name for t in (await client.list_tools()).tools} == ALL_TOOLS
            error, answer = await call(client, "recall", query="zebra")
            assert not error and [r["id"] for r in answer["results"]] == [alice["visible"]]
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert proc.stdout.read() == b""  # stdout stays clean on the HTTP transport too


def _loopback_port(host: str) -> int | None:
    """A free port on ``host``; None where the machine has no such loopback (no IPv6)."""
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        with socket.socket(family) as sock:
            sock.bind((host, 0))
            return sock.getsockname()[1]
    except OSError:
        return None


@pytest.mark.parametrize("host", ["::1", "127.0.0.1"])
def test_the_announced_http_url_is_one_a_client_can_use(arcana_home, tmp_path, host):
    """On ::1 the server said it served `http://::1:PORT/mcp`, no URL at all (a host pasting it could not
    connect); it says `http://[::1]:PORT/mcp` now, and that URL reaches it. 127.0.0.1 is the control."""
    import subprocess

    import httpx2

    keyword_only(arcana_home)
    AgentRegistry(arcana_home).create("alice")
    port = _loopback_port(host)
    if port is None:
        pytest.skip(f"no {host} loopback on this machine")
    bracketed = f"[{host}]" if ":" in host else host
    errlog = tmp_path / "stderr.txt"
    with errlog.open("w") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "arcana_cli.main", "mcp", "--agent", "alice", "--http",
                                 f"{bracketed}:{port}"], stdout=subprocess.DEVNULL, stderr=sink, env=dict(os.environ))
    try:
        for _ in range(600):  # a guard against a server that never starts, not a measurement
            said = re.search(r"serving agent 'alice' on (\S+)", errlog.read_text())
            if said or proc.poll() is not None:
                break
            time.sleep(0.1)
        assert said, errlog.read_text()
        assert said.group(1) == f"http://{bracketed}:{port}/mcp"
        for _ in range(300):
            try:
                answer = httpx2.post(said.group(1), json={})
                break
            except httpx2.TransportError:
                time.sleep(0.1)
        assert answer.status_code == 401  # reached: it asks for the token
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.mark.parametrize(("held", "code"), [("", 4), ("short", 4), (None, 0)])
def test_http_refuses_a_token_file_that_holds_no_token(arcana_home, held, code):
    """An empty token file (a full disk) served every request a bare 401; it is refused at start, while a
    missing one is made (the control: the server starts, and is stopped here)."""
    import subprocess

    keyword_only(arcana_home)
    AgentRegistry(arcana_home).create("alice")
    token_file = arcana_home.root / "mcp" / "token"
    if held is not None:
        token_file.parent.mkdir(mode=0o700, exist_ok=True)
        token_file.write_text(held)
    proc = subprocess.Popen([sys.executable, "-m", "arcana_cli.main", "mcp", "--agent", "alice", "--http",
                             f"127.0.0.1:{free_port()}"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, env=dict(os.environ))
    try:
        if code:
            assert proc.wait(timeout=60) == code
            (line,) = proc.stderr.read().strip().splitlines()
            assert "holds no usable token" in line and "delete it" in line, line
            assert token_file.read_text() == held  # left as it was
        else:
            for _ in range(600):
                if token_file.exists() and len(token_file.read_text().strip()) >= 40:
                    break
                assert proc.poll() is None, proc.stderr.read()
                time.sleep(0.1)
            assert proc.poll() is None  # serving
    finally:
        proc.kill()
        proc.wait(timeout=30)


def test_http_refuses_a_non_loopback_address(arcana_home):
    import subprocess

    done = subprocess.run([sys.executable, "-m", "arcana_cli.main", "mcp", "--agent", "a", "--http", "0.0.0.0:8765"],
                          capture_output=True, text=True, timeout=60, env=dict(os.environ))
    assert done.returncode == 2 and "loopback only" in done.stderr
    assert not (arcana_home.root / "mcp" / "token").exists()


def test_http_on_a_taken_port_is_one_usage_error(arcana_home):
    """uvicorn's own log line and its exit 3 (arcana's 'not found'), after announcing it was serving."""
    import socket
    import subprocess

    keyword_only(arcana_home)
    AgentRegistry(arcana_home).create("alice")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "arcana_cli.main", "mcp", "--agent", "alice", "--http",
                               f"127.0.0.1:{port}"], capture_output=True, text=True, timeout=60, env=dict(os.environ))
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("arcana: error: --http: cannot listen on"), done.stderr
    assert "Address already in use" in lines[0] and done.stdout == ""


async def test_an_agents_remember_never_promotes_to_global(arcana_home):
    """A tool call is the agent's own claim: importance 1.0 stays private; the user's 0.95 (the control) promotes."""
    for name in ("ada", "bob"):
        arcana("agent", "create", name)
    arcana("remember", "fact MCPHERON the user said it", "--agent", "ada", "--importance", "0.95")
    async with session("--agent", "ada") as client:
        failed, answer = await call(client, "remember", content="fact MCPHERON the agent claims it", importance=1.0)
        refused, why = await call(client, "remember", content="fact MCPHERON the agent posts it", scope="global")
    assert not failed and answer["accepted"] == ["private"]
    assert refused and "scope" in str(why)  # not written straight into the global tier either
    seen = {r["content"] for r in json.loads(arcana("recall", "MCPHERON", "--agent", "bob", "--json"))["results"]}
    assert seen == {"fact MCPHERON the user said it"}
    mine = {r["content"] for r in json.loads(arcana("recall", "MCPHERON", "--agent", "ada", "--json"))["results"]}
    assert "fact MCPHERON the agent claims it" in mine


async def test_an_agents_importance_raise_never_lowers_a_memory(arcana_home):
    """The cap stops an agent lifting a memory past 0.89; asking a user's 0.95 fact for 1.0 lowered it to
    0.89 and withdrew its global copy, so every other agent lost it. The user's fact is the user's to
    change now (a tool error); the agent's claim an operator raised to 0.95 stays there when asked for
    1.0, and its claim at 0.5 (the control) is still capped."""
    for name in ("ada", "bob"):
        arcana("agent", "create", name)
    users = json.loads(arcana("remember", "fact UPHERON the user is allergic to peanuts", "--agent", "ada",
                              "--importance", "0.95", "--json"))["id"]
    seen = lambda: {r["content"] for r in json.loads(arcana("recall", "UPHERON", "--agent", "bob", "--json"))["results"]}
    assert seen() == {"fact UPHERON the user is allergic to peanuts"}
    async with session("--agent", "ada") as client:
        failed, claim = await call(client, "remember", content="fact UPHERON the agent guessed it", importance=0.5)
        assert not failed
        failed, raised = await call(client, "remember", content="fact UPHERON the kitchen kettle is kept on the left shelf", importance=0.5)
        assert not failed
        arcana("memory", "set", raised["id"], "--agent", "ada", "--importance", "0.95")  # the operator's word
        failed, message = await call(client, "update", id=users, importance=1.0)
        assert failed and "is the user's own" in message, message
        failed, kept = await call(client, "update", id=raised["id"], importance=1.0)
        assert not failed and kept["importance"] == 0.95 and not kept["changed"], kept
        failed, capped = await call(client, "update", id=claim["id"], importance=1.0)
        assert not failed and capped["importance"] == 0.89 and capped["changed"], capped
    assert seen() == {"fact UPHERON the user is allergic to peanuts"}  # still shared with every agent
    assert json.loads(arcana("memory", "show", users, "--agent", "ada", "--json"))["importance"] == 0.95


async def test_an_agent_never_lowers_a_users_fact_and_so_never_withdraws_it(arcana_home):
    """Lowering the importance of a user's promoted fact withdrew its global copy: one agent could take
    what the user shared away from every other. It is a tool error now; the agent's own claim (the
    control) is still lowered."""
    for name in ("ada", "bob"):
        arcana("agent", "create", name)
    users = json.loads(arcana("remember", "fact ZORBLAT the user is allergic to peanuts", "--agent", "ada",
                              "--importance", "0.95", "--json"))["id"]
    seen = lambda: {r["content"] for r in json.loads(arcana("recall", "ZORBLAT", "--agent", "bob", "--json"))["results"]}
    async with session("--agent", "ada") as client:
        failed, claim = await call(client, "remember", content="fact ZORBLAT the agent guessed it", importance=0.6)
        assert not failed
        failed, message = await call(client, "update", id=users, importance=0.1)
        assert failed and "is the user's own" in message and "\n" not in message, message
        failed, lowered = await call(client, "update", id=claim["id"], importance=0.2)
        assert not failed and lowered["importance"] == 0.2 and lowered["changed"], lowered
    assert seen() == {"fact ZORBLAT the user is allergic to peanuts"}  # still shared with every agent
    shown = json.loads(arcana("memory", "show", users, "--agent", "ada", "--json"))
    assert shown["importance"] == 0.95


async def test_an_agent_never_lowers_the_users_imported_notes_either(arcana_home, tmp_path):
    """The guard above named user_confirmed only, but the user's imported notes promote too: ada's
    `update importance=0.1` of an imported fact at 0.95 withdrew its global copy and bob stopped
    recalling it. Refused now; the agent's own claim (the control) is still lowered."""
    for name in ("ada", "bob"):
        arcana("agent", "create", name)
    notes = tmp_path / "notes.jsonl"
    notes.write_text(json.dumps({"content": "fact KESTREL the user's notes say the boiler is gas", "importance": 0.95}) + "\n")
    arcana("remember", "--from", str(notes), "--agent", "ada")
    seen = lambda: {r["content"] for r in json.loads(arcana("recall", "KESTREL", "--agent", "bob", "--json"))["results"]}
    assert seen() == {"fact KESTREL the user's notes say the boiler is gas"}
    imported = json.loads(arcana("recall", "KESTREL", "--agent", "ada", "--json"))["results"][0]["id"]
    async with session("--agent", "ada") as client:
        failed, claim = await call(client, "remember", content="fact KESTREL the agent guessed it", importance=0.6)
        assert not failed
        failed, message = await call(client, "update", id=imported, importance=0.1)
        assert failed and "the user's own (imported)" in message, message
        failed, lowered = await call(client, "update", id=claim["id"], importance=0.2)
        assert not failed and lowered["importance"] == 0.2 and lowered["changed"], lowered
    assert seen() == {"fact KESTREL the user's notes say the boiler is gas"}  # still shared with every agent
    assert json.loads(arcana("memory", "show", imported, "--agent", "ada", "--json"))["importance"] == 0.95


async def test_remember_and_update_keep_to_the_configured_content_limit(arcana_home):
    """`memory.max_content_bytes` bounds what an MCP client stores, as it bounds `arcana remember`:
    a text over it is a one-line tool error and nothing is written; a text within it is stored."""
    keyword_only(arcana_home)
    arcana_home.config_path.write_text(json.dumps({"embedding": {"providers": []}, "memory": {"max_content_bytes": 4096}}))
    _, alice = await seed(arcana_home, "alice", [{"content": "quokka notes fit the limit", "confidence_source": "agent"}])
    async with session("--agent", "alice") as client:
        for tool, args in (("remember", {"content": "quokka " * 1000}),
                           ("update", {"id": alice["quokka"], "content": "quokka " * 1000})):
            error, message = await call(client, tool, **args)
            assert error and "over the limit of 4,096 bytes (memory.max_content_bytes)" in message, (tool, message)
            assert "\n" not in message
        error, stored = await call(client, "remember", content="quokka " * 500)  # 3,500 bytes: within it
        assert not error and stored["accepted"] == ["private"]
        error, updated = await call(client, "update", id=alice["quokka"], content="quokka notes " * 300)
        assert not error and updated["superseded"]
    every_row = json.loads(arcana("memory", "list", "--agent", "alice", "--all", "--json"))  # superseded too
    assert sorted(len(m["content"].encode()) for m in every_row) == [26, 3499, 3899]  # nothing over the limit


async def test_a_text_within_the_limit_as_sent_is_not_refused_because_redaction_lengthened_it(arcana_home):
    """"password=abc123xyz" is stored as "password=[secret removed]": 150 of them are 3,900 bytes as sent,
    4,950 redacted. Within `memory.max_content_bytes` (4,096) as the agent sent them, remember and update
    store the redacted text (tags likewise: 3,400 bytes sent, 4,800 stored); a text over the limit as sent
    (the control) is still refused."""
    keyword_only(arcana_home)
    arcana_home.config_path.write_text(json.dumps({"embedding": {"providers": []}, "memory": {"max_content_bytes": 4096}}))
    _, alice = await seed(arcana_home, "alice", [{"content": "quokka notes to update", "confidence_source": "agent"}])
    secrets = "quokka password=abc123xyz " * 150
    async with session("--agent", "alice") as client:
        error, message = await call(client, "remember", content=secrets + "quokka " * 30)  # 4,110 bytes as sent
        assert error and "over the limit of 4,096 bytes" in message, message
        error, stored = await call(client, "remember", content=secrets, tags=["password=abc123xyz token=abc123xyz"] * 100)
        assert not error and stored["accepted"] == ["private"], stored
        error, updated = await call(client, "update", id=alice["quokka"], content="updated " + secrets)
        assert not error and updated["superseded"], updated
    current = json.loads(arcana("memory", "list", "--agent", "alice", "--json"))
    assert sorted(len(m["content"].encode()) for m in current) == [4949, 4957]  # redacted: over 4,096 as stored
    assert all("abc123xyz" not in m["content"] + "".join(m["tags"]) for m in current)


async def test_a_tool_error_echoing_a_huge_id_stays_a_readable_line(arcana_home):
    """MCP get of a 100,000-character id answered a 100,000-character tool error; it is cut in its
    middle like the CLI's, and a short id's error (the control) is whole."""
    arcana("agent", "create", "ada")
    async with session("--agent", "ada") as client:
        short_failed, short = await call(client, "get", id="zzzzzzzz")
        huge_failed, huge = await call(client, "get", id="z" * 100_000)
    assert short_failed and huge_failed
    assert "characters…]" not in str(short) and "characters…]" in str(huge) and len(str(huge)) < 2_200


async def test_a_blank_query_is_refused_as_the_cli_refuses_it(arcana_home, tmp_path):
    """recall with query "   " answered every memory, scored, where `arcana recall "   "` exits 2
    ("the query is empty"); vault_search likewise. Each refusal has its control in the session."""
    keyword_only(arcana_home)
    arcana("agent", "create", "alice")
    arcana("remember", "weasels sing at dawn", "--agent", "alice")
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "Weasel.md").write_text("Weasels sing at dawn.\n")
    arcana("vault", "add", str(notes), "--name", "notes", "--agent", "alice")
    arcana("vault", "index", "notes")
    async with session("--agent", "alice") as client:
        for tool, args in (("recall", {"mode": "keyword"}), ("vault_search", {"vault": "notes"})):
            error, message = await call(client, tool, query=" \t ", **args)
            assert error and "the query is empty" in message, (tool, message)
            error, found = await call(client, tool, query="weasels", **args)  # the control
            assert not error and any("sing at dawn" in r["content"] for r in found["results"]), (tool, found)
