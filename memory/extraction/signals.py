"""Surface cues the heuristic extractor reads, per language, kept apart from the extractor.

A language is a :class:`SignalPatterns` registered under an ISO code with
:func:`register_language`; the extractor never changes to learn one. English
and Portuguese ship.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from memory import languages
from memory.errors import InvalidRequestError

_FLAGS = re.IGNORECASE | re.UNICODE
_NEVER = re.compile(r"(?!)")
_STEP_LINE = r"^\s*(?:\d+[.)]|[-*•]|{word}\s*\d+\s*[:.)-])\s+\S"


_SENTENCE = re.compile(r"[.!?？]\s+")
# Words a period ends without ending the sentence: "My dentist is Dr. Weiss" was two facts, the
# first "My dentist is Dr.". Titles and a few Latin ones (English, Portuguese); a lone letter is an
# initial ("J. K. Rowling").
ABBREVIATIONS = frozenset({
    "dr", "dra", "mr", "mrs", "ms", "mx", "prof", "profa", "sr", "sra", "srta", "jr", "st", "mt",
    "vs", "etc", "e.g", "i.e", "cf", "approx", "a.m", "p.m",
})


def sentences(text: str) -> list[str]:
    """``text`` split after . ! or ?, whitespace collapsed, empty pieces dropped; not after an
    abbreviation's period (:data:`ABBREVIATIONS`) or an initial's."""
    text = " ".join(text.split())
    pieces, start = [], 0
    for end in _SENTENCE.finditer(text):
        said = text[start : end.start() + 1]
        word = said.rsplit(" ", 1)[-1][:-1].lower()
        if said.endswith(".") and (word in ABBREVIATIONS or (len(word) == 1 and word.isalpha())):
            continue
        pieces.append(said)
        start = end.end()
    pieces.append(text[start:])
    return [s for s in pieces if s.strip()]


@dataclass(frozen=True)
class SignalPatterns:
    """Compiled cues for one language.

    ``imperative`` raises importance ("remember", "always"); ``preference`` marks
    a durable user-stated fact (→ SEMANTIC); ``howto`` a request for a procedure,
    which pairs with ``steps`` in the answer (→ PROCEDURAL); ``framing`` is the
    leading wrapper ("by the way, remember that") stripped when distilling.
    """

    language: str
    imperative: re.Pattern
    preference: re.Pattern
    howto: re.Pattern
    steps: re.Pattern
    framing: re.Pattern = field(default=_NEVER)

    def is_imperative(self, text: str) -> bool:
        return bool(self.imperative.search(text))

    def states_preference(self, text: str) -> bool:
        """A preference cue in a sentence that states something: "What editor do I
        like?" carries the cue "I like" but asserts nothing, so questions are skipped."""
        return any(self.preference.search(s) for s in sentences(text) if not s.rstrip().endswith(("?", "？")))

    def asks_howto(self, text: str) -> bool:
        return bool(self.howto.search(text))

    def step_lines(self, text: str) -> list[str]:
        """The answer's step lines; two or more make it a procedure."""
        return [line.strip() for line in text.splitlines() if self.steps.match(line)]

    def strip_framing(self, text: str) -> str:
        return self.framing.sub("", text, count=1).strip()


def compile_patterns(
    language: str, *, imperative: str, preference: str, howto: str, step_word: str, framing: str | None = None
) -> SignalPatterns:
    """Build a :class:`SignalPatterns` from plain regex strings (case-insensitive)."""
    return SignalPatterns(
        language=language,
        imperative=re.compile(imperative, _FLAGS),
        preference=re.compile(preference, _FLAGS),
        howto=re.compile(howto, _FLAGS),
        steps=re.compile(_STEP_LINE.format(word=step_word), _FLAGS),
        framing=re.compile(framing, _FLAGS) if framing else _NEVER,
    )


ENGLISH = compile_patterns(
    "en",
    imperative=r"\b(?:remember|don'?t forget|do not forget|never forget|always|never|make sure|keep in mind|important)\b",
    preference=(
        r"\b(?:i (?:really |usually |always )?(?:prefer|like|love|hate|dislike|want|need|use|work|live|am allergic)"
        r"|i'?m (?:a|an|based|allergic|working|using)\b|i am (?:a|an|based|allergic|working|using)\b"
        r"|my [\w -]{1,30}? (?:is|are|was)\b|call me\b|remember that\b|keep in mind that\b|note that\b)"
    ),
    howto=r"\b(?:how (?:do|can|should|would|to)\b|what are the steps|steps to\b|walk me through|guide me)",
    step_word="step",
    framing=(
        r"^\s*(?:(?:by the way|btw|oh|also|and|so|hey|ok(?:ay)?|please|just|fyi)\b[,:\s]*)*"
        r"(?:(?:remember|note|keep in mind|don'?t forget|do not forget|never forget)\b(?:\s+that\b)?[,:\s]*)?"
    ),
)

PORTUGUESE = compile_patterns(
    "pt",
    imperative=r"\b(?:lembre(?:-se)?|lembra|não esqueça|nunca esqueça|sempre|nunca|importante|anote)\b",
    preference=(
        r"\b(?:(?:eu )?(?:prefiro|gosto de|adoro|odeio|uso|trabalho|moro|sou alérgic[oa])"
        r"|(?:meu|minha|meus|minhas) [\w -]{1,30}? (?:é|são|era)\b|me chame de|lembre(?:-se)? (?:de )?que)"
    ),
    howto=r"\b(?:como (?:faço|fazer|posso|devo|se faz)|quais são os passos|passo a passo|me ensine)",
    step_word="passo",
    framing=(
        r"^\s*(?:(?:aliás|a propósito|por favor|ah|então|ei|olá|também)\b[,:\s]*)*"
        r"(?:(?:lembre(?:-se)?|lembra|anote|não esqueça)\b(?:\s+de)?(?:\s+que\b)?[,:\s]*)?"
    ),
)

def register_language(code: str, patterns: SignalPatterns) -> None:
    """Register (or replace) the cue set for ISO code ``code`` (e.g. ``"pt"``)."""
    languages.register("signal", code, patterns)


def get_signals(code: str) -> SignalPatterns:
    return languages.lookup("signal", code)


def check_language(code: str) -> None:
    """Refuse (exit 2) a ``memory.extraction.language`` with no cue set registered: `config set` stored it,
    and every later `arcana run` and MCP session failed on it (exit 4). Checked when it is set, not when
    the file loads, since a library may register its own language after loading the config."""
    if code not in languages.codes("signal"):
        raise InvalidRequestError(f"memory.extraction.language: no language '{code}' is registered "
                                  f"(registered: {', '.join(languages.codes('signal'))}); give one of those")


register_language("en", ENGLISH)
register_language("pt", PORTUGUESE)
