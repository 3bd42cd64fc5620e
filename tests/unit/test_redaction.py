"""The shapes :func:`memory.redaction.redact` takes out of captured text, and the look-alikes it keeps.

Every text here is one a person or a model could send; each secret case says
exactly what is kept around the removed value (the key name, the URL, the
header), and every look-alike must come back unchanged, so a rule that
removed too much fails as surely as one that removed too little.
"""

from __future__ import annotations

import pytest

from memory.redaction import REMOVED, redact

JWT = ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ."
       "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c")
R = REMOVED

SECRETS = [
    # JWTs: three base64url parts, the header a JSON object (eyJ…)
    (f"the session cookie was {JWT}.", f"the session cookie was {R}."),
    # assignments: the key name stays, the value goes
    ("password=hunter2", f"password={R}"),
    ("password=hunter2.", f"password={R}."),
    ("in Markdown: `password=hunter2`, then `passwd: Tr0ub4dor&3`.", f"in Markdown: `password={R}`, then `passwd: {R}`."),
    ("DB_PASSWORD=s3cr3t!x in .env", f"DB_PASSWORD={R} in .env"),
    ("passwd: Tr0ub4dor&3", f"passwd: {R}"),
    ('secret="correct horse battery staple"', f'secret="{R}"'),
    ('{"api_key": "abcd1234efgh", "user": "ann"}', f'{{"api_key": "{R}", "user": "ann"}}'),
    ("client_secret: 9f8e7d6c5b4a", f"client_secret: {R}"),
    ("callback?token=abc123def&next=/home", f"callback?token={R}&next=/home"),
    ("API-KEY := 'k-20250107-abc'", f"API-KEY := '{R}'"),
    ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", f"aws_secret_access_key = {R}"),
    # bearer and basic credentials in an Authorization header
    ("curl -H 'Authorization: Bearer abc123.def456-ghi' https://api.example.com",
     f"curl -H 'Authorization: Bearer {R}' https://api.example.com"),
    ('headers = {"Authorization": "Basic dXNlcjpwYXNzd29yZA=="}', f'headers = {{"Authorization": "Basic {R}"}}'),
    # a URL's password: the URL stays
    ("DATABASE_URL is postgres://app:pa55w0rd@db.internal:5432/main", f"DATABASE_URL is postgres://app:{R}@db.internal:5432/main"),
    ("clone https://ann:p@ss@git.example.com/x.git", f"clone https://ann:{R}@git.example.com/x.git"),
    # provider keys
    ("stripe sk_test_4eC39HqLyjWDarjtT1zdp7dc", f"stripe {R}"),
    ("stripe rk_live_51H8abcDEFghiJKLmnoPQRstu", f"stripe {R}"),
    ("anthropic sk-ant-admin01-Zx8Yw7Vu6Ts5Rq4Po3Nm2Lk1", f"anthropic {R}"),
]

LOOKALIKES = [
    "eyJ is how a JWT header starts, and a.b.c has three parts",
    "The password: must be at least 12 characters.",
    "password: 8 characters minimum",
    "passwd: files systemd",
    "set max_tokens=1024 and tokens: 512",
    "The tokenizer: bert-base-uncased",
    "The word token: \"a unit of text\" in NLP",
    "the secret: it's in the vault",
    "password = getpass()",
    "secret = tmp_path / 'outside-secret.md'; password = args.password; token = self.auth-token",
    "api_key=os.environ['OPENAI_API_KEY']",
    "password=${DB_PASSWORD} and token=<your token> and secret=%(secret)s",
    "password=******** in the masked log, password=… and token=... elided",
    "Markdown names them: `passwd: files`, ``password=…``, ``scheme://user:…@host``, `args.password`",
    "the Authorization: Bearer header, then Authorization: Bearer $TOKEN",
    "https://example.com:8080/path?q=1 and git@github.com:org/repo.git and ssh://git@host:22/repo",
    "postgres://app:${PGPASSWORD}@db/main",
    "use postgresql://USER[:PASSWORD]@HOST[:PORT]/DATABASE, e.g. postgresql://arcana:PASSWORD@db.example:5432/team",
    "postgres://user:password@localhost/db as in the tutorial",
    "sk_test_ starts a Stripe test key; sk-learn-compatible-pipelines",
    f"token: {R} was already redacted; password={R}",
]


@pytest.mark.parametrize(("text", "kept"), SECRETS)
def test_a_secret_is_removed_and_what_names_it_is_kept(text, kept):
    assert redact(text) == kept


@pytest.mark.parametrize("text", LOOKALIKES)
def test_words_that_only_look_like_a_secret_are_kept(text):
    assert redact(text) == text


def test_redacting_twice_changes_nothing_more():
    text = " ".join(secret for secret, _ in SECRETS)
    once = redact(text)
    assert once.count(R) >= len(SECRETS) and redact(once) == once


@pytest.mark.parametrize("unit", ["a.", "http://a:", "password=", 'token: "a', "x_password."])
def test_a_runaway_answer_is_redacted_in_linear_time(unit):
    """A model may answer with megabytes: one unanchored pattern took 42 s over "a." * 50_000 (quadratic);
    200 KB now takes well under a second, so 10 s only fails a pattern that scans from every character."""
    import time

    text = unit * (200_000 // len(unit))
    started = time.perf_counter()
    assert redact(text + f" password=hunter22 {JWT}").endswith(f" password={R} {R}")  # control: still redacts after it
    assert time.perf_counter() - started < 10
