"""An agency's new tails, reconciled in one pass over every account instead of one pass each.

A daily sync of 500 companies gives each a tail of a few days after its boundary
(`incremental`). Run company by company, the rules on those tails were most of the run: polars'
fixed cost per call, hundreds of times, not the rows. Here every tail is read in one query
(`read_tails`), then chained, rolled up by day, enriched and summed for the breakdown in one
pass per set of rules (`reconcile_tails`), each account's rows split off for its own pass to
use. Every rule is the one an account's own pass applies (`chain_carry`, `outputs`,
`transforms.cross_checks`), over many accounts at once; each account gets what its pass alone
would (tests/reconciliation/test_agency_pass.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

import polars as pl

from pipelines.reconciliation.chain_carry import ChainCarry, SliceReconciliation, reconcile_slices
from pipelines.reconciliation.context import Context, ContextReads
from pipelines.reconciliation.incremental import PlanFacts, kept_carry
from pipelines.reconciliation.outputs import SliceRows, slice_rows
from pipelines.reconciliation.result import ReconcileOptions
from pipelines.reconciliation.slices import LEDGER_COLUMNS, SLICE_ENTRIES, by_account
from pipelines.warehouse.writer import AccountReplacement
from transforms.entry_type import EntryTypeRules
from transforms.normalize import SIGN_CONVENTIONS

# What one read of tails may hold: the same bound as one slice. A run reads its tails in reads of
# at most this many entries, up to TAIL_READS of them (5,000 companies' daily tails took two);
# an account past them, or whose tail alone is larger, reads and reconciles its own.
TAIL_ENTRIES = SLICE_ENTRIES
TAIL_READS = 4

RulesKey = tuple[str, Decimal, EntryTypeRules]


def rules_key(options: ReconcileOptions) -> RulesKey:
    """What a tail is reconciled under: its convention, tolerance and entry-type rules."""
    return options.sign_convention, Decimal(options.tolerance), options.rules()


@dataclass(frozen=True)
class ReconciledTail:
    rules: RulesKey  # what it was reconciled under
    carry: ChainCarry  # the carry it resumed from
    last_entry: datetime | None  # the tail's last createdAt (None: an empty tail)
    result: SliceReconciliation
    rows: SliceRows


def read_tails(
    source: AccountReplacement, facts: Mapping[str, PlanFacts]
) -> dict[str, pl.DataFrame]:
    """Every incremental candidate's entries from its boundary on (counted from the days read
    ahead), in one query per TAIL_ENTRIES of them, at most TAIL_READS queries; the accounts
    left over read their own."""
    sizes = {
        a: sum(d.entries for d in f.recent_days if d.day >= f.kept.since.date())
        for a, f in facts.items()
        if f.kept is not None
    }
    reads: list[list[str]] = [[]]
    held = 0
    for account, size in sizes.items():
        if size > TAIL_ENTRIES:
            continue
        if held + size > TAIL_ENTRIES:
            if len(reads) == TAIL_READS:
                break
            reads.append([])
            held = 0
        reads[-1].append(account)
        held += size
    tails: dict[str, pl.DataFrame] = {}
    for names in reads:
        if names:
            tails.update(_read_tails(source, {a: facts[a].kept.since for a in names}))  # type: ignore[union-attr]
    return tails


def _read_tails(
    source: AccountReplacement, since: Mapping[str, datetime]
) -> dict[str, pl.DataFrame]:
    names = list(since)
    # The earliest boundary, as a constant, lets DuckDB skip the row groups before it (the
    # EXISTS alone scanned every entry: 0.42 s of a 1M-entry company's 0.1 s pass).
    tails = source.read(
        f"SELECT {LEDGER_COLUMNS} FROM ledger_entries AS e WHERE e.created_at >= ? AND EXISTS "
        "(SELECT 1 FROM (SELECT unnest(?::VARCHAR[]) AS account, unnest(?::TIMESTAMPTZ[]) AS "
        "since) AS s WHERE s.account = e.account AND e.created_at >= s.since)",
        [min(since.values()), names, [since[a] for a in names]],
    )
    part = by_account(tails)
    return {a: part(a) for a in names}


def reconcile_tails(
    facts: Mapping[str, PlanFacts],
    tails: Mapping[str, pl.DataFrame],
    contexts: ContextReads,
    options: Mapping[str, ReconcileOptions] | None,
) -> dict[str, ReconciledTail]:
    """Every tail reconciled in one pass per set of rules. An account whose plan turns out full
    never asks for its result. An account whose options, carry or context cannot be had is
    left out, and if a pass over many fails (data no rule expected), nothing of it is kept:
    each account's own pass then meets it, and it is that account's failure alone."""
    if not options:
        return {}
    groups: dict[RulesKey, dict[str, tuple[pl.DataFrame, ChainCarry, Context]]] = {}
    for account, tail in tails.items():
        kept = facts[account].kept
        carry = kept_carry(kept) if kept is not None else None
        chosen = options.get(account)
        if carry is None or chosen is None or chosen.sign_convention not in SIGN_CONVENTIONS:
            continue
        try:
            context = contexts.context(account)
        except Exception:  # the account's own pass raises it again, in its own line
            continue
        groups.setdefault(rules_key(chosen), {})[account] = (tail, carry, context)
    reconciled: dict[str, ReconciledTail] = {}
    for key, members in groups.items():
        try:
            reconciled.update(_one_pass(key, members))
        except Exception:  # each account's own pass raises it again, as its own
            continue
    return reconciled


def _one_pass(
    key: RulesKey, members: Mapping[str, tuple[pl.DataFrame, ChainCarry, Context]]
) -> dict[str, ReconciledTail]:
    convention, tolerance, rules = key
    parts = reconcile_slices(
        {account: (tail, carry) for account, (tail, carry, _) in members.items()},
        convention=convention,  # type: ignore[arg-type]
        tolerance=tolerance,
        rules=rules,
    )
    if not parts:
        return {}
    ordered = pl.concat([p.ordered for p in parts.values()], how="vertical_relaxed")
    previous = pl.concat(
        [members[a][1].last.select(ordered.columns) for a in parts],  # type: ignore[union-attr]
        how="vertical_relaxed",
    )
    rows = slice_rows(ordered, previous, {a: members[a][2] for a in parts}, rules)
    done = {}
    for account, part in parts.items():
        tail, carry, _ = members[account]
        done[account] = ReconciledTail(
            key,
            carry,
            tail["created_at"].max() if tail.height else None,  # type: ignore[arg-type]
            part,
            rows[account],
        )
    return done
