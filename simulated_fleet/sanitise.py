"""Secrets in error text: planting them (per run, from a seeded Faker) and scrubbing them.

Vendor errors leak: stack traces and context maps carry API keys, bearer tokens, e-mail
addresses, home-directory paths and internal URLs.  :class:`PlantedSecrets` makes a
small pool of such values for one run from its own Faker instance (``seed_instance``,
never the global ``Faker.seed``), so a raw format can put them in its text and a test
can look for them in every file a run writes.

:func:`sanitise` is the one scrubber: it replaces every value it is given (a run's
planted secrets, the secrets of the environment: :func:`environment_secrets`) and every
shape in :data:`PATTERNS` (the planted shapes and the common real ones: OpenAI, AWS,
GitHub, Slack and Google keys, JWTs, private keys, ``password=``-style assignments,
``Authorization`` headers, bearer tokens and credentials in URLs) with ``[REDACTED]``.
Structured formats pass their context through it; every text a policy or the code under
test hands back passes through it before it is recorded (:mod:`fleetchaos.sim.interrupts`).
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass

from fleetchaos.sim import _rng

REDACTED = "[REDACTED]"

#: Names whose value is a secret when they are assigned (``password=...``, ``"api_key": "..."``,
#: ``X-Auth-Token: ...``): a name *ending* in one of these (``db_password``, not ``max_tokens``).
_SECRET_NAMES = (
    r"passw(?:or)?d|pwd|secret|token|credentials?|api[_-]?key|apikey|"
    r"(?:access|secret|private|signing|encryption|client|master|account)[_-]?key|session[_-]?id|cookie"
)

#: The secret shapes the sanitiser knows, by name, scrubbed in this order (an ``Authorization``
#: header before the bearer token in it, an assignment before the key shape it holds).  A
#: pattern with a group keeps it: the name of an assignment, a URL's scheme.
PATTERNS: dict[str, re.Pattern[str]] = {
    "private_key": re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)", re.S),
    "authorization": re.compile(
        r"(?i)(\b(?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?)(?:(?:bearer|basic|digest|token)\s+)?[^\s\"',;}]+"
    ),
    "assignment": re.compile(
        rf"(?i)(?=[acempst])((?:{_SECRET_NAMES})[\"']?\s*[:=]\s*)(?!\[REDACTED\])(\"[^\"\n]*\"|'[^'\n]*'|[^\s\"',;}}\])]+)"
    ),
    "url_credentials": re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*://)[^\s/@\"'<>]+(?=@)"),
    "bearer_token": re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{8,}"),
    "jwt": re.compile(r"\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*"),
    "openai_key": re.compile(r"\b(?:sk|pk|rk)-[A-Za-z0-9_-]{16,}"),
    "api_key": re.compile(r"\b(?:sk|pk|rk|api|key)[-_](?:live|test|prod)?[-_]?[A-Za-z0-9]{16,}\b"),
    "aws_access_key": re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA|APKA|ASCA)[A-Z0-9]{16}\b"),
    "github_token": re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"),
    "slack_token": re.compile(r"\bxox[a-z]-[A-Za-z0-9-]{8,}"),
    "google_api_key": re.compile(r"\bAIza[0-9A-Za-z_-]{30,}"),
    "email": re.compile(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b"),
    "home_path": re.compile(
        r"(?:/home|/Users)/[^/\s\"']+(?:/[^\s\"':,)]*)?|[A-Za-z]:\\Users\\[^\\\s\"']+(?:\\[^\s\"':,)]*)?"
    ),
    "internal_url": re.compile(
        r"\bhttps?://[^\s\"'/]*(?:\.internal|\.corp|\.local|\.lan|\.svc\.cluster\.local)\b[^\s\"']*"
    ),
}


#: Shortest value :func:`sanitise` replaces by value (shorter ones would scrub ordinary words).
MIN_VALUE_CHARS = 6

#: Environment variables whose value :func:`environment_secrets` treats as a secret: a name
#: with one of these words (``OPENAI_API_KEY``, ``GITHUB_TOKEN``, ``DATABASE_URL`` is not one).
_SECRET_ENV = re.compile(r"(?i)(?:^|_)(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|PWD|CREDENTIALS?|AUTH|DSN|PAT)(?:_|$)")

#: Names of that shape whose values are not secrets.
_NOT_SECRET_ENV = frozenset({"PWD", "OLDPWD", "SSH_AUTH_SOCK", "GPG_AGENT_INFO", "XAUTHORITY"})


def _scrub(pattern: re.Pattern[str], text: str) -> str:
    if pattern.groups:
        return pattern.sub(lambda m: m.group(1) + REDACTED, text)
    return pattern.sub(REDACTED, text)


def sanitise(text: str, values: Iterable[str] = ()) -> str:
    """``text`` with every value in ``values`` (longest first) and every secret shape replaced by ``[REDACTED]``."""
    for value in sorted({v for v in values if len(v) >= MIN_VALUE_CHARS}, key=len, reverse=True):
        if value in text:
            text = text.replace(value, REDACTED)
    return _shapes_scrubbed(text)


@functools.lru_cache(maxsize=8192)
def _shapes_scrubbed(text: str) -> str:
    # Cached: a simulated run renders the same few vendor lines (a tool's status with one of
    # the run's planted secrets) thousands of times.
    for pattern in PATTERNS.values():
        text = _scrub(pattern, text)
    return text


def environment_secrets(environ: dict[str, str] | None = None) -> tuple[str, ...]:
    """The values of this process's environment variables named like secrets (``*_API_KEY``, ``*_TOKEN``...).

    The code under test reads its credentials from there, and its errors can quote them;
    redacting them by value catches a key whatever its shape.
    """
    env = os.environ if environ is None else environ
    return tuple(
        value
        for name, value in env.items()
        if len(value) >= MIN_VALUE_CHARS and name.upper() not in _NOT_SECRET_ENV and _SECRET_ENV.search(name)
    )


@dataclass(frozen=True, slots=True)
class PlantedSecrets:
    """The secrets one run plants in vendor error text, a few of each shape."""

    api_keys: tuple[str, ...]
    tokens: tuple[str, ...]
    emails: tuple[str, ...]
    home_paths: tuple[str, ...]
    internal_urls: tuple[str, ...]

    @classmethod
    def for_run(cls, seed: int, per_kind: int = 4) -> PlantedSecrets:
        """The pool of one run, drawn from a Faker instance seeded from ``seed`` alone."""
        from faker import Faker

        fake = Faker("en_US")
        fake.seed_instance(_rng.key(seed, _rng.stream_id("planted-secrets")))
        users = [fake.unique.user_name() for _ in range(per_kind)]
        return cls(
            api_keys=tuple(f"sk_live_{fake.password(length=32, special_chars=False)}" for _ in range(per_kind)),
            tokens=tuple(fake.sha256() for _ in range(per_kind)),
            emails=tuple(fake.unique.email() for _ in range(per_kind)),
            home_paths=tuple(f"/home/{u}/fleet/{fake.word()}" for u in users),
            internal_urls=tuple(f"https://{fake.domain_word()}.corp.internal/api/v{1 + i}" for i in range(per_kind)),
        )

    def all(self) -> tuple[str, ...]:
        """Every planted value (the strings a leak scan looks for)."""
        return self.api_keys + self.tokens + self.emails + self.home_paths + self.internal_urls

    def pick(self, key: int) -> tuple[str, str, str, str, str]:
        """One secret of each shape for the call keyed ``key``: (api key, token, e-mail, path, url)."""
        n = len(self.api_keys)
        return (
            self.api_keys[key % n],
            self.tokens[(key >> 3) % n],
            self.emails[(key >> 6) % n],
            self.home_paths[(key >> 9) % n],
            self.internal_urls[(key >> 12) % n],
        )

    def count_in(self, *texts: str) -> int:
        """How many planted values (with multiplicity of value, not of occurrence) appear in ``texts``."""
        joined = "\n".join(texts)
        return sum(1 for value in self.all() if value in joined)
