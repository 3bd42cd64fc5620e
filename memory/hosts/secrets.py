"""Obvious secrets taken out of what a host transcript says before any of it is stored.

A transcript holds what the person pasted: an API key, a token, a private key.
Stored, it would sit in plain text in the agent's session turns, summary and
memories, and come back in every briefing and recall. Only shapes no prose has
are replaced (a provider's key prefix followed by a long token with a digit,
an AWS key id, a private key block), so ordinary text naming them is kept.
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
