"""ARCANA_HOME pointing at a folder that is not a home (`/`, `$HOME`, `/tmp`) is refused, never made 0700."""

from __future__ import annotations

import os

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


def test_an_arcana_home_that_is_not_utf8_is_refused_before_anything_is_made(tmp_path):
    """`--home` with such bytes was exit 2, but ARCANA_HOME with them made the home and the agent's card,
    then the store could not open ('surrogates not allowed'): exit 5 with a card and no memory."""
    bad = os.fsdecode(bytes(tmp_path) + b"/home-\xff")  # as Python hands the variable over
    for args in (("remember", "The user likes tea", "--agent", "ada"), ("config", "path")):
        done = run_arcana(*args, home=bad)
        assert done.returncode == exit_codes.USAGE and done.stderr.count("\n") == 1, done.stderr
        assert "ARCANA_HOME" in done.stderr and "home-\\xff" in done.stderr and "not valid UTF-8" in done.stderr
    assert [p.name for p in tmp_path.iterdir()] == []  # nothing made
    good = tmp_path / "home-é"  # control: a UTF-8 path outside ASCII is a home like any other
    assert run_arcana("remember", "The user likes tea", "--agent", "ada", home=good).returncode == 0
    assert "likes tea" in run_arcana("recall", "tea", "--agent", "ada", home=good).stdout
