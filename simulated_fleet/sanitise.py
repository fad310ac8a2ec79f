"""Secrets in error text: planting them (per run, from a seeded Faker) and scrubbing them.

Vendor errors leak: stack traces and context maps carry API keys, bearer tokens, e-mail
addresses, home-directory paths and internal URLs.  :class:`PlantedSecrets` makes a
small pool of such values for one run from its own Faker instance (``seed_instance``,
never the global ``Faker.seed``), so a raw format can put them in its text and a test
can look for them in every file a run writes.  :func:`sanitise` replaces every secret
shape with ``[REDACTED]``; structured formats pass their context through it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fleetchaos.sim import _rng

REDACTED = "[REDACTED]"

#: The secret shapes the sanitiser knows, by name.  Order matters: a bearer token is
#: scrubbed before a bare key shape could match part of it.
PATTERNS: dict[str, re.Pattern[str]] = {
    "bearer_token": re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{8,}"),
    "api_key": re.compile(r"\b(?:sk|pk|rk|api|key)[-_](?:live|test|prod)?[-_]?[A-Za-z0-9]{16,}\b"),
    "email": re.compile(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b"),
    "home_path": re.compile(
        r"(?:/home|/Users)/[^/\s\"']+(?:/[^\s\"':,)]*)?|[A-Za-z]:\\Users\\[^\\\s\"']+(?:\\[^\s\"':,)]*)?"
    ),
    "internal_url": re.compile(
        r"\bhttps?://[^\s\"'/]*(?:\.internal|\.corp|\.local|\.lan|\.svc\.cluster\.local)\b[^\s\"']*"
    ),
}


def sanitise(text: str) -> str:
    """``text`` with every known secret shape replaced by ``[REDACTED]``."""
    for pattern in PATTERNS.values():
        text = pattern.sub(REDACTED, text)
    return text


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
