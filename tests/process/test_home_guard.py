"""ARCANA_HOME pointing at a folder that is not a home (`/`, `$HOME`, `/tmp`) is refused, never made 0700."""

from __future__ import annotations

from runner import run_arcana

from arcana_cli import exit_codes


def test_a_folder_holding_other_things_is_refused_and_left_as_it_was(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o755)
    (shared / "notes.txt").write_text("mine")
    done = run_arcana("remember", "The user likes tea", "--agent", "ada", home=shared)
    assert done.returncode == exit_codes.USAGE and done.stderr.count("\n") == 1
    assert "a folder of its own" in done.stderr and str(shared / ".arcana") in done.stderr
    assert (shared.stat().st_mode & 0o777) == 0o755 and sorted(p.name for p in shared.iterdir()) == ["notes.txt"]


def test_an_empty_folder_or_an_existing_home_is_used(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir(mode=0o755)
    assert run_arcana("remember", "The user likes tea", "--agent", "ada", home=empty).returncode == 0
    assert (empty.stat().st_mode & 0o777) == 0o700  # made private, as a new home is
    again = run_arcana("recall", "tea", "--agent", "ada", home=empty)  # now a home: used as it is
    assert again.returncode == 0 and "likes tea" in again.stdout
