"""The process's TZ never changes what is stored or answered: a time that names no zone is UTC.

`import` of an export line (or a Markdown note) whose ``created_at`` named no zone (``2024-05-01T12:00:00``,
or the date a YAML ``created_at: 2024-05-01`` is) stored it in the local zone: 06:30Z under
Asia/Kolkata, 16:00Z under America/New_York, and so --as-of answered differently per machine."""

from __future__ import annotations

import json

from runner import arcana, keyword_only

from memory.home import Home

ZONES = ("UTC", "America/New_York", "Asia/Kolkata")
GIVEN = {  # what a line says -> what every zone must store; the offset is the control (it never depended on TZ)
    "2024-05-01T12:00:00": "2024-05-01T12:00:00Z",
    "2024-05-01": "2024-05-01T00:00:00Z",
    "2024-05-01T12:00:00+05:30": "2024-05-01T06:30:00Z",
}


def _export_with_times(tmp_path) -> tuple:
    seed = Home(tmp_path / "seed")
    keyword_only(seed)
    arcana("remember", "seed", "--agent", "ada", home=seed)
    dump = tmp_path / "times.jsonl"
    arcana("export", "--agent", "ada", "-o", str(dump), home=seed)
    head, row = dump.read_text().splitlines()
    record = json.loads(row)
    lines = [head]
    notes = tmp_path / "notes"
    notes.mkdir()
    for n, when in enumerate(GIVEN):
        memory = {**record["memory"], "id": f"line-{n}", "content": f"line said {when}", "created_at": when,
                  "updated_at": when}
        lines.append(json.dumps({**record, "memory": memory}))
        (notes / f"note{n}.md").write_text(f"---\ncreated_at: {when}\n---\nnote said {when}\n")
    dump.write_text("\n".join(lines) + "\n")
    return dump, notes


def test_the_same_import_stores_the_same_instants_under_every_tz(tmp_path):
    dump, notes = _export_with_times(tmp_path)
    for zone in ZONES:
        home = Home(tmp_path / zone.replace("/", "-"))
        keyword_only(home)
        env = {"TZ": zone}
        arcana("import", str(dump), "--agent", "bob", "--no-embed", home=home, env=env)
        arcana("import", str(notes), "--agent", "bob", "--no-embed", home=home, env=env)
        listed = json.loads(arcana("memory", "list", "--agent", "bob", "--json", home=home, env=env))
        stored = {m["content"]: m["created_at"] for m in listed}
        expected = {f"{kind} said {when}": at for when, at in GIVEN.items() for kind in ("line", "note")}
        assert stored == expected, zone
        before = json.loads(arcana("recall", "said", "--agent", "bob", "--as-of", "2024-05-01T11:00:00Z",
                                   "--json", home=home, env=env))
        assert sorted(r["content"] for r in before["results"]) == sorted(
            f"{kind} said {when}" for when in GIVEN if when != "2024-05-01T12:00:00" for kind in ("line", "note")
        ), zone
