"""Claude Code: the project files that wire Arcana in, and reading its JSONL transcripts.

Two files: ``.mcp.json`` (``{"mcpServers": {NAME: {"type", "command", "args",
"env"}}}``) and ``.claude/settings.json`` (``{"hooks": {EVENT: [{"matcher",
"hooks": [{"type": "command", "command"}]}]}}``). Merging keeps every key,
server and hook of the user's; Arcana's own hooks are found by what they run
(``arcana … context`` and ``arcana … host save``, however the home is given:
``--home PATH``, ``--home=PATH`` or ``ARCANA_HOME=PATH arcana …``), so a second
set-up replaces them in place instead of adding twins.

A transcript is one JSON object a line: ``user`` lines hold what the person
typed (a string, or text blocks) or tool results, ``assistant`` lines hold
text, thinking and tool calls. Only the person's words and the assistant's
text make an exchange; tool calls and results, meta and sidechain lines are
noise, counted and dropped. A resumed session's transcript begins with the
lines of the session it resumed, each still carrying that one's
``sessionId``: each exchange says whose it is, for the save to tell what
that session stored from what it never did.
"""

from __future__ import annotations

import copy
import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import IO, Any

from memory import strict_json
from memory.errors import InvalidRequestError

MCP_FILE = ".mcp.json"
SETTINGS_FILE = ".claude/settings.json"

SESSION_START_MATCHER = "startup|resume|clear|compact"  # every start, and the fresh window after a compaction
PRE_COMPACT_MATCHER = "manual|auto"
CONTEXT, SAVE = "context", "save"  # what an Arcana hook runs
# Claude Code cancels SessionEnd hooks after 1.5 s unless a hook's timeout raises that budget (to 60 s at
# most); a save takes seconds (Python, the store, a model), so without one the session's end went unsaved.
SESSION_END_TIMEOUT = 60
HOOKS = (("SessionStart", SESSION_START_MATCHER, CONTEXT, None), ("PreCompact", PRE_COMPACT_MATCHER, SAVE, None),
         ("SessionEnd", None, SAVE, SESSION_END_TIMEOUT))  # (event, matcher, what it runs, its timeout in seconds)

_GLOBAL_FLAGS = {"--quiet", "-q"}
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")  # a hand-edited hook may set the home this way


def mcp_entry(launcher: list[str], home: str, agent: str) -> dict[str, Any]:
    """The stdio server entry: the absolute command, and ARCANA_HOME, since a host passes neither."""
    return {"type": "stdio", "command": launcher[0], "args": [*launcher[1:], "mcp", "--agent", agent],
            "env": {"ARCANA_HOME": home}}


def hook_command(launcher: list[str], home: str, agent: str, role: str) -> str:
    """The shell command of one hook; ``--home`` in it, as a hook gets no ``env`` block."""
    what = ["context"] if role == CONTEXT else ["host", "save", "claude-code"]
    return shlex.join([*launcher, "--home", home, *what, "--agent", agent])


def merge_mcp(existing: dict[str, Any], name: str, entry: dict[str, Any]) -> dict[str, Any]:
    """``existing`` with server ``name`` set to ``entry``; the user's other servers and keys, and
    extra keys or variables of theirs in ``name``, kept."""
    merged = copy.deepcopy(existing)
    servers = merged.setdefault("mcpServers", {})
    _expect(servers, dict, "'mcpServers'")
    server = servers.setdefault(name, {})
    _expect(server, dict, f"'mcpServers.{name}'")
    runs = server.get("command", server.get("url"))
    if runs is not None and not (server.get("url") is None and _arcana_args([runs, *_strings(server.get("args"))]) is not None):
        # Trigger: --name names a server of the user's (`--name github`). Why: its command and args
        # were overwritten with Arcana's, the user's server gone. Outcome: refused, nothing written.
        raise InvalidRequestError(f"the server '{name}' in {MCP_FILE} runs {str(runs)[:80]!r}, not Arcana; choose "
                                  "another --name (or remove that server); nothing was written")
    env = server.get("env", {})
    _expect(env, dict, f"'mcpServers.{name}.env'")
    server.update({**entry, "env": {**env, **entry["env"]}})
    return merged


def merge_hooks(existing: dict[str, Any], launcher: list[str], home: str, agent: str) -> dict[str, Any]:
    """``existing`` with Arcana's hooks: an Arcana hook already there is updated where it stands
    (its timeout and other keys kept; the SessionEnd one given a timeout when it has none), a twin of
    it dropped; missing ones are appended."""
    merged = copy.deepcopy(existing)
    hooks = merged.setdefault("hooks", {})
    _expect(hooks, dict, "'hooks'")
    for event, matcher, role, timeout in HOOKS:
        ours = {"type": "command", "command": hook_command(launcher, home, agent, role)}
        groups = hooks.setdefault(event, [])
        _expect(groups, list, f"'hooks.{event}'")
        placed, emptied = False, set()
        for number, group in enumerate(groups):
            _expect(group, dict, f"'hooks.{event}[{number}]'")
            entries = group.get("hooks", [])
            _expect(entries, list, f"'hooks.{event}[{number}].hooks'")
            kept = []
            for entry in entries:
                if not (isinstance(entry, dict) and arcana_role(entry.get("command")) == role):
                    kept.append(entry)
                elif not placed:
                    entry.update(ours)
                    if timeout is not None:
                        entry.setdefault("timeout", timeout)  # a timeout of the user's stays
                    kept.append(entry)
                    placed = True
            if len(kept) < len(entries):
                group["hooks"] = kept
                if not kept:
                    emptied.add(number)  # it held only a dropped twin
        groups[:] = [g for number, g in enumerate(groups) if number not in emptied]
        if not placed:
            if timeout is not None:
                ours["timeout"] = timeout
            groups.append({"matcher": matcher, "hooks": [ours]} if matcher is not None else {"hooks": [ours]})
    return merged


def arcana_role(command: object) -> str | None:
    """``context`` or ``save`` when ``command`` runs Arcana's hook of that name, else None."""
    if not isinstance(command, str):
        return None
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    while words and _ASSIGNMENT.match(words[0]):  # `ARCANA_HOME=… arcana …`: the shell's variable prefix
        words = words[1:]
    rest = _arcana_args(words)
    if rest is None:
        return None
    while rest and (rest[0] == "--home" or rest[0].startswith("--home=") or rest[0] in _GLOBAL_FLAGS):
        rest = rest[2:] if rest[0] == "--home" else rest[1:]
    if rest[:1] == ["context"]:
        return CONTEXT
    return SAVE if rest[:2] == ["host", "save"] else None


def _arcana_args(words: list[str]) -> list[str] | None:
    """What ``words`` pass to Arcana when they run it (its ``arcana`` script, or an interpreter with
    ``-m arcana_cli.main``); None when they run something else."""
    if words and isinstance(words[0], str) and PurePath(words[0]).name == "arcana":
        return words[1:]
    if words[1:3] == ["-m", "arcana_cli.main"]:
        return words[3:]
    return None


def _strings(value: object) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


_JSON_KINDS = {dict: "an object", list: "a list", str: "a string", bool: "true or false", type(None): "null"}


def _expect(value: object, kind: type, where: str) -> None:
    if not isinstance(value, kind):
        found = _JSON_KINDS.get(type(value), "a number")
        raise ValueError(f"{where} is {found}, expected {_JSON_KINDS[kind]}")


# -- transcripts -----------------------------------------------------------------

MAX_LINE_BYTES = 4 << 20  # a longer line (a pasted file, a huge tool result) is read with its strings cut short
MAX_TEXT_CHARS = 8000  # of one prompt or one reply kept for the session record
# Bytes of one JSON string kept from a long line: more than MAX_TEXT_CHARS characters however escaped
# (a character is at most 12 bytes, as a \uXXXX\uXXXX pair), so a cut text is still cut with its "…".
MAX_KEPT_STRING = 12 * (MAX_TEXT_CHARS + 2)
_CHUNK = 1 << 20
_STRING_BODY = re.compile(rb'(?:[^"\\]++|\\.)*+', re.DOTALL)  # up to the closing quote, or a backslash ending a chunk
_NOT_SAID = ("[Request interrupted", "This session is being continued from a previous")
# <command-name>…</command-name>, <local-command-stdout>, <system-reminder>: the host wraps what it adds in a tag it
# closes; a prompt that only begins with one ("<div> wrappers break …") is the person's
_INJECTED = re.compile(r"<([a-z][\w-]*)>")


@dataclass(frozen=True)
class Exchange:
    """What the person typed, and the assistant's text replies until they typed again."""

    prompt: str
    response: str
    line: str | None = None  # the ``uuid`` of the person's line: a rewritten transcript keeps it
    owner: str | None = None  # the line's ``sessionId``: a resumed session's transcript holds the old one's


@dataclass
class TranscriptRead:
    """A transcript read from ``start`` to ``end`` (a byte offset just past the last whole line)."""

    start: int
    end: int
    exchanges: list[Exchange] = field(default_factory=list)
    lines: int = 0
    malformed: int = 0  # not JSON, not UTF-8, not shaped like a transcript line, or too long once shrunk
    ignored: int = 0  # tool calls and results, meta, sidechain and bookkeeping lines
    truncated: bool = False  # stopped at the byte budget; the rest is read next time


def read_transcript(handle: IO[bytes], start: int, *, max_bytes: int, max_line: int = MAX_LINE_BYTES) -> TranscriptRead:
    """The exchanges in ``handle`` (binary, positioned at ``start``), reading at most ``max_bytes``.

    A last line without its newline is still being written: it is left for the
    next read, and ``end`` stops before it. Memory stays bounded by ``max_line``:
    a longer line is read a chunk at a time with each of its strings cut short.
    """
    read = TranscriptRead(start=start, end=start)
    prompt: str | None = None
    replies: list[str] = []
    said_in: tuple[str | None, str | None] = (None, None)

    def close_exchange() -> None:
        if prompt is not None:
            read.exchanges.append(Exchange(prompt, _cut("\n\n".join(replies)), *said_in))

    while True:
        if read.end - start >= max_bytes:
            read.truncated = handle.read(1) != b""  # a warning that more is left, only when some is
            break
        line = handle.readline(max_line + 1)
        if not line.endswith(b"\n"):
            if len(line) <= max_line:
                break  # end of file, or a line still being written
            ended, line = _shrunk(line, handle, max_line)
            if not ended:
                break  # a long line still being written
        read.lines += 1
        read.end = handle.tell()
        if line is not None and not line.strip():
            continue
        kind, text, uuid, owner = _classify(line) if line is not None else ("malformed", "", None, None)
        if kind == "malformed":
            read.malformed += 1
        elif kind == "said":
            close_exchange()
            prompt, replies, said_in = _cut(text), [], (uuid, owner)
        elif kind == "reply" and prompt is not None:
            replies.append(text)
        else:
            read.ignored += 1
    close_exchange()
    return read


def _shrunk(head: bytes, handle: IO[bytes], max_line: int) -> tuple[bool, bytes | None]:
    """A line over ``max_line`` bytes, read on from ``head`` to its end a chunk at a time, with each
    string cut to MAX_KEPT_STRING bytes: a pasted file or a tool's output is one long string, so what
    is left is the line's shape and the start of each text, to classify as any line. False when the
    file ends before the line does (still being written); None when even shrunk it is over
    ``max_line`` (no transcript line is) or it ends inside a string."""
    out, carry, chunk = bytearray(), b"", head
    in_string, cut, start = False, False, 0
    while chunk:
        chunk, carry, at = carry + chunk, b"", 0
        while at < len(chunk):
            if not in_string:
                quote = chunk.find(b'"', at)
                end = len(chunk) if quote < 0 else quote + 1
                out += chunk[at:end]
                at = end
                if quote >= 0:
                    in_string, cut, start = True, False, len(out)
                continue
            end = _STRING_BODY.match(chunk, at).end()
            room = start + MAX_KEPT_STRING - len(out)
            cut = cut or end - at > room
            out += chunk[at:at + min(room, end - at)]
            at = end
            if at < len(chunk) and chunk[at] == ord('"'):
                if cut:
                    _end_cleanly(out, start)
                out += b'"'
                in_string, at = False, at + 1
            elif at < len(chunk):
                carry, at = chunk[at:], len(chunk)  # a backslash ends the chunk: what it escapes comes next
        if chunk.endswith(b"\n"):
            return True, bytes(out) if len(out) <= max_line and not in_string else None
        if len(out) > max_line:  # not a transcript line: read to its end unkept
            while chunk and not chunk.endswith(b"\n"):
                chunk = handle.readline(_CHUNK)
            return bool(chunk), None
        chunk = handle.readline(_CHUNK)
    return False, None


def _end_cleanly(out: bytearray, start: int) -> None:
    """Drop the last bytes of the string cut at ``out[start:]`` until it is whole: no escape or
    UTF-8 character left in halves."""
    for _ in range(12):
        try:
            json.loads(b'"' + out[start:] + b'"')
            return
        except ValueError:
            del out[-1]


def _classify(raw: bytes) -> tuple[str, str, str | None, str | None]:
    """("said", text, uuid, session) for the person's words, ("reply", …) for assistant text,
    ("noise", "", …) for everything else a transcript holds, ("malformed", "", None, None) for what it
    cannot hold; uuid and session are the line's, None when it has none."""
    try:
        line = strict_json.loads(strict_json.decode(raw))
    except strict_json.JSONRefused:  # a key given twice too: a second "isSidechain" must not pass a check on the first
        return "malformed", "", None, None
    if not isinstance(line, dict):
        return "malformed", "", None, None
    uuid = line.get("uuid") if isinstance(line.get("uuid"), str) else None
    owner = line.get("sessionId") if isinstance(line.get("sessionId"), str) else None
    kind = line.get("type")
    if kind not in ("user", "assistant") or line.get("isSidechain") or line.get("isMeta") or line.get("isCompactSummary"):
        return "noise", "", uuid, owner
    message = line.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        blocks = [{"type": "text", "text": content}]
    elif isinstance(content, list) and all(isinstance(b, dict) for b in content):
        blocks = content
    else:
        return "malformed", "", None, None
    text = "\n".join(b["text"] for b in blocks if b.get("type") == "text" and isinstance(b.get("text"), str)).strip()
    if kind == "assistant":
        return ("reply", text, uuid, owner) if text else ("noise", "", uuid, owner)
    tag = _INJECTED.match(text)
    if not text or any(b.get("type") == "tool_result" for b in blocks) or text.startswith(_NOT_SAID) or (
            tag and f"</{tag.group(1)}>" in text):
        return "noise", "", uuid, owner
    return "said", text, uuid, owner


def _cut(text: str) -> str:
    return text if len(text) <= MAX_TEXT_CHARS else text[: MAX_TEXT_CHARS - 1] + "…"
