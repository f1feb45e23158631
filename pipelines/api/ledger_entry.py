"""The fields of a ledger entry, declared once.

An entry's fields are named on the wire (the API's JSON), in the typed rows validation hands on,
in the warehouse's ``ledger_entries`` columns and their COMMENTs, and in the page decoder's fast
path. Each of those is derived from ``ENTRY_FIELDS`` below, so a field renamed, added or made
optional here changes everywhere at once, and cannot be spelled two ways. The identity rule is
the one exception, on purpose: transforms/identify.py spells its own list, and a test holds it
to these fields, so changing identities stays a decision.

The kinds are abstract on purpose: this module says what a field holds, and each reader maps
the kind to its own type (msgspec in pipelines/api/ledger_page.py, polars in
pipelines/api/wire.py, SQL in the warehouse schema).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

# Every amount lands as DECIMAL(18,6): the API's money is exact to the micro-credit, and the
# warehouse, the validation and the reconciliation's integer arithmetic all rely on that type.
MONEY_PRECISION = 18
MONEY_SCALE = 6


class Kind(StrEnum):
    """What a field holds, whatever the reader's type system."""

    TIMESTAMP = "timestamp"  # ISO 8601 text on the wire, UTC microseconds once typed
    STRING = "string"
    MONEY = "money"  # a JSON number (or numeric string) kept as exact text, then DECIMAL(18,6)
    FLAG = "flag"  # a JSON boolean


def _snake_case(wire: str) -> str:
    """createdAt -> created_at: the warehouse's spelling of a wire name."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", wire).lower()


@dataclass(frozen=True)
class EntryField:
    """One documented field of an entry.

    ``required`` fields must be present and non-null on an entry that lands: the fast path
    decodes only pages where they are, and their warehouse columns are NOT NULL. ``doc`` is the
    column's COMMENT, and so the data dictionary (docs/data-dictionary.md).
    """

    wire: str
    kind: Kind
    doc: str
    required: bool = False
    column: str = ""  # the wire name in snake_case unless given

    def __post_init__(self) -> None:
        if not self.column:
            object.__setattr__(self, "column", _snake_case(self.wire))


CREATED_AT = EntryField("createdAt", Kind.TIMESTAMP, "createdAt of the entry (UTC).", required=True)
TYPE = EntryField(
    "type",
    Kind.STRING,
    "type of the entry; an open set (never assume a list).",
    required=True,
    column="entry_type",
)
AMOUNT = EntryField("amount", Kind.MONEY, "amount exactly as the API gave it.", required=True)
DESCRIPTION = EntryField("description", Kind.STRING, "description (the reason).")
HAS_DESCRIPTION = EntryField("hasDescription", Kind.FLAG, "hasDescription.")
CHANNEL = EntryField(
    "channel", Kind.STRING, "channel; an open set. Null for entries not tied to one."
)
AGENT_ID = EntryField("agentId", Kind.STRING, "agentId; null for entries not tied to an agent.")
CAMPAIGN_ID = EntryField(
    "campaignId", Kind.STRING, "campaignId; null for entries not tied to a campaign."
)
BALANCE_AFTER = EntryField(
    "balanceAfter", Kind.MONEY, "balanceAfter: the balance after the entry.", required=True
)

# In column order: the typed rows, ledger_entries and the identity rule's canonical text all
# follow it.
ENTRY_FIELDS: tuple[EntryField, ...] = (
    CREATED_AT,
    TYPE,
    AMOUNT,
    DESCRIPTION,
    HAS_DESCRIPTION,
    CHANNEL,
    AGENT_ID,
    CAMPAIGN_ID,
    BALANCE_AFTER,
)

# Any field beyond the documented ones is kept, as JSON text, in this column.
EXTRA_COLUMN = "extra"
EXTRA_DOC = "Fields the API sent beyond the spec, as JSON text; null if none."


def fields_of(kind: Kind) -> tuple[EntryField, ...]:
    """The fields of one kind, in column order."""
    return tuple(f for f in ENTRY_FIELDS if f.kind is kind)
