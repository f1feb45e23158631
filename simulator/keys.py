"""API keys of the simulated companies. A key's text never appears in a repr or a log line."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Literal

Scope = Literal["full", "campaigns"]


def fingerprint(secret: str) -> str:
    """First 12 hex of sha256: enough to tell keys apart, useless to call the API."""
    return hashlib.sha256(secret.encode()).hexdigest()[:12]


def derive_secret(seed: int, company: str, label: str) -> str:
    digest = hashlib.sha256(f"creditlens-sim/{seed}/{company}/{label}".encode()).hexdigest()
    return f"sk_sim_{digest[:40]}"


@dataclass(frozen=True)
class ApiKey:
    company: str
    label: str
    scope: Scope
    revoked: bool
    secret: str = field(repr=False)

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.secret)

    def __repr__(self) -> str:
        return (
            f"ApiKey(company={self.company!r}, label={self.label!r}, scope={self.scope!r}, "
            f"revoked={self.revoked}, fingerprint={self.fingerprint!r})"
        )

    __str__ = __repr__


@dataclass(frozen=True)
class CompanyInfo:
    name: str
    keys: tuple[ApiKey, ...]
