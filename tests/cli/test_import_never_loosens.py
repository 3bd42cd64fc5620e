"""An import never undoes an operator, even one acting in another process while it runs.

``remember --from`` and ``import`` read the stored rows before each batch; an operator's
``memory set`` / ``forget`` / ``purge`` landing after that read and before the write must
stand. Each test runs the import in-process and the operator as a real ``arcana`` process,
started at the last moment before the import's write (the hook below), on one real SQLite file.
Each exclusion is paired with a positive control: the import still writes, an ordinary edit still loosens.
"""

from __future__ import annotations

import json

import pytest
from runner import arcana

from memory.federation.federation import MemoryFederation
from memory.operations import export

TEA = {"content": "Alice prefers green tea to coffee.", "id": "tea-1", "created_at": "2024-01-05T10:00:00Z"}
JASMINE = dict(TEA, content="Alice prefers jasmine tea now.")
NEW = {"content": "Deploys go out on Fridays.", "id": "deploy-1", "created_at": "2024-01-05T10:00:00Z"}

pytestmark = pytest.mark.usefixtures("no_embedder")


def _file(tmp_path, name, *lines) -> str:
    path = tmp_path / name
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return str(path)


def _shown(cli, memory_id) -> dict | None:
    result = cli("memory", "show", memory_id, "--agent", "ada", "--json")
    return json.loads(result.stdout) if result.exit_code == 0 else None


def _remember(cli, source) -> dict:
    result = cli("remember", "--from", source, "--agent", "ada", "--json")
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def _operator_before_write(monkeypatch, *args: str) -> None:
    """Run ``arcana ARGS`` (another process) after the import's read of the stored rows, just
    before its first write: the window an operator's edit must survive."""
    write_many, pending = MemoryFederation.write_many, [args]

    async def late(self, batch, **kwargs):
        while pending:
            arcana(*pending.pop())
        return await write_many(self, batch, **kwargs)

    monkeypatch.setattr(MemoryFederation, "write_many", late)


@pytest.mark.parametrize(
    ("edit", "field", "kept"),
    [
        (("set", "--visibility", "hidden"), "visibility", "hidden"),
        (("set", "--visibility", "private"), "visibility", "private"),
        (("forget",), "archived", True),
        (("set", "--pin"), "pinned", True),
        (("set", "--unpin"), "pinned", False),
    ],
)
def test_an_operator_edit_during_a_remember_from_stands(cli, tmp_path, monkeypatch, edit, field, kept):
    _remember(cli, _file(tmp_path, "first.jsonl", TEA))
    if edit == ("set", "--unpin"):
        arcana("memory", "set", "tea-1", "--agent", "ada", "--pin")
    _operator_before_write(monkeypatch, "memory", *edit, "tea-1", "--agent", "ada")
    report = _remember(cli, _file(tmp_path, "again.jsonl", JASMINE))
    stored = _shown(cli, "tea-1")
    assert stored[field] == kept
    assert (report["written"], stored["content"]) == (1, JASMINE["content"])  # positive control: the line was written


def test_a_memory_purged_during_a_remember_from_stays_gone(cli, tmp_path, monkeypatch):
    _remember(cli, _file(tmp_path, "first.jsonl", TEA))
    _operator_before_write(monkeypatch, "memory", "purge", "tea-1", "--agent", "ada", "--yes")
    report = _remember(cli, _file(tmp_path, "again.jsonl", JASMINE, NEW))
    assert _shown(cli, "tea-1") is None and (report["kept_removed"], report["written"]) == (1, 1)
    assert _shown(cli, "deploy-1")["content"] == NEW["content"]  # positive control: a new line in the same batch


def test_an_ordinary_edit_still_loosens_what_an_import_kept(cli, tmp_path, monkeypatch):
    _remember(cli, _file(tmp_path, "first.jsonl", TEA))
    _operator_before_write(monkeypatch, "memory", "forget", "tea-1", "--agent", "ada")
    _remember(cli, _file(tmp_path, "again.jsonl", JASMINE))
    assert _shown(cli, "tea-1")["archived"] is True
    arcana("memory", "restore", "tea-1", "--agent", "ada")
    arcana("memory", "set", "tea-1", "--agent", "ada", "--visibility", "hidden")
    arcana("memory", "set", "tea-1", "--agent", "ada", "--visibility", "visible", "--pin")
    arcana("memory", "set", "tea-1", "--agent", "ada", "--unpin")
    stored = _shown(cli, "tea-1")
    assert (stored["archived"], stored["visibility"], stored["pinned"]) == (False, "visible", False)


def _edit_line(dump, old: str, new: str) -> None:
    """A person's edit of the export file: the text the import then writes over the stored one."""
    dump.write_text(dump.read_text().replace(json.dumps(old), json.dumps(new)))


def _import_after(monkeypatch, *args: str) -> None:
    """As :func:`_operator_before_write`, for ``arcana import``: just before its write transaction."""
    import_txn, pending = export._import_txn, [args]

    def late(raw, *rest):
        while pending:
            arcana(*pending.pop())
        return import_txn(raw, *rest)

    monkeypatch.setattr(export, "_import_txn", late)


@pytest.mark.parametrize(
    ("edit", "field", "kept"),
    [(("set", "--visibility", "hidden"), "visibility", "hidden"), (("set", "--pin"), "pinned", True)],
)
def test_an_operator_edit_during_an_import_stands(cli, tmp_path, monkeypatch, edit, field, kept):
    _remember(cli, _file(tmp_path, "first.jsonl", TEA))
    dump = tmp_path / "ada.jsonl"
    arcana("export", "--agent", "ada", "--output", str(dump))
    _edit_line(dump, TEA["content"], JASMINE["content"])
    _import_after(monkeypatch, "memory", *edit, "tea-1", "--agent", "ada")
    result = cli("import", str(dump), "--agent", "ada", "--no-embed")
    assert result.exit_code == 0, result.stderr
    stored = _shown(cli, "tea-1")
    assert stored[field] == kept
    assert stored["content"] == JASMINE["content"]  # positive control: the file's edited text was written


def test_a_memory_purged_during_an_import_stays_gone(cli, tmp_path, monkeypatch):
    _remember(cli, _file(tmp_path, "first.jsonl", TEA, NEW))
    dump = tmp_path / "ada.jsonl"
    arcana("export", "--agent", "ada", "--output", str(dump))
    _edit_line(dump, NEW["content"], "Deploys go out on Mondays.")
    _import_after(monkeypatch, "memory", "purge", "tea-1", "--agent", "ada", "--yes")
    result = cli("import", str(dump), "--agent", "ada", "--no-embed")
    assert result.exit_code == 0, result.stderr
    assert _shown(cli, "tea-1") is None
    assert _shown(cli, "deploy-1")["content"] == "Deploys go out on Mondays."  # positive control: the rest was written
