"""The ledger against the two other views of the same money: the summary and the breakdown.

A movement after the last entry only shows as a summary balance that differs from the last
balance_after; a movement the ledger hides inside the period shows as a breakdown item that does
not match the ledger's own debits. Both checks degrade to 'unavailable' (never an exception) when
the snapshot is missing or did not have the expected shape: a reconciliation that crashes hides
more than one that says what it could not check.

The snapshots are read as stored (`consumption_snapshots`, `breakdown_snapshots` rows): the
payloads were parsed once, when they landed (pipelines/snapshots/rows.py, which also maps the
field names a deployment configures), so nothing here parses JSON, text or field names again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, Literal

import polars as pl

from transforms.breaks import conform_breaks, empty_breaks, money_text
from transforms.entry_type import DEFAULT_RULES, EntryTypeRules, type_meanings
from transforms.micros import decimal_to_micros, micros_to_decimal, to_micros

CheckStatus = Literal["ok", "break", "unavailable", "skipped"]  # skipped: see opening.py
ItemKey = tuple[str | None, str | None, str | None]


@dataclass(frozen=True)
class CheckOutcome:
    """Result of one cross-check: a status, one sentence, and its rows of `balance_breaks`."""

    status: CheckStatus
    message: str
    breaks: pl.DataFrame
    tolerance: Decimal


@dataclass(frozen=True)
class LedgerEnd:
    """The last entry of an account's chain: what the summary balance is compared with."""

    account: str
    entry_id: str
    created_at: datetime
    balance_after: Decimal


@dataclass(frozen=True)
class ReportedBreakdown:
    """A readable breakdown snapshot: its period and the credits of each item, in micro-credits."""

    start: datetime
    end: datetime
    items: dict[ItemKey, int]


@dataclass(frozen=True)
class LedgerDebits:
    """The ledger's side of the breakdown: gross debit magnitudes per item key, in micro-credits.

    Sums of parts are the sum of the whole, so a ledger read in slices adds up its slices'
    `ledger_debits` before the one comparison.
    """

    account: str
    totals: dict[ItemKey, int]


def unavailable(message: str, tolerance: Decimal) -> CheckOutcome:
    return CheckOutcome("unavailable", message, empty_breaks(), Decimal(tolerance))


def read_summary(rows: Sequence[Mapping[str, Any]]) -> Decimal | str:
    """The balance of the latest stored summary, or why the summary cannot be checked.

    `rows` are `consumption_snapshots` rows, newest first (`balance`, `shape_ok`); only the
    first is read.
    """
    if not rows:
        return "No consumption snapshot: the summary balance was not checked."
    latest = rows[0]
    if not latest["shape_ok"]:
        return (
            "The latest consumption snapshot did not have the expected shape (it is stored as "
            "raw JSON): the summary balance was not checked."
        )
    if latest["balance"] is None:
        return (
            "The latest consumption snapshot has no balance: the summary balance was not checked."
        )
    return Decimal(latest["balance"])


def ledger_end(ordered_ledger: pl.DataFrame, account: str | None = None) -> LedgerEnd | str:
    """The last entry in chain order, or why no single account's ledger can be compared."""
    chosen = _one_account(ordered_ledger, account)
    if isinstance(chosen, str):
        return chosen
    name, entries = chosen
    last = entries.sort("chain_position").tail(1).row(0, named=True)
    return LedgerEnd(name, last["entry_id"], last["created_at"], Decimal(last["balance_after"]))


def compare_summary(
    end: LedgerEnd | str,
    balance: Decimal | str,
    *,
    tolerance: Decimal = Decimal(0),
) -> CheckOutcome:
    """The summary's current balance against the ledger's last balance_after.

    `end` is the ledger's last entry and `balance` the stored summary's (`read_summary`), each
    or why there is none. A difference beyond `tolerance` is a 'summary' break: a movement after
    the last entry (break_start = that entry's createdAt, break_end null).
    """
    tolerance = Decimal(tolerance)
    if isinstance(balance, str):
        return unavailable(balance, tolerance)
    observed = balance
    if isinstance(end, str):
        return unavailable(end, tolerance)
    expected = end.balance_after
    gap = observed - expected
    if abs(gap) <= tolerance:
        return CheckOutcome(
            "ok",
            f"The summary balance {money_text(observed)} of account {end.account} matches the "
            f"last balance_after (entry {end.entry_id}).",
            empty_breaks(),
            tolerance,
        )
    detail = (
        f"Balance break on account {end.account} after the last entry: expected "
        f"{money_text(expected)} (balance_after of entry {end.entry_id} at "
        f"{_instant_text(end.created_at)}), actual {money_text(observed)} (summary "
        f"balance), difference {money_text(gap)}."
    )
    row = {
        "account": end.account,
        "kind": "summary",
        "break_start": end.created_at,
        "break_end": None,
        "expected_balance": expected,
        "observed_balance": observed,
        "gap": gap,
        "before_entry_id": end.entry_id,
        "after_entry_id": None,
        "ambiguous": False,
        "detail": detail,
    }
    breaks = conform_breaks(pl.DataFrame([row], infer_schema_length=None))
    return CheckOutcome("break", detail, breaks, tolerance)


def read_breakdown(rows: Sequence[Mapping[str, Any]]) -> ReportedBreakdown | str:
    """The latest stored breakdown's period and credits per item key, or why it cannot be checked.

    `rows` are the `breakdown_snapshots` rows of one snapshot (`period_start`, `period_end`,
    `item_index`, `agent_id`, `campaign_id`, `channel`, `credits`, `shape_ok`); a snapshot without
    items is one row whose `item_index` is null.
    """
    if not rows:
        return "No consumption breakdown: the breakdown was not checked."
    first = rows[0]
    if not first["shape_ok"]:
        return (
            "The latest consumption breakdown did not have the expected shape (it is stored as "
            "raw JSON): the breakdown was not checked."
        )
    start, end = first["period_start"], first["period_end"]
    if start is None or end is None:
        return "The breakdown has no period start or end: the breakdown was not checked."
    items: dict[ItemKey, int] = {}
    for row in rows:
        if row["item_index"] is None:
            continue
        key = (row["agent_id"], row["campaign_id"], row["channel"])
        items[key] = items.get(key, 0) + decimal_to_micros(Decimal(row["credits"]))
    return ReportedBreakdown(_as_utc(start), _as_utc(end), items)


def compare_breakdown(
    reported: ReportedBreakdown | str,
    ledger: LedgerDebits | str,
    *,
    tolerance: Decimal = Decimal(0),
) -> CheckOutcome:
    """Each breakdown item against the ledger's gross debit-category magnitudes.

    The ledger side (`ledger_debits`, summed over slices) is |amount| of debit-category entries
    with createdAt in [period start, period end) per (agent_id, campaign_id, channel); a key
    present on one side only counts as zero on the other. Each mismatch is a 'breakdown' row with
    expected = ledger, observed = breakdown, break_start/break_end = the period bounds. Either
    side may be the reason it is missing instead.
    """
    tolerance = Decimal(tolerance)
    if isinstance(reported, str):
        return unavailable(reported, tolerance)
    if isinstance(ledger, str):
        return unavailable(ledger, tolerance)
    name, ledger_side, items = ledger.account, ledger.totals, reported.items
    period = (reported.start, reported.end)
    tol = decimal_to_micros(tolerance)
    rows = []
    for key in sorted(set(ledger_side) | set(items), key=_key_order):
        expected, observed = ledger_side.get(key, 0), items.get(key, 0)
        if abs(observed - expected) <= tol:
            continue
        side = (
            ""
            if key in items and key in ledger_side
            else (" (no breakdown item)" if key in ledger_side else " (no ledger debits)")
        )
        rows.append(_breakdown_row(name, key, expected, observed, period, side))
    if not rows:
        return CheckOutcome(
            "ok",
            f"All {len(items)} breakdown items of account {name} match the ledger.",
            empty_breaks(),
            tolerance,
        )
    breaks = conform_breaks(pl.DataFrame(rows, infer_schema_length=None))
    message = (
        f"{len(rows)} breakdown item(s) of account {name} differ from the ledger for "
        f"[{_instant_text(reported.start)}, {_instant_text(reported.end)})."
    )
    return CheckOutcome("break", message, breaks, tolerance)


def no_ledger_entries(account: str) -> str:
    """Why an account without entries cannot be compared (the checks say it, never fail)."""
    return f"No ledger entries for account {account}: nothing to compare with."


def _one_account(
    ordered_ledger: pl.DataFrame, account: str | None
) -> tuple[str, pl.DataFrame] | str:
    """The entries of the account checked, or the reason no single account can be chosen."""
    if account is not None:
        entries = ordered_ledger.filter(pl.col("account") == account)
        if entries.height == 0:
            return no_ledger_entries(account)
        return account, entries
    accounts = ordered_ledger["account"].unique().to_list()
    if not accounts:
        return "No ledger entries: nothing to compare with."
    if len(accounts) > 1:
        return "The ledger holds several accounts: say which one the snapshot belongs to."
    return accounts[0], ordered_ledger


def ledger_debits(
    entries: pl.DataFrame, start: datetime, end: datetime, rules: EntryTypeRules = DEFAULT_RULES
) -> dict[ItemKey, int]:
    """Gross debit-category magnitudes with createdAt in [start, end), per item key."""
    within = (pl.col("created_at") >= start) & (pl.col("created_at") < end)
    sums = (
        _debits(entries, within, rules)
        .group_by("agent_id", "campaign_id", "channel")
        .agg(micros=pl.col("__micros").sum())
    )
    return {(a, c, ch): int(m) for a, c, ch, m in sums.iter_rows()}


def ledger_debits_of_each(
    entries: pl.DataFrame,
    periods: Mapping[str, tuple[datetime, datetime]],
    rules: EntryTypeRules = DEFAULT_RULES,
) -> dict[str, dict[ItemKey, int]]:
    """``ledger_debits`` of each account of `periods` within its own period, in one pass over
    the entries of many accounts."""
    found: dict[str, dict[ItemKey, int]] = {account: {} for account in periods}
    if not periods or not entries.height:
        return found
    at = entries.schema["created_at"]
    bounds = pl.DataFrame(
        {
            "account": list(periods),
            "__start": pl.Series([p[0] for p in periods.values()]).cast(at),
            "__end": pl.Series([p[1] for p in periods.values()]).cast(at),
        }
    )
    within = (pl.col("created_at") >= pl.col("__start")) & (pl.col("created_at") < pl.col("__end"))
    sums = (
        _debits(entries.join(bounds, on="account"), within, rules)
        .group_by("account", "agent_id", "campaign_id", "channel")
        .agg(micros=pl.col("__micros").sum())
    )
    for account, agent, campaign, channel, micros in sums.iter_rows():
        found[account][(agent, campaign, channel)] = int(micros)
    return found


def _debits(entries: pl.DataFrame, within: pl.Expr, rules: EntryTypeRules) -> pl.DataFrame:
    """The debit-category entries `within` selects, with their magnitude in micro-credits."""
    amount = "signed_amount" if "signed_amount" in entries.columns else "amount"
    debit_types = (
        type_meanings(entries["entry_type"], rules)
        .filter(pl.col("category") == "debit")["entry_type"]
        .implode()
    )
    return entries.filter(within, pl.col("entry_type").is_in(debit_types)).with_columns(
        __micros=to_micros(pl.col(amount)).abs()
    )


def _breakdown_row(
    account: str,
    key: ItemKey,
    expected: int,
    observed: int,
    period: tuple[datetime, datetime],
    where: str,
) -> dict[str, Any]:
    agent, campaign, channel = key
    start, end = period
    expected_value, observed_value = micros_to_decimal(expected), micros_to_decimal(observed)
    gap = micros_to_decimal(observed - expected)
    detail = (
        f"Breakdown mismatch on account {account} for agent {agent}, campaign {campaign}, "
        f"channel {channel}{where}: expected {money_text(expected_value)} (ledger debits in "
        f"[{_instant_text(start)}, {_instant_text(end)})), actual {money_text(observed_value)} "
        f"(breakdown), difference {money_text(gap)}."
    )
    return {
        "account": account,
        "kind": "breakdown",
        "break_start": start,
        "break_end": end,
        "expected_balance": expected_value,
        "observed_balance": observed_value,
        "gap": gap,
        "agent_id": agent,
        "campaign_id": campaign,
        "channel": channel,
        "ambiguous": False,
        "detail": detail,
    }


def _key_order(key: ItemKey) -> tuple[tuple[bool, str], ...]:
    return tuple((part is not None, part or "") for part in key)


def _as_utc(value: datetime) -> datetime:
    """A stored TIMESTAMPTZ reads back aware; a naive instant is UTC, as the warehouse keeps it."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _instant_text(value: datetime) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
