"""`arcana export` / `arcana import`: lossless round trips, idempotence, visibility, bad input."""

from __future__ import annotations

import asyncio
import json

import pytest
from factories import varied
from runner import keyword_only

from memory.adapters.sqlite import SQLiteAdapter
from memory.agents import AgentRegistry
from memory.home import Home
from memory.types import Audience, MemoryEntry, MemoryQuery, Visibility

async def _seed(home: Home, name: str, entries_for) -> tuple[str, list[MemoryEntry]]:
    card = AgentRegistry(home).create(name)
    entries = entries_for(card.id)
    store = SQLiteAdapter.for_agent(card.id, home=home, actor="test")
    await store.write_many(entries)
    await store.aclose()
    return card.id, entries


async def _stored(home: Home, name: str) -> dict[str, MemoryEntry]:
    card = AgentRegistry(home).resolve(name)
    store = SQLiteAdapter.for_agent(card.id, home=home)
    rows = await store.search(MemoryQuery(limit=10_000), audience=Audience.OPERATOR, include_archived=True)
    await store.aclose()
    return {e.id: e for e in rows}


async def _ledger_ops(home: Home, name: str) -> list[str]:
    store = SQLiteAdapter.for_agent(AgentRegistry(home).resolve(name).id, home=home)
    rows = await store.run(lambda raw: raw.execute("SELECT op FROM memory_ledger ORDER BY seq").fetchall())
    await store.aclose()
    return [r[0] for r in rows]


def seed(home: Home, name: str, entries_for) -> tuple[str, list[MemoryEntry]]:
    return asyncio.run(_seed(home, name, entries_for))


def stored(home: Home, name: str) -> dict[str, MemoryEntry]:
    return asyncio.run(_stored(home, name))


def ledger_ops(home: Home, name: str) -> list[str]:
    return asyncio.run(_ledger_ops(home, name))


def same_fields(original: MemoryEntry, copy: MemoryEntry, agent_id: str) -> None:
    want = original.model_dump()
    want["agent_id"] = agent_id
    want["visibility"] = original.visibility or Visibility.VISIBLE
    assert copy.model_dump() == want


@pytest.fixture
def other_home(tmp_path) -> Home:
    home = Home(tmp_path / "other-home")
    keyword_only(home)
    return home


def test_jsonl_round_trip_keeps_every_field_and_is_idempotent(arcana_home, other_home, cli, tmp_path):
    keyword_only(arcana_home)
    _, originals = seed(arcana_home, "ada", varied)
    dump = tmp_path / "ada.jsonl"
    result = cli("export", "--agent", "ada", "--output", str(dump), "--with-history", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["memories"] == len(originals)
    lines = dump.read_text(encoding="utf-8").splitlines()
    head = json.loads(lines[0])
    assert (head["format"], head["version"], head["exported"]["agent"]) == ("arcana-export", 1, "ada")
    assert all(json.loads(line)["history"][0]["op"] == "insert" for line in lines[1:])

    first = cli("--home", str(other_home.root), "import", str(dump), "--agent", "ada", "--json")
    assert first.exit_code == 0, first.output
    assert json.loads(first.stdout)["ops"] == {"insert": len(originals)}
    new_id = AgentRegistry(other_home).resolve("ada").id
    copies = stored(other_home, "ada")
    assert set(copies) == {e.id for e in originals}
    for original in originals:
        same_fields(original, copies[original.id], new_id)
    assert ledger_ops(other_home, "ada") == ["import"] * len(originals)

    again = cli("--home", str(other_home.root), "import", str(dump), "--agent", "ada", "--json")
    assert again.exit_code == 0
    assert json.loads(again.stdout)["ops"] == {"noop": len(originals)}
    assert stored(other_home, "ada") == copies
    assert ledger_ops(other_home, "ada") == ["import"] * len(originals)  # nothing new to ledger


def test_visibility_survives_the_round_trip(arcana_home, other_home, cli, tmp_path):
    keyword_only(arcana_home)
    _, originals = seed(arcana_home, "ada", varied)
    dump = tmp_path / "ada.jsonl"
    assert cli("export", "--agent", "ada", "-o", str(dump)).exit_code == 0
    assert cli("--home", str(other_home.root), "import", str(dump), "--agent", "ada").exit_code == 0
    recalled = cli("--home", str(other_home.root), "recall", "launch code diary Ada", "--agent", "ada", "--json")
    ids = {r["id"] for r in json.loads(recalled.stdout)["results"]}
    hidden = next(e for e in originals if e.visibility is Visibility.HIDDEN)
    private = next(e for e in originals if e.visibility is Visibility.PRIVATE)
    assert originals[0].id in ids  # positive control: a visible memory is recalled
    assert hidden.id not in ids and private.id not in ids
    listing = json.loads(cli("--home", str(other_home.root), "memory", "list", "--agent", "ada", "--all", "--json").stdout)
    assert {m["id"]: m["visibility"] for m in listing}[hidden.id] == "hidden"


def test_malformed_lines_are_named_good_ones_imported_and_exit_2(arcana_home, other_home, cli, tmp_path):
    keyword_only(arcana_home)
    _, originals = seed(arcana_home, "ada", varied)
    dump = tmp_path / "ada.jsonl"
    assert cli("export", "--agent", "ada", "-o", str(dump)).exit_code == 0
    lines = dump.read_text(encoding="utf-8").splitlines()
    broken = json.loads(lines[2])
    broken["memory"]["importance"] = 7
    lines[1] = lines[1][:-5]  # truncated JSON on line 2
    lines[2] = json.dumps(broken)  # a field out of range on line 3
    lines.insert(4, '["not", "a", "record"]')  # line 5
    dump.write_text("\n".join(lines) + "\n", encoding="utf-8")

    strict = cli("--home", str(other_home.root), "import", str(dump), "--agent", "ada", "--strict")
    assert strict.exit_code == 2
    assert "line 2: not JSON" in strict.stderr and "line 3: invalid importance" in strict.stderr
    assert "line 5: not a memory record" in strict.stderr and "nothing was imported" in strict.stderr
    assert stored(other_home, "ada") == {}

    lenient = cli("--home", str(other_home.root), "import", str(dump), "--agent", "ada", "--json")
    assert lenient.exit_code == 2
    report = json.loads(lenient.stdout)
    assert [b["where"] for b in report["bad"]] == ["line 2", "line 3", "line 5"]
    assert len(stored(other_home, "ada")) == len(originals) - 2 == report["read"]
    assert all(line.startswith("arcana: error: ") for line in lenient.stderr.splitlines())


def test_a_line_json_cannot_keep_is_named_and_the_other_lines_imported(arcana_home, other_home, cli, tmp_path):
    """A 5,000-digit importance was named with Python's own advice (sys.set_int_max_str_digits), and
    NaN was read as a float; both are now a named bad line, the good lines still imported."""
    keyword_only(arcana_home)
    _, originals = seed(arcana_home, "ada", varied)
    dump = tmp_path / "ada.jsonl"
    assert cli("export", "--agent", "ada", "-o", str(dump)).exit_code == 0
    lines = dump.read_text(encoding="utf-8").splitlines()
    lines[1] = lines[1].replace('"importance": ', '"importance": ' + "1" * 5000 + ', "was": ', 1)
    lines[2] = lines[2].replace('"importance": ', '"importance": NaN, "was": ', 1)
    dump.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = cli("--home", str(other_home.root), "import", str(dump), "--agent", "ada")
    assert result.exit_code == 2
    assert "line 2: not JSON (the number 1111" in result.stderr and "5000 digits" in result.stderr
    assert "line 3: not JSON (NaN is not a JSON value)" in result.stderr
    assert "set_int_max_str_digits" not in result.stderr
    assert len(stored(other_home, "ada")) == len(originals) - 2 > 0


def test_a_record_with_a_wrong_field_is_named_by_that_field_not_by_one_it_left_out(arcana_home, other_home, cli,
                                                                                    tmp_path):
    """``{"memory": {"content": 42}}`` was reported as "invalid agent_id: Field required" (pydantic's first
    error, in the model's field order): the field the record got wrong goes first, then what it lacks."""
    keyword_only(arcana_home)
    _, originals = seed(arcana_home, "ada", varied)
    dump = tmp_path / "ada.jsonl"
    assert cli("export", "--agent", "ada", "-o", str(dump)).exit_code == 0
    with dump.open("a", encoding="utf-8") as f:
        f.write('{"memory": {"content": 42}}\n')
    result = cli("--home", str(other_home.root), "import", str(dump), "--agent", "ada", "--json")
    assert result.exit_code == 2
    report = json.loads(result.stdout)
    bad = f"line {len(originals) + 2}"
    assert report["bad"] == [{"where": bad, "error": "invalid content: Input should be a valid string; agent_id: Field required"}]
    assert len(stored(other_home, "ada")) == len(originals)  # control: every good record is imported


def test_a_strict_import_imports_the_lines_it_checked(arcana_home, other_home, cli, tmp_path, monkeypatch):
    """--strict checks every line, then reads the file again to import it: the path was opened again,
    so a file put in its place meanwhile (an export writing it anew) was imported unchecked. The one
    open file is rewound instead. Here the path is replaced by a file with a bad line the moment the
    check has read the last line: the lines checked (the control) are imported, the bad one never read."""
    import os

    from memory.operations import export as core

    keyword_only(arcana_home)
    _, originals = seed(arcana_home, "ada", varied)
    dump = tmp_path / "ada.jsonl"
    assert cli("export", "--agent", "ada", "-o", str(dump)).exit_code == 0
    header, *lines = dump.read_text(encoding="utf-8").splitlines()
    swapped = tmp_path / "swapped.jsonl"
    swapped.write_text("\n".join([header, *lines, '{"memory": {"content": "an unchecked line"}}']) + "\n", encoding="utf-8")
    read = core.jsonl_records
    passes = []

    def records(handle):
        passes.append(1)
        yield from read(handle)
        if len(passes) == 1:  # the check is done: the path now names another file
            os.replace(swapped, dump)

    monkeypatch.setattr(core, "jsonl_records", records)
    done = cli("--home", str(other_home.root), "import", str(dump), "--agent", "ada", "--strict", "--json")
    assert done.exit_code == 0 and len(passes) == 2, done.stderr
    imported = {e.content for e in stored(other_home, "ada").values()}
    assert len(imported) == len(originals) and "an unchecked line" not in imported


def test_unknown_format_version_or_foreign_file_is_refused_with_exit_2(other_home, cli, tmp_path):
    future = tmp_path / "future.jsonl"
    future.write_text(json.dumps({"format": "arcana-export", "version": 99}) + "\n"
                      + json.dumps({"memory": {"agent_id": "x", "content": "from the future"}}) + "\n")
    result = cli("--home", str(other_home.root), "import", str(future), "--agent", "ada")
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and "version 99 is newer" in result.stderr
    foreign = tmp_path / "foreign.jsonl"
    foreign.write_text('{"hello": "world"}\n')
    result = cli("--home", str(other_home.root), "import", str(foreign), "--agent", "ada")
    assert result.exit_code == 2 and "not an arcana-export header" in result.stderr
    ok = tmp_path / "ok.jsonl"  # positive control: version 1 imports
    ok.write_text(json.dumps({"format": "arcana-export", "version": 1}) + "\n"
                  + json.dumps({"memory": {"agent_id": "x", "content": "from the present"}}) + "\n")
    assert cli("--home", str(other_home.root), "import", str(ok), "--agent", "ada").exit_code == 0
    assert [e.content for e in (stored(other_home, "ada")).values()] == ["from the present"]


def test_markdown_round_trip_and_a_person_edited_vault(arcana_home, other_home, cli, tmp_path):
    keyword_only(arcana_home)
    _, originals = seed(arcana_home, "ada", varied)
    folder = tmp_path / "notes"
    assert cli("export", "--agent", "ada", "--format", "markdown", "--output", str(folder)).exit_code == 0
    notes = sorted(folder.glob("*.md"))
    assert len(notes) == len(originals)
    assert cli("--home", str(other_home.root), "import", str(folder), "--agent", "ada").exit_code == 0
    new_id = AgentRegistry(other_home).resolve("ada").id
    copies = stored(other_home, "ada")
    for original in originals:
        same_fields(original, copies[original.id], new_id)

    tea = next(p for p in notes if originals[0].id[:8] in p.name)
    tea.write_text(tea.read_text(encoding="utf-8").replace("Ada prefers tea over coffee", "Ada prefers green tea"))
    (folder / "new idea.md").write_text("A note a person wrote by hand, no frontmatter.\n")
    result = cli("--home", str(other_home.root), "import", str(folder), "--agent", "ada", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["ops"] == {"noop": len(originals) - 1, "update": 1, "insert": 1}
    copies = stored(other_home, "ada")
    assert copies[originals[0].id].content == "Ada prefers green tea"
    assert "A note a person wrote by hand, no frontmatter." in {e.content for e in copies.values()}


def test_export_all_names_each_store_and_pool_import(arcana_home, cli, tmp_path):
    keyword_only(arcana_home)
    seed(arcana_home, "ada", lambda a: [MemoryEntry(agent_id=a, content="ada's own")])
    seed(arcana_home, "bob", lambda a: [MemoryEntry(agent_id=a, content="bob's own")])
    assert cli("pool", "create", "team").exit_code == 0
    dump = tmp_path / "all.jsonl"
    assert cli("export", "--agent", "ada", "-o", str(dump)).exit_code == 0
    assert cli("import", str(dump), "--pool", "team").exit_code == 0
    everything = tmp_path / "everything.jsonl"
    assert cli("export", "--all", "-o", str(everything)).exit_code == 0
    records = [json.loads(line) for line in everything.read_text().splitlines()[1:]]
    assert sorted((r["store"], r["memory"]["content"]) for r in records) == [
        ("agent:ada", "ada's own"), ("agent:bob", "bob's own"), ("pool:team", "ada's own"),
    ]
    pooled = next(r["memory"] for r in records if r["store"] == "pool:team")
    assert (pooled["scope"], pooled["pool_name"]) == ("shared", "team")
    assert cli("export", "--agent", "ada", "--pool", "team").exit_code == 2
    assert cli("export", "--pool", "nope").exit_code == 3


def test_exporting_an_agent_that_has_stored_nothing_makes_no_store(arcana_home, cli, tmp_path):
    """export --agent and export --all opened every agent's private store, and so made memory.db for one
    that had stored nothing: a backup-by-export changed the home. It is exported as empty and still
    named in an --all export (a restore makes the agent again). Positive control: ada's memory is exported."""
    keyword_only(arcana_home)
    seed(arcana_home, "ada", lambda a: [MemoryEntry(agent_id=a, content="ada's own")])
    assert cli("agent", "create", "carol").exit_code == 0
    carol = arcana_home.agent_db(json.loads(cli("agent", "show", "carol", "--json").stdout)["id"])
    alone = cli("export", "--agent", "carol")
    assert alone.exit_code == 0 and alone.stdout.count("\n") == 1 and "agent:carol" in alone.stderr, alone.output
    everything = tmp_path / "everything.jsonl"
    assert cli("export", "--all", "-o", str(everything)).exit_code == 0
    lines = everything.read_text().splitlines()
    assert "agent:carol" in json.loads(lines[0])["exported"]["all"]
    assert [json.loads(line)["memory"]["content"] for line in lines[1:]] == ["ada's own"]
    assert not carol.exists() and not carol.parent.joinpath("memory.db-wal").exists()


def test_vectors_travel_with_the_file_or_are_re_embedded(arcana_home, tmp_path, cli, offline_embedder):
    """Default config (the real offline model): --with-vectors skips re-embedding; without, import embeds."""
    arcana_home.root.mkdir(parents=True, exist_ok=True)
    for text in ("the user is allergic to peanuts", "the build uses make", "holidays are in August"):
        assert cli("remember", text, "--agent", "ada").exit_code == 0
    with_vectors, bare = tmp_path / "v.jsonl", tmp_path / "bare.jsonl"
    assert cli("export", "--agent", "ada", "-o", str(with_vectors), "--with-vectors").exit_code == 0
    assert cli("export", "--agent", "ada", "-o", str(bare)).exit_code == 0
    assert json.loads(with_vectors.read_text().splitlines()[0])["model"]["dimension"] == 384

    kept = cli("import", str(with_vectors), "--agent", "copy", "--json")
    assert kept.exit_code == 0, kept.output
    assert (json.loads(kept.stdout)["vectors_kept"], json.loads(kept.stdout)["embedded"]) == (3, 0)
    embedded = cli("import", str(bare), "--agent", "fresh", "--json")
    assert (json.loads(embedded.stdout)["vectors_kept"], json.loads(embedded.stdout)["embedded"]) == (0, 3)
    for agent in ("copy", "fresh"):
        found = json.loads(cli("recall", "food intolerance", "--agent", agent, "--mode", "semantic", "--json").stdout)
        assert found["results"][0]["content"] == "the user is allergic to peanuts"


def test_export_output_that_is_a_pipe_a_folder_or_unwritable(cli, no_embedder, tmp_path):
    """`-o` naming a pipe or device (/dev/stdout, /dev/null) had a regular file renamed over it (as root,
    the device node itself); a folder or an unwritable path ended in a traceback."""
    import os
    import stat

    assert cli("remember", "Deploys happen on Tuesdays", "--agent", "ada").exit_code == 0
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        result = cli("export", "--agent", "ada", "-o", str(fifo))
        assert result.exit_code == 0, result.output
        assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # still the pipe, not a file in its place
        assert b"Deploys happen on Tuesdays" in os.read(reader, 1 << 16)
    finally:
        os.close(reader)
    a_file = tmp_path / "a-file"
    a_file.write_text("kept\n")
    refused = [
        (["-o", str(tmp_path)], "is a folder"),
        (["-o", str(a_file / "x.jsonl")], "cannot write there"),
        (["--format", "markdown", "-o", str(a_file)], "cannot write there"),
    ]
    for args, why in refused:
        result = cli("export", "--agent", "ada", *args)
        assert result.exit_code == 2, result.output
        assert isinstance(result.exception, SystemExit) and why in result.stderr and "Traceback" not in result.stderr
    assert a_file.read_text() == "kept\n"
    done = cli("export", "--agent", "ada", "-o", str(tmp_path / "out.jsonl"))  # positive control: a file
    assert done.exit_code == 0 and stat.S_IMODE((tmp_path / "out.jsonl").stat().st_mode) == 0o600


def test_export_over_an_existing_file_needs_yes(no_embedder, tmp_path):
    """`-o` naming a file that holds something (a user's notes, an earlier export) replaced it without a
    word. Off a terminal it is exit 2 asking for --yes, the file untouched; a new or empty file needs none."""
    from runner import arcana, run_arcana

    arcana("remember", "Deploys happen on Tuesdays", "--agent", "ada")
    notes = tmp_path / "notes.txt"
    notes.write_text("my own notes\n")
    refused = run_arcana("export", "--agent", "ada", "-o", str(notes))
    assert refused.returncode == 2, refused.stderr
    [line] = refused.stderr.splitlines()
    assert line.startswith("arcana: error: replace ") and "pass --yes" in line
    assert notes.read_text() == "my own notes\n" and not list(tmp_path.glob("*.partial"))
    # An unknown agent is not found (exit 3) before any question about the file.
    assert run_arcana("export", "--agent", "nobody", "-o", str(notes)).returncode == 3
    # Controls: a new file and an empty one are written without --yes; --yes replaces the notes.
    arcana("export", "--agent", "ada", "-o", str(tmp_path / "new.jsonl"))
    (tmp_path / "empty.jsonl").write_text("")
    arcana("export", "--agent", "ada", "-o", str(tmp_path / "empty.jsonl"))
    arcana("export", "--agent", "ada", "-o", str(notes), "--yes")
    for written in (tmp_path / "new.jsonl", tmp_path / "empty.jsonl", notes):
        assert "Deploys happen on Tuesdays" in written.read_text()
    # A re-export over an earlier export is a replacement too.
    assert run_arcana("export", "--agent", "ada", "-o", str(tmp_path / "new.jsonl")).returncode == 2


def test_a_markdown_export_over_notes_a_person_edited_needs_yes(no_embedder, tmp_path):
    """A re-export into a vault folder overwrote a note a person had edited since, in place. A note whose
    text would change is now asked for (off a terminal: exit 2, every note as it was); new notes, notes
    the export would write as they are and a person's own other notes need no --yes."""
    from runner import arcana, run_arcana

    arcana("remember", "Deploys happen on Tuesdays", "--agent", "ada")
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "mine.md").write_text("my own note\n")
    arcana("export", "--agent", "ada", "-f", "markdown", "-o", str(vault))  # control: a folder with other notes
    arcana("export", "--agent", "ada", "-f", "markdown", "-o", str(vault))  # control: the same notes again
    [note] = [p for p in vault.glob("*.md") if p.name != "mine.md"]
    note.write_text(note.read_text() + "a person's edit\n")
    edited = note.read_text()
    arcana("remember", "Releases are tagged on Fridays", "--agent", "ada")
    refused = run_arcana("export", "--agent", "ada", "-f", "markdown", "-o", str(vault))
    assert refused.returncode == 2, refused.stderr
    [line] = refused.stderr.splitlines()
    assert note.name in line and "pass --yes" in line
    assert note.read_text() == edited and len(list(vault.glob("*.md"))) == 2  # nothing written
    arcana("export", "--agent", "ada", "-f", "markdown", "-o", str(vault), "--yes")
    assert "a person's edit" not in note.read_text() and len(list(vault.glob("*.md"))) == 3
    assert (vault / "mine.md").read_text() == "my own note\n" and not list(vault.glob(".*"))


def test_export_output_dash_is_stdout(no_embedder, tmp_path, monkeypatch):
    """`-o -` wrote a file named "-" in the current folder; by the convention it is stdout, as no -o is,
    and stdout then holds the export alone (the summary goes to stderr). `-o ./-` still names a file."""
    from runner import arcana, run_arcana

    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    arcana("remember", "Deploys happen on Tuesdays", "--agent", "ada")
    done = run_arcana("export", "--agent", "ada", "-o", "-")
    assert done.returncode == 0, done.stderr
    header, *lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["memory"]["content"] for r in lines] == ["Deploys happen on Tuesdays"] and "exported 1" in done.stderr
    assert list(here.iterdir()) == []  # no file named "-"
    # --json's summary and a markdown folder both need a real --output: `-` is refused as no -o is.
    for extra in (["--json"], ["-f", "markdown"]):
        refused = run_arcana("export", "--agent", "ada", "-o", "-", *extra)
        assert refused.returncode == 2 and refused.stdout == "", refused.stderr
    # Positive control: a path that says it is a file writes the file, nothing on stdout.
    to_file = run_arcana("export", "--agent", "ada", "-o", "./-")
    assert to_file.returncode == 0 and to_file.stdout == "" and "Deploys" in (here / "-").read_text()


def test_a_markdown_re_export_replaces_the_note_of_a_memory_whose_words_changed(no_embedder, tmp_path):
    """A note is named by the memory's first words: after `memory set --content` a re-export wrote the new
    note beside the old one, and importing the folder brought the old words back. The old note is replaced
    (asked for like any replaced note); notes the export did not write stay, whatever their names."""
    from runner import arcana, run_arcana

    changed = arcana("remember", "Deploys happen on Tuesdays", "--agent", "ada").strip()
    arcana("remember", "Releases are tagged on Fridays", "--agent", "ada")
    vault = tmp_path / "vault"
    arcana("export", "--agent", "ada", "-f", "markdown", "-o", str(vault))
    [old] = vault.glob(f"deploys-*-{changed}.md")
    mine = {vault / "mine.md": "my own note\n",  # controls: a person's notes, one even named like the export's
            vault / f"my-copy-{changed}.md": "my copy, no frontmatter\n"}
    for path, text in mine.items():
        path.write_text(text)
    arcana("memory", "set", changed, "--agent", "ada", "--content", "Deploys happen on Thursdays")
    refused = run_arcana("export", "--agent", "ada", "-f", "markdown", "-o", str(vault))
    assert refused.returncode == 2 and old.name in refused.stderr, refused.stderr
    assert old.exists() and len(list(vault.glob("*.md"))) == 4  # nothing written
    arcana("export", "--agent", "ada", "-f", "markdown", "-o", str(vault), "--yes")
    assert not old.exists() and len(list(vault.glob(f"deploys-happen-on-thursdays-{changed}.md"))) == 1
    assert all(path.read_text() == text for path, text in mine.items())
    assert len(list(vault.glob("releases-are-tagged-on-fridays-*.md"))) == 1  # control: the unchanged memory
    for path in mine:
        path.unlink()
    arcana("import", str(vault), "--agent", "copy", "--no-embed")
    listed = json.loads(arcana("memory", "list", "--agent", "copy", "--json"))
    assert sorted(m["content"] for m in listed) == ["Deploys happen on Thursdays", "Releases are tagged on Fridays"]


def test_import_dash_reads_stdin(no_embedder, tmp_path):
    """`arcana import -` said "- does not exist": an export piped into another home had to go through a file.
    `-` is stdin now, as `remember --from -` is; `./-` still names a file."""
    from runner import arcana, run_arcana

    arcana("remember", "Deploys happen on Tuesdays", "--agent", "ada")
    exported = arcana("export", "--agent", "ada")
    other = tmp_path / "other-home"
    arcana("agent", "create", "bob", home=other)
    done = run_arcana("import", "-", "--agent", "bob", home=other, stdin=exported)
    assert done.returncode == 0, done.stderr
    assert "Deploys happen on Tuesdays" in arcana("recall", "deploys", "--agent", "bob", home=other)
    # A bad line is named as on stdin's line, not by the temp file it was spooled to.
    bad = run_arcana("import", "-", "--agent", "bob", home=other, stdin=exported + "not json\n")
    assert bad.returncode == 2 and bad.stderr.startswith("arcana: error: -: "), bad.stderr
    assert "arcana-import-" not in bad.stderr
    # Control: `./-` is a file by that name, which does not exist here.
    missing = run_arcana("import", "./-", "--agent", "bob", home=other)
    assert missing.returncode == 2 and "does not exist" in missing.stderr


def test_an_older_export_does_not_undo_an_operators_later_text_or_importance(cli, no_embedder, tmp_path):
    """Importing an export written before `memory set --content` / `--importance` put the removed words and
    the old importance back. A line's field the store changed after the line's own `updated_at` (other than
    by an import) now keeps the store's value, and the summary says so; the file's other changes, another
    memory's edit and a person's note edited twice and read back each time, still apply."""
    def out(result) -> dict:
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    code = out(cli("remember", "The gate code is 7788", "--agent", "ada", "--json"))["id"]
    standup = out(cli("remember", "Standup is at nine", "--agent", "ada", "--json"))["id"]
    old = tmp_path / "old.jsonl"
    assert cli("export", "--agent", "ada", "-o", str(old)).exit_code == 0
    assert cli("memory", "set", code, "--agent", "ada", "--content", "The gate code was changed").exit_code == 0
    assert cli("memory", "set", code, "--agent", "ada", "--importance", "0.9").exit_code == 0
    old.write_text(old.read_text().replace("Standup is at nine", "Standup is at ten"))  # control: the file's own edit
    done = cli("import", str(old), "--agent", "ada")
    shown = {m["id"]: m for m in out(cli("memory", "list", "--agent", "ada", "--json"))}
    assert shown[code]["content"] == "The gate code was changed" and shown[code]["importance"] == 0.9
    assert done.exit_code == 0 and "1 changed here since the file was written" in done.output, done.output
    assert shown[standup]["content"] == "Standup is at ten"
    folder = tmp_path / "notes"
    assert cli("export", "--agent", "ada", "-f", "markdown", "-o", str(folder)).exit_code == 0
    [note] = folder.glob(f"standup-*-{standup}.md")
    for when in ("eleven", "noon"):  # a person edits the note, reads it back, edits it again
        note.write_text(note.read_text().replace("Standup is at ten", f"Standup is at {when}")
                        .replace("Standup is at eleven", f"Standup is at {when}"))
        assert out(cli("import", str(folder), "--agent", "ada", "--json"))["kept_newer"] == 0
        assert cli("memory", "show", standup, "--agent", "ada", "--json").stdout.count(f"Standup is at {when}") == 1
