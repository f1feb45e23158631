"""A real warehouse file (real schema, real migrations) filled with a small, known ledger.

The reconciliation tables are written the way the pipeline defines them: ``daily_balance`` comes
from ``transforms.aggregate.daily_balance`` over the enriched ledger, categories from
``transforms.entry_type``. Hidden movements are planted between entries (one across a month
boundary), an account has an idle month, and API text carries markup that must never run.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import polars as pl

from pipelines.warehouse.writer import Warehouse
from transforms.aggregate import daily_balance
from transforms.entry_type import category_of
from transforms.micros import MONEY

XSS_CAMPAIGN = "<script>alert(1)</script>"
XSS_AGENT = 'agt_<img src=x onerror="alert(2)">'
MAIN = "default"
SECOND = "Acme <Beta> & Co"
RUN = "fixture-run"
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
) -> Ledger:
    """Entries in chain order under the signed convention; ``hidden`` maps entry index -> jump."""
    rng = random.Random(seed)
    ledger = Ledger(account)
    balance = Decimal("500.0000")
    campaigns = [*CAMPAIGNS, UNNAMED_CAMPAIGN]

    def add(at: datetime, kind: str, amount: Decimal, **dims: str | None) -> None:
        nonlocal balance
        jump = hidden.get(len(ledger.entries), Decimal(0))
        balance += jump + amount
        ledger.entries.append(Entry(at, kind, amount, balance, hidden_before=jump, **dims))

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
    )
    ledgers = {MAIN: main, SECOND: second}
    warehouse = Warehouse(path)
    warehouse.ensure()
    fetched = datetime(2026, 4, 15, 12, 0, tzinfo=UTC)
    with warehouse.write() as con:
        for ledger in ledgers.values():
            _write_ledger(con, ledger, fetched)
        _write_snapshots(con, main, fetched)
        _write_breaks(con, main, fetched)
        _write_breaks(con, second, fetched)
        _write_key_audit(con)
    warehouse.publish_analyst_copy()
    return Fixture(path, ledgers, fetched.date())


def _write_ledger(con, ledger: Ledger, fetched: datetime) -> None:  # type: ignore[no-untyped-def]
    rows, enriched = [], []
    for position, e in enumerate(ledger.entries):
        entry_id = f"{ledger.account}-{position:06d}-1"
        day = e.created_at.date()
        rows.append(
            (
                ledger.account,
                entry_id,
                e.created_at,
                day,
                e.entry_type,
                e.amount,
                e.description,
                bool(e.description),
                e.channel,
                e.agent_id,
                e.campaign_id,
                e.balance_after,
                None,
                f"fp{position:030d}",
                1,
                RUN,
                fetched,
                day,
                day,
                1,
                position,
            )
        )
        enriched.append(
            {
                "account": ledger.account,
                "entry_id": entry_id,
                "chain_position": position,
                "created_at": e.created_at,
                "entry_type": e.entry_type,
                "category": category_of(e.entry_type),
                "amount": e.amount,
                "signed_amount": e.amount,
                "balance_before": e.balance_before,
                "balance_after": e.balance_after,
                "description": e.description,
                "channel": e.channel,
                "agent_id": e.agent_id,
                "campaign_id": e.campaign_id,
                "campaign_name": CAMPAIGNS.get(e.campaign_id or ""),
                "plan": "Growth",
                "status": "Active",
                "subscription_backfilled": False,
            }
        )
    con.executemany("INSERT INTO ledger_entries VALUES (" + ", ".join("?" * 21) + ")", rows)
    money = {c: MONEY for c in ("amount", "signed_amount", "balance_before", "balance_after")}
    frame = pl.DataFrame(
        enriched,
        schema_overrides={
            **money,
            "created_at": pl.Datetime("us", "UTC"),
            "chain_position": pl.Int64,
        },
    )
    con.register("enriched_rows", frame)
    con.execute("INSERT INTO ledger_enriched BY NAME SELECT * FROM enriched_rows")
    con.register("daily", daily_balance(frame))
    con.register(
        "entries", frame.group_by(pl.col("created_at").dt.date().alias("day")).len("entries")
    )
    con.execute(
        "INSERT INTO daily_balance BY NAME SELECT d.*, e.entries, ? AS run_id "
        "FROM daily d JOIN entries e USING (day)",
        [RUN],
    )
    last = ledger.entries[-1]
    con.execute(
        "INSERT INTO reconciliation_runs VALUES (?, ?, ?, 'signed', true, ?, 3, 0, ?, ?, 0, "
        "?, ?, 'ok', 'breakdown matches')",
        [
            ledger.account,
            RUN,
            fetched,
            len(ledger.entries) - 1,
            len(ledger.entries),
            sum(1 for e in ledger.entries if e.hidden_before),
            "break" if ledger.account == MAIN else "ok",
            f"last balanceAfter {last.balance_after}",
        ],
    )


def _write_snapshots(con, ledger: Ledger, fetched: datetime) -> None:  # type: ignore[no-untyped-def]
    period_start = datetime(2026, 4, 1, tzinfo=UTC)
    used = -sum(
        (
            e.amount
            for e in ledger.entries
            if e.entry_type == "Usage" and e.created_at >= period_start
        ),
        Decimal(0),
    )
    limits = {"monthlyCredits": 10000, "agents": 20, "concurrentCalls": 10}
    con.execute(
        "INSERT INTO subscription_snapshots VALUES (?, ?, 'h1', 'Growth', 'Active', ?, ?, ?, ?, "
        "true, '{}', ?)",
        [
            ledger.account,
            fetched,
            json.dumps(["PhoneAgents", "ChatAgents"]),
            json.dumps(limits),
            period_start,
            datetime(2026, 5, 1, tzinfo=UTC),
            RUN,
        ],
    )
    con.execute(
        "INSERT INTO consumption_snapshots (account, fetched_at, content_hash, balance, "
        "credits_used, credits_included, period_start, period_end, shape_ok, raw_json, run_id) "
        "VALUES (?, ?, 'h2', ?, ?, 10000, ?, ?, true, '{}', ?)",
        [
            ledger.account,
            fetched,
            ledger.entries[-1].balance_after - Decimal("12.5"),
            used,
            period_start,
            datetime(2026, 5, 1, tzinfo=UTC),
            RUN,
        ],
    )
    for campaign_id, name in CAMPAIGNS.items():
        con.execute(
            "INSERT INTO campaigns VALUES (?, ?, 'h3', ?, ?, true, '[]', ?)",
            [ledger.account, fetched, campaign_id, name, RUN],
        )


def _write_breaks(con, ledger: Ledger, fetched: datetime) -> None:  # type: ignore[no-untyped-def]
    entries = ledger.entries
    for i, e in enumerate(entries):
        if not e.hidden_before:
            continue
        before = entries[i - 1]
        con.execute(
            "INSERT INTO balance_breaks VALUES (?, 'continuity', ?, ?, ?, ?, ?, ?, ?, NULL, NULL, "
            "NULL, false, ?, ?, ?)",
            [
                ledger.account,
                before.created_at,
                e.created_at,
                before.balance_after,
                e.balance_before,
                e.balance_before - before.balance_after,
                f"{ledger.account}-{i - 1:06d}-1",
                f"{ledger.account}-{i:06d}-1",
                f"Hidden movement of {e.hidden_before} <between> entries",
                RUN,
                fetched,
            ],
        )
    if ledger.account == MAIN:
        last = entries[-1]
        con.execute(
            "INSERT INTO balance_breaks VALUES (?, 'summary', ?, NULL, ?, ?, -12.5, ?, NULL, NULL, "
            "NULL, NULL, false, 'Summary balance is 12.5 below the ledger', ?, ?)",
            [
                ledger.account,
                last.created_at,
                last.balance_after,
                last.balance_after - Decimal("12.5"),
                f"{MAIN}-{len(entries) - 1:06d}-1",
                RUN,
                fetched,
            ],
        )
        con.execute(
            "INSERT INTO balance_breaks VALUES (?, 'breakdown', NULL, NULL, 100, 101.5, 1.5, "
            "NULL, NULL, ?, ?, 'Phone', NULL, ?, ?, ?)",
            [MAIN, XSS_AGENT, "cmp_xss", f"Breakdown for {XSS_CAMPAIGN} differs", RUN, fetched],
        )


def _write_key_audit(con) -> None:  # type: ignore[no-untyped-def]
    rows = [
        (
            "run-1",
            datetime(2026, 4, 1, tzinfo=UTC),
            "billing-prod",
            "a1b2c3d4e5f60718",
            "9f3e",
            "active",
            "billing",
            "low",
            False,
        ),
        (
            "run-2",
            datetime(2026, 4, 8, tzinfo=UTC),
            "billing-prod",
            "a1b2c3d4e5f60718",
            "9f3e",
            "active",
            "billing",
            "high",
            True,
        ),
        (
            "run-2",
            datetime(2026, 4, 8, tzinfo=UTC),
            "widget <b>key</b>",
            "0011223344556677",
            "",
            "rejected",
            "campaigns",
            "none",
            False,
        ),
    ]
    for run_id, at, name, fingerprint, last4, status, scope, severity, exposed in rows:
        con.execute(
            "INSERT INTO key_audit VALUES (?, ?, ?, ?, ?, ?, ?, [], [], [], [], ?, false, ?, ?, "
            "[], [])",
            [
                run_id,
                at,
                name,
                fingerprint,
                last4,
                status,
                scope,
                exposed,
                severity,
                1 if exposed else 0,
            ],
        )


def empty_warehouse(path: Path) -> Path:
    Warehouse(path).ensure()
    return path


__all__ = ["Fixture", "build_warehouse", "empty_warehouse"]
