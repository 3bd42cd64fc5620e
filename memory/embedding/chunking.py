"""Cut a long text into pieces the embedder reads whole: at headings, then paragraphs, within a budget.

MiniLM reads 256 word pieces and silently drops the rest, so a long note's
vector describes its beginning only. A chunk is a span of the text (character
offsets, so the stored row stays the only copy of the words) of at most
:data:`CHUNK_CHARS` characters. The budget is in characters rather than
tokens so that cutting needs no model: 800 characters of English prose are
about 170-200 MiniLM word pieces, and the vault-chunk benchmark measures the
largest chunk of its corpus with the real tokenizer (man/vaults.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

CHUNK_CHARS = 800
MAX_CHUNKS = 512  # a pathological note embeds this many pieces, the rest stays keyword-only
_MIN_SECTION = CHUNK_CHARS // 4  # a heading after less than this much text joins its predecessor
_BLOCK = re.compile(r"[^\n]*\S[^\n]*(?:\n[^\n]*\S[^\n]*)*")  # a run of non-blank lines: a paragraph
_HEADING = re.compile(r"#{1,6}[ \t]+(\S[^\n]*)")
_BREAK = re.compile(r"(?<=[.!?;:])\s+|\n")  # where a too-long paragraph may be cut
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Span:
    """``text[start:end]``, and the heading it sits under ('' before the first)."""

    start: int
    end: int
    heading: str = ""


def split(text: str, budget: int = CHUNK_CHARS) -> list[Span]:
    """The chunks of ``text`` in order; a text within ``budget`` is one chunk."""
    if len(text) <= budget:
        return [Span(0, len(text))]
    spans: list[Span] = []
    start: int | None = None
    end = 0
    heading = current = ""
    for block in _BLOCK.finditer(text):
        title = _HEADING.match(block.group())
        if title:
            current = title.group(1).strip()
            if start is not None and end - start >= _MIN_SECTION:
                spans.append(Span(start, end, heading))
                start = None
        pos, block_end = block.start(), block.end()
        while pos < block_end:
            if start is None:
                start, heading = pos, current
            if block_end - start <= budget:
                end = block_end
                break
            if end > start and end - start >= _MIN_SECTION:  # close what we have, start afresh here
                spans.append(Span(start, end, heading))
                start = None
                continue
            end, pos = _cut(text, pos, start + budget)  # fill this chunk with the head of the paragraph
            spans.append(Span(start, end, heading))
            start = None
    if start is not None:
        spans.append(Span(start, end, heading))
    return spans[:MAX_CHUNKS]


def _cut(text: str, pos: int, limit: int) -> tuple[int, int]:
    """Where to end a piece starting at ``pos`` before ``limit``, and where the next begins.

    At a sentence end in the second half of the room, else at a space, else hard.
    """
    cut = max((m.end() for m in _BREAK.finditer(text, pos + (limit - pos) // 2, limit)), default=None)
    if cut is None:
        cut = max((m.start() for m in _SPACE.finditer(text, pos + 1, limit)), default=limit)
    piece_end = cut
    while piece_end > pos + 1 and text[piece_end - 1].isspace():
        piece_end -= 1
    while cut < len(text) and text[cut].isspace():
        cut += 1
    return piece_end, cut


def embed_text(text: str, span: Span) -> str:
    """What is embedded for a chunk past the first: the text's title line and heading give it context."""
    body = text[span.start : span.end]
    first = text.split("\n", 1)[0].strip()
    context = [first] if first and len(first) <= 120 and not body.startswith(first) else []
    if span.heading and not _HEADING.match(body):
        context.append(span.heading)
    return "\n".join([*context, body]) if context else body


def snippet_for(text: str, query: str | None, budget: int = CHUNK_CHARS) -> str | None:
    """The chunk of a long ``text`` to show for ``query``: the one sharing most of its words, else the first.

    None for a text within one chunk (the whole text is its own snippet).
    """
    spans = split(text, budget)
    if len(spans) < 2:
        return None
    span = best_lexical(text, spans, query or "") or spans[0]
    return text[span.start : span.end]


def best_lexical(text: str, spans: list[Span], query: str) -> Span | None:
    """The span sharing most query words (keyword hits have no chunk score); None when none shares any."""
    words = {w for w in re.findall(r"\w+", query.lower()) if len(w) > 2}
    if not words or len(spans) < 2:
        return None
    best, best_hits = None, 0
    for span in spans:
        found = set(re.findall(r"\w+", text[span.start : span.end].lower()))
        hits = len(words & found)
        if hits > best_hits:
            best, best_hits = span, hits
    return best
