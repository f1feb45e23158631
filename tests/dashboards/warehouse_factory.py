"""A real warehouse file filled with a small, known ledger by the code a sync runs.

The ledgers land through the sync's staging and `Warehouse.land_ledger`, the snapshots through the
snapshot row builders and `Warehouse.land_snapshot`, the key audit as the audit appends it, and
every derived table and view comes from `reconcile_account`: nothing here writes a table itself.
Hidden movements are planted between entries (one across a month boundary, acknowledged as
`creditlens breaks ack` records it), the summary is short of the ledger (a movement after the last
entry) and one breakdown item differs from it; the main ledger opens at zero with an entry for its
first credits, the second one's does not (a movement before the first entry) and it has an idle
month; and API text carries markup that must never run.
"""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from pipelines.audit.classify import assess
from pipelines.audit.report import AuditReport, ScanHit
from pipelines.reconciliation.run import ReconcileOptions, reconcile_account
from pipelines.warehouse.writer import Warehouse
from tests.audit.audit_factories import FULL_ACCESS, REVOKED, entry, outcomes
from tests.reconciliation.warehouse_ledgers import (
    breakdown_doc,
    land_document,
    land_ledger,
    wire_instant,
)
from tests.transforms.ledgers import LEDGER_SCHEMA
from transforms.entry_type import category_of

XSS_CAMPAIGN = "<script>alert(1)</script>"
XSS_AGENT = 'agt_<img src=x onerror="alert(2)">'
MAIN = "default"
SECOND = "Acme <Beta> & Co"
RUN = "fixture-run"
FETCHED = datetime(2026, 4, 15, 12, 0, tzinfo=UTC)  # the fixture's "now": its last sync
PERIOD = (datetime(2026, 4, 1, tzinfo=UTC), datetime(2026, 5, 1, tzinfo=UTC))
SUMMARY_SHORT_BY = Decimal("12.5")  # the summary balance is this much below the ledger's
BREAKDOWN_EXTRA = Decimal("1.5")  # the breakdown reports this much more for one item
START_BALANCE = Decimal("500.0000")  # the main ledger's first entry grants it, the second's not
ACK_REASON = "Support moved March credits by hand <ticket #42>"
ACK_BY = "finance@laptop"
ACK_AT = datetime(2026, 4, 16, 9, 30, tzinfo=UTC)
MISREPORTED = (XSS_AGENT, "cmp_xss", "Phone")
CAMPAIGNS = {
    "cmp_winter": "Winter renewals",
    "cmp_xss": XSS_CAMPAIGN,
    "cmp_quotes": "Spring \"deals\" & 'offers'",
}
UNNAMED_CAMPAIGN = "cmp/../unnamed"
AGENTS = ("agt_alpha", "agt_beta", XSS_AGENT)
CHANNELS = ("Phone", "Chat", "SMS")


@dataclass
class Entry:
    created_at: datetime
    entry_type: str
    amount: Decimal
    balance_after: Decimal
    channel: str | None = None
    agent_id: str | None = None
    campaign_id: str | None = None
    description: str = ""
    hidden_before: Decimal = Decimal(0)  # a balance change no entry explains, just before this

    @property
    def balance_before(self) -> Decimal:
        return self.balance_after - self.amount


@dataclass
class Ledger:
    account: str
    entries: list[Entry] = field(default_factory=list)


def _ledger(
    account: str,
    start: date,
    days: int,
    seed: int,
    idle: tuple[date, date] | None,
    hidden: dict[int, Decimal],
    granted: bool = True,
) -> Ledger:
    """Entries in chain order under the signed convention; ``hidden`` maps entry index -> jump.

    The ledger starts from START_BALANCE: with an entry granting it (``granted``), so the ledger
    opens at zero, or without one, a movement before the first entry.
    """
    rng = random.Random(seed)
    ledger = Ledger(account)
    balance = Decimal(0) if granted else START_BALANCE
    campaigns = [*CAMPAIGNS, UNNAMED_CAMPAIGN]

    def add(at: datetime, kind: str, amount: Decimal, **dims: str | None) -> None:
        nonlocal balance
        jump = hidden.get(len(ledger.entries), Decimal(0))
        balance += jump + amount
        ledger.entries.append(Entry(at, kind, amount, balance, hidden_before=jump, **dims))

    if granted:
        first = datetime(start.year, start.month, start.day, tzinfo=UTC)
        add(first, "TopUp", START_BALANCE, description="Opening credits")
    for offset in range(days):
        day = start + timedelta(days=offset)
        if idle and idle[0] <= day <= idle[1]:
            continue
        midnight = datetime(day.year, day.month, day.day, tzinfo=UTC)
        if day.day == 1:
            add(midnight, "PlanGrant", Decimal("10000.0000"), description="Monthly credits")
        for n in range(rng.randint(2, 6)):
            at = midnight + timedelta(
                hours=1 + n * 3, minutes=rng.randint(0, 59), milliseconds=rng.randint(0, 999)
            )
            amount = -Decimal(rng.randint(5, 40_000)) / 10_000
            add(
                at,
                "Usage",
                amount,
                channel=rng.choice(CHANNELS),
                agent_id=rng.choice(AGENTS),
                campaign_id=rng.choice(campaigns),
                description=f"Call <{n}>",
            )
        if offset % 9 == 4:
            at = midnight + timedelta(hours=21)
            add(
                at,
                "Refund",
                Decimal("0.7500"),
                channel="Phone",
                agent_id=AGENTS[0],
                campaign_id="cmp_xss",
                description="Refund of a dropped call",
            )
        if offset % 17 == 8:
            add(midnight + timedelta(hours=22), "Adjustment", Decimal("-3.2500"))
        if offset % 23 == 11:
            add(midnight + timedelta(hours=23), "TopUp", Decimal("250.0000"))
        if offset % 31 == 20:
            add(midnight + timedelta(hours=23, minutes=30), "Promotion", Decimal("5.0000"))
        if day.day == 28:
            add(midnight + timedelta(hours=23, minutes=59), "Expiry", Decimal("-1.5000"))
    return ledger


@dataclass
class Fixture:
    path: Path
    ledgers: dict[str, Ledger]
    as_of: date

    @property
    def main(self) -> Ledger:
        return self.ledgers[MAIN]


def build_warehouse(path: Path) -> Fixture:
    """Two accounts; the main one spans January to mid-April 2026 (so March is the full month)."""
    start = date(2026, 1, 10)
    main_entries = _ledger(MAIN, start, 96, seed=1, idle=None, hidden={})
    # A hidden movement inside a month and one across the February/March boundary.
    first_march = next(
        i for i, e in enumerate(main_entries.entries) if e.created_at.date() == date(2026, 3, 1)
    )
    main = _ledger(
        MAIN,
        start,
        96,
        seed=1,
        idle=None,
        hidden={40: Decimal("-12.5000"), first_march: Decimal("-30.0000")},
    )
    second = _ledger(
        SECOND,
        date(2026, 1, 20),
        70,
        seed=2,
        idle=(date(2026, 2, 1), date(2026, 2, 28)),
        hidden={7: Decimal("2.0000")},
        granted=False,
    )
    ledgers = {MAIN: main, SECOND: second}
    warehouse = Warehouse(path, lock_timeout_s=60)
    warehouse.ensure()
    for ledger in ledgers.values():
        land_ledger(warehouse, _frame(ledger), run_id=RUN, fetched_at=FETCHED)
    _as_synced_at_fetch_time(warehouse)
    _land_snapshots(warehouse, main)
    _land_key_audit(warehouse)
    options = ReconcileOptions(sign_convention="infer")
    for account in ledgers:
        reconcile_account(warehouse, account, options, RUN)
    _acknowledge(warehouse, MAIN, Decimal("-30.0000"))
    warehouse.publish_analyst_copy()
    return Fixture(path, ledgers, FETCHED.date())


def _acknowledge(warehouse: Warehouse, account: str, gap: Decimal) -> None:
    """Acknowledges the account's movement of ``gap`` as `creditlens breaks ack` appends it."""
    with warehouse.write() as con:
        found = con.execute(
            "SELECT break_id FROM hidden_movements WHERE account = ? AND gap = ?", [account, gap]
        ).fetchall()
    ((break_id,),) = found
    row = {
        "account": account,
        "break_id": break_id,
        "action": "ack",
        "gap": gap,
        "reason": ACK_REASON,
        "acted_by": ACK_BY,
        "acted_at": ACK_AT,
    }
    warehouse.append("break_acknowledgements", [row])


def _frame(ledger: Ledger) -> pl.DataFrame:
    """The ledger as the API reports it, in the landed shape the sync helpers take."""
    rows = [
        {
            "account": ledger.account,
            "entry_id": None,  # the landing gives the identity
            "created_at": e.created_at,
            "entry_type": e.entry_type,
            "amount": e.amount,
            "description": e.description,
            "has_description": bool(e.description),
            "channel": e.channel,
            "agent_id": e.agent_id,
            "campaign_id": e.campaign_id,
            "balance_after": e.balance_after,
        }
        for e in ledger.entries
    ]
    return pl.DataFrame(rows, schema=LEDGER_SCHEMA, orient="row")


def _as_synced_at_fetch_time(warehouse: Warehouse) -> None:
    """Dates the syncs at the fixture's clock.

    A landing stamps sync_runs.finished_at with the wall clock, and the report counts the last
    sync as a day the data speaks for; this fixture's world stops at FETCHED, whatever day the
    tests run on.
    """
    with warehouse.write() as con:
        con.execute("UPDATE sync_runs SET started_at = ?, finished_at = ?", [FETCHED, FETCHED])


def _land_snapshots(warehouse: Warehouse, ledger: Ledger) -> None:
    """The main account's subscription, summary, campaigns and breakdown, fetched at FETCHED."""
    account = ledger.account
    in_period = [e for e in ledger.entries if PERIOD[0] <= e.created_at < PERIOD[1]]
    used = -sum((e.amount for e in in_period if e.entry_type == "Usage"), Decimal(0))
    subscription = {
        "plan": "Growth",
        "status": "Active",
        "features": ["PhoneAgents", "ChatAgents"],
        "limits": {"monthlyCredits": 10000, "agents": 20, "concurrentCalls": 10},
        "currentPeriodStart": wire_instant(PERIOD[0]),
        "currentPeriodEnd": wire_instant(PERIOD[1]),
    }
    summary = {
        "balance": ledger.entries[-1].balance_after - SUMMARY_SHORT_BY,
        "creditsUsed": used,
        "creditsIncluded": 10000,
        "periodStart": wire_instant(PERIOD[0]),
        "periodEnd": wire_instant(PERIOD[1]),
    }
    campaigns = [{"id": cid, "name": name} for cid, name in CAMPAIGNS.items()]
    # The breakdown agrees with the ledger's debits item by item, except one.
    debits: dict[tuple[str | None, str | None, str | None], Decimal] = defaultdict(Decimal)
    for e in in_period:
        if category_of(e.entry_type) == "debit":
            debits[(e.agent_id, e.campaign_id, e.channel)] += -e.amount
    debits[MISREPORTED] += BREAKDOWN_EXTRA
    items = [(*key, credits) for key, credits in debits.items()]
    documents: list[tuple[str, Any]] = [
        ("subscription_snapshots", subscription),
        ("consumption_snapshots", summary),
        ("campaigns", campaigns),
        ("breakdown_snapshots", breakdown_doc(PERIOD, items)),
    ]
    for table, doc in documents:
        land_document(warehouse, table, account, doc, fetched_at=FETCHED, run_id=RUN)


def _land_key_audit(warehouse: Warehouse) -> None:
    """Two audit runs, appended as the key audit appends its rows."""
    audits = [
        ("run-1", datetime(2026, 4, 1, tzinfo=UTC), "billing-prod", "a1b2c3d4e5f60718", "9f3e",
         "active", "campaigns", "low", False),
        ("run-2", datetime(2026, 4, 8, tzinfo=UTC), "billing-prod", "a1b2c3d4e5f60718", "9f3e",
         "active", "campaigns", "high", True),
        ("run-2", datetime(2026, 4, 8, tzinfo=UTC), "widget <b>key</b>", "0011223344556677", "",
         "rejected", "campaigns", "low", False),
    ]  # fmt: skip
    for run_id in ("run-1", "run-2"):
        rows = [
            {
                "run_id": run,
                "audited_at": at,
                "key_name": name,
                "fingerprint": fingerprint,
                "last4": last4,
                "status": status,
                "intended_scope": scope,
                "endpoints_readable": [],
                "endpoints_forbidden": [],
                "endpoints_rejected": [],
                "endpoints_unknown": [],
                "billing_exposed": exposed,
                # The reviewers' case: a rejected key listed as used client-side.
                "client_side_or_public": status == "rejected",
                "severity": severity,
                "findings": 0 if run == "run-1" else len(AUDIT_FINDINGS[name]),
                "places_listed": [],
                "places_found": [],
            }
            for run, at, name, fingerprint, last4, status, scope, severity, exposed in audits
            if run == run_id
        ]
        warehouse.append("key_audit", rows)
    warehouse.append("key_audit_findings", audit_findings().finding_rows())


# Run 2's findings, judged by the audit's own classification: the billing key reads billing
# beyond its campaigns scope and lies, unlisted, in a file whose name carries rich markup and an
# escape sequence; the widget key is rejected but still listed client-side.
ODD_PATH = "/repo/[link=https://evil.example]x[/link]\x1b[2J.env"
AUDIT_FINDINGS = {"billing-prod": ("CLA001", "CLA003"), "widget <b>key</b>": ("CLA004",)}


def audit_findings() -> AuditReport:
    hit = ScanHit("billing-prod", "a1b2c3d4e5f60718", "9f3e", ODD_PATH, 7, 3, "base64", False)
    billing = assess(
        entry("billing-prod", "campaigns", ("billing-service", "server")),
        fingerprint="a1b2c3d4e5f60718",
        last4="9f3e",
        base_url="http://127.0.0.1:1",
        endpoints=outcomes(*FULL_ACCESS),
        hits=(hit,),
    )
    widget = assess(
        entry("widget <b>key</b>", "campaigns", ("web/static/widget.js", "client-side")),
        fingerprint="0011223344556677",
        last4="",
        base_url="http://127.0.0.1:1",
        endpoints=outcomes(*REVOKED),
    )
    return AuditReport("run-2", datetime(2026, 4, 8, tzinfo=UTC), "keys.toml", (billing, widget))


_BUILT: dict[str, Fixture] = {}


def built_once(tmp_path_factory: pytest.TempPathFactory) -> Fixture:
    """``build_warehouse``'s warehouse (and its analyst copy) in a folder of its own, built once
    per test process: the report tests and the FOCUS agency's read the same file, seconds to
    build. Never write it: a test that writes copies the folder."""
    if "built" not in _BUILT:
        _BUILT["built"] = build_warehouse(tmp_path_factory.mktemp("built") / "warehouse.duckdb")
    return _BUILT["built"]


def empty_warehouse(path: Path) -> Path:
    Warehouse(path, lock_timeout_s=60).ensure()
    return path


__all__ = ["Fixture", "build_warehouse", "built_once", "empty_warehouse"]
