"""Bytes on the wire: ledger entries pre-serialized once, pages joined from them, exact numbers.

orjson has no Decimal, and a float would print noise, so numbers are written from exact text and
strings go through orjson for escaping.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

import orjson

from simulator.money import decimal_text, units_to_text
from simulator.scenario import SchemaDrift
from simulator.timefmt import ms_to_text

_STR_CACHE: dict[str, str] = {}


def json_str(value: str | None) -> str:
    if value is None:
        return "null"
    cached = _STR_CACHE.get(value)
    if cached is None:
        cached = orjson.dumps(value).decode()
        if len(_STR_CACHE) < 200_000:
            _STR_CACHE[value] = cached
    return cached


def dumps(value: Any) -> bytes:
    """JSON with Decimals as plain numbers (e.g. 18234.5, never 18234.500000001)."""
    return _dump(value).encode()


def _dump(value: Any) -> str:
    if isinstance(value, Decimal):
        return decimal_text(value)
    if isinstance(value, bool) or value is None or isinstance(value, int | float | str):
        return orjson.dumps(value).decode()
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{json_str(str(k))}:{_dump(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(_dump(v) for v in value) + "]"
    raise TypeError(f"cannot serialize {type(value).__name__}")


EntryEncoder = Callable[
    [int, str, int, str | None, bool, str | None, str | None, str | None, int], bytes
]


def entry_encoder(unsigned: bool, drift: SchemaDrift) -> EntryEncoder:
    """Builds the one function that turns an entry into its bytes under the scenario's variant."""
    extra = "".join(f",{json_str(k)}:{_dump(v)}" for k, v in drift.extra_entry_fields.items())
    omit = drift.omit_nulls
    null_descriptions = drift.null_descriptions

    amount_texts: dict[int, str] = {}

    middles: dict[tuple[str, str | None, bool, str | None, str | None, str | None], str] = {}

    def middle(
        type_: str,
        description: str | None,
        has_description: bool,
        channel: str | None,
        agent: str | None,
        campaign: str | None,
    ) -> str:
        """The fields between amount and balanceAfter, cached: they repeat a lot."""
        key = (type_, description, has_description, channel, agent, campaign)
        text = middles.get(key)
        if text is not None:
            return text
        if null_descriptions and not has_description:
            description = None
        has = "true" if has_description else "false"
        fields = [("description", description), ("hasDescription", None)]
        fields += [("channel", channel), ("agentId", agent), ("campaignId", campaign)]
        parts = []
        for name, value in fields:
            if name == "hasDescription":
                parts.append(f',"hasDescription":{has}')
            elif value is not None or not omit:
                parts.append(f',"{name}":{json_str(value)}')
        text = "".join(parts)
        if len(middles) < 500_000:
            middles[key] = text
        return text

    def encode(
        ts: int,
        type_: str,
        amount: int,
        description: str | None,
        has_description: bool,
        channel: str | None,
        agent: str | None,
        campaign: str | None,
        balance: int,
    ) -> bytes:
        amount_text = amount_texts.get(amount)
        if amount_text is None:
            amount_text = units_to_text(-amount if unsigned and amount < 0 else amount)
            if len(amount_texts) < 100_000:
                amount_texts[amount] = amount_text
        return (
            f'{{"createdAt":"{ms_to_text(ts)}","type":{json_str(type_)},"amount":{amount_text}'
            f"{middle(type_, description, has_description, channel, agent, campaign)}"
            f',"balanceAfter":{units_to_text(balance)}{extra}}}'
        ).encode()

    return encode


def page_bytes(
    entries: list[bytes], total: int, page_number: int, page_size: int, envelope_extra: bytes
) -> bytes:
    return b"".join(
        (
            b'{"data":[',
            b",".join(entries),
            b'],"total":',
            str(total).encode(),
            b',"pageNumber":',
            str(page_number).encode(),
            b',"pageSize":',
            str(page_size).encode(),
            envelope_extra,
            b"}",
        )
    )


def envelope_extra(drift: SchemaDrift) -> bytes:
    return "".join(
        f",{json_str(k)}:{_dump(v)}" for k, v in drift.extra_envelope_fields.items()
    ).encode()
