"""Reading one ledger page exactly, and quickly when the page is plain.

Money must never pass through float, so a JSON number is kept as its exact text. Two decoders do
that. The fast one (msgspec, typed) reads a page whose entries have exactly the documented fields
with the documented JSON types, keeping each amount as its raw JSON text; it is several times
quicker than the standard library and is what nearly every page takes. Anything else, an unknown
field, a number where a string belongs, a numeric string, a lone surrogate, falls back to the
generic decoder (``json.loads`` with numbers kept as text), whose rows validation examines one by
one and quarantines with a reason. Both hand validation the same wire columns
(pipelines/api/wire.py), so a page means the same whichever way it was read; a property test holds
the two to that. The fast path's entry type is derived from the declared fields
(pipelines/api/ledger_entry.py), so it cannot accept a field validation does not know.

The envelope is checked here, because a page whose envelope lies cannot be trusted at all.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from itertools import repeat
from typing import Annotated, Any

import msgspec
from pydantic import ValidationError

from pipelines.api.errors import MalformedResponse
from pipelines.api.json_text import JsonNumber
from pipelines.api.ledger_entry import (
    AMOUNT,
    BALANCE_AFTER,
    CREATED_AT,
    ENTRY_FIELDS,
    HAS_DESCRIPTION,
    TYPE,
    EntryField,
    Kind,
    fields_of,
)
from pipelines.api.models import LedgerEnvelope
from pipelines.api.wire import WireColumns, columns_from_rows

_NUMBER_START = frozenset("-0123456789")
_STRINGS = fields_of(Kind.STRING)
_MONEY = fields_of(Kind.MONEY)
# What drift detection compares of an entry, by wire name (row_key) and by column (fast path).
_KEY_FIELDS = (CREATED_AT, BALANCE_AFTER, AMOUNT, TYPE)
_KEY_WIRES = tuple(f.wire for f in _KEY_FIELDS)
_WIRES = tuple(f.wire for f in ENTRY_FIELDS)

# Each kind as the fast path decodes it: amounts stay raw JSON text (never a float), and only a
# page whose every value has exactly its documented JSON type gets through.
_FAST_TYPES: dict[Kind, Any] = {
    Kind.TIMESTAMP: str,
    Kind.STRING: str,
    Kind.MONEY: msgspec.Raw,
    Kind.FLAG: bool,
}


def _fast_field(f: EntryField) -> tuple[Any, ...]:
    kind_type = _FAST_TYPES[f.kind]
    if f.required or f.kind is Kind.MONEY:  # a null amount is the generic reader's to word
        return (f.column, kind_type)
    return (f.column, kind_type | None, None)


# Attributes carry the column names and decode from the wire names; any other field sends the
# page to the generic reader, which keeps it in ``extra``.
_Entry = msgspec.defstruct(
    "_Entry",
    [_fast_field(f) for f in ENTRY_FIELDS],
    rename={f.column: f.wire for f in ENTRY_FIELDS},
    kw_only=True,
    forbid_unknown_fields=True,
    gc=False,
)


class _Page(msgspec.Struct, gc=False):
    data: list[_Entry]  # type: ignore[valid-type]
    total: Annotated[int, msgspec.Meta(ge=0)]
    pageNumber: Annotated[int, msgspec.Meta(ge=1)]
    pageSize: Annotated[int, msgspec.Meta(ge=1)]


_FAST = msgspec.json.Decoder(_Page)
_FAST_COLUMNS: tuple[str, ...] = _Entry.__struct_fields__  # the order astuple gives values in
_astuple = msgspec.structs.astuple


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
    key = tuple(map(row.get, _KEY_WIRES))
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

    @property
    def identity(self) -> bytes:
        """A digest of every documented field of every entry, in order: two pages of one window
        with the same identity are one page served twice (a server that ignores pageNumber),
        not two pages of genuinely identical entries. Whichever decoder read the page, the same
        entries give the same identity."""
        if self._columns is not None:
            by_column = {
                CREATED_AT.column: self._columns.created,
                HAS_DESCRIPTION.column: self._columns.flags,
                **self._columns.strings,
                **self._columns.money,
            }
            entries = list(zip(*(by_column[f.column] for f in ENTRY_FIELDS), strict=True))
        else:
            entries = [_entry_values(row) for row in self.data]
        text = repr(entries).encode("utf-8", "backslashreplace")
        return hashlib.blake2b(text, digest_size=16).digest()


def _entry_values(row: Any) -> tuple[Any, ...]:
    if row.__class__ is not dict:
        return ("<not an object>", repr(row))
    return tuple(map(row.get, _WIRES))


def _fast(body: bytes) -> LedgerPage | None:
    try:
        page = _FAST.decode(body)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    # One C-level transpose of the entries into columns: quicker than reading each field of each
    # entry from Python, which matters because nearly every page of a backfill comes this way.
    transposed = zip(*map(_astuple, page.data), strict=True)
    values: dict[str, list[Any]] = {name: [] for name in _FAST_COLUMNS}
    values.update(zip(_FAST_COLUMNS, map(list, transposed), strict=False))  # none if no entry
    # Amounts as their exact JSON text (a Raw is UTF-8 bytes); only plain JSON numbers take this
    # path: a numeric string, a null or an object in a money field is the generic reader's
    # business, which words the reason.
    money = {f.column: list(map(str, values[f.column], repeat("utf-8"))) for f in _MONEY}
    if not _NUMBER_START.issuperset([text[0] for texts in money.values() for text in texts]):
        return None
    values.update(money)
    columns = WireColumns(
        created=values[CREATED_AT.column],
        strings={f.column: values[f.column] for f in _STRINGS},
        money={f.column: values[f.column] for f in _MONEY},
        flags=values[HAS_DESCRIPTION.column],
    )
    keys = list(zip(*(values[f.column] for f in _KEY_FIELDS), strict=True))
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
