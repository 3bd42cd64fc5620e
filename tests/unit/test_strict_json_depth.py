"""Nesting is refused before the decoder recurses into it: at Python's recursion limit a garbage
collection in the middle of the decoder's recursion printed "Exception ignored in sys.unraisablehook"
a screen at a time before the one-line error (seen in `arcana run` reading a model's answer)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from memory.strict_json import MAX_DEPTH, JSONRefused, loads


def test_nesting_past_the_limit_is_refused_and_at_it_is_read():
    assert loads("[" * MAX_DEPTH + "]" * MAX_DEPTH) == loads("[" * MAX_DEPTH + "]" * MAX_DEPTH)  # the control
    with pytest.raises(JSONRefused, match="nested too deeply"):
        loads("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1))
    with pytest.raises(JSONRefused, match="nested too deeply"):
        loads('{"a": ' * (MAX_DEPTH + 1) + "1" + "}" * (MAX_DEPTH + 1))


def test_brackets_inside_strings_and_side_by_side_are_no_nesting():
    text = '{"k": "' + "[{" * 5_000 + '\\" [[", "list": [' + ", ".join(["[1]"] * 5_000) + "]}"
    data = loads(text)
    assert data["k"].startswith("[{") and len(data["list"]) == 5_000


def test_a_hundred_thousand_levels_leave_stderr_clean():
    """In a process that collects garbage at every allocation, so a collection would run mid-recursion."""
    code = ("import gc; gc.set_threshold(1)\n"
            "from memory.strict_json import loads, JSONRefused\n"
            "try:\n    loads('[' * 100_000 + ']' * 100_000)\nexcept JSONRefused as exc:\n    print(exc)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "nested too deeply" in done.stdout, done
    assert done.stderr == "", done.stderr
