"""Obvious secrets taken out of text Arcana captures without the user typing it as a memory.

A host transcript, an `arcana run` turn, what a model extracts or summarises
from them, and what an agent asks the MCP tools to store hold what was pasted
or repeated: an API key, a token, a private key. Stored, it would sit in plain
text in the session's turns, its summary and its memories, and come back in
every briefing and recall. The user's own `arcana remember` is stored as typed
(their choice, man/memory.md). Only shapes no prose has are replaced (a
provider's key prefix followed by a long token with a digit, an AWS key id, a
JWT, a private key block), and a value that only its name marks as secret
(``password=…``, ``Authorization: Bearer …``, ``scheme://user:…@host``) when
it is no placeholder, code or plain word; the name is kept, and so is ordinary
text naming a secret. The kernel holds it
because the runtime, the extraction library and the MCP skin all apply it.
"""

from __future__ import annotations

import re

REMOVED = "[secret removed]"

_TOKEN = r"(?=[A-Za-z0-9_-]*[0-9])[A-Za-z0-9_-]"  # a token's characters, at least one of them a digit
_SECRETS = re.compile(
    "|".join([
        rf"(?<![\w-])sk-{_TOKEN}{{20,}}",  # OpenAI (sk-…, sk-proj-…), Anthropic (sk-ant-api03-…)
        rf"(?<![\w-])[rs]k_(?:live|test)_{_TOKEN}{{20,}}",  # Stripe
        r"(?<!\w)gh[pousr]_[A-Za-z0-9]{36,}",  # GitHub tokens
        r"(?<!\w)github_pat_[A-Za-z0-9_]{22,}",
        r"(?<!\w)(?:AKIA|ASIA)[0-9A-Z]{16}(?![0-9A-Za-z])",  # AWS access key ids
        r"(?<!\w)xox[abprs]-[A-Za-z0-9-]{10,}",  # Slack
        r"(?<!\w)AIza[0-9A-Za-z_-]{35}",  # Google API keys
        r"(?<![\w-])eyJ[A-Za-z0-9_-]{10,}(?:\.[A-Za-z0-9_-]{4,}){2}",  # a JWT: a JSON header, then two parts
        # a private key block, or its start when the text was cut before its end
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?:.*?-----END [A-Z0-9 ]*PRIVATE KEY-----|.*)",
    ]),
    re.DOTALL,
)

# Values with no shape of their own, which only what names them marks as secret: the name is kept.
# KEY = VALUE (``password=…``, ``"api_key": "…"``, ``passwd: …``, ``?token=…``)
_KEY = r"[\w.-]*?(?:password|passwd|secret|token|api[_-]?key|secret[_-]?(?:access[_-]?)?key)"
_ASSIGNED = re.compile(
    rf"""(?ix) (?<![\w.-]) (?P<kq>["']?) {_KEY} (?P=kq) [ \t]* (?P<sep>:?=|:) [ \t]*
    (?: (?P<q>["']) (?P<quoted>[^"'\n]{{1,1024}}) (?P=q)          # a quoted value
      | (?P<bare>[^\s"'`]{{0,1023}}[^\s"'`.,;:!?)\]]) )  # a bare one, without the sentence's full stop or a Markdown `
    """
)
# Every repeat is bounded and every start is the start of a word: a model's answer of megabytes
# ("a." * 50_000 took 42 s with an unanchored scheme) is redacted in linear time.
_AUTHORIZATION = re.compile(
    r"""(?i)\bauthorization["']?[ \t]*[:=][ \t]*["']?(?:bearer|basic|token)[ \t]+(?P<bare>[A-Za-z0-9._~+/-]+=*)"""
)
_URL_PASSWORD = re.compile(  # scheme://user:PASSWORD@host
    r"(?i)(?<![a-z0-9+.-])[a-z][a-z0-9+.-]{0,31}://[^\s:/?#@]{0,256}:(?P<bare>[^\s/?#`]{1,256})@"
)
# a template or placeholder (${X}, <your key>, %(x)s, PASSWORD, user:password@), code (getpass(),
# os.environ[…]), a mask or an elision (****, …)
_PLACEHOLDER = re.compile(r"[$<%]|.*[()\[\]{}]|[*xX.•…]+$|[A-Z_]+$|(?i:pass(?:word)?|secret|changeme)$")


_WORDS = re.compile(r"[^\W\d_]+(?:[._-][^\W\d_]+)*$")  # words, or words joined by . _ - (args.password, tmp_path)


def _secret_value(value: str) -> bool:
    """Whether a named value is a secret rather than prose or code: no placeholder, at least six
    characters, and not plain words ("passwd: files", "token = self.token") unless 20 or more long."""
    if len(value) < 6 or _PLACEHOLDER.match(value):
        return False
    return len(value) >= 20 or not _WORDS.match(value)


def _assigned(match: re.Match) -> str:
    quoted = match["quoted"] is not None
    name = "quoted" if quoted else "bare"
    value = match[name]
    start, end = match.span(name)
    if match.string[match.start() - 1 : match.start()] in ("?", "&"):  # a URL's query: the value ends at the next '&'
        value = value.split("&")[0]
        end = start + len(value)
    # "token: "a unit of text"" is prose; a value with spaces is one only where a key is quoted or assigned (=)
    spaced = any(c.isspace() for c in value) and not (match["kq"] or "=" in match["sep"])
    if spaced or not _secret_value(value):
        return match[0]
    return _replaced(match, start, end)


def _replaced(match: re.Match, start: int, end: int) -> str:
    """``match``'s text with its span ``start:end`` (in the whole string) replaced by REMOVED."""
    offset = match.start()
    return match[0][: start - offset] + REMOVED + match[0][end - offset :]


def _header(match: re.Match) -> str:
    return _replaced(match, *match.span("bare")) if _secret_value(match["bare"]) else match[0]


def _url(match: re.Match) -> str:
    return match[0] if _PLACEHOLDER.match(match["bare"]) else _replaced(match, *match.span("bare"))


def redact(text: str) -> str:
    """``text`` with each obvious secret replaced by REMOVED (idempotent: REMOVED is a placeholder)."""
    text = _SECRETS.sub(REMOVED, text)
    text = _AUTHORIZATION.sub(_header, text)
    text = _URL_PASSWORD.sub(_url, text)
    return _ASSIGNED.sub(_assigned, text)
