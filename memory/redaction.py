"""Obvious secrets taken out of text Arcana captures without the user typing it as a memory.

A host transcript, an `arcana run` turn, what a model extracts or summarises
from them, and what an agent asks the MCP tools to store hold what was pasted
or repeated: an API key, a token, a private key. Stored, it would sit in plain
text in the session's turns, its summary and its memories, and come back in
every briefing and recall. The user's own `arcana remember` is stored as typed
(their choice, man/memory.md). Only shapes no prose has are replaced (a
provider's key prefix followed by a long token with a digit, an AWS key id, a
private key block), so ordinary text naming them is kept. The kernel holds it
because the runtime, the extraction library and the MCP skin all apply it.
"""

from __future__ import annotations

import re

REMOVED = "[secret removed]"

_TOKEN = r"(?=[A-Za-z0-9_-]*[0-9])[A-Za-z0-9_-]"  # a token's characters, at least one of them a digit
_SECRETS = re.compile(
    "|".join([
        rf"(?<![\w-])sk-{_TOKEN}{{20,}}",  # OpenAI (sk-…, sk-proj-…), Anthropic (sk-ant-api03-…)
        rf"(?<![\w-])[rs]k_live_{_TOKEN}{{20,}}",  # Stripe
        r"(?<!\w)gh[pousr]_[A-Za-z0-9]{36,}",  # GitHub tokens
        r"(?<!\w)github_pat_[A-Za-z0-9_]{22,}",
        r"(?<!\w)(?:AKIA|ASIA)[0-9A-Z]{16}(?![0-9A-Za-z])",  # AWS access key ids
        r"(?<!\w)xox[abprs]-[A-Za-z0-9-]{10,}",  # Slack
        r"(?<!\w)AIza[0-9A-Za-z_-]{35}",  # Google API keys
        # a private key block, or its start when the text was cut before its end
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?:.*?-----END [A-Z0-9 ]*PRIVATE KEY-----|.*)",
    ]),
    re.DOTALL,
)
# aws_secret_access_key = VALUE: the value has no shape of its own, its name says what it is
_NAMED = re.compile(r"(?i)(aws_secret_access_key\s*[=:]\s*[\"']?)[A-Za-z0-9/+=]{40}(?![A-Za-z0-9/+=])")


def redact(text: str) -> str:
    """``text`` with each obvious secret replaced by REMOVED."""
    return _NAMED.sub(rf"\g<1>{REMOVED}", _SECRETS.sub(REMOVED, text))
