"""Reading one ledger page exactly, and quickly when the page is plain.

Money must never pass through float, so a JSON number is kept as its exact text. Two decoders do
that. The fast one (msgspec, typed) reads a page whose entries have exactly the documented fields
with the documented JSON types, keeping each amount as its raw JSON text; it is several times
quicker than the standard library and is what nearly every page takes. Anything else, an unknown
field, a number where a string belongs, a numeric string, a lone surrogate, falls back to the
generic decoder (``json.loads`` with numbers kept as text), whose rows validation examines one by
one and quarantines with a reason. Both hand validation the same wire columns
(transforms/wire.py), so a page means the same whichever way it was read; a property test holds
the two to that.

The envelope is checked here, because a page whose envelope lies cannot be trusted at all.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Annotated, Any

import msgspec
from pydantic import ValidationError

from pipelines.api.errors import MalformedResponse
from pipelines.api.models import LedgerPage as LedgerEnvelope
from transforms.json_text import JsonNumber, dumps_exact  # noqa: F401  (re-exported)
from transforms.wire import WireColumns, columns_from_rows

_NUMBER_START = frozenset(b"-0123456789")


class _Entry(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    createdAt: str  # the wire's names
    type: str
    amount: msgspec.Raw
    balanceAfter: msgspec.Raw
    description: str | None = None
    hasDescription: bool | None = None
    channel: str | None = None
    agentId: str | None = None
    campaignId: str | None = None


class _Page(msgspec.Struct, gc=False):
    data: list[_Entry]
    total: Annotated[int, msgspec.Meta(ge=0)]
    pageNumber: Annotated[int, msgspec.Meta(ge=1)]
    pageSize: Annotated[int, msgspec.Meta(ge=1)]


_FAST = msgspec.json.Decoder(_Page)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _exact(body: bytes) -> Any:
    return json.loads(
        body, parse_float=JsonNumber, parse_int=JsonNumber, parse_constant=_reject_constant
    )


def row_key(row: Any) -> Any:
    """Enough of an entry to see it twice (drift detection); cheap, it runs for every entry."""
    if row.__class__ is not dict:
        return ("<not an object>", repr(row))
    key = (row.get("createdAt"), row.get("balanceAfter"), row.get("amount"), row.get("type"))
    try:
        hash(key)
    except TypeError:  # a malformed entry with a list or object where a scalar belongs
        return repr(key)
    return key


@dataclass
class LedgerPage:
    """One page: its envelope, its entries as wire columns, and the keys drift checks compare."""

    total: int
    page_number: int
    page_size: int
    body: bytes = field(repr=False)
    keys: list[Any] = field(repr=False)
    _columns: WireColumns | None = field(default=None, repr=False)
    _rows: list[Any] | None = field(default=None, repr=False)

    @property
    def count(self) -> int:
        return len(self.keys)

    @property
    def data(self) -> list[Any]:
        """The entries as parsed JSON (numbers as exact text), for the rare reader of rows."""
        if self._rows is None:
            self._rows = list(_exact(self.body)["data"])
        return self._rows

    def columns(self) -> tuple[WireColumns, dict[int, str]]:
        """Wire columns for validation, and the reasons of entries already known to be wrong."""
        if self._columns is not None:
            return self._columns, {}
        return columns_from_rows(self.data)

    def raw(self, position: int) -> Any:
        """The entry as received, for the quarantine's raw JSON."""
        return self.data[position]


def _fast(body: bytes) -> LedgerPage | None:
    try:
        page = _FAST.decode(body)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    entries = page.data
    amounts = [bytes(e.amount) for e in entries]
    balances = [bytes(e.balanceAfter) for e in entries]
    # Only plain JSON numbers take this path: a numeric string, a null or an object in a money
    # field is the generic reader's business, which words the reason.
    if not all(b[0] in _NUMBER_START for b in amounts) or not all(
        b[0] in _NUMBER_START for b in balances
    ):
        return None
    amount_texts = [b.decode() for b in amounts]
    balance_texts = [b.decode() for b in balances]
    created = [e.createdAt for e in entries]
    types = [e.type for e in entries]
    columns = WireColumns(
        created=created,
        strings={
            "entry_type": types,
            "description": [e.description for e in entries],
            "channel": [e.channel for e in entries],
            "agent_id": [e.agentId for e in entries],
            "campaign_id": [e.campaignId for e in entries],
        },
        money={"amount": amount_texts, "balance_after": balance_texts},
        flags=[e.hasDescription for e in entries],
    )
    keys = list(zip(created, balance_texts, amount_texts, types, strict=True))
    return LedgerPage(page.total, page.pageNumber, page.pageSize, body, keys, _columns=columns)


def parse_ledger_page(body: bytes, where: str, *, fast: bool = True) -> LedgerPage:
    """Parse a ledger page; a body that is not a page raises MalformedResponse (retryable)."""
    if fast:
        page = _fast(body)
        if page is not None:
            return page
    try:
        doc = _exact(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise MalformedResponse(f"{where}: the body is not valid JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise MalformedResponse(f"{where}: expected a JSON object with data and total")
    try:
        envelope = LedgerEnvelope.model_validate(doc)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:3]
        )
        raise MalformedResponse(f"{where}: not a ledger page ({problems})") from None
    rows = envelope.data
    return LedgerPage(
        envelope.total,
        envelope.page_number,
        envelope.page_size,
        body,
        [row_key(row) for row in rows],
        _rows=rows,
    )
