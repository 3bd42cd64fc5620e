"""Bad input through the CLI, where a user meets it: a clear error and a documented exit code, never a traceback.

Issue 9, items 7-14. Each refusal sits next to a positive control in the same home.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from arcana_cli import exit_codes
from memory.adapters.sqlite import SQLiteAdapter
from memory.agents import AgentRegistry
from memory.errors import InvalidRequestError
from memory.limits import MAX_CONTENT_BYTES
from memory.types import MemoryEntry

ROOT = Path(__file__).resolve().parents[2]
ARCANA = [sys.executable, "-m", "arcana_cli.main"]
BAD_NAME = b"bad\xffname.md"


def env_for(home) -> dict[str, str]:
    return {**os.environ, "ARCANA_HOME": str(home.root)}


def no_traceback(result) -> None:
    assert "Traceback" not in (result.stderr or "") and (result.exception is None or isinstance(result.exception, SystemExit))


def seed(home, name: str, contents: list[str], **fields) -> str:
    """Memories written through the library into agent ``name``'s private store; returns the agent id."""
    registry = AgentRegistry(home)
    card = registry.resolve(name) if registry.exists(name) else registry.create(name)

    async def go():
        store = SQLiteAdapter.for_agent(card.id, home=home)
        await store.write_many([MemoryEntry(agent_id=card.id, content=c, **fields) for c in contents])
        await store.aclose()

    asyncio.run(go())
    return card.id


# -- 7: vault file names that are not UTF-8 --------------------------------------


@pytest.fixture
def hostile_vault(tmp_path, no_embedder):
    root = tmp_path / "notes"
    root.mkdir()
    (root / "good.md").write_text("# Good\n\nThe lighthouse keeper logs the tides.\n")
    os.makedirs(os.fsencode(root) + b"/sub\xfe")
    with open(os.fsencode(root) + b"/" + BAD_NAME, "wb") as handle:
        handle.write(b"# Bad\n\nA note whose name is not UTF-8.\n")
    with open(os.fsencode(root) + b"/sub\xfe/inner.md", "wb") as handle:
        handle.write(b"# Inner\n")
    return root


def test_vault_index_and_check_skip_a_file_name_that_is_not_utf8(cli, hostile_vault):
    assert cli("vault", "add", str(hostile_vault), "--name", "v").exit_code == 0
    index = cli("vault", "index", "v", "--json")
    no_traceback(index)
    assert index.exit_code == 0, index.stderr
    report = json.loads(index.stdout)
    assert report["added"] == 1  # positive control: the rest of the vault is indexed
    skipped = {(f["path"], f["reason"]) for f in report["skipped_files"]}
    assert skipped == {("bad\\xffname.md", "name_not_utf8"), ("sub\\xfe", "name_not_utf8")}
    check = cli("vault", "check", "v", "--json")
    no_traceback(check)
    assert check.exit_code == 0 and "name_not_utf8" in check.stdout and "bad\\\\xffname.md" in check.stdout


def test_vault_watch_keeps_running_past_a_file_name_that_is_not_utf8(cli, tmp_path, no_embedder, arcana_home):
    root = tmp_path / "notes"
    root.mkdir()
    (root / "first.md").write_text("# First\n")
    assert cli("vault", "add", str(root), "--name", "w").exit_code == 0
    proc = subprocess.Popen(
        [*ARCANA, "vault", "watch", "w", "--json", "--debounce", "100"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env_for(arcana_home), stdin=subprocess.DEVNULL,
    )
    try:
        assert json.loads(proc.stdout.readline())["event"] == "index"  # the catch-up pass
        with open(os.fsencode(root) + b"/" + BAD_NAME, "wb") as handle:
            handle.write(b"# Bad\n")
        time.sleep(1.0)
        (root / "second.md").write_text("# Second\n")
        events = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            event = json.loads(proc.stdout.readline())
            events.append(event)
            if event["event"] == "index" and event["report"]["added"] == 1:
                break
        assert events[-1]["event"] == "index", events  # the watch is alive and indexed the good file
        assert proc.poll() is None
        status = json.loads(cli("vault", "status", "w", "--json").stdout)
        assert status["notes_indexed"] == 2 and status["watch"]["running"]
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0 and "Traceback" not in err


# -- 8: config files that are not UTF-8 ----------------------------------------------


@pytest.mark.parametrize("which", ["config", "connections"])
def test_a_config_file_saved_as_utf16_exits_4_naming_it_and_is_left_untouched(cli, arcana_home, which):
    seed(arcana_home, "ada", ["The deploy runs on Tuesdays."])
    path = arcana_home.config_path if which == "config" else arcana_home.connections_path
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps({"recall": {"limit": 5}} if which == "config" else {"private": {"read_timeout_ms": 3000}})
    path.write_bytes(text.encode("utf-16"))
    before = path.read_bytes()
    result = cli("recall", "deploy", "--agent", "ada")
    no_traceback(result)
    assert result.exit_code == exit_codes.CONFIG
    assert str(path) in result.stderr and "not UTF-8" in result.stderr and result.stderr.count("\n") == 1
    assert path.read_bytes() == before
    path.write_text(text, encoding="utf-8")  # positive control: the same settings in UTF-8 work
    assert cli("recall", "deploy", "--agent", "ada").exit_code == 0


@pytest.mark.parametrize("which", ["config", "connections"])
def test_a_config_file_nested_too_deeply_exits_4_naming_it_and_is_left_untouched(cli, arcana_home, which):
    """connections/memory-adapters.json nested past Python's recursion limit ended in a RecursionError traceback."""
    seed(arcana_home, "ada", ["The deploy runs on Tuesdays."])
    path = arcana_home.config_path if which == "config" else arcana_home.connections_path
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"private": ' + "[" * 100_000 + "]" * 100_000 + "}", encoding="utf-8")
    before = path.read_bytes()
    result = cli("recall", "deploy", "--agent", "ada")
    no_traceback(result)
    assert result.exit_code == exit_codes.CONFIG, result.output
    assert str(path) in result.stderr and "nested too deeply" in result.stderr and result.stderr.count("\n") == 1
    assert path.read_bytes() == before
    path.write_text(json.dumps({"recall": {"limit": 5}} if which == "config" else {"private": {"read_timeout_ms": 3000}}))
    assert cli("recall", "deploy", "--agent", "ada").exit_code == 0  # positive control: a sane file works


# -- 9: vault add twice ----------------------------------------------------------------


def test_adding_the_same_vault_folder_twice_says_so_with_exit_2(cli, arcana_home, tmp_path):
    folder, other = tmp_path / "notes", tmp_path / "other"
    folder.mkdir(), other.mkdir()
    assert cli("vault", "add", str(folder), "--name", "x").exit_code == 0
    config_before = arcana_home.config_path.read_bytes()
    for args in ((str(folder), "--name", "x"), (str(folder), "--name", "y"), (str(other), "--name", "x")):
        again = cli("vault", "add", *args)
        no_traceback(again)
        assert again.exit_code == exit_codes.USAGE and again.stderr.startswith("arcana: error: ")
    assert "already registered as vault 'x'" in cli("vault", "add", str(folder), "--name", "x").stderr
    assert arcana_home.config_path.read_bytes() == config_before
    assert cli("vault", "add", str(other), "--name", "y").exit_code == 0  # control: a new folder is fine


def test_vault_add_of_a_file_is_a_usage_error_and_of_a_missing_folder_not_found(arcana_home, no_embedder, tmp_path):
    """`vault add FILE` said 'no such directory', exit 3, as for a folder that is not there: a file is
    there, and the path given is the wrong kind (exit 2). A missing folder stays exit 3 (man/exit-codes.md)."""
    from runner import run_arcana

    a_file = tmp_path / "notes.md"
    a_file.write_text("# a note, not a vault\n")
    refused = run_arcana("vault", "add", str(a_file), "--name", "v")
    assert refused.returncode == exit_codes.USAGE, refused.stderr
    [line] = refused.stderr.splitlines()
    assert "is a file, not a folder" in line and "no such directory" not in line
    missing = run_arcana("vault", "add", str(tmp_path / "gone"), "--name", "v")
    assert missing.returncode == exit_codes.NOT_FOUND and "no such directory" in missing.stderr
    assert "vaults" not in json.loads(arcana_home.config_path.read_text())
    (tmp_path / "notes").mkdir()  # tmp_path itself holds the home, which no vault may (test_vault_apart.py)
    assert run_arcana("vault", "add", str(tmp_path / "notes"), "--name", "v").returncode == 0  # control: a folder


# -- 10: exit 141 on a closed pipe -----------------------------------------------------------


@pytest.mark.parametrize("fmt", [["--json"], []])
def test_a_reader_that_leaves_early_gives_exit_141_and_a_silent_stderr(arcana_home, fmt):
    seed(arcana_home, "ada", [f"memory {i} " + "about the tides " * 12 for i in range(1500)])
    args = [*ARCANA, "memory", "list", "--agent", "ada", "--limit", "1500", *fmt]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env_for(arcana_home))
    assert proc.stdout.read(1)  # `| head -c1`: one byte, then the reader is gone
    proc.stdout.close()
    err = proc.stderr.read()
    assert (proc.wait(timeout=60), err) == (exit_codes.PIPE_CLOSED, b"")
    full = subprocess.run(args, capture_output=True, env=env_for(arcana_home), timeout=60)  # control: read it all
    assert full.returncode == 0 and len(full.stdout) > 2 * 64 * 1024  # more than a pipe holds


# -- 11: input size -------------------------------------------------------------------------------


# Runs argv[1:] and prints its peak RSS (KiB) on stdout. A child forked straight from pytest
# would report pytest's own RSS as its peak (Linux carries it across fork and exec); one
# forked from this small launcher reports only its own.
PEAK_RSS = (
    "import os, subprocess, sys\n"
    "child = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)\n"
    "_, status, usage = os.wait4(child.pid, 0)\n"
    "print(usage.ru_maxrss)\n"
    "sys.exit(os.waitstatus_to_exitcode(status))\n"
)


def test_remember_refuses_5_mb_on_stdin_quickly_and_stores_nothing(arcana_home, no_embedder):
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-c", PEAK_RSS, *ARCANA, "remember", "--agent", "ada"], stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env_for(arcana_home),
    )
    try:
        proc.stdin.write(b"tides " * (5_000_000 // 6))
        proc.stdin.close()
    except BrokenPipeError:
        pass  # refused before it read everything: the point
    peak_kib, err = int(proc.stdout.read()), proc.stderr.read().decode()
    assert proc.wait(timeout=60) == exit_codes.USAGE and "over the limit of 1,048,576 bytes" in err
    assert peak_kib < 300 * 1024 and time.monotonic() - started < 30  # a bound costs no memory
    assert "Traceback" not in err
    listed = subprocess.run([*ARCANA, "memory", "list", "--agent", "ada", "--json"], capture_output=True,
                            env=env_for(arcana_home), text=True)
    assert listed.returncode in (0, exit_codes.NOT_FOUND) and "tides" not in listed.stdout


def test_the_content_limit_holds_for_text_stdin_and_the_config_key(cli, no_embedder):
    just_under = "x" * (MAX_CONTENT_BYTES - 64)
    assert cli("remember", just_under, "--agent", "ada").exit_code == 0  # positive control
    over = "é" * (MAX_CONTENT_BYTES // 2 + 1)  # under the limit in characters, over it in UTF-8 bytes
    for result in (cli("remember", over, "--agent", "ada"), cli("remember", "--agent", "ada", input=over)):
        no_traceback(result)
        assert result.exit_code == exit_codes.USAGE and "memory.max_content_bytes" in result.stderr
    assert cli("config", "set", "memory.max_content_bytes", "2048").exit_code == 0
    assert cli("remember", "y" * 3000, "--agent", "ada").exit_code == exit_codes.USAGE
    assert cli("remember", "y" * 1000, "--agent", "ada").exit_code == 0
    raised = cli("config", "set", "memory.max_content_bytes", str(MAX_CONTENT_BYTES + 1))
    assert raised.exit_code == exit_codes.USAGE  # the core's ceiling (a bad argument: exit 2)
    listed = json.loads(cli("memory", "list", "--agent", "ada", "--json").stdout)
    assert sorted(len(m["content"]) for m in listed) == [1000, len(just_under)]


async def test_a_library_write_over_the_limit_is_refused_before_anything_is_written(tmp_path):
    store = SQLiteAdapter(tmp_path / "m.db")
    fine = MemoryEntry(agent_id="a", content="small and fine")
    with pytest.raises(InvalidRequestError, match="over the limit"):
        await store.write_many([fine, MemoryEntry(agent_id="a", content="z" * (MAX_CONTENT_BYTES + 1))])
    assert await store.count() == 0  # the whole call refused: not half of it
    await store.write(fine)  # control
    with pytest.raises(InvalidRequestError):
        await store.update(fine.id, content="z" * (MAX_CONTENT_BYTES + 1))
    assert (await store.get(fine.id)).content == "small and fine" and await store.count() == 1
    await store.aclose()


def test_the_embedder_cut_is_above_256_tokens_of_worst_case_text(offline_embedder):
    """Words of <= 100 characters WordPiece cannot split are one [UNK] each: the fewest tokens per character."""
    from memory.embedding.fastembed import CHAR_BUDGET

    tokenizer = offline_embedder._load().model.tokenizer
    worst = " ".join(["\U0001f600" * 100] * 400)
    tokenizer.no_truncation()
    try:
        assert len(tokenizer.encode(worst[:CHAR_BUDGET]).ids) >= 256 + 2  # + [CLS] and [SEP]
    finally:
        tokenizer.enable_truncation(256)
    long_prose = "The keeper logs the tides at dawn and at dusk. " * 4000  # ~190 KB
    cut, whole = asyncio.run(offline_embedder.embed([long_prose]))[0], next(iter(offline_embedder._load().embed([long_prose])))
    norm = sum(v * v for v in whole) ** 0.5
    assert max(abs(a - b / norm) for a, b in zip(cut, whole, strict=True)) < 1e-5  # same vector, uncut


# -- 12: agent names that look like ids ----------------------------------------------------------


def test_an_agent_name_that_looks_like_an_id_is_refused_and_ids_keep_resolving(cli, arcana_home, no_embedder):
    assert cli("agent", "create", "ada").exit_code == 0
    ada = AgentRegistry(arcana_home).resolve("ada").id
    assert cli("remember", "ada's own fact", "--agent", ada).exit_code == 0
    for name in (ada, ada[:8], ada.upper(), "decade", "123456", "3f2a9c1e-0000-4000-8000-000000000000"):
        created = cli("agent", "create", name)
        no_traceback(created)
        assert created.exit_code == exit_codes.USAGE and "looks like an agent id" in created.stderr, name
    assert cli("agent", "create", "bob").exit_code == 0  # control: ordinary names, short hex words
    assert cli("agent", "create", "cafe").exit_code == 0
    renamed = cli("agent", "rename", "bob", ada[:10])
    assert renamed.exit_code == exit_codes.USAGE
    recalled = json.loads(cli("recall", "fact", "--agent", ada, "--json").stdout)
    assert recalled["agent"] == "ada" and [r["content"] for r in recalled["results"]] == ["ada's own fact"]


def test_an_id_outranks_a_name_made_before_names_were_checked(arcana_home):
    registry = AgentRegistry(arcana_home)
    ada = registry.create("ada")
    impostor = registry.create("impostor")
    impostor.name = ada.id  # an old card, written before the rule
    registry.save(impostor)
    assert registry.resolve(ada.id).name == "ada"
    assert registry.resolve(impostor.id).id == impostor.id


# -- 13: permissions -------------------------------------------------------------------------------


def test_every_folder_is_0700_and_every_file_0600_and_doctor_checks(cli, arcana_home, tmp_path, no_embedder):
    old = os.umask(0o022)
    try:
        notes = tmp_path / "notes"
        notes.mkdir()
        (notes / "a.md").write_text("# A\n")
        for args in (
            ("agent", "create", "ada"),
            ("remember", "a fact", "--agent", "ada"),
            ("pool", "create", "team"),
            ("agent", "join", "ada", "team"),
            ("remember", "a team fact", "--agent", "ada", "--pool", "team"),
            ("vault", "add", str(notes), "--name", "n"),
            ("vault", "index", "n"),
            ("agent", "create", "gone"),
            ("agent", "delete", "gone", "--yes"),
        ):
            assert cli(*args).exit_code == 0, args
        db = arcana_home.agent_db(AgentRegistry(arcana_home).resolve("ada").id)
        db.write_bytes(b"this is not a database" * 500)  # recall moves it to quarantine/
        assert cli("recall", "fact", "--agent", "ada").exit_code in (0, exit_codes.STORAGE)
    finally:
        os.umask(old)
    seen = {p.relative_to(arcana_home.root).parts[0] for p in arcana_home.root.rglob("*")}
    assert {"agents", "pools", "vaults", "logs", "locks", "quarantine", "trash"} <= seen
    wrong = [
        (str(p), oct(stat.S_IMODE(p.lstat().st_mode)))
        for p in [arcana_home.root, *arcana_home.root.rglob("*")]
        if "models" not in p.relative_to(arcana_home.root).parts[:1]
        and stat.S_IMODE(p.lstat().st_mode) != (0o700 if p.is_dir() else 0o600)
    ]
    assert wrong == []
    doctor = json.loads(cli("doctor", "--json").stdout)
    assert {c["name"]: c["ok"] for c in doctor["checks"]}["file permissions"]  # control
    (arcana_home.pools_dir / "team.db").chmod(0o644)
    doctor = cli("doctor", "--json")
    check = {c["name"]: c for c in json.loads(doctor.stdout)["checks"]}["file permissions"]
    assert doctor.exit_code == exit_codes.FAILURE and not check["ok"] and "pools/team.db (644)" in check["detail"]


# -- 14: day-one papercuts ----------------------------------------------------------------------------


@pytest.mark.parametrize("query", ["", "   ", "\t\n"])
def test_an_empty_recall_query_exits_2_and_points_to_memory_list(cli, no_embedder, query):
    assert cli("remember", "the tides at dawn", "--agent", "ada").exit_code == 0
    result = cli("recall", query, "--agent", "ada", "--json")
    no_traceback(result)
    assert result.exit_code == exit_codes.USAGE and "arcana memory list" in result.stderr and result.stdout == ""
    assert json.loads(cli("recall", "tides", "--agent", "ada", "--json").stdout)["results"]  # control


def test_the_manual_cron_line_works_as_written_without_prune_config(cli, arcana_home, no_embedder):
    line = re.search(r"^15 3 \* \* \* (arcana prune .*)$", (ROOT / "man" / "memory.md").read_text(), re.M).group(1)
    assert line == "arcana prune --all --pool team --global --quiet"
    assert cli("pool", "create", "team").exit_code == 0
    seed(arcana_home, "ada", ["barely worth keeping"], importance=0.05)
    seed(arcana_home, "ada", ["worth keeping"], importance=0.5)
    result = cli(*line.split()[1:])
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", "")
    listed = json.loads(cli("memory", "list", "--agent", "ada", "--archived", "--json").stdout)
    archived = {m["content"]: m["archived"] for m in listed}
    assert archived == {"barely worth keeping": True, "worth keeping": False}  # archived, not purged


def _indexed_vault(cli, tmp_path, home):
    """Vault ``n``: one note, indexed by the CLI."""
    from memory.vaults.registry import VaultRegistry

    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# A\n")
    assert cli("vault", "add", str(notes), "--name", "n").exit_code == 0
    assert cli("vault", "index", "n").exit_code == 0
    return VaultRegistry(home).get("n")


@pytest.mark.parametrize("state", ['{"last_event_at": 1e300, "watch_started_at": "2024-05-01", "last_error": 5}',
                                   "[" * 100_000 + "]" * 100_000])
def test_vault_status_reads_a_damaged_state_file_as_unknown_not_a_traceback(cli, tmp_path, no_embedder, arcana_home, state):
    """A state file with a time past time_t (OverflowError) or nested past the parser's depth
    (RecursionError) made `vault status` a traceback; now such values read as never/none."""
    vault = _indexed_vault(cli, tmp_path, arcana_home)
    good = json.loads(cli("vault", "status", "n", "--json").stdout)
    assert good["last_indexed_at"] and good["notes_indexed"] == 1  # the control: an index recorded
    vault.state_path.write_text(state)
    for args in (("vault", "status", "n"), ("vault", "status", "n", "--json")):
        result = cli(*args)
        no_traceback(result)
        assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)
    assert shown["notes_indexed"] == 1 and shown["last_error"] is None
    assert shown["watch"]["last_event_at"] is None and shown["watch"]["started_at"] is None


def test_vault_status_says_a_damaged_state_file_is_damaged_and_how_to_rebuild_it(cli, tmp_path, no_embedder, arcana_home):
    """A state file that cannot be read made `vault status` say "last indexed: never" of a vault indexed a
    minute before. Now it says the state is damaged and that `vault index` rebuilds it (text and --json);
    the index that rebuilds it is the control."""
    vault = _indexed_vault(cli, tmp_path, arcana_home)
    vault.state_path.write_text('{"last_indexed_at": 17')  # cut short
    text = cli("vault", "status", "n")
    assert text.exit_code == 0, text.output
    [said] = [line for line in text.stdout.splitlines() if line.startswith("last indexed:")]
    assert "damaged" in said and str(vault.state_path) in said and "arcana vault index n" in said, said
    shown = json.loads(cli("vault", "status", "n", "--json").stdout)
    assert "damaged" in shown["state_damaged"] and shown["notes_indexed"] == 1
    assert cli("vault", "index", "n").exit_code == 0  # moves it aside and starts it afresh
    shown = json.loads(cli("vault", "status", "n", "--json").stdout)
    assert shown["state_damaged"] is None and shown["last_indexed_at"]
    [said] = [line for line in cli("vault", "status", "n").stdout.splitlines() if line.startswith("last indexed:")]
    assert "never" not in said and "unknown" not in said, said


def test_vault_status_forgets_an_old_error_after_a_later_success(cli, tmp_path, no_embedder, arcana_home):
    from memory.vaults.registry import VaultRegistry
    from memory.vaults.state import update_state

    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# A\n")
    assert cli("vault", "add", str(notes), "--name", "n").exit_code == 0
    vault = VaultRegistry(arcana_home).get("n")
    update_state(vault.state_path, last_error="index failed: disk full", last_error_at=time.time())  # as a watch records it
    assert json.loads(cli("vault", "status", "n", "--json").stdout)["last_error"] == "index failed: disk full"
    assert cli("vault", "index", "n").exit_code == 0
    status = json.loads(cli("vault", "status", "n", "--json").stdout)
    assert status["last_error"] is None and status["last_indexed_at"] is not None


def test_doctor_never_calls_a_tier_ok_when_its_database_fails(cli, arcana_home, no_embedder):
    seed(arcana_home, "ada", [f"entry {i} about lighthouses and tides" for i in range(2000)])
    seed(arcana_home, "bob", ["bob is fine"])
    db = arcana_home.agent_db(AgentRegistry(arcana_home).resolve("ada").id)
    with open(db, "r+b") as handle:  # damage past the first page: a lookup by id may still succeed
        handle.seek(40 * 4096)
        handle.write(os.urandom(30 * 4096))
    before = db.read_bytes()
    doctor = cli("doctor", "--json")
    checks = {c["name"]: c for c in json.loads(doctor.stdout)["checks"]}
    db_check = next(c for name, c in checks.items() if name.startswith("db agents/") and str(db).endswith(name[3:]))
    assert doctor.exit_code == exit_codes.FAILURE and not db_check["ok"]
    assert not checks["tier private (ada)"]["ok"] and "its database failed" in checks["tier private (ada)"]["detail"]
    assert checks["tier private (bob)"]["ok"]  # control
    assert db.read_bytes() == before  # the tool that diagnoses changed nothing


# -- an empty path argument (an unset variable) is not the current folder -------------------


@pytest.mark.parametrize(
    "args",
    [
        ("--home", "", "agent", "create", "zed"),
        ("backup", ""),
        ("restore", ""),
        ("import", "", "--agent", "ada"),
        ("export", "--agent", "ada", "-o", ""),
        ("vault", "add", "", "--name", "here"),
    ],
)
def test_an_empty_path_is_a_usage_error_not_the_current_folder(cli, arcana_home, tmp_path, monkeypatch, args):
    """`arcana --home "$UNSET"` made the current folder the home (0700); `backup ""` wrote into it,
    `import ""` read its notes, `vault add ""` registered it."""
    seed(arcana_home, "ada", ["The deploy runs on Tuesdays."])
    here = tmp_path / "cwd"
    here.mkdir(mode=0o755)
    monkeypatch.chdir(here)
    result = cli(*args)
    no_traceback(result)
    assert result.exit_code == exit_codes.USAGE, result.output
    assert "the path is empty" in result.stderr and result.stderr.count("\n") == 1
    assert list(here.iterdir()) == [] and stat.S_IMODE(here.stat().st_mode) == 0o755
    assert cli("--home", str(arcana_home.root), "backup", ".").exit_code == 0  # control: '.' still means here
    assert [p.name.startswith("arcana-backup-") for p in here.iterdir()] == [True]


def test_a_home_that_is_a_file_is_a_usage_error_not_an_empty_home(no_embedder, tmp_path):
    """`--home FILE` (or ARCANA_HOME=FILE): agent list and config show exited 0 with nothing listed and
    the default config, as if the file were an empty home. Now exit 2, one line saying so; the file untouched."""
    from runner import run_arcana

    assert run_arcana("agent", "create", "ada", home=no_embedder).returncode == 0
    a_file = tmp_path / "notes.txt"
    a_file.write_text("not a home\n")
    for args, kw in ((["--home", str(a_file)], {}), ([], {"home": a_file})):
        for command in (["agent", "list"], ["config", "show"]):
            done = run_arcana(*args, *command, **kw)
            assert done.returncode == exit_codes.USAGE, (args, command, done.stdout)
            [line] = done.stderr.splitlines()
            assert line.startswith("arcana: error: ") and "is a file, not a folder" in line and done.stdout == ""
    assert a_file.read_text() == "not a home\n"
    # Controls: the real home lists its agent; a home that does not exist yet is still made on demand.
    assert "ada" in run_arcana("--home", str(no_embedder.root), "agent", "list").stdout
    assert run_arcana("--home", str(tmp_path / "fresh"), "agent", "list").returncode == 0


@pytest.mark.parametrize("budget", [{"read_timeout_ms": "5"}, {"read_timeout_ms": True}, {"fail_threshold": "3"},
                                    {"reset_after_seconds": float("inf")}, {"write_timeout_ms": 10**14},
                                    {"reset_after_seconds": 10**9}])
def test_a_budget_that_is_no_number_or_no_budget_exits_4_naming_the_field(cli, arcana_home, budget):
    """connections/memory-adapters.json took "5" and true as numbers (5 ms, 1 ms), Infinity and a
    timeout of three thousand years: none of them a budget that stops a hung tier."""
    seed(arcana_home, "ada", ["The deploy runs on Tuesdays."])
    path = arcana_home.connections_path
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"private": budget}), encoding="utf-8")
    before = path.read_bytes()
    result = cli("recall", "deploy", "--agent", "ada")
    no_traceback(result)
    assert result.exit_code == exit_codes.CONFIG, result.output
    [line] = result.stderr.splitlines()
    # Infinity is not JSON at all: refused by the reader, before any field is looked at
    why = "Infinity is not a JSON value" if budget == {"reset_after_seconds": float("inf")} else f"private.{next(iter(budget))}:"
    assert f"{path}: {why}" in line and "fix the file" in line
    assert path.read_bytes() == before
    path.write_text(json.dumps({"private": {"read_timeout_ms": 3000, "reset_after_seconds": 12.5}}))
    assert cli("recall", "deploy", "--agent", "ada").exit_code == 0  # positive control: a sane file works


def test_a_config_file_with_a_byte_order_mark_says_so_in_plain_words(cli, arcana_home):
    """A config.json saved as "UTF-8 with BOM" was refused with Python's words: 'Unexpected UTF-8 BOM
    (decode using utf-8-sig)'. It says what the editor calls it and how to re-save it now."""
    seed(arcana_home, "ada", ["The deploy runs on Tuesdays."])
    path = arcana_home.config_path
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps({"recall": {"limit": 5}}).encode())
    result = cli("config", "validate")
    assert result.exit_code == exit_codes.CONFIG and "utf-8-sig" not in result.stderr
    [line] = result.stderr.splitlines()
    assert str(path) in line and 'byte-order mark (an editor\'s "UTF-8 with BOM")' in line and "plain UTF-8" in line
    path.write_bytes(path.read_bytes()[3:])
    assert cli("config", "validate").exit_code == 0  # positive control: the same file without the mark
