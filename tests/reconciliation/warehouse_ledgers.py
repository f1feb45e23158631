"""Real warehouses filled the way a sync fills them, from hand-built ledgers and snapshots.

A ledger frame (the `tests.transforms.ledgers` shape) is sent as API pages through the sync's own
staging (validation, fingerprints, staged Parquet files) and landed by `Warehouse.land_ledger`;
snapshot documents go through the snapshot row builders and `Warehouse.land_snapshot`. So what a
test reconciles or reports on was written by the code a sync runs, ids and bookkeeping included,
never by inserts that only imitate it.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Sequence
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import polars as pl

from pipelines.api.ledger_page import parse_ledger_page
from pipelines.api.ledger_reader import PageRead
from pipelines.api.windows import split_windows
from pipelines.config.account import AccountSettings
from pipelines.ledger.staging import LedgerStaging, landing_groups
from pipelines.reconciliation.run import ReconcileOptions, ReconciliationResult, reconcile_account
from pipelines.snapshots.fetch import build_rows
from pipelines.snapshots.registry import SNAPSHOTS
from pipelines.snapshots.rows import SnapshotRows
from pipelines.warehouse.read import open_read_only
from pipelines.warehouse.writer import LedgerLanding, SnapshotLanding, Warehouse

FETCHED_AT = datetime(2030, 1, 1, tzinfo=UTC)
PAGE_SIZE = 100
# A breakdown item: agentId, campaignId, channel, credits.
Item = tuple[str | None, str | None, str | None, Decimal]
# Where an entry was read: its window's first day, page number and 0-based position in the page.
Place = tuple[date, int, int]

DERIVED_QUERIES = {
    "balance_breaks": "SELECT * EXCLUDE (run_id, checked_at) FROM balance_breaks "
    "WHERE account = ? ORDER BY ALL",
    "daily_balance": "SELECT * EXCLUDE (run_id) FROM daily_balance WHERE account = ? ORDER BY ALL",
    "ledger_enriched": "SELECT * FROM ledger_enriched WHERE account = ? ORDER BY chain_position",
    # reconciled_from says how far back a pass went: the one figure a full and an incremental
    # pass of the same data give differently, by design.
    "reconciliation_runs": "SELECT * EXCLUDE (run_id, checked_at, reconciled_from) "
    "FROM reconciliation_runs "
    "WHERE account = ? AND run_id = ?",
}


def land_ledger(
    warehouse: Warehouse,
    ledger: pl.DataFrame,
    *,
    first: date | None = None,
    last: date | None = None,
    run_id: str = "landed",
    fetched_at: datetime = FETCHED_AT,
) -> list[str]:
    """Lands `ledger` as a sync over `first`..`last` would (default: its first and last day).

    The days of the range are replaced whole, as a sync replaces them. Returns the entry ids the
    landing gave, in the frame's row order. Every entry must be valid wire data: one sent to
    quarantine would silently change what the test is about, so that fails here.
    """
    accounts = ledger["account"].unique().to_list()
    if len(accounts) != 1:
        raise ValueError("a sync lands one account: land each account's ledger on its own")
    account = accounts[0]
    days = ledger["created_at"].dt.date().to_list()
    first = first if first is not None else min(days)
    last = last if last is not None else max(days)
    if not first <= min(days) <= max(days) <= last:
        raise ValueError(f"entries outside the synced range {first}..{last}")
    rows = ledger.to_dicts()
    windows = split_windows(first, last)
    places: list[Place] = [(first, 0, 0)] * len(rows)  # each set when its page is sent
    pages = 0
    with tempfile.TemporaryDirectory() as root:
        staging = LedgerStaging(Path(root) / run_id, account, run_id, fetched_at=fetched_at)
        for window in windows:
            inside = [i for i, day in enumerate(days) if window.contains(day)]
            chunks = [inside[k : k + PAGE_SIZE] for k in range(0, len(inside), PAGE_SIZE)]
            for number, chunk in enumerate(chunks or [[]], start=1):
                body = _page_body([rows[i] for i in chunk], number, len(inside))
                page = parse_ledger_page(body, f"ledger window {window}")
                staging.add_page(PageRead(window, 1, number, page, len(inside)))
                pages += 1
                for position, i in enumerate(chunk):
                    places[i] = (window.first, number, position)
            staging.finish_window(window)
        result = warehouse.land_ledger(
            LedgerLanding(
                account=account,
                run_id=run_id,
                range_start=first,
                range_end=last,
                entry_files=landing_groups(staging.entry_files),
                quarantine_files=staging.quarantine_files,
                started_at=datetime.now(UTC),
                windows=len(windows),
                pages=pages,
                window_restarts=0,
                requests=pages,
                retries=0,
                entries_fetched=staging.fetched,
            )
        )
        staging.cleanup()
    assert result.quarantined == 0, f"{result.quarantined} test entries were quarantined"
    landed = _landed_ids(warehouse, account, run_id)
    return [landed[place] for place in places]


def snapshot_rows(
    table: str,
    doc: Any,
    account: str,
    *,
    fetched_at: datetime = FETCHED_AT,
    run_id: str = "landed",
    fields: dict[str, str] | None = None,
    balance_field: str = "balance",
) -> SnapshotRows:
    """The rows a snapshot response lands as: the one parse of the payload.

    `fields` and `balance_field` are a deployment's field names (CREDITLENS_SNAPSHOT_FIELDS,
    CREDITLENS_SUMMARY_BALANCE_FIELD).
    """
    endpoint = next(e for e in SNAPSHOTS if e.table == table)
    settings = AccountSettings(
        name=account, snapshot_fields=fields or {}, summary_balance_field=balance_field
    )
    return build_rows(endpoint, doc, account=settings, run_id=run_id, fetched_at=fetched_at)


def land_document(
    warehouse: Warehouse,
    table: str,
    account: str,
    doc: Any,
    *,
    fetched_at: datetime = FETCHED_AT,
    run_id: str = "landed",
) -> SnapshotRows:
    """One snapshot response landed as the snapshot assets land it (an unchanged one is skipped)."""
    rows = snapshot_rows(table, doc, account, fetched_at=fetched_at, run_id=run_id)
    warehouse.land_snapshot(table, account, rows.content_hash, rows.rows)
    return rows


def land_snapshots(
    warehouse: Warehouse,
    account: str,
    *,
    balance: Decimal | None,
    period: tuple[datetime, datetime] | None,
    items: Sequence[Item] = (),
    plans: Sequence[tuple[datetime, str]] = (),
    campaigns: Sequence[tuple[str, str]] = (),
    fetched_at: datetime = FETCHED_AT,
) -> None:
    """The summary, breakdown, subscription history and campaign names of `account`, as the
    latest snapshots of its history (None or empty: that snapshot was never fetched).

    They land in one commit, as a sync's snapshot step lands them (`Warehouse.land_snapshots`),
    not one open of the warehouse each: that open was most of a property example's landing.
    A commit holds one snapshot per table, so each later plan of the history is a commit more.
    """
    documents: list[tuple[str, Any, datetime]] = []
    if balance is not None:
        documents.append(("consumption_snapshots", summary_doc(balance), fetched_at))
    if period is not None:
        documents.append(("breakdown_snapshots", breakdown_doc(period, items), fetched_at))
    if campaigns:
        listed = [{"id": cid, "name": name} for cid, name in campaigns]
        documents.append(("campaigns", listed, fetched_at))
    commits = [documents]
    for at, plan in plans:
        subscription = {"plan": plan, "status": "Active"}
        if any(table == "subscription_snapshots" for table, _, _ in commits[-1]):
            commits.append([])
        commits[-1].append(("subscription_snapshots", subscription, at))
    for commit in commits:
        landings = []
        for table, doc, at in commit:
            rows = snapshot_rows(table, doc, account, fetched_at=at)
            landings.append(SnapshotLanding(table, account, rows.content_hash, rows.rows))
        if landings:
            stored = warehouse.land_snapshots(landings)
            for outcome in stored.values():
                if isinstance(outcome, BaseException):
                    raise outcome


def summary_doc(balance: Decimal) -> dict[str, Any]:
    """GET /Consumption with only the balance the summary check reads."""
    return {"balance": balance}


def breakdown_doc(period: tuple[datetime, datetime], items: Sequence[Item]) -> dict[str, Any]:
    """GET /Consumption/breakdown for `period` with one item per (agent, campaign, channel)."""
    return {
        "periodStart": wire_instant(period[0]),
        "periodEnd": wire_instant(period[1]),
        "items": [
            {"agentId": agent, "campaignId": campaign, "channel": channel, "credits": credits}
            for agent, campaign, channel, credits in items
        ],
    }


def land_and_reconcile(
    warehouse: Warehouse,
    ledger: pl.DataFrame,
    options: ReconcileOptions | None = None,
    run_id: str = "reconciled",
) -> dict[str, ReconciliationResult]:
    """Each account of `ledger` landed by a sync of its own, then reconciled, as `creditlens sync`
    does: the derived tables and views then hold what production computes from it."""
    results: dict[str, ReconciliationResult] = {}
    for (account,), part in ledger.group_by("account", maintain_order=True):
        land_ledger(warehouse, part)
        results[str(account)] = reconcile_account(
            warehouse, str(account), options or ReconcileOptions(), run_id
        )
    return results


def derived_tables(warehouse: Warehouse, account: str, run_id: str) -> dict[str, list[Any]]:
    """Everything a reconciliation wrote for `account`, in a canonical order."""
    found: dict[str, list[Any]] = {}
    with open_read_only(warehouse.path, lock_timeout_s=60) as con:
        for table, sql in DERIVED_QUERIES.items():
            params = [account, run_id] if table == "reconciliation_runs" else [account]
            found[table] = con.execute(sql, params).fetchall()
    return found


def wire_instant(moment: datetime) -> str:
    """An instant as the API writes it: ISO 8601, microseconds, Z."""
    return moment.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _page_body(entries: list[dict[str, Any]], number: int, total: int) -> bytes:
    data = ",".join(_wire_entry(entry) for entry in entries)
    return (
        f'{{"data":[{data}],"total":{total},"pageNumber":{number},"pageSize":{PAGE_SIZE}}}'
    ).encode()


def _wire_entry(row: dict[str, Any]) -> str:
    """One entry in the API's JSON, its money as exact JSON numbers (never through float)."""
    rest = json.dumps(
        {
            "createdAt": wire_instant(row["created_at"]),
            "type": row["entry_type"],
            "description": row["description"],
            "hasDescription": row["has_description"],
            "channel": row["channel"],
            "agentId": row["agent_id"],
            "campaignId": row["campaign_id"],
        }
    )
    money = f'"amount":{row["amount"]:f},"balanceAfter":{row["balance_after"]:f}'
    return "{" + money + "," + rest[1:]


def _landed_ids(warehouse: Warehouse, account: str, run_id: str) -> dict[Place, str]:
    with open_read_only(warehouse.path, lock_timeout_s=60) as con:
        rows = con.execute(
            "SELECT window_start, page_number, page_position, entry_id FROM ledger_entries "
            "WHERE account = ? AND run_id = ?",
            [account, run_id],
        ).fetchall()
    return {(start, page, position): entry_id for start, page, position, entry_id in rows}
