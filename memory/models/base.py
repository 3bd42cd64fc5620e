"""The provider protocol every chat backend implements, and the bridge into async code.

Providers are synchronous iterators over streamed text: the stdlib HTTP client
blocks, and a plain iterator is the simplest thing a CLI can print from. Async
callers use :func:`astream`, which runs the iterator on a worker thread.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True)
class ChatMessage:
    role: str  # "system" | "user" | "assistant"
    content: str

    def as_dict(self) -> dict[str, str]:
        return {"role": self.role, "content": self.content}


@runtime_checkable
class ChatProvider(Protocol):
    name: str

    def stream(self, messages: list[ChatMessage], *, temperature: float | None = None) -> Iterator[str]:
        """Yield the answer's text as it arrives; raise ModelUnavailableError on failure."""
        ...


def collect(provider: ChatProvider, messages: list[ChatMessage], *, temperature: float | None = None) -> str:
    """The whole answer as one string."""
    return "".join(provider.stream(messages, temperature=temperature))


_DONE = object()


async def astream(
    provider: ChatProvider, messages: list[ChatMessage], *, temperature: float | None = None
) -> AsyncIterator[str]:
    """Stream from a blocking provider on a daemon thread without blocking the event loop.

    A daemon thread (not the loop's executor) so a consumer that gives up — a
    job cut off by its budget — leaves nothing that holds up process exit.
    """
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue = asyncio.Queue()
    abandoned = threading.Event()

    def post(item: object) -> bool:
        try:
            loop.call_soon_threadsafe(queue.put_nowait, item)
            return True
        except RuntimeError:  # the loop has closed: nobody is listening any more
            return False

    def pump() -> None:
        try:
            for chunk in provider.stream(messages, temperature=temperature):
                if abandoned.is_set() or not post(chunk):
                    return
        except BaseException as exc:  # handed to the consumer, re-raised there
            post(exc)
        finally:
            post(_DONE)

    threading.Thread(target=pump, name=f"model-{provider.name}", daemon=True).start()
    try:
        while True:
            item = await queue.get()
            if item is _DONE:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        abandoned.set()
