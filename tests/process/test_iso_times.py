"""Issue 21 item 10: every time in JSON is ISO 8601 UTC ending in Z (CLI and MCP alike)."""

from __future__ import annotations

import json
import re
from datetime import datetime

from mcp_client import call, session
from runner import arcana, keyword_only

ISO_Z = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")
TIME_KEY = re.compile(r"(?:^|_)(?:at|since)$|^valid_(?:from|to)$")


def times(value, found: list) -> list:
    """Every (key, value) under a time key, however deep."""
    if isinstance(value, dict):
        for k, v in value.items():
            if TIME_KEY.search(k) and v is not None:
                found.append((k, v))
            times(v, found)
    elif isinstance(value, list):
        for v in value:
            times(v, found)
    return found


def assert_iso(payload) -> int:
    found = times(payload, [])
    for key, value in found:
        assert isinstance(value, str) and ISO_Z.match(value), (key, value)
        datetime.fromisoformat(value)
    return len(found)


async def test_cli_and_mcp_json_give_every_time_as_iso_8601(arcana_home, tmp_path):
    keyword_only(arcana_home)
    arcana("remember", "The user likes green tea", "--agent", "ada")
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# A\nSee [[B]].\n")
    arcana("vault", "add", str(notes), "--name", "notes")
    arcana("vault", "index", "notes", "--keyword-only")
    id = json.loads(arcana("memory", "list", "--agent", "ada", "--json"))[0]["id"]
    arcana("memory", "set", id, "--agent", "ada", "--importance", "0.8")
    history = json.loads(arcana("memory", "history", id, "--agent", "ada", "--json"))
    assert history[-1]["after"]["importance"] == 0.8  # control: the images are there
    counted = assert_iso(history)
    assert counted >= 6  # at, created_at, updated_at of several images: epoch floats before
    assert assert_iso(json.loads(arcana("vault", "status", "notes", "--json"))) >= 1  # last_indexed_at
    assert assert_iso(json.loads(arcana("memory", "show", id, "--agent", "ada", "--json"))) >= 2
    # A replaced version's images carry its valid time: `valid_to` and the successor's `valid_from`.
    arcana("remember", "I live in Berlin.", "--agent", "ada")
    moved = json.loads(arcana("remember", "I moved to Lisbon last month.", "--agent", "ada", "--json"))
    (berlin,) = moved["supersedes"]
    for replaced in (berlin, moved["id"]):
        history = json.loads(arcana("memory", "history", replaced, "--agent", "ada", "--json"))
        valid = [k for r in history for k in ("valid_from", "valid_to") if (r["after"] or {}).get(k) is not None]
        assert valid and assert_iso(history) >= 4, (valid, history)  # control: a valid time in the images
    async with session("--agent", "ada") as client:
        failed, answer = await call(client, "history", id=id)
        assert not failed and assert_iso(answer) >= 2
        failed, got = await call(client, "get", id=id)
        assert not failed and assert_iso(got) >= 1
