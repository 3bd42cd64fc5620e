"""Server URLs (postgresql://) checked and masked, so a password never reaches a message or a file."""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

from memory.errors import ConfigError

_SCHEMES = ("postgresql", "postgres")


def check_url(url: str) -> str:
    """``url`` if it is a postgresql:// URL naming a host, else a ConfigError (masked)."""
    parts = urlsplit(url)
    if parts.scheme not in _SCHEMES or not (parts.hostname or "host=" in parts.query):
        raise ConfigError(
            f"invalid server URL '{mask_url(url)}': use postgresql://USER[:PASSWORD]@HOST[:PORT]/DATABASE"
        )
    return url


def password_of(url: str) -> str | None:
    try:
        return urlsplit(url).password
    except ValueError:
        return None


def mask_url(url: str) -> str:
    """``url`` with any password replaced by ``***`` (also a ``password=`` query parameter)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparseable URL>"
    netloc = parts.netloc
    if parts.password is not None:
        userinfo, _, hostport = netloc.rpartition("@")
        user = userinfo.split(":", 1)[0]
        netloc = f"{user}:***@{hostport}"
    query = re.sub(r"(?i)(password=)[^&]*", r"\1***", parts.query)
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def scrub(text: str, url: str) -> str:
    """``text`` with ``url``'s password (if any) masked wherever it appears."""
    secret = password_of(url)
    return text.replace(secret, "***") if secret else text
