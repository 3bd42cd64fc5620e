"""`arcana doctor` on a home with damaged pieces beside its databases: each is a FAIL row saying what
is wrong and how to fix it; before, every row said ok. Real homes, real processes."""

from __future__ import annotations

import json

from runner import arcana, keyword_only, run_arcana

from arcana_cli import exit_codes


def _rows(home) -> tuple[int, dict[str, dict]]:
    done = run_arcana("doctor", "--json", home=home)
    assert "Traceback" not in done.stderr
    return done.returncode, {c["name"]: c for c in json.loads(done.stdout)["checks"]}


def test_doctor_names_a_damaged_vault_state_and_a_pool_with_no_database(arcana_home, make_vault):
    keyword_only(arcana_home)
    arcana("remember", "hello", "--agent", "ada")
    arcana("vault", "add", str(make_vault({"a.md": "# A\n"})), "--name", "notes")
    arcana("vault", "index", "notes")
    for pool in ("team", "gone"):
        arcana("pool", "create", pool)
    code, rows = _rows(arcana_home)  # control: the same home before the damage is healthy, rows said
    assert code == exit_codes.OK and rows["vault states"]["ok"] and rows["pools"]["ok"], rows

    arcana_home.vault_state("notes").write_text('{"last_indexed_at": 1')
    arcana_home.pool_db("gone").unlink()
    config = json.loads(arcana_home.config_path.read_text())
    config["pools"]["far"] = {"url_env": "ARCANA_TEST_UNSET_POOL_URL"}  # set by hand: no such variable
    arcana_home.config_path.write_text(json.dumps(config))
    code, rows = _rows(arcana_home)
    assert code == exit_codes.FAILURE
    vault = rows["vault state notes"]
    assert not vault["ok"] and "damaged" in vault["detail"] and "arcana vault index notes" in vault["detail"]
    pool = rows["pool gone"]
    assert not pool["ok"] and str(arcana_home.pool_db("gone")) in pool["detail"] and "pool remove gone" in pool["detail"]
    far = rows["pool far"]
    assert not far["ok"] and "ARCANA_TEST_UNSET_POOL_URL" in far["detail"]
    assert "pool team" not in rows and "pools" not in rows  # the intact pool is no failure (control)


def test_doctor_runs_past_a_damaged_restore_journal_and_fails_a_row_for_it(arcana_home):
    """A restore killed in its swap whose journal is then damaged stopped every command, doctor too
    (the tool that diagnoses must run). Now doctor runs its checks and fails a `restore` row with the
    fix; every other command still refuses the half-swapped home (control)."""
    keyword_only(arcana_home)
    arcana("remember", "hello", "--agent", "ada")
    staging = arcana_home.root / ".restore-20261207.partial"
    (staging / "home").mkdir(parents=True)
    (staging / ".lock").touch()  # its restore is gone: the lock is free
    (staging / "journal.json").write_text('{"names": [')
    code, rows = _rows(arcana_home)
    assert code == exit_codes.FAILURE
    restore = rows["restore"]
    assert not restore["ok"] and "journal.json is unreadable" in restore["detail"] and f"move {staging}" in restore["detail"]
    assert rows["round trip"]["ok"] and rows["config"]["ok"]  # the other checks ran
    refused = run_arcana("memory", "list", "--agent", "ada", home=arcana_home)
    assert refused.returncode != 0 and "journal.json is unreadable" in refused.stderr
    assert staging.is_dir()  # nothing moved: the journal says nothing it can be trusted for


def test_doctor_names_a_damaged_host_save_record_and_passes_a_sound_one(arcana_home, tmp_path):
    """A host-save record (how far a session's transcript was stored) that cannot be read stops every
    save of that session; doctor said ok. Now it fails a row naming the file and the fix; the record a
    real save wrote for another session is no failure (control)."""
    keyword_only(arcana_home)
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(json.dumps({"type": "user", "message": {"role": "user", "content": "I prefer tea."},
                                      "sessionId": "s1", "uuid": "u1", "timestamp": "2026-12-01T10:00:00Z"}) + "\n")
    for session in ("s1", "s2"):
        arcana("host", "save", "claude-code", "--agent", "dev",
               stdin=json.dumps({"session_id": session, "transcript_path": str(transcript)}))
    [agent] = [p for p in (arcana_home.root / "agents").iterdir()]
    records = agent / "hosts" / "claude-code"
    assert sorted(p.name for p in records.iterdir()) == ["s1.json", "s2.json"]
    code, rows = _rows(arcana_home)
    assert code == exit_codes.OK and "host-save records" in rows, rows  # control: both sound
    (records / "s2.json").write_text('{"offset": ')
    code, rows = _rows(arcana_home)
    assert code == exit_codes.FAILURE
    [row] = [r for name, r in rows.items() if name.startswith("host-save record ")]
    assert not row["ok"] and str(records / "s2.json") in row["detail"] and "remove it" in row["detail"]
    assert "s1.json" not in row["detail"]
