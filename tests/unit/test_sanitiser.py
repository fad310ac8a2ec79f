"""The one sanitiser: planted and real key shapes by pattern, known secrets by value, never a secret in part."""

from __future__ import annotations

import pytest

from fleetchaos.sim.interrupts import policy_text
from fleetchaos.sim.sanitise import REDACTED, environment_secrets, sanitise

#: (text with a secret, the text as scrubbed).
SHAPES = [
    ("key sk-proj-Q3vZ8rT1yU5iO9pA2sD6fG0hJ4kL7zX1cV5bN8mQ2wE6r end", "key [REDACTED] end"),
    ("key sk-T3BlbkFJ8a7s6d5f4g3h2j1k0l9z8x7c6v5b4n3m end", "key [REDACTED] end"),
    ("sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe9", "[REDACTED]"),
    ("aws AKIAZ7Q3VJ4K8M2N6P0R in use", "aws [REDACTED] in use"),
    ("clone with ghp_aZ3bY4cX5dW6eV7fU8gT9hS0iR1jQ2kP3lO4", "clone with [REDACTED]"),
    ("github_pat_11AZ3BY4C0aZ3bY4cX5dW6_eV7fU8gT9hS0iR1", "[REDACTED]"),
    ("slack xoxb-2424242424-4242424242424-Zq8Xw7Cv6Bn5", "slack [REDACTED]"),
    ("slack xoxp-1357913579-2468024680-ZyXwVuTsRqPo", "slack [REDACTED]"),
    ("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJvcHMifQ.T2hKbWxp4k9jZm1v", "jwt [REDACTED]"),
    ("login password=Tr0ub4dor&3-horse failed", "login password=[REDACTED] failed"),
    ('{"db_password": "s3cret value", "user": "ops"}', '{"db_password": [REDACTED], "user": "ops"}'),
    ("PGPASSWORD: pgS3cret", "PGPASSWORD: [REDACTED]"),
    ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCY", "aws_secret_access_key = [REDACTED]"),
    ("postgresql://billing:pgS3cretPass88@db.example.com:5432/x", "postgresql://[REDACTED]@db.example.com:5432/x"),
    ("redis://:onlyApass99@cache:6379/0", "redis://[REDACTED]@cache:6379/0"),
    ("Authorization: Bearer b3arerT0kenValue0987", "Authorization: [REDACTED]"),
    ("{Authorization=Basic dXNlcjpwYXNzd29yZA==}", "{Authorization=[REDACTED]}"),
    ("session Bearer b3arerT0kenValue0987", "session [REDACTED]"),
    ("key AIzaSyA-1234567890abcdefghijklmnopqrstu", "key [REDACTED]"),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----", "[REDACTED]"),
    ("sk_live_HZUkPXZdpzwOkXjRwsEP2ImQo3IB", "[REDACTED]"),
    ("mail ops@acme.example.org from /home/ops/app", "mail [REDACTED] from [REDACTED]"),
]


@pytest.mark.parametrize(("text", "scrubbed"), SHAPES, ids=[s[0][:16] for s in SHAPES])
def test_every_key_shape_is_redacted(text, scrubbed):
    """Each real-shaped secret is replaced; the words around it, an assignment's name and a URL's host stay."""
    assert sanitise(text) == scrubbed


@pytest.mark.parametrize(
    "text",
    [
        "max_tokens: 500, tokens=1200, the token expired",
        "commit 3f9c2a1e8b7d6c5f4e3a2b1c0d9e8f7a6b5c4d3e on main",
        "GET https://api.example.com/v1/contacts?page=2 returned 503",
        "scikit sk-learn and a key-value store, AKIA1 too short",
        "password policy rejected the change",
    ],
)
def test_ordinary_text_is_left_alone(text):
    """Words that only look near a secret (max_tokens, a commit hash, a plain URL) are not scrubbed."""
    assert sanitise(text) == text


def test_sanitising_twice_changes_nothing():
    """A text already scrubbed is scrubbed to itself (texts pass the sanitiser more than once on their way out)."""
    text = "password=hunter2hunter2 postgres://a:b@c Authorization: Bearer abcdefghij 'api_key': 'zzzzzzzz'"
    once = sanitise(text)
    assert sanitise(once) == once
    assert once.count(REDACTED) == 4


def test_known_values_are_redacted_whatever_their_shape():
    """A value the run knows is replaced wherever it appears, the longest first; values too short are not."""
    text = "token 95ed8377 in 95ed8377aa and the word abc"
    assert sanitise(text, ["95ed8377aa", "95ed8377", "abc"]) == f"token {REDACTED} in {REDACTED} and the word abc"


def test_environment_secrets_are_the_values_of_secret_named_variables():
    """OPENAI_API_KEY, GITHUB_TOKEN, DB_PASSWORD are secrets; PWD, PATH and short values are not."""
    env = {
        "OPENAI_API_KEY": "v-openai-123456",
        "GITHUB_TOKEN": "v-github-123456",
        "DB_PASSWORD": "v-db-123456",
        "SENTRY_DSN": "https://abc@sentry.example/1",
        "PWD": "/home/me/project",
        "PATH": "/usr/bin:/bin",
        "SHORT_TOKEN": "abc",
        "TOKENIZERS_PARALLELISM": "false-ish-value",
    }
    assert set(environment_secrets(env)) == {
        "v-openai-123456",
        "v-github-123456",
        "v-db-123456",
        "https://abc@sentry.example/1",
    }


def test_a_text_cut_short_never_shows_part_of_a_secret():
    """A long message is cut before it is flattened and scrubbed: the cut drops the word it would split, so a
    key shape cut too short to be recognised never shows (here 16 characters of a project key's prefix)."""
    secret = "sk-proj-Q3vZ8rT1yU5iO9pA2sD6fG0hJ4kL7zX1cV5bN8mQ2wE6r"
    for spaces in (1990, 1995, 3990, 3995, 31990, 31995):
        shown = policy_text(" " * spaces + secret + " tail", limit=500)
        assert "sk-proj" not in shown, spaces
