"""Small files Arcana replaces by a rename (a vault's state, config.json): each is written to a temp file of
a unique name in the same folder and fsynced before the rename, so a crash never leaves an empty file.

os.fsync and os.replace are the standard library's: they are wrapped to record what they were called on
(and still do their work), not replaced."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from memory.config import ArcanaConfig, save_config
from memory.vaults.state import load_state, update_state

pytestmark = pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="names an fd through /proc")


@pytest.fixture
def calls(monkeypatch) -> list[tuple]:
    seen: list[tuple] = []
    fsync, replace = os.fsync, os.replace

    def recording_fsync(fd):
        seen.append(("fsync", os.readlink(f"/proc/self/fd/{fd if isinstance(fd, int) else fd.fileno()}")))
        return fsync(fd)

    def recording_replace(src, dst, **kw):
        seen.append(("replace", str(src), str(dst)))
        return replace(src, dst, **kw)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    monkeypatch.setattr(os, "replace", recording_replace)
    return seen


def _temp_synced_then_renamed(calls: list[tuple], path: Path) -> str:
    """The temp file renamed over ``path``: a hidden one in its folder, fsynced before the rename."""
    [at] = [i for i, c in enumerate(calls) if c[0] == "replace" and c[2] == str(path)]
    temp = Path(calls[at][1])
    assert temp.parent == path.parent and temp.name.startswith(".") and temp.name.endswith(".tmp")
    assert ("fsync", str(temp)) in calls[:at], calls
    assert not temp.exists()
    return temp.name


def test_a_vault_state_write_is_fsynced_before_its_rename(tmp_path, calls):
    """update_state renamed its temp file without an fsync: a crash after the rename could leave an empty
    state file (a watch's liveness lost)."""
    path = tmp_path / "vaults" / "notes.state.json"
    update_state(path, last_event=1.0)
    first = _temp_synced_then_renamed(calls, path)
    calls.clear()
    update_state(path, last_index=2.0)
    assert _temp_synced_then_renamed(calls, path) != first  # a unique temp name per write
    assert load_state(path)[0] == {"last_event": 1.0, "last_index": 2.0}
    assert oct(path.stat().st_mode & 0o777) == oct(0o600)


def test_config_json_passes_the_same_check(tmp_path, calls):
    """Control: the config's writer, which always fsynced, passes the check the state write failed."""
    path = tmp_path / "config.json"
    save_config(path, ArcanaConfig(recall={"limit": 7}))
    _temp_synced_then_renamed(calls, path)
    assert json.loads(path.read_text()) == {"recall": {"limit": 7}}


def test_a_host_transcript_offset_is_fsynced_before_its_rename(tmp_path, calls):
    """`host save` wrote how far it had read a transcript through a fixed ``.tmp`` name, unsynced: a crash
    could leave an empty offset file, and the next save read (and stored) the whole transcript again."""
    from memory.agents import AgentRegistry
    from memory.home import Home
    from memory.hosts.records import read_record
    from memory.runtime.host_save import _save_record

    home = Home(tmp_path / "home")
    card = AgentRegistry(home).create("ada")
    path = home.agent_dir(card.id) / "hosts" / "claude-code" / "session-1.json"
    _save_record(home, card, path, 1234, ["u1"])
    _temp_synced_then_renamed(calls, path)
    assert read_record(path) == (1234, ["u1"], None)
