"""Where a reconciliation starts: from the first day a sync touched, or from the first entry.

The derived rows of a day depend only on the entries up to it (the chain runs forward), the
settings and the snapshots that shape the rows. So when the days before a boundary are unchanged
since the run that derived them, their rows can stay and the chain can resume from the last
entry before the boundary, as a slice resumes from the slice before it (`chain_carry`): the
boundary is the day after one whose last createdAt holds a single entry, which is what makes
resuming there give exactly the run over the whole ledger.

Unchanged means: the carry (`reconciliation_carry`) was written by the account's latest
reconciliation, with the same fingerprint (settings, history's first day, subscription and
campaign snapshots, schema version), and every ledger landing since began after the boundary
(`sync_runs.range_start`: a landing replaces whole days from there). Anything else is a full pass,
and says why.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal

import polars as pl

from pipelines.reconciliation.chain_carry import ChainCarry
from pipelines.reconciliation.context import Context
from pipelines.reconciliation.slices import LEDGER_COLUMNS, Reader, ledger_days
from transforms.breaks import BREAKS_SCHEMA, conform_breaks, placed
from transforms.cross_checks import CheckOutcome, ItemKey, ReportedBreakdown, ledger_debits
from transforms.entry_type import EntryTypeRules
from transforms.opening import compare_opening, ledger_start

# Bumped when the rules change what they derive, so a carry written by older code is not resumed.
DERIVATION_VERSION = 1
# How far before the first touched day a boundary is looked for (a day ending on one entry).
SEARCH_DAYS = 40


@dataclass(frozen=True)
class Carried:
    """The state of the chain just before `since` (midnight UTC), from the rows kept."""

    since: datetime
    carry: ChainCarry
    continuity: pl.DataFrame  # the kept continuity breaks, in the order the pass found them
    ambiguous: int
    debits: dict[ItemKey, int]  # the kept days' debits within the breakdown's period
    opening: CheckOutcome


@dataclass(frozen=True)
class PassPlan:
    fingerprint: str
    carried: Carried | None  # None: a full pass
    reason: str

    @property
    def since(self) -> datetime | None:
        return self.carried.since if self.carried else None

    def describe(self) -> str:
        """ "incremental from 2026-11-19" or "full: <why>": what the metadata and log say."""
        if self.carried is None:
            return f"full: {self.reason}"
        return f"incremental from {self.carried.since.date().isoformat()}"


def fingerprint(
    source: Reader, context: Context, sign_convention: str, tolerance: str, rules: EntryTypeRules
) -> str:
    """What the derived rows depend on besides the entries, hashed."""
    version = source.read("SELECT max(version) AS v FROM schema_version")["v"][0]
    shaped = {
        "derivation": DERIVATION_VERSION,
        "schema": version,
        "convention": sign_convention,
        "tolerance": tolerance,
        "rules": repr(rules),
        "history_first_day": str(context.history_first_day),
        "subscriptions": sorted(map(str, context.subscriptions.rows())),
        "campaigns": sorted(map(str, context.campaigns.rows())),
    }
    return hashlib.sha256(json.dumps(shaped, sort_keys=True).encode()).hexdigest()


def plan_pass(
    source: Reader,
    account: str,
    context: Context,
    *,
    stamp: str,
    full: bool,
    infer: bool,
    rules: EntryTypeRules,
    tolerance: Decimal,
) -> PassPlan:
    """Incremental when everything above holds, else full with the reason."""

    def whole(reason: str) -> PassPlan:
        return PassPlan(stamp, None, reason)

    if full:
        return whole("requested (--full-reconcile)")
    if infer:
        return whole("the sign convention is inferred over the whole ledger")
    if not _has_table(source, "reconciliation_carry"):
        return whole("no carried state (first reconciliation since the upgrade)")
    state = source.read(
        "SELECT run_id, checked_at, fingerprint, mode, last_day FROM reconciliation_carry "
        "WHERE account = ?",
        [account],
    )
    if not state.height:
        return whole("no carried state (first reconciliation)")
    carried = state.row(0, named=True)
    if carried["mode"] == "failed":
        return whole("the last reconciliation of this account failed")
    latest = source.read(
        "SELECT run_id FROM reconciliation_runs WHERE account = ? ORDER BY checked_at DESC LIMIT 1",
        [account],
    )
    if not latest.height or latest["run_id"][0] != carried["run_id"]:
        return whole("the carried state is not the latest reconciliation's")
    if carried["fingerprint"] != stamp:
        return whole("settings, schema or subscription/campaign snapshots changed")
    if carried["last_day"] is None:
        return whole("no entries were reconciled before")
    last = source.read(
        "SELECT max(created_at) AS last FROM ledger_entries WHERE account = ?", [account]
    )["last"][0]
    if last is None:
        return whole("no entries")
    touched = source.read(
        "SELECT min(range_start) AS first FROM sync_runs WHERE account = ? AND finished_at >= ?",
        [account, carried["checked_at"]],
    )["first"][0]
    limit = min(d for d in (touched, carried["last_day"], last.astimezone(UTC).date()) if d)
    boundary = _boundary_day(source, account, limit)
    if boundary is None:
        return whole(f"no day in the {SEARCH_DAYS} days before {limit} ends on a single entry")
    since = datetime.combine(boundary + timedelta(days=1), time(), UTC)
    state_before = _carried(source, account, since, context, rules, tolerance)
    if state_before is None:
        return whole("the kept chain does not match the landed entries")
    return PassPlan(stamp, state_before, f"from {since.date().isoformat()}")


def _has_table(source: Reader, name: str) -> bool:
    found = source.read(
        "SELECT count(*) AS n FROM information_schema.tables WHERE table_name = ?", [name]
    )
    return bool(found["n"][0])


def _boundary_day(source: Reader, account: str, limit: date) -> date | None:
    """The last day before `limit` whose last createdAt holds one entry."""
    since = datetime.combine(limit - timedelta(days=SEARCH_DAYS), time(), UTC)
    days = [d for d in ledger_days(source, account, since) if d.day < limit]
    return next((d.day for d in reversed(days) if d.closing_ties == 1), None)


def _carried(
    source: Reader,
    account: str,
    since: datetime,
    context: Context,
    rules: EntryTypeRules,
    tolerance: Decimal,
) -> Carried | None:
    """The kept rows read back as the slices before `since` left them; None when the kept
    chain is not the landed entries' (then only a full pass is right)."""
    # The carried entry closes the day before `since`: both reads stay within that day.
    day_before = since - timedelta(days=1)
    chained = source.read(
        "SELECT entry_id, signed_amount, balance_before, chain_position + 1 AS chain_position "
        "FROM ledger_chain WHERE account = ? AND created_at >= ? AND created_at < ? "
        "ORDER BY chain_position DESC LIMIT 1",
        [account, day_before, since],
    )
    if not chained.height:
        return None
    last = source.read(
        f"SELECT {LEDGER_COLUMNS} FROM ledger_entries "
        "WHERE account = ? AND entry_id = ? AND created_at >= ? AND created_at < ?",
        [account, chained["entry_id"][0], day_before, since],
    )
    if last.height != 1:
        return None
    last = pl.concat([last, chained.drop("entry_id")], how="horizontal")
    counts = source.read(
        "SELECT (SELECT count(*) FROM ledger_entries WHERE account = ? AND created_at < ?) AS e, "
        "(SELECT count(*) FROM ledger_chain WHERE account = ? AND created_at < ?) AS c",
        [account, since, account, since],
    ).row(0)
    if counts[0] != counts[1] or last["chain_position"][0] != counts[0]:
        return None
    columns = ", ".join(BREAKS_SCHEMA)
    continuity = source.read(
        f"SELECT {columns} FROM balance_breaks WHERE account = ? AND kind = 'continuity' "
        "AND break_end < ? ORDER BY break_end, after_entry_id",
        [account, since],
    )
    ambiguous = source.read(
        "SELECT coalesce(sum(groups), 0) AS n FROM ambiguous_tie_days WHERE account = ? "
        "AND day < ?",
        [account, since.date()],
    )["n"][0]
    first = source.read(
        "SELECT account, entry_id, created_at, balance_before FROM ledger_chain "
        "WHERE account = ? AND chain_position = 0",
        [account],
    )
    outcome = compare_opening(
        ledger_start(first.row(0, named=True)),
        context.history_first_day,
        tolerance=tolerance,
    )
    return Carried(
        since=since,
        carry=ChainCarry(last=last, entries=counts[0], closes_alone=True),
        continuity=conform_breaks(continuity),
        ambiguous=int(ambiguous),
        debits=_kept_debits(source, account, since, context.breakdown, rules),
        opening=replace(outcome, breaks=placed(outcome.breaks)),
    )


def _kept_debits(
    source: Reader,
    account: str,
    since: datetime,
    reported: ReportedBreakdown | str,
    rules: EntryTypeRules,
) -> dict[ItemKey, int]:
    """The breakdown period's debits before `since`, from the kept chain (only the period's
    days are read, never the history)."""
    if not isinstance(reported, ReportedBreakdown) or reported.start >= since:
        return {}
    kept = source.read(
        "SELECT entry_type, created_at, agent_id, campaign_id, channel, signed_amount "
        "FROM ledger_chain WHERE account = ? AND created_at >= ? AND created_at < ?",
        [account, reported.start, min(reported.end, since)],
    )
    return ledger_debits(kept, reported.start, reported.end, rules)
