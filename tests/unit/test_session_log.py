"""A purge rewrites a session file while `arcana run` may be appending to it: both hold the file's
lock, and an append that waited for a rewrite writes to the file now under the name."""

from __future__ import annotations

import fcntl
import json
import os
import threading

from memory import session_log


def _line(**event) -> str:
    return json.dumps(event) + "\n"


def test_an_append_waiting_for_a_rewrite_lands_in_the_rewritten_file(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_text(_line(kind="turn", prompt="My locker code is zebrasecret.", response="Noted."))
    fd = os.open(path, os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)  # a rewrite in progress holds the file
    appended = threading.Thread(target=session_log.append, args=(path, _line(kind="closed")))
    appended.start()
    appended.join(0.3)
    assert appended.is_alive()  # it waits for the lock
    partial = tmp_path / "s.jsonl.purging"
    partial.write_text(_line(kind="turn", prompt="[purged]", response="Noted."))
    os.replace(partial, path)
    os.close(fd)
    appended.join(5)
    assert [json.loads(line)["kind"] for line in path.read_text().splitlines()] == ["turn", "closed"]


def test_erase_takes_the_text_out_of_turns_and_summaries_and_leaves_the_rest(tmp_path):
    """Word for word anywhere; in the turn that wrote the memory, each sentence saying its words (an
    extraction may have reworded them). The control turn, in the same file, and another file stay."""
    secret, control = "My locker code is zebrasecret.", "The weather is mild."
    path = tmp_path / "s.jsonl"
    path.write_text(_line(kind="turn", prompt=f"Hi. {secret} Bye.", response="Noted.")
                    + _line(kind="turn", prompt="The code for the locker: zebrasecret! Thanks.", response="Noted.")
                    + _line(kind="written", turn=1, ids=["m1"])
                    + _line(kind="turn", prompt=control, response="Noted.")
                    + _line(kind="summary", text=f"User said: {secret}")
                    + '{"kind": "turn", "prompt": "torn ' + secret)
    other = tmp_path / "t.jsonl"
    other.write_text(_line(kind="turn", prompt=control, response="Noted."))
    before = other.stat().st_mtime_ns
    assert session_log.erase(tmp_path, "m1", secret, lambda said: "zebrasecret" in said) == 1
    events = [json.loads(line) for line in path.read_text().splitlines()[:-1]]
    assert [e.get("prompt", e.get("text")) for e in events] == [
        "Hi. [purged] Bye.", "[purged] Thanks.", None, control, "User said: [purged]"]
    assert b"zebrasecret" not in path.read_bytes()
    assert other.stat().st_mtime_ns == before  # a file without the text is not rewritten
    assert not (tmp_path / "s.jsonl.purging").exists()
