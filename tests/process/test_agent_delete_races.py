"""`arcana agent delete` and `restore --force` while other processes are writing for the same agent.

Delete withdraws the agent's global copies, then moves its folder to the trash. A writer that
opened the agent's store before that (a `remember --from` from a CI script, an MCP server) used to
keep writing into the moved file and promote fresh global copies nobody withdrew: every other
agent recalled the deleted agent's facts, and the writer exited 0 saying they were stored.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import time

import pytest
from mcp_client import call, session
from runner import ARCANA, arcana, keyword_only, run_arcana


def _global_rows(home, agent_id: str) -> int:
    try:
        conn = sqlite3.connect(f"file:{home.global_db}?mode=ro", uri=True)
    except sqlite3.Error:
        return 0
    try:
        return conn.execute("SELECT count(*) FROM memories WHERE agent_id = ?", (agent_id,)).fetchone()[0]
    except sqlite3.Error:  # not created yet
        return 0
    finally:
        conn.close()


def _agent_id(name: str) -> str:
    return json.loads(arcana("agent", "show", name, "--json"))["id"]


def _recalls(name: str, word: str) -> list[str]:
    found = json.loads(arcana("recall", word, "--agent", name, "--mode", "keyword", "--json"))
    return [r["content"] for r in found["results"]]


def test_delete_during_remember_from_leaves_no_global_copy(arcana_home, tmp_path):
    keyword_only(arcana_home)
    arcana("remember", "ada keeps the zebra key", "--agent", "ada", "--importance", "0.95")
    arcana("remember", "bob likes tea", "--agent", "bob")
    ada = _agent_id("ada")
    assert _recalls("bob", "zebra") == ["ada keeps the zebra key"]  # positive control: a promoted copy is shared
    lines = tmp_path / "facts.jsonl"
    lines.write_text("".join(json.dumps({"content": f"ada user fact {i} zebra"}) + "\n" for i in range(20_000)))
    writer = subprocess.Popen(
        [*ARCANA, "remember", "--from", str(lines), "--agent", "ada", "--importance", "0.95", "--no-reconcile"],
        env={**os.environ, "ARCANA_HOME": str(arcana_home.root)}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while _global_rows(arcana_home, ada) < 300:  # its promotions are landing: the writer is mid-run
            assert writer.poll() is None and time.monotonic() < deadline, writer.stderr.read() if writer.poll() else ""
            time.sleep(0.02)
        deleted = run_arcana("agent", "delete", "ada", "--yes", "--json")
        out, err = writer.communicate(timeout=60)
    finally:
        if writer.poll() is None:
            writer.kill()
    assert deleted.returncode == 0, deleted.stderr
    assert json.loads(deleted.stdout)["copies"]["changed"] is True
    assert writer.returncode == 3, (out, err)
    *waited, said = err.strip().splitlines()
    assert said == (
        "arcana: error: agent 'ada' was deleted while this process was using it (its memory is in the trash); "
        "nothing more is read or stored for it"
    )
    # A loaded machine: the writer's next batch came while the delete held the agent's lock, and said so.
    assert all(line.startswith("warning: waiting for agent 'ada' to be deleted") for line in waited), waited
    assert _global_rows(arcana_home, ada) == 0  # every copy withdrawn, none promoted after
    assert _recalls("bob", "zebra") == []
    assert not (arcana_home.agent_dir(ada)).exists()  # no folder re-made for the deleted agent


async def test_a_running_mcp_server_stops_serving_a_deleted_agent(arcana_home):
    keyword_only(arcana_home)
    arcana("remember", "the heron code is 42", "--agent", "ada")
    ada = _agent_id("ada")
    async with session("--agent", "ada") as client:
        failed, wrote = await call(client, "remember", content="heron nests by the lake")
        assert not failed and wrote["accepted"] == ["private"]  # the control: the agent is there
        moved = json.loads(arcana("agent", "delete", "ada", "--yes", "--json"))["moved_to"]
        failed, message = await call(client, "remember", content="heron written after the delete")
        assert failed and message.endswith("agent 'ada' was deleted while this process was using it (its memory "
                                           "is in the trash); nothing more is read or stored for it"), message
        failed, message = await call(client, "recall", query="heron", mode="keyword")
        assert failed and "was deleted" in message
    conn = sqlite3.connect(f"{moved}/memory.db")
    try:
        stored = {r[0] for r in conn.execute("SELECT content FROM memories")}
    finally:
        conn.close()
    assert stored == {"the heron code is 42", "heron nests by the lake"}
    assert not arcana_home.agent_dir(ada).exists()


async def test_a_running_mcp_server_stops_writing_once_restore_replaced_the_home(arcana_home, tmp_path):
    """`restore --force` moves the live home to the trash and puts the backup in its place; a server
    started before it wrote into the trashed store and said 'accepted'."""
    keyword_only(arcana_home)
    arcana("remember", "the heron code is 42", "--agent", "ada")
    arcana("backup", str(tmp_path / "backups"))
    async with session("--agent", "ada") as client:
        failed, wrote = await call(client, "remember", content="heron nests by the lake")
        assert not failed and wrote["accepted"] == ["private"]  # the control: the store is the one open
        arcana("restore", str(tmp_path / "backups"), "--force")
        failed, message = await call(client, "remember", content="heron written after the restore")
        assert failed and message.endswith(
            "agent 'ada': its memory database was replaced while this process was using it (a restore --force, "
            "or the file moved); nothing more is read or stored through this process: start it again"), message
        failed, message = await call(client, "recall", query="heron", mode="keyword")
        assert failed and "was replaced" in message
    trashed = [str(db) for db in (arcana_home.root / "trash").rglob("memory.db")]
    for db in (arcana_home.agent_db(_agent_id("ada")), *trashed):
        conn = sqlite3.connect(db)
        try:
            assert "heron written after the restore" not in {r[0] for r in conn.execute("SELECT content FROM memories")}
        finally:
            conn.close()
    assert trashed and _recalls("ada", "heron") == ["the heron code is 42"]  # the restored home, as backed up


async def test_a_command_that_resolved_the_agent_before_its_delete_makes_no_empty_store(arcana_home):
    """`arcana remember` (or `run`) reads the card, then opens the store: a delete in between left
    `agents/<id>/memory.db` made again, empty and without a card, though the write was refused."""
    from memory.agents import AgentRegistry
    from memory.errors import NotFoundError
    from memory.runtime.assembly import federation_for_agent

    keyword_only(arcana_home)
    arcana("remember", "the heron code is 42", "--agent", "ada")
    card = AgentRegistry(arcana_home).resolve("ada")
    federation = await federation_for_agent(card, home=arcana_home)  # the control: it opens while the card is there
    await federation.aclose()
    arcana("agent", "delete", "ada", "--yes")
    try:
        await federation_for_agent(card, home=arcana_home)
    except NotFoundError as exc:
        assert "agent 'ada' was deleted" in str(exc)
    else:
        raise AssertionError("the deleted agent's store was opened")
    assert not arcana_home.agent_dir(card.id).exists()


def test_agent_delete_while_run_waits_for_the_model_leaves_no_session_folder(arcana_home):
    """`arcana run` opens its session when the model has answered: a delete meanwhile made
    `agents/<id>/sessions/<session>.jsonl`, folders included, for an agent that no longer exists."""
    import threading

    from model_server import LoopbackModelServer, echo_memory_answer

    keyword_only(arcana_home)
    asked, answer = threading.Event(), threading.Event()

    def reply(body: dict) -> str:
        asked.set()
        answer.wait(30)
        return echo_memory_answer(body)

    with LoopbackModelServer(reply) as server:
        arcana("model", "add", "loop", "--provider", "ollama", "--base-url", server.url, "--model", "tiny", "--default")
        arcana("agent", "create", "ada")
        ada = _agent_id("ada")
        answer.set()
        arcana("run", "ada", "hello there")  # the control: a run makes the agent's session file
        assert list((arcana_home.agent_dir(ada) / "sessions").glob("*.jsonl"))
        asked.clear()
        answer.clear()
        run = subprocess.Popen([*ARCANA, "run", "ada", "remember that my locker is 12"],
                               env={**os.environ, "ARCANA_HOME": str(arcana_home.root)}, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
        try:
            assert asked.wait(30), "the run never asked the model"
            arcana("agent", "delete", "ada", "--yes")
            answer.set()
            out, err = run.communicate(timeout=60)
        finally:
            if run.poll() is None:
                run.kill()
    assert run.returncode == 3, (out, err)
    assert err.strip().splitlines()[-1] == (
        "arcana: error: agent 'ada' was deleted while this process was using it (its memory is in the trash); "
        "nothing more is read or stored for it")
    assert not arcana_home.agent_dir(ada).exists()


async def test_restore_force_waits_for_a_write_in_flight_and_every_write_goes_to_the_live_store(arcana_home, tmp_path):
    """A write checks the agent's store is the one it opened and then writes, holding the agent's lock
    shared; `restore --force` swapped the home without the lock, so a write past its check went into
    the store the restore had just moved to the trash (and, with a tier it opened lazily, into the
    restored home: half of one memory on each side)."""
    from memory.errors import MemoryStorageError

    keyword_only(arcana_home)
    arcana("remember", "the heron code is 42", "--agent", "ada")
    arcana("backup", str(tmp_path / "backups"))
    ada = _agent_id("ada")
    out, err, code, presence = await _run_during_a_write(
        arcana_home, ada, "restore", str(tmp_path / "backups"), "--force", "--json")
    assert code == 0, err  # the control: the restore went ahead once the write was done
    moved = json.loads(out)["moved_to_trash"]
    conn = sqlite3.connect(f"{moved}/agents/{ada}/memory.db")
    try:
        assert "heron written in flight" in {r[0] for r in conn.execute("SELECT content FROM memories")}
    finally:
        conn.close()
    assert _recalls("ada", "heron") == ["the heron code is 42"]  # the restored home, as backed up
    with pytest.raises(MemoryStorageError, match="was replaced"):  # nothing more goes to the store it opened
        async with presence.writing():
            pass


def test_a_backup_copies_an_agent_before_or_after_its_deletion_never_during_it(arcana_home, tmp_path):
    """A backup lists the home's files and then copies them; an agent deleted meanwhile was copied in
    part (its card without its memory.db when the folder moved between the two) or whole after its
    global copies were withdrawn. Holding the agent's lock shared, the backup waits for the deletion."""
    from memory.agent_lock import deleting

    keyword_only(arcana_home)
    arcana("remember", "the heron code is 42", "--agent", "ada")
    arcana("remember", "bob likes tea", "--agent", "bob")
    ada, bob = _agent_id("ada"), _agent_id("bob")
    with deleting(arcana_home, ada):  # `agent delete ada` is under way: copies withdrawn, folder not yet moved
        backup = subprocess.Popen([*ARCANA, "backup", str(tmp_path / "b"), "--json"],
                                  env={**os.environ, "ARCANA_HOME": str(arcana_home.root)},
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            backup.wait(timeout=4)
        except subprocess.TimeoutExpired:
            pass  # waiting for the deletion, as it should
        assert backup.poll() is None, "the backup copied an agent whose deletion was under way"
        arcana_home.agent_dir(ada).rename(tmp_path / "ada-trashed")  # the deletion's move, then its lock goes
    out, err = backup.communicate(timeout=60)
    assert backup.returncode == 0, err
    paths = {f["path"] for f in json.loads((next((tmp_path / "b").glob("arcana-backup-*")) / "manifest.json")
                                           .read_text())["files"]}
    assert {f"agents/{bob}/agent.json", f"agents/{bob}/memory.db"} <= paths  # the control: bob, whole
    assert not [p for p in paths if p.startswith(f"agents/{ada}/")]


async def test_the_command_that_finishes_a_killed_restore_waits_for_a_write_in_flight(arcana_home, tmp_path):
    """A restore killed after its journal leaves the swap to the next command, which swapped without
    the agents' locks the killed restore had held: a write past its check went into the trash."""
    from test_restore_kill import killed_at

    keyword_only(arcana_home)
    arcana("remember", "the heron code is 42", "--agent", "ada")
    backups = tmp_path / "backups"
    arcana("backup", str(backups))
    ada = _agent_id("ada")
    killed = killed_at("journal:1:after", "restore", str(backups), "--force", home=arcana_home.root)
    assert killed.returncode == -9, killed.stderr
    out, err, code, _ = await _run_during_a_write(arcana_home, ada, "backup", "--verify", str(backups))
    assert code == 0, err
    assert err.startswith(f"arcana: finished a restore from {next(backups.glob('arcana-backup-*'))} that was "
                          "interrupted")  # the control: it finished the swap once the write was done
    assert _recalls("ada", "heron") == ["the heron code is 42"]


async def test_a_host_save_hook_running_across_agent_delete_makes_no_folder_again(arcana_home, tmp_path):
    """`arcana host save` reads the transcript and then records how far it read, in the agent's
    folder: an agent deleted meanwhile came back as agents/<id>/hosts/claude-code/<session>.json."""
    from memory.agents import AgentRegistry
    from memory.config import load_config
    from memory.errors import NotFoundError
    from memory.runtime.assembly import federation_for_agent
    from memory.runtime.host_save import HookInput, save_transcript

    keyword_only(arcana_home)
    arcana("agent", "create", "dev")
    card = AgentRegistry(arcana_home).resolve("dev")
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("")  # nothing said yet: no memory is written, only the offset
    config = load_config(arcana_home.config_path)
    federation = await federation_for_agent(card, home=arcana_home, config=config)
    try:
        report = await save_transcript(arcana_home, config, card, federation, HookInput("s1", transcript))
        assert report.exchanges == 0  # the control: the hook runs and records its offset
        assert (arcana_home.agent_dir(card.id) / "hosts" / "claude-code" / "s1.json").is_file()
        arcana("agent", "delete", "dev", "--yes")
        with pytest.raises(NotFoundError, match="agent 'dev' was deleted"):
            await save_transcript(arcana_home, config, card, federation, HookInput("s2", transcript))
    finally:
        await federation.aclose()
    assert not arcana_home.agent_dir(card.id).exists()


async def _run_during_a_write(arcana_home, ada: str, *args: str):
    """``arcana ARGS`` started while this process holds a write of ada's store in flight (past its check,
    not yet written); the write lands, in the file it opened, before the command may swap the home.
    The command's stdout, stderr and exit code, and the writer's presence guard (its store closed)."""
    import asyncio

    from memory.adapters.sqlite import SQLiteAdapter
    from memory.agent_lock import AgentPresence
    from memory.types import MemoryEntry

    store = SQLiteAdapter.for_agent(ada, home=arcana_home)
    await store.connect()
    presence = AgentPresence(arcana_home, ada, "ada", opened=lambda: store.opened_file)
    proc = None
    try:
        async with presence.writing():
            proc = subprocess.Popen([*ARCANA, *args], env={**os.environ, "ARCANA_HOME": str(arcana_home.root)},
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            await asyncio.sleep(3)  # long enough for the command to have copied and verified the backup
            live = os.stat(arcana_home.agent_db(ada))
            assert (live.st_dev, live.st_ino) == store.opened_file, "the home was swapped under a write in flight"
            await store.write(MemoryEntry(agent_id=ada, content="heron written in flight"))
        out, err = await asyncio.to_thread(proc.communicate, timeout=60)
    finally:
        await store.aclose()
        if proc is not None and proc.poll() is None:
            proc.kill()
    return out, err, proc.returncode, presence


async def test_an_operator_edit_opens_the_agents_store_under_its_lock(arcana_home):
    """`memory forget` / `hide` / the web view's edits opened the agent's store without its lock: a delete
    between reading the card and opening made `agents/<id>/memory.db` again, empty and card-less. The
    editor now connects as writes do: it waits while a delete holds the lock, then finds the agent gone."""
    import asyncio
    import shutil

    from memory.agent_lock import deleting
    from memory.agents import AgentRegistry
    from memory.config import ArcanaConfig
    from memory.errors import NotFoundError
    from memory.operator.edits import OperatorTarget, open_editor

    keyword_only(arcana_home)
    arcana("remember", "the heron code is 42", "--agent", "ada")
    card = AgentRegistry(arcana_home).resolve("ada")
    target = OperatorTarget(agent="ada")

    async def edit() -> None:
        async with open_editor(arcana_home, ArcanaConfig(), target):
            pass

    await edit()  # the control: with no delete under way it opens at once
    with deleting(arcana_home, card.id):
        opening = asyncio.create_task(edit())
        await asyncio.sleep(0.5)
        assert not opening.done()  # it waits for the delete, as a write does
        shutil.rmtree(arcana_home.agent_dir(card.id))  # what the delete moves to the trash
    with pytest.raises(NotFoundError, match="was deleted"):
        await opening
    assert not arcana_home.agent_dir(card.id).exists()
