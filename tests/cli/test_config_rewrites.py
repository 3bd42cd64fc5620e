"""A command that rewrites config.json keeps the user's file as the user wrote it.

Every rewrite used to write every default: a two-key file came back ~70 lines
long after one `pool create`, and a default changed in a later version never
reached that user. A rewrite now keeps the keys the file had plus the ones
the command changed; defaults stay implicit and still apply.
"""

from __future__ import annotations

import json

import pytest

from memory.config import ArcanaConfig

# Keyword-only (no model load) and a user value equal to the default: a pinned value stays pinned.
USERS = {"embedding": {"providers": []}, "recall": {"limit": 10}}
MODEL = ("--provider", "ollama", "--base-url", "http://127.0.0.1:9", "--model", "llama3")

# (set-up commands, the rewriting command, what it adds to the file, a key `config get` shows changed).
REWRITES = {
    "init": ((), ("init",), {}, None),
    "config set": ((), ("config", "set", "prune.mode", "purge"), {"prune": {"mode": "purge"}}, ("prune.mode", "purge")),
    "config set a default": ((), ("config", "set", "embedding.batch_size", "32"),  # named, so pinned
                             {"embedding": {"providers": [], "batch_size": 32}}, ("embedding.batch_size", 32)),
    "config set section": ((), ("config", "set", "memory.extraction.language", "pt"),
                           {"memory": {"extraction": {"language": "pt"}}}, ("memory.extraction.language", "pt")),
    "pool create": ((), ("pool", "create", "team"), {"pools": {"team": {}}}, ("pools.team.members", [])),
    "agent join": ((("pool", "create", "team"), ("agent", "create", "bob")), ("agent", "join", "bob", "team"),
                   {"pools": {"team": {"members": ["<bob>"]}}}, ("pools.team.members", ["<bob>"])),
    "agent leave": ((("pool", "create", "team"), ("agent", "join", "bob", "team")), ("agent", "leave", "bob", "team"),
                    {"pools": {"team": {"members": []}}}, ("pools.team.members", [])),
    "memory.pools": ((("pool", "create", "team"),), ("config", "set", "memory.pools", "team"),
                     {"pools": {"team": {}}, "memory": {"pools": ["team"]}}, ("memory.pools", ["team"])),
    "pool remove": ((("pool", "create", "team"),), ("pool", "remove", "team", "--yes"), {"pools": {}}, None),
    "model add": ((), ("model", "add", "m", *MODEL, "--default"),
                  {"models": {"m": {"provider": "ollama", "base_url": "http://127.0.0.1:9", "model": "llama3"}},
                   "default_model": "m"}, ("models.m.timeout_seconds", 120.0)),
    "model remove": ((("model", "add", "m", *MODEL, "--default"),), ("model", "remove", "m"),
                     {"models": {}, "default_model": None}, None),
    "vault add": ((), ("vault", "add", "<notes>", "--name", "notes"), {"vaults": {"notes": {"path": "<notes>"}}},
                  ("vaults.notes.max_file_bytes", 1024 * 1024)),
    "vault remove": ((("vault", "add", "<notes>", "--name", "notes"),), ("vault", "remove", "notes", "--yes"), {"vaults": {}}, None),
    "agent delete": ((("pool", "create", "team"), ("agent", "join", "bob", "team")), ("agent", "delete", "bob", "--yes"),
                     {"pools": {"team": {"members": []}}}, ("pools.team.members", [])),
}


@pytest.mark.parametrize("case", REWRITES)
def test_a_rewrite_keeps_the_users_keys_and_the_change_only(cli, arcana_home, tmp_path, case):
    setup, command, added, changed = REWRITES[case]
    notes = tmp_path / "notes"
    notes.mkdir()
    arcana_home.root.mkdir(mode=0o700)
    arcana_home.config_path.write_text(json.dumps(USERS))

    def filled(value):
        text = json.dumps(value).replace("<notes>", str(notes))
        if "<bob>" in text:
            text = text.replace("<bob>", json.loads(cli("agent", "show", "bob", "--json").stdout)["id"])
        return json.loads(text)

    for args in setup:
        assert cli(*filled(list(args))).exit_code == 0, args
    result = cli(*filled(list(command)))
    assert result.exit_code == 0, result.output

    on_disk = json.loads(arcana_home.config_path.read_text())
    assert on_disk == {**USERS, **filled(added)}
    assert json.loads(cli("config", "show", "--explicit", "--json").stdout) == on_disk
    # The change, the user's keys and the implicit defaults are all in effect (positive control).
    if changed is not None:
        key, value = changed
        assert json.loads(cli("config", "get", key, "--json").stdout) == filled(value)
    assert json.loads(cli("config", "get", "embedding.providers", "--json").stdout) == []
    default = ArcanaConfig().embedding.batch_size
    assert json.loads(cli("config", "get", "embedding.batch_size", "--json").stdout) == default


def test_init_writes_an_empty_object_and_show_fills_the_defaults(cli, arcana_home):
    assert cli("init").exit_code == 0
    assert arcana_home.config_path.read_text() == "{}\n"
    shown = json.loads(cli("config", "show", "--json").stdout)
    assert shown["recall"]["limit"] == ArcanaConfig().recall.limit and shown["memory"]["global"] == "vector"
    assert json.loads(cli("config", "show", "--explicit", "--json").stdout) == {}
