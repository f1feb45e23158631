"""Billing snapshots as warehouse rows.

The spec does not show the snapshot payloads, so a real deployment may name fields differently:
configured names are mapped onto ours first (CREDITLENS_SNAPSHOT_FIELDS, keys like
``consumption.balance``). A payload that still does not fit is stored whole as raw JSON with
``shape_ok = false`` and a warning, never a crash: the history must not have a hole because the
platform changed a field.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
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
    table: str
    content_hash: str
    rows: list[dict[str, Any]]
    shape_ok: bool
    warning: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)


def _json_default(value: Any) -> Any:
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(type(value).__name__)


def canonical_json(doc: Any) -> str:
    return json.dumps(doc, sort_keys=True, default=_json_default, ensure_ascii=False)


def content_hash(doc: Any) -> str:
    stable = (
        {k: v for k, v in doc.items() if k not in VOLATILE_FIELDS} if isinstance(doc, dict) else doc
    )
    return hashlib.sha256(canonical_json(stable).encode()).hexdigest()


def _remap(doc: Any, prefix: str, fields: dict[str, str]) -> Any:
    """Renames configured wire names to canonical ones, e.g. currentBalance -> balance."""
    if not isinstance(doc, dict):
        return doc
    renames = {
        fields[key]: canonical
        for key, canonical in DEFAULT_FIELDS.items()
        if key.startswith(prefix + ".")
        and key.count(".") == prefix.count(".") + 1
        and key in fields
    }
    return {renames.get(k, k): v for k, v in doc.items()}


def _validate(model: type[BaseModel], doc: Any) -> tuple[BaseModel | None, str | None]:
    try:
        return model.model_validate(doc), None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "body"
        return None, f"{where}: {first['msg']}"


def _warn(endpoint: str, problem: str) -> str:
    return (
        f"{endpoint} did not have the expected shape ({problem}); stored as raw JSON. "
        "If the platform names the fields differently, set CREDITLENS_SNAPSHOT_FIELDS."
    )


def subscription_rows(doc: Any, base: dict[str, Any], fields: dict[str, str]) -> SnapshotRows:
    model, problem = _validate(Subscription, _remap(doc, "subscription", fields))
    row = {
        **base,
        "content_hash": content_hash(doc),
        "plan": None,
        "status": None,
        "features": None,
        "limits": None,
        "current_period_start": None,
        "current_period_end": None,
        "shape_ok": model is not None,
        "raw_json": canonical_json(doc),
    }
    if isinstance(model, Subscription):
        row.update(
            plan=model.plan,
            status=model.status,
            features=canonical_json(model.features) if model.features is not None else None,
            limits=canonical_json(model.limits) if model.limits is not None else None,
            current_period_start=model.current_period_start,
            current_period_end=model.current_period_end,
        )
    return SnapshotRows(
        "subscription_snapshots",
        row["content_hash"],
        [row],
        model is not None,
        None if model else _warn("GET /Subscription", problem or ""),
    )


def consumption_rows(
    doc: Any, base: dict[str, Any], fields: dict[str, str], balance_field: str = "balance"
) -> SnapshotRows:
    mapping = dict(fields)
    if balance_field != "balance":
        mapping["consumption.balance"] = balance_field
    model, problem = _validate(ConsumptionSummary, _remap(doc, "consumption", mapping))
    row = {
        **base,
        "content_hash": content_hash(doc),
        "balance": None,
        "credits_used": None,
        "credits_included": None,
        "period_start": None,
        "period_end": None,
        "as_of": None,
        "shape_ok": model is not None,
        "raw_json": canonical_json(doc),
    }
    if isinstance(model, ConsumptionSummary):
        row.update(
            balance=model.balance,
            credits_used=model.credits_used,
            credits_included=model.credits_included,
            period_start=model.period_start,
            period_end=model.period_end,
            as_of=model.as_of,
        )
    return SnapshotRows(
        "consumption_snapshots",
        row["content_hash"],
        [row],
        model is not None,
        None if model else _warn("GET /Consumption", problem or ""),
    )


def breakdown_rows(doc: Any, base: dict[str, Any], fields: dict[str, str]) -> SnapshotRows:
    remapped = _remap(doc, "breakdown", fields)
    if isinstance(remapped, dict) and isinstance(remapped.get("items"), list):
        remapped = {
            **remapped,
            "items": [_remap(i, "breakdown.item", fields) for i in remapped["items"]],
        }
    model, problem = _validate(Breakdown, remapped)
    digest = content_hash(doc)
    common = {**base, "content_hash": digest}
    if not isinstance(model, Breakdown):
        row = {
            **common,
            "period_start": None,
            "period_end": None,
            "item_index": None,
            "agent_id": None,
            "campaign_id": None,
            "channel": None,
            "credits": None,
            "shape_ok": False,
            "raw_json": canonical_json(doc),
        }
        return SnapshotRows(
            "breakdown_snapshots",
            digest,
            [row],
            False,
            _warn("GET /Consumption/breakdown", problem or ""),
        )
    raw_items = remapped["items"]
    rows = [
        {
            **common,
            "period_start": model.period_start,
            "period_end": model.period_end,
            "item_index": i,
            "agent_id": item.agent_id,
            "campaign_id": item.campaign_id,
            "channel": item.channel,
            "credits": item.credits,
            "shape_ok": True,
            "raw_json": canonical_json(raw_items[i]),
        }
        for i, item in enumerate(model.items)
    ]
    if not rows:  # an empty period is a snapshot too
        rows = [
            {
                **common,
                "period_start": model.period_start,
                "period_end": model.period_end,
                "item_index": None,
                "agent_id": None,
                "campaign_id": None,
                "channel": None,
                "credits": None,
                "shape_ok": True,
                "raw_json": canonical_json(doc),
            }
        ]
    return SnapshotRows(
        "breakdown_snapshots", digest, rows, True, None, {"items": len(model.items)}
    )


def campaign_rows(doc: Any, base: dict[str, Any], fields: dict[str, str]) -> SnapshotRows:
    items = doc.get("data") if isinstance(doc, dict) else doc
    digest = content_hash(doc)
    common = {**base, "content_hash": digest}
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
    if problem is not None:
        row = {
            **common,
            "campaign_id": None,
            "name": None,
            "shape_ok": False,
            "raw_json": canonical_json(doc),
        }
        return SnapshotRows("campaigns", digest, [row], False, _warn("GET /Campaign", problem))
    rows = [
        {
            **common,
            "campaign_id": model.id,
            "name": model.name,
            "shape_ok": True,
            "raw_json": canonical_json(item),
        }
        for model, item in campaigns
    ] or [{**common, "campaign_id": None, "name": None, "shape_ok": True, "raw_json": "[]"}]
    return SnapshotRows("campaigns", digest, rows, True, None, {"campaigns": len(campaigns)})
