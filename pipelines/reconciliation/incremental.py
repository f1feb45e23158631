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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

import polars as pl

from pipelines.reconciliation.chain_carry import ChainCarry
from pipelines.reconciliation.context import Context
from pipelines.reconciliation.slices import (
    LEDGER_COLUMNS,
    LedgerDay,
    Reader,
    by_account,
    ledger_days_of,
)
from transforms.breaks import BREAKS_SCHEMA, conform_breaks, placed
from transforms.cross_checks import (
    CheckOutcome,
    ItemKey,
    ReportedBreakdown,
    ledger_debits,
    ledger_debits_of_each,
)
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


@dataclass(frozen=True)
class PlanFacts:
    """What planning a pass reads of an account's past, read for every account at once
    (``plan_facts``): the warehouse's schema version, the account's carried state, its latest
    reconciliation, its last entry and the first day a landing touched since the carry."""

    schema_version: int
    has_carry: bool = False
    state: dict[str, Any] | None = None  # its reconciliation_carry row
    latest_run: str | None = None
    last_entry: datetime | None = None
    touched: date | None = None
    # Read ahead for the boundary a plan would take (unused when the pass is full): the days
    # from SEARCH_DAYS before the limit, and the kept chain at the boundary they give.
    recent_days: tuple[LedgerDay, ...] = ()
    kept: KeptChain | None = None

    @property
    def limit(self) -> date | None:
        """The first day that may have changed since the carry: the earliest of the first day
        landed since, the carry's last day and the last entry's day."""
        if self.state is None or self.state["last_day"] is None or self.last_entry is None:
            return None
        days = (self.touched, self.state["last_day"], self.last_entry.astimezone(UTC).date())
        return min(d for d in days if d)


@dataclass(frozen=True)
class KeptChain:
    """The kept rows at a boundary (``since``), as ``_carried`` checks and resumes them."""

    since: datetime
    chained: pl.DataFrame  # the chain's last entry of the day before `since` (0 or 1 row)
    last: pl.DataFrame  # that entry as landed (exactly 1 row when the chain is the ledger's)
    entries_before: int
    chained_before: int
    continuity: pl.DataFrame
    ambiguous: int
    first: pl.DataFrame  # the chain's first entry
    # The kept chain's rows of the breakdown period before `since`, read for every account at
    # once, with the range they were read for (``with_kept_debits``); None: read per account.
    debit_rows: tuple[datetime, datetime, pl.DataFrame] | None = None
    # Those rows' debits, summed for every account sharing its rules in one pass, with the rules
    # they were summed under; None: summed by the account's own pass.
    debit_sums: tuple[EntryTypeRules, dict[ItemKey, int]] | None = None


def plan_facts(source: Reader, accounts: Sequence[str]) -> dict[str, PlanFacts]:
    """Every account's ``PlanFacts``: five queries whatever the number of accounts."""
    names = list(accounts)
    version = int(source.read("SELECT max(version) AS v FROM schema_version")["v"][0])
    if not _has_table(source, "reconciliation_carry"):
        return {a: PlanFacts(version) for a in names}
    among = "account IN (SELECT unnest(?::VARCHAR[]))"
    states = {
        row["account"]: row
        for row in source.read(
            "SELECT account, run_id, checked_at, fingerprint, mode, last_day "
            f"FROM reconciliation_carry WHERE {among}",
            [names],
        ).iter_rows(named=True)
    }
    latest = dict(source.read(
        f"SELECT account, arg_max(run_id, checked_at) FROM reconciliation_runs WHERE {among} "
        "GROUP BY account",
        [names],
    ).iter_rows())  # fmt: skip
    last = dict(source.read(
        f"SELECT account, max(created_at) FROM ledger_entries WHERE {among} GROUP BY account",
        [names],
    ).iter_rows())  # fmt: skip
    touched = dict(source.read(
        "SELECT r.account, min(r.range_start) FROM sync_runs r JOIN reconciliation_carry c "
        f"ON c.account = r.account AND r.finished_at >= c.checked_at WHERE r.{among} "
        "GROUP BY r.account",
        [names],
    ).iter_rows())  # fmt: skip
    facts = {
        a: PlanFacts(version, True, states.get(a), latest.get(a), last.get(a), touched.get(a))
        for a in names
    }
    limits = {a: f.limit for a, f in facts.items() if f.limit is not None}
    recent = ledger_days_of(
        source,
        {
            a: datetime.combine(d - timedelta(days=SEARCH_DAYS), time(), UTC)
            for a, d in limits.items()
        },
    )
    boundaries = {a: _boundary(recent[a], d) for a, d in limits.items()}
    kept = _kept_chains(
        source,
        {
            a: datetime.combine(b + timedelta(days=1), time(), UTC)
            for a, b in boundaries.items()
            if b
        },
    )
    return {
        a: replace(f, recent_days=tuple(recent.get(a, ())), kept=kept.get(a))
        for a, f in facts.items()
    }


# Every account's boundary, as the rows `s` a query joins (since: midnight UTC; day: its date).
_AT = (
    "(SELECT unnest(?::VARCHAR[]) AS account, unnest(?::TIMESTAMPTZ[]) AS since, "
    "unnest(?::DATE[]) AS day) AS s"
)


def _kept_chains(source: Reader, since: dict[str, datetime]) -> dict[str, KeptChain]:
    """What ``_carried`` needs of every account at its boundary: seven queries whatever the
    number of accounts. The carried entry closes the day before `since`: the chain's and the
    ledger's reads of it stay within that day (24 hours, as Python's timedelta)."""
    if not since:
        return {}
    names = list(since)
    at = [names, [since[a] for a in names], [since[a].date() for a in names]]
    before = "AND {t}.created_at >= s.since - INTERVAL 24 HOURS AND {t}.created_at < s.since"
    chained = source.read(
        "SELECT c.account, c.entry_id, c.signed_amount, c.balance_before, "
        f"c.chain_position + 1 AS chain_position FROM ledger_chain AS c JOIN {_AT} "
        f"ON c.account = s.account {before.format(t='c')} "
        "QUALIFY row_number() OVER (PARTITION BY c.account ORDER BY c.chain_position DESC) = 1",
        at,
    )
    ids = chained["entry_id"].to_list()
    holders = chained["account"].to_list()
    # The day before the boundaries, as constants: DuckDB then skips the row groups outside it
    # (the EXISTS alone scanned every entry, 0.44 s at 1M).
    window = [min(since.values()) - timedelta(hours=24), max(since.values())]
    last = source.read(
        f"SELECT {LEDGER_COLUMNS} FROM ledger_entries AS e WHERE e.created_at >= ? "
        "AND e.created_at < ? AND EXISTS (SELECT 1 FROM "
        "(SELECT unnest(?::VARCHAR[]) AS account, unnest(?::VARCHAR[]) AS entry_id, "
        "unnest(?::TIMESTAMPTZ[]) AS since) AS s WHERE s.account = e.account "
        f"AND s.entry_id = e.entry_id {before.format(t='e')})",
        [*window, holders, ids, [since[a] for a in holders]],
    )
    counts = {
        a: (int(e), int(c))
        for a, e, c in source.read(
            "SELECT s.account, "
            "(SELECT count(*) FROM ledger_entries AS e WHERE e.account = s.account "
            "AND e.created_at < s.since), "
            "(SELECT count(*) FROM ledger_chain AS c WHERE c.account = s.account "
            f"AND c.created_at < s.since) FROM {_AT}",
            at,
        ).iter_rows()
    }
    columns = ", ".join(f"b.{c}" for c in BREAKS_SCHEMA)
    continuity = source.read(
        f"SELECT {columns} FROM balance_breaks AS b JOIN {_AT} ON b.account = s.account "
        "WHERE b.kind = 'continuity' AND b.break_end < s.since "
        "ORDER BY b.account, b.break_end, b.after_entry_id",
        at,
    )
    ambiguous = dict(source.read(
        f"SELECT s.account, coalesce(sum(a.groups), 0) FROM {_AT} LEFT JOIN ambiguous_tie_days "
        "AS a ON a.account = s.account AND a.day < s.day GROUP BY s.account",
        at,
    ).iter_rows())  # fmt: skip
    first = source.read(
        "SELECT account, entry_id, created_at, balance_before FROM ledger_chain "
        "WHERE account IN (SELECT unnest(?::VARCHAR[])) AND chain_position = 0",
        [names],
    )
    parts = {
        name: by_account(frame)
        for name, frame in (("chained", chained), ("last", last), ("continuity", continuity),
                            ("first", first))
    }  # fmt: skip
    return {
        a: KeptChain(
            since=since[a],
            chained=parts["chained"](a).drop("account"),
            last=parts["last"](a),
            entries_before=counts[a][0],
            chained_before=counts[a][1],
            continuity=parts["continuity"](a),
            ambiguous=int(ambiguous.get(a, 0)),
            first=parts["first"](a),
        )
        for a in names
    }


def fingerprint(
    version: int, context: Context, sign_convention: str, tolerance: str, rules: EntryTypeRules
) -> str:
    """What the derived rows depend on besides the entries, hashed."""
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
    facts: PlanFacts,
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
    if not facts.has_carry:
        return whole("no carried state (first reconciliation since the upgrade)")
    carried = facts.state
    if carried is None:
        return whole("no carried state (first reconciliation)")
    if carried["mode"] == "failed":
        return whole("the last reconciliation of this account failed")
    if facts.latest_run is None or facts.latest_run != carried["run_id"]:
        return whole("the carried state is not the latest reconciliation's")
    if carried["fingerprint"] != stamp:
        return whole("settings, schema or subscription/campaign snapshots changed")
    if carried["last_day"] is None:
        return whole("no entries were reconciled before")
    last = facts.last_entry
    if last is None:
        return whole("no entries")
    limit = facts.limit
    assert limit is not None  # a carry with a last day, and entries
    boundary = _boundary(facts.recent_days, limit)
    if boundary is None:
        return whole(f"no day in the {SEARCH_DAYS} days before {limit} ends on a single entry")
    since = datetime.combine(boundary + timedelta(days=1), time(), UTC)
    kept = facts.kept
    assert kept is not None and kept.since == since  # read ahead for this very boundary
    state_before = _carried(source, account, kept, context, rules, tolerance)
    if state_before is None:
        return whole("the kept chain does not match the landed entries")
    return PassPlan(stamp, state_before, f"from {since.date().isoformat()}")


def _has_table(source: Reader, name: str) -> bool:
    found = source.read(
        "SELECT count(*) AS n FROM information_schema.tables WHERE table_name = ?", [name]
    )
    return bool(found["n"][0])


def _boundary(days: Sequence[LedgerDay], limit: date) -> date | None:
    """The last day before `limit` whose last createdAt holds one entry (``days``: the
    account's days from SEARCH_DAYS before `limit`)."""
    before = [d for d in days if d.day < limit]
    return next((d.day for d in reversed(before) if d.closing_ties == 1), None)


def _carried(
    source: Reader,
    account: str,
    kept: KeptChain,
    context: Context,
    rules: EntryTypeRules,
    tolerance: Decimal,
) -> Carried | None:
    """The kept rows read back as the slices before `kept.since` left them; None when the kept
    chain is not the landed entries' (then only a full pass is right)."""
    carry = kept_carry(kept)
    if carry is None:
        return None
    outcome = compare_opening(
        ledger_start(kept.first.row(0, named=True)),
        context.history_first_day,
        tolerance=tolerance,
    )
    return Carried(
        since=kept.since,
        carry=carry,
        continuity=conform_breaks(kept.continuity),
        ambiguous=kept.ambiguous,
        debits=_kept_debits(source, account, kept, context.breakdown, rules),
        opening=replace(outcome, breaks=placed(outcome.breaks)),
    )


def kept_carry(kept: KeptChain) -> ChainCarry | None:
    """The chain's carry at the boundary, as the slices before it left it; None when the kept
    chain is not the landed entries' (then only a full pass is right)."""
    chained = kept.chained
    if not chained.height or kept.last.height != 1 or not kept.first.height:
        return None
    last = pl.concat([kept.last, chained.drop("entry_id")], how="horizontal")
    counts = (kept.entries_before, kept.chained_before)
    if counts[0] != counts[1] or last["chain_position"][0] != counts[0]:
        return None
    return ChainCarry(last=last, entries=counts[0], closes_alone=True)


def _kept_debits(
    source: Reader,
    account: str,
    kept: KeptChain,
    reported: ReportedBreakdown | str,
    rules: EntryTypeRules,
) -> dict[ItemKey, int]:
    """The breakdown period's debits before `since`, from the kept chain (only the period's
    days are read, never the history): from the rows read for every account when they were
    read for this very range, else read here."""
    since = kept.since
    if not isinstance(reported, ReportedBreakdown) or reported.start >= since:
        return {}
    wanted = (reported.start, min(reported.end, since))
    if kept.debit_rows is not None and kept.debit_rows[:2] == wanted:
        if kept.debit_sums is not None and kept.debit_sums[0] == rules:
            return kept.debit_sums[1]
        rows = kept.debit_rows[2]
    else:
        rows = source.read(
            f"SELECT {_DEBIT_COLUMNS} FROM ledger_chain "
            "WHERE account = ? AND created_at >= ? AND created_at < ?",
            [account, *wanted],
        )
    return ledger_debits(rows, reported.start, reported.end, rules)


_DEBIT_COLUMNS = "entry_type, created_at, agent_id, campaign_id, channel, signed_amount"


def with_kept_debits(
    source: Reader,
    facts: dict[str, PlanFacts],
    periods: dict[str, tuple[datetime, datetime]],
    rules: Mapping[str, EntryTypeRules] | None = None,
) -> dict[str, PlanFacts]:
    """``facts`` with each kept chain's breakdown-period rows, read for every account at once
    (one query; a query per account was a quarter of a 500-company reconciliation), and, for
    the accounts whose ``rules`` are given, their debits summed in one pass per set of rules."""
    ranges = {
        a: (start, min(end, f.kept.since))
        for a, f in facts.items()
        if f.kept is not None and a in periods
        for start, end in [periods[a]]
        if start < f.kept.since
    }
    if not ranges:
        return facts
    names = list(ranges)
    # The periods' span, as constants, lets DuckDB skip the row groups outside every period.
    span = [min(r[0] for r in ranges.values()), max(r[1] for r in ranges.values())]
    rows = source.read(
        f"SELECT account, {_DEBIT_COLUMNS} FROM ledger_chain AS c WHERE c.created_at >= ? "
        "AND c.created_at < ? AND EXISTS (SELECT 1 FROM "
        "(SELECT unnest(?::VARCHAR[]) AS account, unnest(?::TIMESTAMPTZ[]) AS first, "
        "unnest(?::TIMESTAMPTZ[]) AS stop) AS r WHERE r.account = c.account "
        "AND c.created_at >= r.first AND c.created_at < r.stop)",
        [*span, names, [ranges[a][0] for a in names], [ranges[a][1] for a in names]],
    )
    part = by_account(rows)
    sums = _debit_sums(rows, {a: periods[a] for a in names}, rules or {})
    out = dict(facts)
    for a in names:
        kept = facts[a].kept
        assert kept is not None
        debit_rows = (*ranges[a], part(a).drop("account"))
        out[a] = replace(
            facts[a], kept=replace(kept, debit_rows=debit_rows, debit_sums=sums.get(a))
        )
    return out


def _debit_sums(
    rows: pl.DataFrame,
    periods: Mapping[str, tuple[datetime, datetime]],
    rules: Mapping[str, EntryTypeRules],
) -> dict[str, tuple[EntryTypeRules, dict[ItemKey, int]]]:
    """Each account's period debits, as ``_kept_debits`` sums them, in one pass per rules."""
    by_rules: dict[EntryTypeRules, dict[str, tuple[datetime, datetime]]] = {}
    for account, period in periods.items():
        if account in rules:
            by_rules.setdefault(rules[account], {})[account] = period
    sums = {}
    for chosen, accounts in by_rules.items():
        for account, found in ledger_debits_of_each(rows, accounts, chosen).items():
            sums[account] = (chosen, found)
    return sums
