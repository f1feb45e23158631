"""Billing snapshots as warehouse rows.

The spec does not show the snapshot payloads, so a real deployment may name fields differently:
configured names are mapped onto ours first (CREDITLENS_SNAPSHOT_FIELDS, keys like
``consumption.balance``). A payload that still does not fit is stored whole as raw JSON with
``shape_ok = false`` and a warning, never a crash: the history must not have a hole because the
platform changed a field. A renamed field is read from its configured name only, and money must
fit its DECIMAL(18,6) column exactly: a value DuckDB would round or refuse makes the payload unfit,
its field named in the warning, rather than land as another number. The models
(pipelines/api/models.py) hold those rules, money's being the ledger's own, and refuse text that
is not Unicode; the raw JSON kept of an unfit payload is always text DuckDB can store.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from operator import attrgetter
from typing import Any

from pydantic import BaseModel, ValidationError

from pipelines.api.models import Breakdown, Campaign, ConsumptionSummary, Subscription

VOLATILE_FIELDS = {"asOf"}

# Our canonical field name (the pydantic alias) for each configurable field.
DEFAULT_FIELDS: dict[str, str] = {
    "consumption.balance": "balance",
    "consumption.creditsUsed": "creditsUsed",
    "consumption.creditsIncluded": "creditsIncluded",
    "consumption.periodStart": "periodStart",
    "consumption.periodEnd": "periodEnd",
    "consumption.asOf": "asOf",
    "breakdown.items": "items",
    "breakdown.periodStart": "periodStart",
    "breakdown.periodEnd": "periodEnd",
    "breakdown.item.agentId": "agentId",
    "breakdown.item.campaignId": "campaignId",
    "breakdown.item.channel": "channel",
    "breakdown.item.credits": "credits",
    "subscription.plan": "plan",
    "subscription.status": "status",
    "subscription.features": "features",
    "subscription.limits": "limits",
    "subscription.currentPeriodStart": "currentPeriodStart",
    "subscription.currentPeriodEnd": "currentPeriodEnd",
    "campaign.id": "id",
    "campaign.name": "name",
}


@dataclass(frozen=True)
class SnapshotRows:
    content_hash: str
    rows: list[dict[str, Any]]
    shape_ok: bool
    problem: str | None = None  # why the payload did not fit, when it did not
    meta: dict[str, Any] = field(default_factory=dict)


def configured_fields(snapshot_fields: dict[str, str], balance_field: str) -> dict[str, str]:
    """The wire names to map, CREDITLENS_SUMMARY_BALANCE_FIELD winning over the mapping's own
    ``consumption.balance`` when it is not the default."""
    fields = dict(snapshot_fields)
    if balance_field != "balance":
        fields["consumption.balance"] = balance_field
    return fields


# Beyond this exponent a Decimal is written in scientific notation: plain notation spells the
# exponent out, and 1E+999999999 would be a gigabyte of zeros.
_PLAIN_EXPONENT = 64


def _json_default(value: Any) -> Any:
    if isinstance(value, Decimal):
        exponent = value.as_tuple().exponent
        plain = isinstance(exponent, int) and abs(exponent) <= _PLAIN_EXPONENT
        return format(value, "f") if plain else str(value)
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(type(value).__name__)


def canonical_json(doc: Any) -> str:
    """Stable JSON text of a payload. Text that is not Unicode (a lone surrogate) is written with
    JSON escapes instead, so hashing and storing it can never fail on encoding."""
    text = json.dumps(doc, sort_keys=True, default=_json_default, ensure_ascii=False)
    try:
        text.encode()
    except UnicodeEncodeError:
        text = json.dumps(doc, sort_keys=True, default=_json_default, ensure_ascii=True)
    return text


def content_hash(doc: Any) -> str:
    stable = (
        {k: v for k, v in doc.items() if k not in VOLATILE_FIELDS} if isinstance(doc, dict) else doc
    )
    return hashlib.sha256(canonical_json(stable).encode()).hexdigest()


def _remap(doc: Any, prefix: str, fields: dict[str, str]) -> Any:
    """Renames configured wire names to canonical ones, e.g. currentBalance -> balance.

    A renamed field is read from its configured name only: a payload that lacks it but carries
    a field spelled like our canonical name (a plain ``balance``) must not pass for having it,
    so that canonical spelling is dropped here (raw_json still holds it).
    """
    if not isinstance(doc, dict):
        return doc
    renames = {
        fields[key]: canonical
        for key, canonical in DEFAULT_FIELDS.items()
        if key.startswith(prefix + ".")
        and key.count(".") == prefix.count(".") + 1
        and key in fields
        and fields[key] != canonical
    }
    shadowed = set(renames.values()) - set(renames)
    return {renames.get(k, k): v for k, v in doc.items() if k not in shadowed}


def _validate(model: type[BaseModel], doc: Any) -> tuple[BaseModel | None, str | None]:
    """The payload as ``model``, or why it does not fit, its field named as pydantic names it
    (``items.0.credits``): money its DECIMAL(18,6) column would round (DuckDB rounds a finer
    value without a word) or refuse (a larger one would fail the whole landing), text that is
    not Unicode, a missing or mistyped field."""
    try:
        return model.model_validate(doc), None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "body"
        return None, f"{where}: {first['msg'].removeprefix('Value error, ')}"


def shape_warning(endpoint: str, problem: str) -> str:
    return (
        f"{endpoint} did not have the expected shape ({problem}); stored as raw JSON. "
        "If the platform names the fields differently, set CREDITLENS_SNAPSHOT_FIELDS."
    )


def _row(
    base: dict[str, Any], digest: str, columns: dict[str, Any], shape_ok: bool, raw: Any
) -> dict[str, Any]:
    """One warehouse row: the frame every snapshot table shares around the endpoint's own
    columns. ``raw`` is what was received (the payload, or one of its items)."""
    return {
        **base,
        "content_hash": digest,
        **columns,
        "shape_ok": shape_ok,
        "raw_json": canonical_json(raw),
    }


def _json_or_none(value: Any) -> str | None:
    return None if value is None else canonical_json(value)


# The typed columns of the one-row snapshots, each read from the parsed payload.
Columns = dict[str, Callable[[Any], Any]]
SUBSCRIPTION_COLUMNS: Columns = {
    "plan": attrgetter("plan"),
    "status": attrgetter("status"),
    "features": lambda s: _json_or_none(s.features),
    "limits": lambda s: _json_or_none(s.limits),
    "current_period_start": attrgetter("current_period_start"),
    "current_period_end": attrgetter("current_period_end"),
}
CONSUMPTION_COLUMNS: Columns = {
    name: attrgetter(name)
    for name in (
        "balance",
        "credits_used",
        "credits_included",
        "period_start",
        "period_end",
        "as_of",
    )
}
BREAKDOWN_ITEM_COLUMNS = ("item_index", "agent_id", "campaign_id", "channel", "credits")


def _one_row(
    model: type[BaseModel],
    prefix: str,
    columns: Columns,
    doc: Any,
    base: dict[str, Any],
    fields: dict[str, str],
) -> SnapshotRows:
    """A snapshot stored as one row: its columns read from the payload, all null when the
    payload did not fit (raw_json still holds it)."""
    parsed, problem = _validate(model, _remap(doc, prefix, fields))
    digest = content_hash(doc)
    values = {name: None if parsed is None else read(parsed) for name, read in columns.items()}
    row = _row(base, digest, values, parsed is not None, doc)
    return SnapshotRows(digest, [row], parsed is not None, problem)


def subscription_rows(doc: Any, base: dict[str, Any], fields: dict[str, str]) -> SnapshotRows:
    return _one_row(Subscription, "subscription", SUBSCRIPTION_COLUMNS, doc, base, fields)


def consumption_rows(doc: Any, base: dict[str, Any], fields: dict[str, str]) -> SnapshotRows:
    return _one_row(ConsumptionSummary, "consumption", CONSUMPTION_COLUMNS, doc, base, fields)


def breakdown_rows(doc: Any, base: dict[str, Any], fields: dict[str, str]) -> SnapshotRows:
    """One row per item; an empty period is one row without an item (a snapshot too)."""
    remapped = _remap(doc, "breakdown", fields)
    received: list[Any] = []
    if isinstance(remapped, dict) and isinstance(remapped.get("items"), list):
        received = remapped["items"]
        remapped = {**remapped, "items": [_remap(i, "breakdown.item", fields) for i in received]}
    model, problem = _validate(Breakdown, remapped)
    digest = content_hash(doc)
    no_item = dict.fromkeys(BREAKDOWN_ITEM_COLUMNS)
    if not isinstance(model, Breakdown):
        columns = {"period_start": None, "period_end": None, **no_item}
        return SnapshotRows(digest, [_row(base, digest, columns, False, doc)], False, problem)
    period = {"period_start": model.period_start, "period_end": model.period_end}
    rows = [
        _row(
            base,
            digest,
            {
                **period,
                "item_index": i,
                "agent_id": item.agent_id,
                "campaign_id": item.campaign_id,
                "channel": item.channel,
                "credits": item.credits,
            },
            True,
            received[i],
        )
        for i, item in enumerate(model.items)
    ] or [_row(base, digest, {**period, **no_item}, True, doc)]
    return SnapshotRows(digest, rows, True, None, {"items": len(model.items)})


def campaign_rows(doc: Any, base: dict[str, Any], fields: dict[str, str]) -> SnapshotRows:
    items = doc.get("data") if isinstance(doc, dict) else doc
    digest = content_hash(doc)
    problem = None
    campaigns: list[tuple[Campaign, Any]] = []
    if not isinstance(items, list):
        problem = "expected a JSON array of campaigns"
    else:
        for i, item in enumerate(items):
            model, problem = _validate(Campaign, _remap(item, "campaign", fields))
            if not isinstance(model, Campaign):
                problem = f"[{i}] {problem}"
                break
            campaigns.append((model, item))
    none = {"campaign_id": None, "name": None}
    if problem is not None:
        return SnapshotRows(digest, [_row(base, digest, none, False, doc)], False, problem)
    rows = [
        _row(base, digest, {"campaign_id": model.id, "name": model.name}, True, item)
        for model, item in campaigns
    ] or [_row(base, digest, none, True, [])]
    return SnapshotRows(digest, rows, True, None, {"campaigns": len(campaigns)})
