"""Reading the warehouse: every figure aggregated in DuckDB, read in one go under the shared lock.

The lock is held only while reading (a few small GROUP BY results); pages are rendered after it
is released, so a sync never waits for a report to finish rendering.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import polars as pl

from dashboards import model, periods, read_findings, read_statement
from dashboards.read_alerts import read_alerts, say_alerts
from dashboards.usage import dimension_usage
from pipelines.warehouse import statement_read
from pipelines.warehouse.outcomes import AccountStatus, read_statuses
from pipelines.warehouse.read import (
    QueryError,
    ReadConnection,
    count,
    open_read_only,
    table_names,
)
from pipelines.warehouse.read import rows as _rows  # `rows` is the usual name of its result
from transforms.aggregate import STATEMENT_MONEY_COLUMNS
from transforms.micros import MONEY

RECONCILIATION_TABLES = (
    "ledger_enriched",
    "daily_balance",
    "balance_breaks",
    "reconciliation_runs",
)


class ReportError(RuntimeError):
    """The report cannot be built from this warehouse; the message says why and what to do."""


def read_warehouse(
    path: Path,
    account: str | None = None,
    month: date | None = None,
    configured: Sequence[str] = (),
    *,
    lock_timeout_s: float,
) -> model.ReportData:
    """Everything the site shows, read in one go.

    A requested ``month`` that no account has a statement for is a ReportError naming the
    months the ledger covers: an empty site built for it would look like a month with no
    activity, which is a different fact.
    """
    with open_read_only(path, lock_timeout_s) as con:
        tables = table_names(con)
        notices = []
        missing = [t for t in RECONCILIATION_TABLES if t not in tables]
        if missing:
            notices.append(
                "This warehouse has no reconciliation tables yet ("
                + ", ".join(missing)
                + "): run `creditlens sync` with this version of creditlens to upgrade it."
            )
        elif "hidden_movements" not in tables:
            notices.append(
                "This warehouse was reconciled before findings had ids (no hidden_movements "
                "view): they are shown without the day each is observed on, and cannot be "
                "acknowledged until `creditlens sync` with this version of creditlens upgrades it."
            )
        names = _accounts(con, tables)
        statuses = read_statuses(con, [*configured, *(n for n in names if n not in configured)])
        if account is not None:
            if account not in names:
                known = ", ".join(names) or "none"
                raise ReportError(f"no data for account {account!r} (accounts: {known})")
            names = [account]
        statuses = [s for s in statuses if account is None or s.account == account]
        accounts = [_account(con, tables, name, month) for name in names]
        say_failures(accounts, statuses)
        alerts = read_alerts(con, account)
        say_alerts(accounts, alerts)
        if month is not None and accounts:
            wanted = periods.month_start(month)
            if not any(a.statement(wanted) for a in accounts):
                raise ReportError(read_statement.no_statement(wanted, accounts))
        audits = _key_audit(con, tables) if "key_audit" in tables else []
    return model.ReportData(accounts, audits, notices, statuses, alerts)


def _accounts(con: ReadConnection, tables: set[str]) -> list[str]:
    sources = [
        t
        for t in (
            "ledger_entries",
            "daily_balance",
            "reconciliation_runs",
            "subscription_snapshots",
            "consumption_snapshots",
        )
        if t in tables
    ]
    if not sources:
        return []
    union = " UNION ".join(f"SELECT DISTINCT account FROM {t}" for t in sources)
    return [r[0] for r in _rows(con, f"SELECT account FROM ({union}) ORDER BY account")]


def _account(
    con: ReadConnection, tables: set[str], name: str, requested: date | None
) -> model.Account:
    notices: list[str] = []
    daily = _daily(con, tables, name)
    subscription = _subscription(con, name) if "subscription_snapshots" in tables else None
    consumption = _consumption(con, name) if "consumption_snapshots" in tables else None
    ledger_entries = count(con, "SELECT count(*) FROM ledger_entries WHERE account = ?", [name])
    reconciled = (
        count(con, "SELECT count(*) FROM ledger_enriched WHERE account = ?", [name])
        if "ledger_enriched" in tables
        else 0
    )
    if ledger_entries != reconciled:
        notices.append(
            f"The ledger holds {ledger_entries:,} entries but the reconciliation covers "
            f"{reconciled:,}: figures are as of the last reconciliation."
        )
    as_of = _as_of(con, name, daily, subscription, consumption)
    statements: list[model.Statement] = []
    month: date | None = None
    full = False
    if as_of is not None:
        first = daily["day"].min() if daily.height else as_of
        assert isinstance(first, date)
        month, full = periods.report_month(as_of, first, requested)
        statements = _statements(con, name, first, as_of) if daily.height else []
    dimensions: dict[str, model.Dimension] = {}
    if "ledger_enriched" in tables:
        names = _campaign_names(con, name)
        for dimension in model.DIMENSIONS:
            dimensions[dimension] = dimension_usage(con, name, dimension, names, month)
    return model.Account(
        name=name,
        as_of=as_of,
        report_month=month,
        report_month_full=full,
        daily=daily,
        statements=statements,
        breaks=read_findings.movements(con, tables, name),
        reconciliation=read_findings.reconciliation(con, tables, name),
        subscription=subscription,
        consumption=consumption,
        dimensions=dimensions,
        ledger_entries=ledger_entries,
        reconciled_entries=reconciled,
        agents_in_period=_agents_in_period(con, name, subscription, consumption),
        notices=notices,
        mismatches=read_findings.mismatches(con, tables, name),
        history=read_findings.history(con, tables, name),
        lines=read_statement.statement_lines(con, tables, name),
        month_entries=read_statement.month_entries(con, tables, name, month),
        closes=statement_read.closes(con, tables, name),
        restated={
            m: [r.sentence() for r in found]
            for m, found in statement_read.restatements(con, tables, name).items()
        },
    )


def _daily(con: ReadConnection, tables: set[str], name: str) -> pl.DataFrame:
    columns = ", ".join(STATEMENT_MONEY_COLUMNS)
    if "daily_balance" not in tables:
        schema = {"account": pl.Utf8, "day": pl.Date}
        schema.update({c: MONEY for c in STATEMENT_MONEY_COLUMNS})
        return pl.DataFrame(schema={**schema, "entries": pl.Int32})
    return con.sql(
        f"SELECT account, day, {columns}, entries FROM daily_balance "
        f"WHERE account = $account ORDER BY day",
        params={"account": name},
    ).pl()


def _as_of(
    con: ReadConnection,
    name: str,
    daily: pl.DataFrame,
    subscription: model.SubscriptionView | None,
    consumption: model.ConsumptionSnapshot | None,
) -> date | None:
    """The last day the data speaks for: the last day with entries or the last fetch."""
    candidates: list[date] = []
    if daily.height:
        last = daily["day"].max()
        assert isinstance(last, date)
        candidates.append(last)
    row = con.execute("SELECT max(finished_at) FROM sync_runs WHERE account = ?", [name]).fetchone()
    if row and row[0] is not None:
        candidates.append(row[0].date())
    for snapshot in (subscription, consumption):
        if snapshot is not None:
            candidates.append(snapshot.fetched_at.date())
    return max(candidates) if candidates else None


def _statements(
    con: ReadConnection, name: str, first: date, last: date | None
) -> list[model.Statement]:
    """Every month from the first with entries to ``last``; an idle month carries the balance."""
    columns = ", ".join(STATEMENT_MONEY_COLUMNS)
    found = {
        r[0]: r
        for r in _rows(
            con,
            f"SELECT month, {columns}, entries FROM monthly_statement WHERE account = ? "
            "ORDER BY month",
            [name],
        )
    }
    if not found or last is None:
        return []
    out: list[model.Statement] = []
    previous: model.Statement | None = None
    for month in periods.months_between(first, max(last, max(found))):
        row = found.get(month)
        if row is not None:
            statement = model.Statement(month, *row[1:-1], entries=int(row[-1] or 0))
        elif previous is not None:
            zero = Decimal("0.000000")
            carried = previous.closing
            statement = model.Statement(month, carried, *[zero] * 6, carried, entries=0)
        else:
            continue
        out.append(statement)
        previous = statement
    return out


def _json(text: str | None, kind: type) -> Any:
    if text is None:
        return None
    try:
        value = json.loads(text, parse_float=Decimal)
    except ValueError:
        return None
    return value if isinstance(value, kind) else None


def _latest_snapshot(
    con: ReadConnection, table: str, columns: str, name: str
) -> tuple[Any, ...] | None:
    """The account's newest readable snapshot in ``table`` (fetched_at, then ``columns``): an
    unreadable one (shape_ok false) has only nulls to show, so an older readable one is shown."""
    rows = _rows(
        con,
        f"SELECT fetched_at, {columns} FROM {table} WHERE account = ? AND shape_ok "
        "ORDER BY fetched_at DESC LIMIT 1",
        [name],
    )
    return rows[0] if rows else None


def _subscription(con: ReadConnection, name: str) -> model.SubscriptionView | None:
    row = _latest_snapshot(
        con,
        "subscription_snapshots",
        "plan, status, features, limits, current_period_start, current_period_end",
        name,
    )
    if row is None:
        return None
    fetched, plan, status, features, limits, start, end = row
    return model.SubscriptionView(
        fetched, plan, status, _json(features, list), _json(limits, dict), start, end
    )


def _consumption(con: ReadConnection, name: str) -> model.ConsumptionSnapshot | None:
    columns = "balance, credits_used, credits_included, period_start, period_end"
    row = _latest_snapshot(con, "consumption_snapshots", columns, name)
    return None if row is None else model.ConsumptionSnapshot(*row)


def _agents_in_period(
    con: ReadConnection,
    name: str,
    subscription: model.SubscriptionView | None,
    consumption: model.ConsumptionSnapshot | None,
) -> int | None:
    """Distinct agents with entries in the current billing period, to set against the limit."""
    for source in (subscription, consumption):
        if source is None:
            continue
        start = getattr(source, "period_start", None)
        end = getattr(source, "period_end", None)
        if start is not None and end is not None:
            return count(
                con,
                "SELECT count(DISTINCT agent_id) FROM ledger_entries WHERE account = ? "
                "AND created_at >= ? AND created_at < ?",
                [name, start, end],
            )
    return None


def _campaign_names(con: ReadConnection, name: str) -> dict[str, str]:
    try:
        rows = _rows(
            con,
            "SELECT campaign_id, name FROM campaigns_current "
            "WHERE account = ? AND name IS NOT NULL",
            [name],
        )
    except QueryError:
        return {}
    return {campaign_id: campaign_name for campaign_id, campaign_name in rows}


# Each key's latest audit: the newest row, the run id breaking a tie of audit times.
_LATEST_PER_KEY = (
    "QUALIFY row_number() OVER (PARTITION BY key_name ORDER BY audited_at DESC, run_id DESC) = 1"
)


def _worst_first(column: str) -> str:
    """An ORDER BY term ranking a severity column critical, high, medium, low, then the rest."""
    return (
        f"CASE {column} WHEN 'critical' THEN 0 WHEN 'high' THEN 1 WHEN 'medium' THEN 2 "
        "WHEN 'low' THEN 3 ELSE 4 END"
    )


def _key_audit(con: ReadConnection, tables: set[str]) -> list[model.KeyAudit]:
    """The latest audit of each key, with that run's findings of the key when stored."""
    rows = _rows(
        con,
        "SELECT key_name, fingerprint, last4, status, intended_scope, severity, billing_exposed, "
        f"client_side_or_public, findings, audited_at, run_id FROM key_audit {_LATEST_PER_KEY} "
        f"ORDER BY {_worst_first('severity')}, key_name",
    )
    findings = _key_audit_findings(con) if "key_audit_findings" in tables else None
    audits = []
    for *fields, run_id in rows:
        audit = model.KeyAudit(*fields)
        if findings is None:
            audit = replace(audit, findings_recorded=audit.findings == 0)
        else:
            mine = findings.get((run_id, audit.key_name), ())
            recorded = bool(mine) or audit.findings == 0
            audit = replace(audit, finding_list=tuple(mine), findings_recorded=recorded)
        audits.append(audit)
    return audits


def _key_audit_findings(
    con: ReadConnection,
) -> dict[tuple[str, str], list[model.KeyAuditFinding]]:
    """Findings of each key's latest run, by (run, key); a finding's locations gathered."""
    rows = _rows(
        con,
        f"WITH latest AS (SELECT run_id, key_name FROM key_audit {_LATEST_PER_KEY}) "
        "SELECT f.run_id, f.finding_id, f.key_name, f.fingerprint, f.last4, f.key_status, "
        "f.severity, f.rule_id, f.rule_name, f.message, f.remedy, f.billing_readable, "
        "f.baselined, f.counted, f.path, f.line, f.column_number, f.encoding, f.commit, "
        "f.place, f.place_kind FROM key_audit_findings f "
        "JOIN latest USING (run_id, key_name) "
        f"ORDER BY {_worst_first('f.severity')}, f.key_name, f.rule_id, f.finding_id, f.path, "
        "f.line, f.column_number, f.place",
    )
    out: dict[tuple[str, str], dict[str, model.KeyAuditFinding]] = {}
    for run_id, finding_id, key_name, *rest in rows:
        head, where = rest[:11], rest[11:]
        by_id = out.setdefault((run_id, key_name), {})
        place = model.KeyAuditPlace(*where)
        has_place = place.path is not None or place.place is not None
        if finding_id not in by_id:
            fingerprint, last4, status, severity, rule_id, rule_name, message, remedy = head[:8]
            billing, baselined, counted = head[8:11]
            by_id[finding_id] = model.KeyAuditFinding(
                finding_id, key_name, fingerprint, last4, status, severity, rule_id,
                rule_name, message, remedy, tuple(billing or ()), baselined, counted, (),
            )  # fmt: skip
        if has_place:
            found = by_id[finding_id]
            by_id[finding_id] = replace(found, places=(*found.places, place))
    return {k: list(v.values()) for k, v in out.items()}


# What the site says of an account whose last sync failed: its pages show older data than the
# day suggests, and the reader must know why before trusting a figure.


def utc(moment: datetime | None) -> str:
    return moment.strftime("%Y-%m-%d %H:%M UTC") if moment is not None else "never"


def say_failures(accounts: Sequence[model.Account], statuses: Sequence[AccountStatus]) -> None:
    """A notice on each failing account's pages: what failed, when, and how old its figures are."""
    failing = {s.account: s for s in statuses if s.failing}
    for account in accounts:
        status = failing.get(account.name)
        if status is not None:
            account.notices.append(
                f"The last sync of {account.name} failed ({utc(status.last_failure_at)}): "
                f"{status.last_failure}. Figures are as of its last successful sync "
                f"({utc(status.last_success_at)})."
            )
