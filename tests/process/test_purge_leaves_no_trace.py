"""A purged memory is gone from the store's file, not only from its answers.

A purge deleted the row, but its words stayed readable in the file: in the
ledger's before and after images, in the FTS5 index's segments (an external
content index keeps a deleted row's terms until a merge), in the freed pages
and the WAL, and its vector in sqlite-vec's chunk. Each check reads the raw
bytes after every process has ended; a memory stored beside it and never
purged is found in the same bytes and still recalled, so a purge that wiped
everything would fail.
"""

from __future__ import annotations

import json

from factories import entry

from memory.home import Home
from memory.sqlite.connection import dbapi, load_vec
from memory.sqlite.vectors import vec_tables
from memory.types import MemoryQuery, MemoryType
from runner import arcana

SECRET = "zebra-quartz-7731 is the vault code, passphrase vaultzebraquartzpine"
EARLIER = "zebra-quartz-7731 was the old vault code, passphrase vaultzebraquartzoak"
KEPT = "heron-basalt-4410 opens the boathouse, keyword boathouseheronbasalt"


def _vector(db, memory_id: str) -> bytes:
    """The float32 bytes sqlite-vec holds for ``memory_id``."""
    raw = dbapi().connect(str(db))
    try:
        load_vec(raw)
        seq = raw.execute("SELECT seq FROM memories WHERE id = ?", (memory_id,)).fetchone()[0]
        (table,) = vec_tables(raw)
        return raw.execute(f"SELECT embedding FROM {table} WHERE rowid = ?", (seq,)).fetchone()[0]
    finally:
        raw.close()


def _stored(db) -> bytes:
    return b"".join(p.read_bytes() for p in db.parent.glob(db.name + "*") if p.is_file())


def test_a_purged_memory_leaves_no_word_or_vector_in_the_file(arcana_home: Home):
    arcana("agent", "create", "scout")
    # promoted, so its global copy is purged too
    secret = arcana("remember", EARLIER, "--agent", "scout", "--tag", "vaulttagzebra", "--importance", "0.95").strip()
    arcana("memory", "set", secret, "--agent", "scout", "--content", SECRET)
    kept = arcana("remember", KEPT, "--agent", "scout").strip()
    db = arcana_home.root / "agents"
    (db,) = db.glob("*/memory.db")
    vector, kept_vector = _vector(db, secret), _vector(db, kept)
    assert b"vaultzebraquartzpine" in _stored(db) and b"vaultzebraquartzpine" in _stored(arcana_home.global_db)

    arcana("memory", "purge", secret, "--agent", "scout", "--yes")

    stored = b"".join(p.read_bytes() for p in arcana_home.root.rglob("*") if p.is_file())  # the global tier, logs too
    for word in (b"zebra-quartz-7731", b"zebraquartzpine", b"zebraquartzoak", b"vaulttagzebra"):
        assert word not in stored, word
    assert vector not in stored
    # the control: the memory beside it is in the same bytes and still answers
    assert b"heron-basalt-4410" in stored and b"boathouseheronbasalt" in stored and kept_vector in stored
    found = json.loads(arcana("recall", "boathouse heron", "--agent", "scout", "--json"))
    assert kept in json.dumps(found)
    history = json.loads(arcana("memory", "history", secret, "--agent", "scout", "--json"))
    assert [row["op"] for row in history] == ["insert", "update", "purge"]


async def test_a_purge_in_a_process_that_keeps_its_store_open_empties_the_wal(store):
    """An MCP server or the web view keeps its store open: the WAL would hold the pages written before
    the purge until a later checkpoint restarts it."""
    secret, kept = entry(SECRET), entry(KEPT)
    await store.write_many([secret, kept])
    assert await store.purge([secret.id]) == 1
    stored = _stored(store.path)
    assert b"zebra-quartz-7731" not in stored
    assert b"heron-basalt-4410" in stored  # the control, in the same bytes
    assert [e.id for e in await store.search(MemoryQuery(text="boathouse heron", agent_id="a1"))] == [kept.id]


DAY1, DAY3 = "2024-01-01T10:00:00Z", "2024-01-03T10:00:00Z"
# Two sessions over two days: consolidation writes one digest per session, quoting its turns.
TURNS = [("s1", DAY1, "Caroline: the harbour door code is zebracode-5512, passphrase quartzlantern."),
         ("s1", DAY3, "Caroline: I adopted a puppy called Oscar."),
         ("s2", DAY1, "Caroline: the harbour stall code is tangerinecode."),
         ("s2", DAY3, "Caroline: I adopted a kitten called Milo.")]


def _ok(result) -> dict | list:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _recalled(cli, query: str) -> str:
    return json.dumps(_ok(cli("recall", query, "--agent", "ada", "--json"))["results"])


def test_a_purged_turn_takes_the_digest_quoting_it_along(cli, arcana_home: Home, tmp_path):
    """A purge of a digested turn only archived the digest quoting it: 'zebracode-5512' stayed in the
    digest's row, its ledger images and its global copy. The digest quoting it is purged too; the other
    turn it carried stands on its own again, and the other session's digest and an unrelated memory,
    in the same files, still answer."""
    lines = tmp_path / "turns.jsonl"  # outside the home: the raw bytes read are the home's
    lines.write_text("".join(json.dumps({"content": text, "type": "episodic", "session": session, "created_at": at})
                             + "\n" for session, at, text in TURNS))
    _ok(cli("remember", "--agent", "ada", "--from", str(lines), "--json"))
    kept = _ok(cli("remember", KEPT, "--agent", "ada", "--json"))["id"]
    assert _ok(cli("consolidate", "--agent", "ada", "--json"))["agents"][0]["digests"] == 2
    rows = _ok(cli("memory", "list", "--agent", "ada", "--all", "--archived", "--json"))
    (turn,) = [m for m in rows if m["content"] == TURNS[0][2]]
    assert [m for m in rows if "zebracode-5512" in m["content"] and m["id"] != turn["id"]]  # the digest quotes it

    _ok(cli("memory", "purge", turn["id"], "--agent", "ada", "--yes", "--json"))

    stored = b"".join(p.read_bytes() for p in arcana_home.root.rglob("*") if p.is_file())
    print([str(p) for p in arcana_home.root.rglob("*") if p.is_file() and b"zebracode-5512" in p.read_bytes()])
    for word in (b"zebracode-5512", b"quartzlantern"):
        assert word not in stored, word
    # the controls: in the same bytes, and each still answers
    assert b"tangerinecode" in stored and b"heron-basalt-4410" in stored
    assert "tangerinecode" in _recalled(cli, "harbour stall code tangerinecode")
    assert kept in _recalled(cli, "boathouse heron")
    assert "Oscar" in _recalled(cli, "puppy called Oscar")  # the purged digest's other turn, on its own


async def test_a_purged_turn_leaves_no_context_in_an_archived_turn_after_it(store):
    """The turn after a turn holds its text as ``context`` (what finds "it" by meaning); a purge
    re-derived only the turns anyone can read, so a turn forgotten before the purge kept the purged
    words in its row until a restore. The control: the next session's turn after a kept turn keeps its
    context, in the same file."""
    secret = entry(SECRET, type=MemoryType.EPISODIC, source_session_id="s1")
    after = entry("The guard asked about it twice.", type=MemoryType.EPISODIC, source_session_id="s1")
    kept = entry(KEPT, type=MemoryType.EPISODIC, source_session_id="s2")
    later = entry("The rower asked about it once.", type=MemoryType.EPISODIC, source_session_id="s2")
    for one in (secret, after, kept, later):
        await store.write_many([one])
    assert await store.archive([after.id, later.id]) == 2
    assert await store.purge([secret.id]) == 1
    stored = _stored(store.path)
    assert b"zebra-quartz-7731" not in stored
    raw = dbapi().connect(str(store.path))
    try:
        contexts = dict(raw.execute("SELECT id, context FROM memories WHERE id IN (?, ?)", (after.id, later.id)))
    finally:
        raw.close()
    assert contexts == {after.id: "", later.id: KEPT}
    assert [e.id for e in await store.search(MemoryQuery(text="boathouse heron", agent_id="a1"))] == [kept.id]
