"""`arcana host setup claude-code` and the hooks it installs, through the installed `arcana` in real processes.

The files are written into a fresh project folder; the hooks are run as
Claude Code runs them (the command string from `.claude/settings.json`
through a shell, the hook's JSON on stdin, a JSONL transcript in Claude
Code's format); the MCP entry is started from `.mcp.json` with its own
command, args and env by the official MCP client.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from arcana_cli import exit_codes
from memory.models.context import HEADER

ARCANA = Path(sys.executable).parent / "arcana"  # the installed script, as a user runs it


@pytest.fixture
def home(arcana_home) -> Path:
    """A keyword-only home (no model load per command), absolute like a host config needs."""
    arcana_home.root.mkdir(parents=True)
    arcana_home.config_path.write_text(json.dumps({"embedding": {"providers": []}}))
    return arcana_home.root


@pytest.fixture
def project(tmp_path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    return folder


def arcana(*args: str, stdin: str | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(ARCANA), *args], input=stdin, capture_output=True, text=True, timeout=60, cwd=cwd)


def setup(project: Path, *extra: str) -> subprocess.CompletedProcess:
    return arcana("host", "setup", "claude-code", "--agent", "dev", "--dir", str(project), *extra)


def agent_id(name: str) -> str:
    return json.loads(arcana("agent", "show", name, "--json").stdout)["id"]


def hook_command(project: Path, event: str) -> str:
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    (group,) = settings["hooks"][event]
    (hook,) = group["hooks"]
    assert hook["type"] == "command"
    return hook["command"]


def run_hook(command: str, payload: dict, cwd: Path) -> subprocess.CompletedProcess:
    """As Claude Code runs a command hook: through a shell, in the project, without ARCANA_HOME."""
    env = {k: v for k, v in os.environ.items() if k != "ARCANA_HOME"} | {"PATH": "/usr/bin:/bin"}
    return subprocess.run(["/bin/sh", "-c", command], input=json.dumps(payload), capture_output=True, text=True,
                          timeout=60, cwd=cwd, env=env)


def test_printed_config_is_json_with_an_absolute_command_and_env_and_writes_nothing(home, project):
    done = setup(project, "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["written"] is False and "--write creates it" in done.stderr
    files = {Path(f["path"]).relative_to(project).as_posix(): f for f in report["files"]}
    assert set(files) == {".mcp.json", ".claude/settings.json"}
    server = files[".mcp.json"]["content"]["mcpServers"]["arcana"]
    assert Path(server["command"]).is_absolute() and os.access(server["command"], os.X_OK)
    assert server["args"] == ["mcp", "--agent", "dev"] and server["env"] == {"ARCANA_HOME": str(home)}
    hooks = files[".claude/settings.json"]["content"]["hooks"]
    assert set(hooks) == {"SessionStart", "PreCompact", "SessionEnd"}
    for event, groups in hooks.items():
        words = shlex.split(groups[0]["hooks"][0]["command"])
        assert words[0] == server["command"] and words[1:3] == ["--home", str(home)], event
    assert "context" in shlex.split(hooks["SessionStart"][0]["hooks"][0]["command"])
    assert list(project.iterdir()) == []  # printed, not written
    assert arcana("agent", "list", "--json").stdout.strip() == "[]"  # and no agent made
    # the text form prints the same files
    text = setup(project).stdout
    assert f"# {project / '.mcp.json'}" in text and '"ARCANA_HOME": "' + str(home) + '"' in text


def test_write_keeps_the_users_servers_and_hooks_backs_up_shows_a_diff_and_twice_changes_nothing(home, project):
    theirs_mcp = {"mcpServers": {"github": {"command": "/usr/bin/gh-mcp", "env": {"TOKEN": "${GH}"}}}, "note": 1}
    (project / ".mcp.json").write_text(json.dumps(theirs_mcp, indent=4) + "\n")
    (project / ".claude").mkdir()
    their_hook = {"matcher": "startup", "hooks": [{"type": "command", "command": "echo hello"}]}
    (project / ".claude" / "settings.json").write_text(
        json.dumps({"permissions": {"allow": ["Bash(ls)"]}, "hooks": {"SessionStart": [their_hook]}}))
    original = (project / ".mcp.json").read_bytes()

    done = setup(project, "--write")
    assert done.returncode == 0, done.stderr
    mcp = json.loads((project / ".mcp.json").read_text())
    assert mcp["mcpServers"]["github"] == theirs_mcp["mcpServers"]["github"] and mcp["note"] == 1
    assert mcp["mcpServers"]["arcana"]["args"] == ["mcp", "--agent", agent_id("dev")]  # by id, as config.json
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    assert settings["permissions"] == {"allow": ["Bash(ls)"]}
    assert settings["hooks"]["SessionStart"][0] == their_hook and len(settings["hooks"]["SessionStart"]) == 2
    backups = sorted(p.name for p in project.glob(".mcp.json.bak-*"))
    assert len(backups) == 1 and (project / backups[0]).read_bytes() == original
    assert len(list((project / ".claude").glob("settings.json.bak-*"))) == 1
    assert f"--- {project / '.mcp.json'}" in done.stderr and '+        "arcana": {' in done.stderr  # their indent kept
    assert "created agent 'dev'" in done.stderr

    before = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in project.rglob("*") if p.is_file()}
    again = setup(project, "--write")
    assert again.returncode == 0 and "---" not in again.stderr
    assert again.stdout.count("unchanged") == 2
    assert {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in project.rglob("*") if p.is_file()} == before

    # another agent: Arcana's hooks are replaced where they stand, never doubled; theirs stay, and so do
    # the keys a user added to Arcana's own hook
    settings["hooks"]["PreCompact"][0]["hooks"][0]["timeout"] = 120
    (project / ".claude" / "settings.json").write_text(json.dumps(settings))
    assert arcana("host", "setup", "claude-code", "--agent", "ops", "--dir", str(project), "--write").returncode == 0
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    start = settings["hooks"]["SessionStart"]
    assert start[0] == their_hook and len(start) == 2 and start[1]["hooks"][0]["command"].endswith(f"--agent {agent_id('ops')}")
    assert [len(settings["hooks"][e]) for e in ("PreCompact", "SessionEnd")] == [1, 1]
    (save,) = settings["hooks"]["PreCompact"][0]["hooks"]
    assert save["timeout"] == 120 and save["command"].endswith(f"host save claude-code --agent {agent_id('ops')}")


@pytest.mark.parametrize("text, why", [("{\"hooks\": {", "invalid JSON at line 1"), ('{"hooks": []}', "'hooks' is a list"),
                                       ("[1, 2]", "expected an object"),
                                       # Python reads these, JSON has no such value: the merge wrote them back
                                       # (1e400 as Infinity), a file the host could no longer read at all
                                       ('{"cleanupPeriodDays": NaN}', "NaN is not a JSON value"),
                                       ('{"x": [-Infinity]}', "-Infinity is not a JSON value"),
                                       ('{"cleanupPeriodDays": 1e400}', "the number 1e400 is too large"),
                                       # more digits than Python's int() converts: it raised out of the parse
                                       ('{"cleanupPeriodDays": ' + "9" * 5000 + "}", "5000 digits, too many to keep")])
def test_a_malformed_existing_file_is_refused_and_nothing_is_written(home, project, text, why):
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text(text)
    done = setup(project, "--write")
    assert done.returncode == exit_codes.CONFIG
    assert done.stderr.startswith("arcana: error: ") and why in done.stderr and done.stderr.count("\n") == 1
    assert sorted(p.name for p in project.rglob("*")) == [".claude", "settings.json"]  # not even .mcp.json
    assert (project / ".claude" / "settings.json").read_text() == text
    assert arcana("agent", "list", "--json").stdout.strip() == "[]"


def test_a_key_given_twice_is_refused_and_once_merged_both_halves_are_kept(home, project):
    """json keeps the last of a twice-given key: a second "mcpServers" pasted into .mcp.json was
    dropped with the user's github server in it when the merged file was written back."""
    twice = '{"mcpServers": {"github": {"command": "gh-mcp"}}, "mcpServers": {"other": {"command": "x"}}}'
    (project / ".mcp.json").write_text(twice)
    done = setup(project, "--write")
    assert done.returncode == exit_codes.CONFIG
    assert "the key 'mcpServers' is given twice" in done.stderr and done.stderr.count("\n") == 1
    assert (project / ".mcp.json").read_text() == twice and sorted(p.name for p in project.iterdir()) == [".mcp.json"]

    (project / ".mcp.json").write_text('{"mcpServers": {"github": {"command": "gh-mcp"}, "other": {"command": "x"}}}')
    done = setup(project, "--write")
    assert done.returncode == 0, done.stderr
    servers = json.loads((project / ".mcp.json").read_text())["mcpServers"]
    assert sorted(servers) == ["arcana", "github", "other"] and servers["github"] == {"command": "gh-mcp"}


def test_arcanas_hooks_edited_by_hand_are_replaced_in_place_not_twinned(home, project):
    """A hook the user rewrote with `--home=PATH` or an `ARCANA_HOME=PATH` prefix was not known as
    Arcana's: the next set-up added a second one, and each session start printed the context twice."""
    done = setup(project, "--write")
    assert done.returncode == 0, done.stderr
    path = project / ".claude" / "settings.json"
    settings = json.loads(path.read_text())
    start, save = (settings["hooks"][e][0]["hooks"][0] for e in ("SessionStart", "PreCompact"))
    start["command"] = start["command"].replace("--home ", "--home=", 1)
    save["command"] = f"ARCANA_HOME={shlex.quote(str(home))} " + save["command"].replace(f"--home {shlex.quote(str(home))} ", "")
    theirs = {"type": "command", "command": "ARCANA_HOME=/elsewhere mytool context --agent dev"}  # not Arcana's
    settings["hooks"]["SessionStart"][0]["hooks"].append(theirs)
    path.write_text(json.dumps(settings))

    again = setup(project, "--write")
    assert again.returncode == 0, again.stderr
    hooks = json.loads(path.read_text())["hooks"]
    assert [len(hooks[e]) for e in ("SessionStart", "PreCompact", "SessionEnd")] == [1, 1, 1]
    assert hooks["SessionStart"][0]["hooks"] == [{"type": "command", "command": hook_command(project, "SessionEnd")
                                                  .replace("host save claude-code", "context")}, theirs]
    assert hooks["PreCompact"][0]["hooks"][0]["command"] == hook_command(project, "SessionEnd")


def test_a_name_that_is_another_server_of_the_users_is_refused(home, project):
    """`--name github` overwrote the user's github server's command and args with Arcana's: it was gone."""
    theirs = {"mcpServers": {"github": {"command": "npx", "args": ["-y", "server-github"], "env": {"TOKEN": "x"}},
                             "remote": {"type": "http", "url": "https://example.com/mcp"}}}
    text = json.dumps(theirs)
    (project / ".mcp.json").write_text(text)
    for name in ("github", "remote"):
        done = setup(project, "--write", "--name", name)
        assert done.returncode == exit_codes.USAGE
        assert f"the server '{name}' in .mcp.json runs" in done.stderr and "choose another --name" in done.stderr
        assert (project / ".mcp.json").read_text() == text and sorted(p.name for p in project.iterdir()) == [".mcp.json"]

    python = {"command": sys.executable, "args": ["-m", "arcana_cli.main", "mcp", "--agent", "old"]}
    theirs["mcpServers"]["memory"] = python  # Arcana's own, started by an interpreter: the control
    (project / ".mcp.json").write_text(json.dumps(theirs))
    done = setup(project, "--write", "--name", "memory")
    assert done.returncode == 0, done.stderr
    servers = json.loads((project / ".mcp.json").read_text())["mcpServers"]
    assert servers["github"] == theirs["mcpServers"]["github"] and servers["remote"] == theirs["mcpServers"]["remote"]
    assert servers["memory"]["args"] == ["mcp", "--agent", agent_id("dev")]


def test_an_unknown_host_is_a_usage_error(home, project):
    done = arcana("host", "setup", "vim", "--agent", "dev", "--dir", str(project))
    assert done.returncode == exit_codes.USAGE and "'vim' is not one of 'claude-code'" in done.stderr
    assert list(project.iterdir()) == []
    missing = arcana("host", "setup", "claude-code", "--agent", "dev", "--dir", str(project / "typo"), "--write")
    assert missing.returncode == exit_codes.USAGE and "does not exist" in missing.stderr
    assert list(project.iterdir()) == []  # a mistyped folder is not created


def _line(kind: str, content, **extra) -> dict:
    return {"type": kind, "message": {"role": kind, "content": content}, "sessionId": "3f0c6f1e-aa", "cwd": "/p",
            "uuid": os.urandom(4).hex(), "timestamp": "2026-12-01T10:00:00Z", **extra}


TRANSCRIPT = [
    {"type": "file-history-snapshot", "messageId": "m1", "snapshot": {}},
    _line("user", "The flaky login test again. I prefer pytest fixtures over setUp methods."),
    _line("assistant", [{"type": "thinking", "thinking": "read the test first"},
                        {"type": "text", "text": "I'll read the test."},
                        {"type": "tool_use", "id": "toolu_1", "name": "Read",
                         "input": {"file_path": "/p/notes.md", "note": "I prefer the marmalade build server"}}]),
    _line("user", [{"type": "tool_result", "tool_use_id": "toolu_1",
                    "content": "My favourite colour is octarine, remember that."}]),
    _line("user", [{"type": "tool_result", "tool_use_id": "toolu_2", "content": [{"type": "text", "text": "ok"}]},
                   {"type": "text", "text": "Note that the build cache lives in /var/ptarmigan."}]),  # a result beside text
    _line("assistant", [{"type": "text", "text": "Fixed: the test raced the session cookie."}]),
    _line("user", "<command-name>/cost</command-name>"),
    _line("user", "Caveat: the messages below were generated by local commands.", isMeta=True),
    _line("user", "Remember that the staging database is called kestrel-db.", isSidechain=True),
    _line("user", "<system-reminder>Note that I prefer tabs in the wren files.</system-reminder>"),
    _line("user", HEADER + "\n- [private · semantic · agent 0.70] Remember that the old branch is called finch."),
    _line("user", "Please remember that the release branch is named heron-2."),
    _line("assistant", [{"type": "text", "text": "Noted: heron-2."}]),
]


def _write_transcript(path: Path, lines: list[dict], *, garbage: bool = True) -> None:
    with path.open("a", encoding="utf-8") as handle:
        for line in lines:
            handle.write(json.dumps(line) + "\n")
        if garbage:
            handle.write("{not json\n")


def _recall(query: str) -> list[dict]:
    done = arcana("recall", query, "--agent", "dev", "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["results"]


def test_the_pre_compact_hook_stores_what_was_said_and_ignores_tool_noise(home, project, tmp_path):
    assert setup(project, "--write").returncode == 0
    transcript = tmp_path / "claude" / "3f0c6f1e-aa.jsonl"
    transcript.parent.mkdir()
    _write_transcript(transcript, TRANSCRIPT)
    hook = {"session_id": "3f0c6f1e-aa", "transcript_path": str(transcript), "hook_event_name": "PreCompact",
            "trigger": "auto", "cwd": str(project)}

    done = run_hook(hook_command(project, "PreCompact"), hook, project)
    assert done.returncode == 0, done.stderr
    assert "1 malformed line(s)" in done.stderr
    assert "2 exchange(s) read, 2 fact(s) stored" in done.stderr
    # Claude Code takes a PreCompact hook's stdout as instructions for the summary it writes: the
    # save's report there was an order to the summariser ("... fact(s) stored, summary <id>")
    assert done.stdout == ""
    branch = _recall("release branch heron")
    assert branch and "heron-2" in branch[0]["content"]  # positive control: what the person said
    fixtures = _recall("pytest fixtures")
    assert any("I prefer pytest fixtures" in hit["content"] for hit in fixtures)
    # a tool's result and input, a sub-agent, slash commands, meta and injected lines, our own briefing echoed back
    for noise in ("octarine", "marmalade", "kestrel", "cost", "Caveat", "wren", "finch", "ptarmigan"):
        assert _recall(noise) == [], noise
    fact = next(hit for hit in branch if hit["content"] == "The release branch is named heron-2.")  # distilled
    summary = next(hit for hit in branch if hit["content"].startswith("Session of 2 turns."))
    shown = json.loads(arcana("memory", "show", fact["id"], "--agent", "dev", "--json").stdout)
    assert shown["confidence_source"] == "agent" and shown["confidence"] <= 0.7 and shown["importance"] < 0.9
    assert "claude-code" in shown["tags"] and shown["source_session_id"]
    digest = json.loads(arcana("memory", "show", summary["id"], "--agent", "dev", "--json").stdout)
    assert digest["confidence_source"] == "agent" and digest["source_session_id"] == shown["source_session_id"]
    sessions = json.loads(arcana("session", "list", "--agent", "dev", "--json").stdout)
    assert len(sessions) == 1 and sessions[0]["id"] == shown["source_session_id"]

    # the session's end: nothing new, nothing stored twice
    end = run_hook(hook_command(project, "SessionEnd"), {**hook, "hook_event_name": "SessionEnd"}, project)
    assert end.returncode == 0 and end.stderr.startswith("0 exchange(s) read") and end.stdout == ""
    again = json.loads(arcana("host", "save", "claude-code", "--agent", "dev", "--json", stdin=json.dumps(hook)).stdout)
    assert again["event"] == "PreCompact" and again["exchanges"] == 0 and again["start"] == again["end"]
    # more said after a compaction: only that is stored
    _write_transcript(transcript, [_line("user", "Note that the deploy script lives in tools/ship.sh."),
                                   _line("assistant", [{"type": "text", "text": "Understood."}])], garbage=False)
    more = run_hook(hook_command(project, "SessionEnd"), {**hook, "hook_event_name": "SessionEnd"}, project)
    assert more.returncode == 0 and more.stderr.startswith("1 exchange(s) read, 1 fact(s) stored"), more.stderr
    assert _recall("deploy script ship")
    assert len(json.loads(arcana("session", "list", "--agent", "dev", "--json").stdout)) == 2


SESSION_END_BUDGET = 1.5  # seconds Claude Code gives its SessionEnd hooks unless one sets a longer "timeout"


def test_the_session_end_hook_gets_the_time_a_save_takes(home, project, tmp_path):
    """Claude Code cancels SessionEnd hooks after 1.5 s unless a hook's `timeout` raises that budget
    (up to 60 s); a save starts Python, opens the store and writes (seconds with a model), so the
    session's end went unsaved. The SessionEnd hook carries a timeout; a user's own is kept."""
    assert setup(project, "--write").returncode == 0
    path = project / ".claude" / "settings.json"
    hooks = json.loads(path.read_text())["hooks"]
    (end,) = hooks["SessionEnd"][0]["hooks"]
    assert end.get("timeout", SESSION_END_BUDGET) >= 30
    assert "timeout" not in hooks["SessionStart"][0]["hooks"][0]  # control: their default is ten minutes
    assert "timeout" not in hooks["PreCompact"][0]["hooks"][0]
    transcript = tmp_path / "s4.jsonl"
    _write_transcript(transcript, TRANSCRIPT[-2:], garbage=False)
    env = {k: v for k, v in os.environ.items() if k != "ARCANA_HOME"} | {"PATH": "/usr/bin:/bin"}
    done = subprocess.run(["/bin/sh", "-c", end["command"]], capture_output=True, text=True, cwd=project, env=env,
                          input=json.dumps({"session_id": "s4", "transcript_path": str(transcript),
                                            "hook_event_name": "SessionEnd", "reason": "prompt_input_exit"}),
                          timeout=end.get("timeout", SESSION_END_BUDGET))  # as the host budgets it
    assert done.returncode == 0 and _recall("release branch heron"), done.stderr

    # a set-up from before (no timeout) gains one; a user's own timeout stays
    settings = json.loads(path.read_text())
    del settings["hooks"]["SessionEnd"][0]["hooks"][0]["timeout"]
    path.write_text(json.dumps(settings))
    assert setup(project, "--write").returncode == 0
    assert json.loads(path.read_text())["hooks"]["SessionEnd"][0]["hooks"][0]["timeout"] == end["timeout"]
    settings["hooks"]["SessionEnd"][0]["hooks"][0]["timeout"] = 45
    path.write_text(json.dumps(settings))
    again = setup(project, "--write")
    assert again.returncode == 0 and again.stdout.count("unchanged") == 2, again.stdout
    assert json.loads(path.read_text())["hooks"]["SessionEnd"][0]["hooks"][0]["timeout"] == 45


def test_a_resumed_session_stores_only_what_it_said_not_the_session_it_resumed(home, project, tmp_path):
    """`claude --resume` starts a new session id and transcript that begins with the resumed session's
    lines (still carrying that session's `sessionId`): its hooks stored the old exchanges again, as a
    second session with the same turns. Lines of a session already saved are that session's."""
    assert setup(project, "--write").returncode == 0
    end = hook_command(project, "SessionEnd")
    said = [_line("user", "Please remember that the release branch is named heron-2."),
            _line("assistant", [{"type": "text", "text": "Noted: heron-2."}])]
    first = tmp_path / "3f0c6f1e-aa.jsonl"
    _write_transcript(first, said, garbage=False)
    payload = {"session_id": "3f0c6f1e-aa", "transcript_path": str(first), "hook_event_name": "SessionEnd"}
    assert run_hook(end, payload, project).returncode == 0

    resumed = tmp_path / "9b1d-resumed.jsonl"  # the resumed session's file: the old lines, then its own
    _write_transcript(resumed, [{"type": "summary", "summary": "Release branch", "leafUuid": "x"}, *said,
                                {**_line("user", "Note that the deploy script lives in tools/ship.sh."), "sessionId": "9b1d-resumed"},
                                {**_line("assistant", [{"type": "text", "text": "Understood."}]), "sessionId": "9b1d-resumed"}],
                      garbage=False)
    done = run_hook(end, {**payload, "session_id": "9b1d-resumed", "transcript_path": str(resumed)}, project)
    assert done.returncode == 0 and done.stderr.startswith("1 exchange(s) read, 1 fact(s) stored"), done.stderr
    sessions = json.loads(arcana("session", "list", "--agent", "dev", "--json").stdout)
    assert len(sessions) == 2 and sorted(s["turns"] for s in sessions) == [1, 1], sessions
    assert _recall("deploy script ship")

    # control: lines of a session Arcana never saved (set up after it ran) are stored with the one resuming it
    older = tmp_path / "c0ffee.jsonl"
    _write_transcript(older, [{**line, "sessionId": "never-saved"} for line in said[:1]]
                      + [{**_line("user", "Remember that the linter is ruff."), "sessionId": "c0ffee"}], garbage=False)
    done = run_hook(end, {**payload, "session_id": "c0ffee", "transcript_path": str(older)}, project)
    assert done.returncode == 0 and done.stderr.startswith("2 exchange(s) read"), done.stderr


def test_a_transcript_rewritten_after_a_compaction_is_not_stored_again(home, project, tmp_path):
    """How far a transcript was read is a byte offset: a transcript rewritten after a compaction (shorter:
    read whole again; longer: read on from the middle of some line) had its exchanges stored twice.
    Each line carries its `uuid`; an exchange whose line was stored is not stored again."""
    assert setup(project, "--write").returncode == 0
    end = hook_command(project, "SessionEnd")

    def exchange(text: str) -> list[dict]:
        return [_line("user", text), _line("assistant", [{"type": "text", "text": "Understood."}])]

    heron, kiln, ship = (exchange("Please remember that the release branch is named heron-2."),
                         exchange("Note that the build cache lives in /var/kiln."),
                         exchange("Note that the deploy script lives in tools/ship.sh."))
    transcript = tmp_path / "3f0c6f1e-aa.jsonl"
    _write_transcript(transcript, [*heron, _line("assistant", [{"type": "text", "text": "x" * 2000}]), *kiln], garbage=False)
    payload = {"session_id": "3f0c6f1e-aa", "transcript_path": str(transcript), "hook_event_name": "PreCompact"}
    assert run_hook(end, payload, project).stderr.startswith("2 exchange(s) read")

    transcript.unlink()  # rewritten shorter: the first exchange and the long reply gone, one more said
    _write_transcript(transcript, [{"type": "summary", "summary": "Branches", "leafUuid": "x"}, *kiln, *ship], garbage=False)
    done = run_hook(end, {**payload, "hook_event_name": "SessionEnd"}, project)
    assert done.returncode == 0 and done.stderr.startswith("1 exchange(s) read, 1 fact(s) stored"), done.stderr

    transcript.unlink()  # rewritten longer: the old offset falls inside a line
    again = exchange("continue")
    _write_transcript(transcript, [_line("user", "y" * 3000), *heron, *kiln, *ship, *again, *exchange("continue")],
                      garbage=False)
    done = run_hook(end, {**payload, "hook_event_name": "SessionEnd"}, project)
    assert done.returncode == 0 and "\n2 exchange(s) read" in done.stderr, done.stderr  # "continue" twice: both said
    turns = sorted(s["turns"] for s in json.loads(arcana("session", "list", "--agent", "dev", "--json").stdout))
    assert turns == [1, 2, 2], turns
    bare = tmp_path / "bare.jsonl"  # lines without a uuid cannot be told apart: each is said
    _write_transcript(bare, [{k: v for k, v in line.items() if k != "uuid"} | {"sessionId": "bare"} for line in [*again, *again]],
                      garbage=False)
    done = run_hook(end, {**payload, "session_id": "bare", "transcript_path": str(bare)}, project)
    assert done.returncode == 0 and done.stderr.startswith("2 exchange(s) read"), done.stderr


def test_the_hook_trusts_nothing_it_is_given(home, project, tmp_path):
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    cases = [
        ("not json", "is not JSON"),
        (json.dumps({"session_id": "s1", "transcript_path": str(fifo)}), "not a regular file"),  # no hang
        (json.dumps({"session_id": "s1", "transcript_path": str(tmp_path)}), "not a regular file"),
        (json.dumps({"session_id": "s1", "transcript_path": "relative.jsonl"}), "not an absolute path"),
        (json.dumps({"session_id": "../../etc", "transcript_path": str(tmp_path / "x")}), "session_id"),
        (json.dumps({"session_id": "s1", "transcript_path": str(tmp_path / "gone.jsonl")}), "no such file"),
    ]
    for stdin, why in cases:
        done = arcana("host", "save", "claude-code", "--agent", "dev", stdin=stdin)
        assert done.returncode == exit_codes.FAILURE, (stdin, done.stderr)  # never 2: it blocks a compaction
        assert why in done.stderr and done.stderr.count("\n") <= 2, done.stderr
    # positive control: the same command with a real transcript stores
    good = tmp_path / "good.jsonl"
    _write_transcript(good, TRANSCRIPT[-2:], garbage=False)
    done = arcana("host", "save", "claude-code", "--agent", "dev",
                  stdin=json.dumps({"session_id": "s1", "transcript_path": str(good)}))
    assert done.returncode == 0 and "1 fact(s) stored" in done.stderr, done.stderr


def test_a_session_the_host_keeps_no_transcript_of_has_nothing_to_save(home, project):
    """With session persistence off (`--no-session-persistence`, an old `cleanupPeriodDays: 0`) Claude Code
    writes no transcript and hands hooks an empty transcript_path: the save refused it with exit 2, which
    a PreCompact hook returns to block the compaction, so the session could not be compacted."""
    assert setup(project, "--write").returncode == 0
    hook = {"session_id": "s5", "transcript_path": "", "hook_event_name": "PreCompact", "trigger": "auto"}
    done = run_hook(hook_command(project, "PreCompact"), hook, project)
    assert done.returncode == 0 and done.stdout == "", done.stderr
    assert "keeps no transcript" in done.stderr and "0 exchange(s) read" in done.stderr
    assert not (home / "agents" / agent_id("dev") / "hosts").exists()  # nothing recorded as read
    # control: a transcript_path that is missing, or not a path, is still refused
    for bad in ({k: v for k, v in hook.items() if k != "transcript_path"}, {**hook, "transcript_path": 7}):
        refused = run_hook(hook_command(project, "PreCompact"), bad, project)
        assert refused.returncode == exit_codes.FAILURE and "transcript_path" in refused.stderr, refused.stderr


def test_a_hook_run_with_stdin_closed_is_one_line_not_a_traceback(home):
    """A hook started with its stdin closed (`<&-`, a launcher that gives it none) has no sys.stdin at
    all: `host save` asked it whether it was a terminal and died in an AttributeError traceback, exit 1."""
    closed = subprocess.run(["/bin/sh", "-c", 'exec "$0" host save claude-code --agent dev <&-', str(ARCANA)],
                            capture_output=True, text=True, timeout=60)
    assert closed.returncode == exit_codes.FAILURE and "Traceback" not in closed.stderr, closed.stderr
    assert closed.stderr.count("\n") == 1 and "stdin" in closed.stderr
    empty = arcana("host", "save", "claude-code", "--agent", "dev", stdin="")  # control: an empty stdin, refused alike
    assert empty.returncode == exit_codes.FAILURE and "is not JSON" in empty.stderr


@pytest.mark.parametrize("record", ["[" * 100_000 + "]" * 100_000, '{"offset": 5', '{"offset": 1, "offset": 2}'])
def test_a_damaged_save_record_is_one_line_exit_4_and_nothing_is_stored_twice(home, project, tmp_path, record):
    """The record of how far a transcript was saved was read with json.loads: nested past the parser's
    depth it was a RecursionError traceback, and any other damage silently read the transcript again from
    its start (every fact and the session stored twice). Positive control: another session of the same agent."""
    assert arcana("agent", "create", "dev").returncode == 0
    transcript = tmp_path / "t.jsonl"
    _write_transcript(transcript, TRANSCRIPT[-2:], garbage=False)
    state = home / "agents" / agent_id("dev") / "hosts" / "claude-code" / "s1.json"
    state.parent.mkdir(parents=True)
    state.write_text(record)
    done = arcana("host", "save", "claude-code", "--agent", "dev",
                  stdin=json.dumps({"session_id": "s1", "transcript_path": str(transcript)}))
    assert done.returncode == exit_codes.CONFIG, done.stderr
    assert done.stderr.count("\n") == 1 and str(state) in done.stderr and "remove it" in done.stderr, done.stderr
    assert state.read_text() == record
    assert json.loads(arcana("session", "list", "--agent", "dev", "--json").stdout) == []
    done = arcana("host", "save", "claude-code", "--agent", "dev",
                  stdin=json.dumps({"session_id": "s2", "transcript_path": str(transcript)}))
    assert done.returncode == 0 and "1 fact(s) stored" in done.stderr, done.stderr  # the report is on stderr


def test_a_transcript_is_read_within_its_budget_and_a_line_being_written_is_left(tmp_path):
    from memory.hosts.claude_code import read_transcript

    path = tmp_path / "t.jsonl"
    _write_transcript(path, TRANSCRIPT, garbage=False)
    whole = path.stat().st_size
    with path.open("rb") as handle:
        exact = read_transcript(handle, 0, max_bytes=whole)  # the budget spent at the end: nothing left over
    assert exact.end == whole and not exact.truncated
    with path.open("ab") as handle:
        handle.write(b'{"type": "user", "message": {"content": "half a li')  # still being written
    with path.open("rb") as handle:
        read = read_transcript(handle, 0, max_bytes=1 << 20)
    assert read.end == whole and [e.prompt[:10] for e in read.exchanges] == ["The flaky ", "Memories r", "Please rem"]  # the echo is dropped later
    with path.open("rb") as handle:
        first = read_transcript(handle, 0, max_bytes=200)  # the budget stops it early; the rest is for later
    assert first.truncated and 200 <= first.end < whole and len(first.exchanges) <= 1
    with path.open("rb") as handle:
        handle.seek(first.end)
        rest = read_transcript(handle, first.end, max_bytes=1 << 20)
    assert rest.end == whole and rest.exchanges[-1].prompt.startswith("Please remember")
    with path.open("rb") as handle:
        capped = read_transcript(handle, 0, max_bytes=1 << 20, max_line=100)  # every line too long: skipped unread
    assert capped.exchanges == [] and capped.malformed == capped.lines - 1 == 12  # the snapshot line is short


def test_a_prompt_that_begins_with_a_tag_is_said_when_the_host_did_not_wrap_it(tmp_path):
    """What the host injects is wrapped in a tag it closes (<command-name>/cost</command-name>); a prompt
    that merely began with one ("<div> wrappers break ...") was taken for the host's and dropped."""
    from memory.hosts.claude_code import read_transcript

    path = tmp_path / "t.jsonl"
    typed = ["<div> wrappers break the flex layout; remember that we use CSS grid.", "<T> in Rust generics reads as any type."]
    injected = ["<command-name>/cost</command-name>", "<local-command-stdout>Total cost: $0.12</local-command-stdout>",
                "<system-reminder>Note that I prefer tabs.</system-reminder>"]
    _write_transcript(path, [_line("user", text) for text in [*injected, *typed]], garbage=False)
    with path.open("rb") as handle:
        read = read_transcript(handle, 0, max_bytes=1 << 20)
    assert [e.prompt for e in read.exchanges] == typed and read.ignored == len(injected)


def test_the_session_start_hook_prints_the_agents_context(home, project):
    assert setup(project, "--write").returncode == 0
    assert arcana("remember", "The CI runs on Python 3.12 only.", "--agent", "dev").returncode == 0
    assert arcana("remember", "Secret deploy key is k-991.", "--agent", "dev", "--visibility", "hidden").returncode == 0
    done = run_hook(hook_command(project, "SessionStart"),
                    {"session_id": "s2", "transcript_path": "/nonexistent", "hook_event_name": "SessionStart",
                     "source": "startup"}, project)
    assert done.returncode == 0, done.stderr
    assert "The CI runs on Python 3.12 only." in done.stdout  # positive control beside the exclusion
    assert "k-991" not in done.stdout
    assert done.stdout.startswith("Memories recalled for this conversation")
    asked = json.loads(arcana("context", "which python version", "--agent", "dev", "--json").stdout)
    assert asked["query"] == "which python version" and "Python 3.12" in asked["context"] and len(asked["ids"]) == 1



def test_the_hooks_follow_a_renamed_agent_and_never_serve_a_new_namesake(home, project):
    """The files named the agent by name: after `agent rename dev dev2` every hook failed (exit 3 in a
    hook whose stderr nobody reads: the sessions went unsaved), and after `agent delete` a new agent
    called dev was served the project, its context and its sessions. They name the id now."""
    assert setup(project, "--write").returncode == 0
    assert arcana("remember", "The CI runs on Python 3.12 only.", "--agent", "dev").returncode == 0
    start = {"session_id": "s3", "transcript_path": "/nonexistent", "hook_event_name": "SessionStart", "source": "startup"}
    assert arcana("agent", "rename", "dev", "dev2").returncode == 0
    done = run_hook(hook_command(project, "SessionStart"), start, project)
    assert done.returncode == 0 and "Python 3.12" in done.stdout, done.stderr  # the renamed agent, still served
    assert arcana("agent", "delete", "dev2", "--yes").returncode == 0
    assert arcana("remember", "The new dev likes tabs.", "--agent", "dev").returncode == 0
    done = run_hook(hook_command(project, "SessionStart"), start, project)
    assert done.returncode == exit_codes.NOT_FOUND and "tabs" not in done.stdout, done.stdout
    assert setup(project, "--write").returncode == 0  # set up again for the new dev: served
    done = run_hook(hook_command(project, "SessionStart"), start, project)
    assert done.returncode == 0 and "tabs" in done.stdout and "Python 3.12" not in done.stdout, done.stderr

async def test_the_mcp_entry_starts_as_written_and_serves_the_agent(home, project):
    assert setup(project, "--write").returncode == 0
    assert arcana("remember", "The linter is ruff.", "--agent", "dev").returncode == 0
    entry = json.loads((project / ".mcp.json").read_text())["mcpServers"]["arcana"]
    # only what the entry says, as a host starts it: no ARCANA_HOME of ours, a bare PATH
    params = StdioServerParameters(command=entry["command"], args=entry["args"],
                                   env={**entry["env"], "PATH": "/usr/bin:/bin"}, cwd=str(project))
    async with stdio_client(params, errlog=sys.stderr) as (read, write), ClientSession(read, write) as client:
        await client.initialize()
        tools = {t.name for t in (await client.list_tools()).tools}
        assert {"recall", "remember", "context"} <= tools
        found = await client.call_tool("recall", {"query": "linter"})
        assert not found.is_error and "ruff" in found.content[0].text


def test_a_project_file_linked_outside_the_project_is_refused_and_nothing_is_written(home, project, tmp_path):
    """A cloned repository's `.mcp.json` linked to a file of the user's (or `.claude` to ~/.claude)
    had setup --write merge Arcana's entries into that file. A link inside the project stays linked."""
    theirs = tmp_path / "dotfiles" / "tool.json"
    theirs.parent.mkdir()
    theirs.write_text('{"keep": true}\n')
    (project / ".mcp.json").symlink_to(theirs)
    done = setup(project, "--write")
    assert done.returncode == exit_codes.USAGE and "leads outside" in done.stderr, done.stderr
    assert theirs.read_text() == '{"keep": true}\n' and not (project / ".claude").exists()
    (project / ".mcp.json").unlink()
    (project / ".claude").symlink_to(theirs.parent, target_is_directory=True)
    done = setup(project, "--write")
    assert done.returncode == exit_codes.USAGE and "leads outside" in done.stderr, done.stderr
    assert sorted(p.name for p in theirs.parent.iterdir()) == ["tool.json"]
    (project / ".claude").unlink()  # control: a link within the project is written through, and stays a link
    (project / "shared.json").write_text("{}\n")
    (project / ".mcp.json").symlink_to(project / "shared.json")
    done = setup(project, "--write")
    assert done.returncode == 0, done.stderr
    assert (project / ".mcp.json").is_symlink() and "mcpServers" in json.loads((project / "shared.json").read_text())


def test_a_lone_surrogate_in_the_users_file_is_kept_and_both_files_are_written(home, project):
    """`"\\ud800"` is valid JSON (a lone half of a pair, as JavaScript writes it), but its character
    cannot be encoded in UTF-8: --write wrote .mcp.json, backed the settings up and then died on the
    settings' write with a UnicodeEncodeError traceback, the project half set up."""
    text = '{"statusLine": "\\ud800 caf\\u00e9 \\ud83d\\ude00", "model": "opus"}\n'
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text(text)
    done = setup(project, "--write")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    written = (project / ".claude" / "settings.json").read_text(encoding="utf-8")
    settings = json.loads(written)
    assert settings["statusLine"] == "\ud800 caf\u00e9 \U0001f600" and settings["model"] == "opus"
    assert "\\ud800 café 😀" in written  # the control: only the lone half is escaped, other characters stay as they are
    assert hook_command(project, "SessionStart").endswith(f"context --agent {agent_id('dev')}")
    assert "mcpServers" in json.loads((project / ".mcp.json").read_text())
    (backup,) = (project / ".claude").glob("settings.json.bak-*")
    assert backup.read_text() == text


def test_a_link_that_leads_back_to_itself_is_one_line_and_nothing_is_written(home, project):
    """`.mcp.json -> .mcp.json` (or `.claude` and another link pointing at each other) made the
    outside-the-project check's resolve() raise RuntimeError: a traceback, exit 1."""
    (project / ".mcp.json").symlink_to(".mcp.json")
    done = setup(project, "--write")
    assert done.returncode == exit_codes.USAGE, done.stderr
    assert done.stderr.startswith("arcana: error: ") and done.stderr.count("\n") == 1 and "leads back to itself" in done.stderr
    assert sorted(p.name for p in project.iterdir()) == [".mcp.json"]
    (project / ".mcp.json").unlink()
    (project / ".claude").symlink_to("conf")
    (project / "conf").symlink_to(".claude")
    done = setup(project, "--write")
    assert done.returncode == exit_codes.USAGE and "leads back to itself" in done.stderr, done.stderr
    assert sorted(p.name for p in project.iterdir()) == [".claude", "conf"]  # .mcp.json was not written either
    (project / "conf").unlink()  # the control: the link now leads to a folder in the project, written through
    (project / "conf").mkdir()
    done = setup(project, "--write")
    assert done.returncode == 0, done.stderr
    assert (project / ".claude").is_symlink() and (project / "conf" / "settings.json").is_file()


def test_numbers_of_the_users_file_are_written_back_as_json(home, project):
    """The control for NaN, Infinity, 1e400 and 5,000 digits (refused): a large finite number, -0.0, an
    exponent and a 4,000-digit whole number are merged and written back, and the written file is strict JSON."""
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text('{"cleanupPeriodDays": 1.5e300, "a": -0.0, "b": 1E2, "c": 7, '
                                                        '"d": ' + "9" * 4000 + "}")
    done = setup(project, "--write")
    assert done.returncode == 0, done.stderr

    def strict(name):
        raise ValueError(name)

    settings = json.loads((project / ".claude" / "settings.json").read_text(), parse_constant=strict)
    assert [settings[k] for k in ("cleanupPeriodDays", "a", "b", "c", "d")] == [1.5e300, 0.0, 100.0, 7, int("9" * 4000)]


def test_a_file_that_cannot_be_written_leaves_every_file_as_it_was(home, project):
    """With .claude unwritable (immutable here), --write replaced .mcp.json (Arcana's server in it)
    and then failed on the settings: the project half set up, a server without its hooks, and the
    error named a backup file that was never made. Now every file is made before any is replaced."""
    from immutable import immutable

    servers = '{"mcpServers": {"theirs": {"command": "/usr/bin/true"}}}\n'
    (project / ".mcp.json").write_text(servers)
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text('{"model": "opus"}\n')
    with immutable(project / ".claude"):
        done = setup(project, "--write")
    error = done.stderr.splitlines()[-1]  # after the agent made and the diffs shown
    assert done.returncode != 0 and error.startswith("arcana: error: ") and "Traceback" not in done.stderr
    assert (project / ".mcp.json").read_text() == servers  # not replaced, and its backup taken back
    assert f"{project / '.claude'}: operation not permitted" in error and "nothing was written" in error
    assert sorted(p.name for p in project.rglob("*")) == [".claude", ".mcp.json", "settings.json"]
    done = setup(project, "--write")  # the control: writable again, both files are merged and backed up
    assert done.returncode == 0, done.stderr
    assert set(json.loads((project / ".mcp.json").read_text())["mcpServers"]) == {"theirs", "arcana"}
    assert hook_command(project, "SessionEnd").endswith(f"host save claude-code --agent {agent_id('dev')}")
    assert len(list(project.glob(".mcp.json.bak-*"))) == len(list((project / ".claude").glob("settings.json.bak-*"))) == 1


def test_a_folder_where_a_file_goes_or_a_file_where_a_folder_goes_is_named_as_such(home, project):
    """`.mcp.json` a folder, or `.claude` a file, was 'cannot read it (Is a directory); fix its
    permissions': the permissions are fine, the thing is the wrong kind."""
    (project / ".mcp.json").mkdir()
    done = setup(project, "--write")
    assert done.returncode == exit_codes.CONFIG and done.stderr.count("\n") == 1, done.stderr
    assert f"{project / '.mcp.json'} is a folder, not a file; move it aside" in done.stderr
    (project / ".mcp.json").rmdir()
    (project / ".claude").write_text("not a folder\n")
    done = setup(project, "--write")
    assert done.returncode == exit_codes.CONFIG and done.stderr.count("\n") == 1, done.stderr
    assert f"{project / '.claude'} is a file, not a folder; move it aside" in done.stderr
    assert sorted(p.name for p in project.iterdir()) == [".claude"] and "permissions" not in done.stderr
    (project / ".claude").unlink()  # the control: both made as they should be
    assert setup(project, "--write").returncode == 0 and (project / ".claude" / "settings.json").is_file()


def test_a_host_sessions_summary_never_keeps_what_the_briefing_told_the_model(home, project, tmp_path):
    """The host's model answers with the agent's memory in context (the session-start briefing), so
    an answer quoting a memory is no evidence: the llm summary kept 'Use the staging key kestrel5510',
    which still answered recall and the next session's briefing after the operator hid that memory."""
    from model_server import LoopbackModelServer

    from memory.extraction.extractors import SUMMARY_INSTRUCTIONS

    def reply(body):  # a faithful summariser: it keeps every word it was shown
        messages = body["messages"]
        return "Summary: " + messages[-1]["content"] if messages[0]["content"] == SUMMARY_INSTRUCTIONS else "ok"

    with LoopbackModelServer(reply) as server:
        assert arcana("model", "add", "loop", "--provider", "ollama", "--base-url", server.url, "--model", "t",
                      "--default").returncode == 0
        assert setup(project, "--write").returncode == 0
        assert arcana("agent", "set", "dev", "--extraction", "strategy=llm").returncode == 0
        key = arcana("remember", "The staging deploy key is kestrel5510.", "--agent", "dev").stdout.strip()
        start = {"session_id": "s3", "transcript_path": "/nonexistent", "hook_event_name": "SessionStart"}
        assert "kestrel5510" in run_hook(hook_command(project, "SessionStart"), start, project).stdout
        transcript = tmp_path / "s3.jsonl"
        _write_transcript(transcript, [
            _line("user", "Which key do I use for the staging deploy?"),
            _line("assistant", [{"type": "text", "text": "Use the staging deploy key kestrel5510."}]),
            _line("user", "Please remember that the release branch is named heron-2."),
            _line("assistant", [{"type": "text", "text": "Noted."}]),
        ], garbage=False)
        end = {"session_id": "s3", "transcript_path": str(transcript), "hook_event_name": "SessionEnd"}
        done = run_hook(hook_command(project, "SessionEnd"), end, project)
        assert done.returncode == 0, done.stderr
        asked = [r["body"]["messages"] for r in server.requests]
        assert any(m[0]["content"] == SUMMARY_INSTRUCTIONS for m in asked)  # the model summarised the session
    assert arcana("memory", "set", key, "--agent", "dev", "--visibility", "hidden").returncode == 0

    assert not [hit for hit in _recall("kestrel5510 staging deploy key") if "kestrel5510" in hit["content"]]
    briefing = run_hook(hook_command(project, "SessionStart"), {**start, "session_id": "s4"}, project).stdout
    assert "kestrel5510" not in briefing
    # control: the summary the model wrote, with what the person said, by the same paths
    assert any(hit["content"].startswith("Summary:") and "heron-2" in hit["content"] for hit in _recall("release branch heron"))
    assert "Summary:" in briefing


def test_a_resumed_session_stores_the_tail_its_predecessor_never_saved(home, project, tmp_path):
    """A session saved at a compaction and then killed (no SessionEnd hook ran) left its last exchanges
    unsaved; resumed, they come first in the new transcript still naming the old session, and were
    taken for stored because that session has a record. Only what its record stored is its own."""
    assert setup(project, "--write").returncode == 0
    end = hook_command(project, "SessionEnd")

    def said(text: str, session: str) -> list[dict]:
        return [{**_line("user", text), "sessionId": session},
                {**_line("assistant", [{"type": "text", "text": "Understood."}]), "sessionId": session}]

    saved, tail = said("Please remember that the release branch is named heron-2.", "a1"), said(
        "Note that the build cache lives in /var/kiln.", "a1")
    first = tmp_path / "a1.jsonl"
    _write_transcript(first, saved, garbage=False)
    payload = {"session_id": "a1", "transcript_path": str(first), "hook_event_name": "PreCompact"}
    assert run_hook(end, payload, project).stderr.startswith("1 exchange(s) read")
    _write_transcript(first, tail, garbage=False)  # said after the compaction; the session then killed

    resumed = tmp_path / "b2.jsonl"
    own = said("Note that the deploy script lives in tools/ship.sh.", "b2")
    _write_transcript(resumed, [*saved, *tail, *own], garbage=False)
    done = run_hook(end, {**payload, "session_id": "b2", "transcript_path": str(resumed)}, project)
    assert done.returncode == 0 and done.stderr.startswith("2 exchange(s) read, 2 fact(s) stored"), done.stderr
    assert _recall("build cache kiln") and _recall("deploy script ship")

    # resumed again: the first session's tail was stored by the second; only the third's own is new
    again = tmp_path / "c3.jsonl"
    _write_transcript(again, [*saved, *tail, *own, *said("Remember that the linter is ruff.", "c3")], garbage=False)
    done = run_hook(end, {**payload, "session_id": "c3", "transcript_path": str(again)}, project)
    assert done.returncode == 0 and done.stderr.startswith("1 exchange(s) read, 1 fact(s) stored"), done.stderr
    turns = sorted(s["turns"] for s in json.loads(arcana("session", "list", "--agent", "dev", "--json").stdout))
    assert turns == [1, 1, 2], turns

    # a copy whose lines were given new uuids cannot be matched to what was stored: taken as stored
    renumbered = tmp_path / "d4.jsonl"
    _write_transcript(renumbered, [{**line, "uuid": os.urandom(4).hex()} for line in [*saved, *tail]]
                      + said("Remember that the formatter is black.", "d4"), garbage=False)
    done = run_hook(end, {**payload, "session_id": "d4", "transcript_path": str(renumbered)}, project)
    assert done.returncode == 0 and done.stderr.startswith("1 exchange(s) read, 1 fact(s) stored"), done.stderr


def test_a_line_over_four_mib_keeps_what_was_said_and_drops_a_huge_tool_result(home, project, tmp_path):
    """A line over 4 MiB was skipped unread and counted malformed: a prompt with a pasted file lost
    what the person said with it. Such a line is read a chunk at a time with each string cut short:
    the person's words and the assistant's text are kept (cut, as every prompt is), a tool's output is
    still noise, and a line that is not JSON is still malformed."""
    assert setup(project, "--write").returncode == 0
    pasted = "Remember that the staging host is called plover.\n" + "line of the pasted log\n" * 300_000  # 6.6 MiB
    lines = [
        _line("user", pasted),
        _line("assistant", [{"type": "text", "text": "Noted: plover."},
                            {"type": "tool_use", "id": "t1", "name": "Write", "input": {"content": "é\\\"" * 2_000_000}}]),
        _line("user", [{"type": "tool_result", "tool_use_id": "t1", "content": "I prefer octarine. " + "z" * (5 << 20)}]),
        _line("user", "Please remember that the release branch is named heron-2."),  # control: a short line
        _line("assistant", [{"type": "text", "text": "Noted: heron-2."}]),
    ]
    transcript = tmp_path / "big.jsonl"
    _write_transcript(transcript, lines, garbage=False)
    with transcript.open("a") as handle:
        handle.write('{"type": "user", "message": "' + "n" * (5 << 20) + '" not json\n')
    payload = {"session_id": "big", "transcript_path": str(transcript), "hook_event_name": "SessionEnd"}
    done = run_hook(hook_command(project, "SessionEnd"), payload, project)
    assert done.returncode == 0, done.stderr
    assert "2 exchange(s) read, 2 fact(s) stored" in done.stderr and "1 malformed" in done.stderr, done.stderr
    assert _recall("release branch heron")
    staging = [hit["content"] for hit in _recall("staging host plover")]
    assert "The staging host is called plover." in staging, staging
    assert _recall("octarine") == []  # the tool's output
    (session,) = json.loads(arcana("session", "list", "--agent", "dev", "--json").stdout)
    shown = json.loads(arcana("session", "show", session["id"], "--agent", "dev", "--json").stdout)
    prompt, reply = shown["turns"][0]["prompt"], shown["turns"][0]["response"]
    assert prompt.startswith("Remember that the staging host") and prompt.endswith("…") and len(prompt) <= 8000
    assert reply == "Noted: plover."


@pytest.mark.parametrize("skew", range(6))
def test_a_long_lines_strings_are_cut_whole_across_chunks(tmp_path, skew):
    """A long line is read in chunks and its strings cut short: an escape split by a chunk's end, or an
    escape or UTF-8 character split by the cut, must leave the line JSON, read as any line."""
    from memory.hosts.claude_code import MAX_TEXT_CHARS, read_transcript

    max_line = 400_000
    said = '{"type": "user", "uuid": "u1", "message": {"role": "user", "content": "Remember that ' + "x" * skew
    said += "\\u00e9" * 40_000 + "é" * 50_000 + '"}, "toolUseResult": "'  # the cut falls inside an escape
    pad = max_line - len(said.encode())
    raw = said + "b" * pad + '\\"' + "b" * 1000 + '"}\n'
    assert raw.encode()[max_line] == ord("\\")  # the first chunk ends on a backslash
    path = tmp_path / "t.jsonl"
    cut_in_a_character = "x" * skew + "é" * 250_000
    path.write_text(raw + json.dumps(_line("user", [{"type": "text", "text": cut_in_a_character}]), ensure_ascii=False) + "\n")
    with path.open("rb") as handle:
        read = read_transcript(handle, 0, max_bytes=1 << 30, max_line=max_line)
    assert read.malformed == 0 and len(read.exchanges) == 2, read
    assert read.exchanges[0].prompt.startswith("Remember that " + "x" * skew + "éé") and len(read.exchanges[0].prompt) == MAX_TEXT_CHARS
    assert read.exchanges[1].prompt.endswith("éé…") and len(read.exchanges[1].prompt) == MAX_TEXT_CHARS


def test_a_transcript_over_the_hooks_budget_is_finished_by_the_next_hook(home, project, tmp_path):
    """A hook reads at most 64 MiB of a transcript: what lies beyond is read by the next hook (or a
    session resuming this one), and stderr says so, once, only when something is left."""
    assert setup(project, "--write").returncode == 0
    end = hook_command(project, "SessionEnd")
    output = _line("user", [{"type": "tool_result", "tool_use_id": "t", "content": "z" * (3 << 20)}])
    lines = [_line("user", "Please remember that the release branch is named heron-2."),
             *[output] * 23, _line("user", "Note that the build cache lives in /var/kiln.")]  # 69 MiB
    transcript = tmp_path / "long.jsonl"
    _write_transcript(transcript, lines, garbage=False)
    payload = {"session_id": "long", "transcript_path": str(transcript), "hook_event_name": "PreCompact"}
    first = run_hook(end, payload, project)
    assert first.returncode == 0 and "1 exchange(s) read" in first.stderr, first.stderr
    assert "64 MiB" in first.stderr and "next hook" in first.stderr and _recall("kiln") == []
    rest = run_hook(end, {**payload, "hook_event_name": "SessionEnd"}, project)
    assert rest.returncode == 0 and rest.stderr.startswith("1 exchange(s) read"), rest.stderr  # nothing left: no warning
    assert _recall("build cache kiln") and _recall("release branch heron")


SECRETS = {
    "openai": "sk-proj-Q3vT9xL2mN8pR4sW7yZ1aB5cD6eF0gH2jK4lM",
    "anthropic": "sk-ant-api03-Zx8Yw7Vu6Ts5Rq4Po3Nm2Lk1Jh0Gf9Ed8Cb7Aa-1bC2dE3fAA",
    "github": "ghp_R2d2C3po4Bb8Ee1Yy7Kk5Ll0Mm9Nn3Oo6Pp2Qq",
    "github-fine": "github_pat_11ABCDEFG0abcdefghijkl_mnopqrstuvwxyz0123456789ABCDEFGHIJ",
    "aws-id": "AKIAIOSFODNN7EXAMPLE",
    "aws-secret": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "slack": "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "key": "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7",
}


def test_secrets_pasted_into_a_session_are_never_stored(home, project, tmp_path):
    """A transcript holds what the person pasted: an API key or a private key went into the session's
    turns, its summary and a semantic memory, in plain text in the agent's store. Obvious secrets are
    replaced before anything is written; ordinary words that look like them are kept."""
    assert setup(project, "--write").returncode == 0
    key = "-----BEGIN OPENSSH PRIVATE KEY-----\n" + SECRETS["key"] + "\n-----END OPENSSH PRIVATE KEY-----"
    lines = [
        _line("user", f"Remember that the deploy key for plover is {SECRETS['openai']} and the bot uses {SECRETS['anthropic']}."),
        _line("assistant", [{"type": "text", "text": f"Stored. Also seen: {SECRETS['github']}, {SECRETS['github-fine']}."}]),
        _line("user", f"Note that CI reads aws_access_key_id={SECRETS['aws-id']} aws_secret_access_key = {SECRETS['aws-secret']} "
                      f"and slack {SECRETS['slack']}; here is the key:\n{key}\nkeep it safe."),
        _line("assistant", [{"type": "text", "text": "Understood."}]),
        # control: words like theirs, no secret in them
        _line("user", "Remember that the risk-assessment-for-the-quarterly-plan uses sk-learn-compatible-pipelines, "
                      "AKIA is the prefix of AWS key ids, ghp_ starts a GitHub token, and aws_secret_access_key "
                      "is read from the environment; BEGIN PRIVATE KEY marks a PEM file."),
        _line("assistant", [{"type": "text", "text": "Noted."}]),
    ]
    transcript = tmp_path / "secrets.jsonl"
    _write_transcript(transcript, lines, garbage=False)
    payload = {"session_id": "sec", "transcript_path": str(transcript), "hook_event_name": "SessionEnd"}
    done = run_hook(hook_command(project, "SessionEnd"), payload, project)
    assert done.returncode == 0 and done.stderr.startswith("3 exchange(s) read, 3 fact(s) stored"), done.stderr
    stored = b"".join(path.read_bytes() for path in home.rglob("*") if path.is_file())
    for name, secret in SECRETS.items():
        assert secret.encode() not in stored, name
    plover = [hit["content"] for hit in _recall("deploy key plover")]
    assert any("[secret removed]" in text for text in plover), plover  # the fact is kept, its secret gone
    control = " ".join(hit["content"] for hit in _recall("risk assessment quarterly plan pipelines"))
    for kept in ("risk-assessment-for-the-quarterly-plan", "sk-learn-compatible-pipelines", "AKIA is the prefix",
                 "ghp_ starts", "aws_secret_access_key is read", "BEGIN PRIVATE KEY marks"):
        assert kept in control, kept


def test_a_save_that_cannot_run_never_blocks_the_compaction(home, project, tmp_path):
    """Claude Code blocks a compaction when its PreCompact hook exits 2 (our man page and the empty
    transcript_path case say so). Every refusal of `host save` was exit 2: a transcript deleted or
    unreadable, a FIFO, a hook input cut short, an option edited wrong, each held up the user's
    compaction (an auto compaction with a full window), though nothing is lost by letting it go on
    (the transcript stays on disk; the next hook reads it). Each is now reported with exit 1."""
    assert setup(project, "--write").returncode == 0
    command = hook_command(project, "PreCompact")
    unreadable = tmp_path / "unreadable.jsonl"
    unreadable.write_text("{}\n")
    unreadable.chmod(0)
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    hook = {"session_id": "s9", "hook_event_name": "PreCompact", "trigger": "auto"}
    for payload, why in [({**hook, "transcript_path": str(tmp_path / "gone.jsonl")}, "no such file"),
                         ({**hook, "transcript_path": str(fifo)}, "not a regular file"),
                         ({**hook, "transcript_path": "relative.jsonl"}, "not an absolute path"),
                         ({"session_id": "s9"}, "transcript_path")]:
        done = run_hook(command, payload, project)
        assert done.returncode == exit_codes.FAILURE, (payload, done.returncode, done.stderr)
        assert why in done.stderr and done.stderr.count("\n") == 1 and done.stdout == "", done.stderr
    cut = subprocess.run(["/bin/sh", "-c", command], input='{"session_id": "s9", "transc', capture_output=True,
                         text=True, timeout=60, cwd=project)
    assert cut.returncode == exit_codes.FAILURE and "is not JSON" in cut.stderr, cut.stderr
    edited = subprocess.run(["/bin/sh", "-c", command + " --agnet x"], input="{}", capture_output=True, text=True,
                            timeout=60, cwd=project)
    assert edited.returncode == exit_codes.FAILURE and edited.stderr.count("\n") == 1, edited.stderr
    if os.geteuid() != 0:  # root reads a file of mode 0
        done = run_hook(command, {**hook, "transcript_path": str(unreadable)}, project)
        assert done.returncode == exit_codes.FAILURE and "cannot read it" in done.stderr, done.stderr
    # controls: the same hook with a real transcript stores, and other commands keep exit 2 for usage
    good = tmp_path / "good.jsonl"
    _write_transcript(good, TRANSCRIPT[-2:], garbage=False)
    done = run_hook(command, {**hook, "transcript_path": str(good)}, project)
    assert done.returncode == 0 and "1 fact(s) stored" in done.stderr, done.stderr
    assert arcana("host", "setup", "vim", "--agent", "dev").returncode == exit_codes.USAGE
    assert arcana("host", "save", "claude-code", "--agent", "dev", "--jsno", stdin="{}").returncode == exit_codes.FAILURE


def test_a_save_killed_midway_then_run_again_loses_nothing_and_records_no_exchange_twice(home, project, tmp_path):
    """A save SIGKILLed while it recorded turns left its open session behind; the next save, reading the
    same stretch again, opened a second session holding those exchanges a second time (two sessions
    listed, the first never closed). The save now resumes the session it was writing."""
    assert arcana("agent", "create", "dev").returncode == 0
    dev = agent_id("dev")
    transcript = tmp_path / "k1.jsonl"
    said = [f"Remember that widget number {n} is painted shade{n}x." for n in range(300)]
    _write_transcript(transcript, [line for n, text in enumerate(said) for line in (
        {**_line("user", text), "sessionId": "k1", "uuid": f"u{n}"},
        {**_line("assistant", [{"type": "text", "text": "Noted."}]), "sessionId": "k1", "uuid": f"a{n}"})],
        garbage=False)
    hook = json.dumps({"session_id": "k1", "transcript_path": str(transcript), "hook_event_name": "PreCompact"})
    sessions = home / "agents" / dev / "sessions"
    save = subprocess.Popen([sys.executable, "-m", "arcana_cli.main", "host", "save", "claude-code", "--agent", "dev"],
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    save.stdin.write(hook.encode())
    save.stdin.close()
    turns = 0
    while turns < 20 and save.poll() is None:
        turns = sum(path.read_text().count('"kind": "turn"') for path in sessions.glob("*.jsonl"))
    assert save.poll() is None, "the save finished before it could be killed"
    save.kill()
    assert save.wait() == -9

    again = arcana("host", "save", "claude-code", "--agent", "dev", "--json", stdin=hook)
    assert again.returncode == 0, again.stderr
    listed = json.loads(arcana("session", "list", "--agent", "dev", "--json").stdout)
    assert len(listed) == 1 and listed[0]["turns"] == 300 and listed[0]["closed_at"], listed
    memories = json.loads(arcana("memory", "list", "--agent", "dev", "--limit", "1000", "--json").stdout)
    facts = [m for m in memories if m["content"].startswith("Widget number")]
    assert len(facts) == 300 and len({m["content"] for m in facts}) == 300  # every fact, once (positive control)
    assert {m["source_session_id"] for m in facts} == {listed[0]["id"]}
    end = arcana("host", "save", "claude-code", "--agent", "dev", "--json", stdin=hook)  # a third run: nothing new
    assert json.loads(end.stdout)["exchanges"] == 0 and len(json.loads(
        arcana("session", "list", "--agent", "dev", "--json").stdout)) == 1


def test_the_save_hook_of_a_deleted_agent_is_not_found_not_a_bad_name(home, project, tmp_path):
    """The hooks name the agent by id. After `agent delete` the save hook (a storing command, so it creates
    an unknown agent) tried to create an agent named by that id and refused it as a name: exit 2, which
    from PreCompact blocks the compaction, saying "choose a name with a non-hex letter". An id no agent
    has is exit 3, as the man page promises for the hooks, and nothing is created."""
    assert setup(project, "--write").returncode == 0
    dev = agent_id("dev")
    transcript = tmp_path / "gone.jsonl"
    _write_transcript(transcript, TRANSCRIPT[-2:], garbage=False)
    hook = {"session_id": "d1", "transcript_path": str(transcript), "hook_event_name": "PreCompact"}
    assert arcana("agent", "delete", "dev", "--yes").returncode == 0
    done = run_hook(hook_command(project, "PreCompact"), hook, project)
    assert done.returncode == exit_codes.NOT_FOUND, done.stderr
    assert dev in done.stderr and "choose a name" not in done.stderr and done.stderr.count("\n") == 1, done.stderr
    stored = arcana("remember", "The build uses make.", "--agent", dev[:12])
    assert stored.returncode == exit_codes.NOT_FOUND and "choose a name" not in stored.stderr, stored.stderr
    assert json.loads(arcana("agent", "list", "--json").stdout) == []  # nothing created for either
    # control: a storing command still creates an agent for an ordinary new name
    assert arcana("remember", "The build uses make.", "--agent", "fresh").returncode == 0
    assert [a["name"] for a in json.loads(arcana("agent", "list", "--json").stdout)] == ["fresh"]
