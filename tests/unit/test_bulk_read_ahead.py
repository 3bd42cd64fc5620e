"""remember --from reads the next window while the store writes this one: at most one ahead,
and a caller that stops early leaves no read running."""

from __future__ import annotations

import threading
import time
from contextlib import aclosing

from memory.operations.bulk_import import Parsed, _read_ahead


def _windows(read: list[int], closed: threading.Event, count: int, slow_from: int = 10**9):
    try:
        for i in range(count):
            if i >= slow_from:
                time.sleep(0.2)  # a window that takes a while to read
            read.append(i)
            yield Parsed([], [], set(), i)
    finally:
        closed.set()


async def test_every_window_comes_in_order_with_one_read_ahead():
    read, closed = [], threading.Event()
    seen = []
    async with aclosing(_read_ahead(_windows(read, closed, 5))) as windows:
        async for window in windows:
            seen.append(window.lines)
            assert len(read) <= window.lines + 2  # this window and at most the next
    assert seen == [0, 1, 2, 3, 4] and closed.is_set()


async def test_a_caller_that_stops_early_leaves_no_read_running():
    read, closed = [], threading.Event()
    async with aclosing(_read_ahead(_windows(read, closed, 100, slow_from=2))) as windows:
        async for window in windows:
            if window.lines == 1:
                break
    assert read == [0, 1, 2]  # the one read ahead finished before the caller went on; nothing more was read
