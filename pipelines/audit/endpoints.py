"""What the audit asks of each key: one cheap read per kind of data the spec says a key opens.

Per the spec's Authentication section, any key that reads campaigns also reads the four
billing endpoints; a deployment that restricts keys answers 403 on those instead. The snapshot
endpoints come from the snapshot registry; the ledger, which is not a snapshot, is added here.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from pipelines.audit.inventory import BILLING, CAMPAIGNS
from pipelines.snapshots.registry import SNAPSHOTS


class Outcome(Enum):
    READABLE = "readable"  # 2xx with a JSON body
    REJECTED = "rejected"  # 401: the key is missing, unknown or revoked
    FORBIDDEN = "forbidden"  # 403: a valid key, outside its scope
    UNKNOWN = "unknown"  # anything else: never read as "rejected"


@dataclass(frozen=True)
class Endpoint:
    name: str
    path: str
    family: str
    data: str  # what a holder of the key can read there, for messages

    def __post_init__(self) -> None:
        if self.family not in (BILLING, CAMPAIGNS):
            raise ValueError(f"endpoint {self.name}: unknown key scope {self.family!r}")

    @property
    def is_billing(self) -> bool:
        return self.family == BILLING


ENDPOINTS: tuple[Endpoint, ...] = (
    *(Endpoint(e.name, e.path, e.audit.scope, e.audit.data) for e in SNAPSHOTS if e.audit),
    Endpoint("transactions", "/Consumption/transactions", BILLING, "the whole credit ledger"),
)
BY_NAME = {e.name: e for e in ENDPOINTS}
