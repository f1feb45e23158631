"""What one `creditlens sync` did, read back from its runs for the summary and exit code."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from pipelines.cli.runner import RunOutcome
from pipelines.ledger.history_search import History
from pipelines.ledger.sync import LedgerSyncResult
from pipelines.orchestration.account_work import AccountFailure
from pipelines.orchestration.metadata import records_of
from pipelines.reconciliation.summary import (
    BREAKDOWN,
    HIDDEN_MOVEMENTS,
    SUMMARY,
    CheckRecord,
    ReconciliationSummary,
)
from pipelines.snapshots.fetch import SnapshotResult
from pipelines.warehouse.outcomes import outcomes_of_sync

# The reconciliation run also ends with the ledger's accounts_synced: not a finding.
RECONCILIATION_CHECKS = (HIDDEN_MOVEMENTS, BREAKDOWN, SUMMARY)
# Where ``SyncReport._check_records`` keeps every account's records together, in their order.
_EVERY = object()


@dataclass
class SyncReport:
    """The three steps of a sync (the ledger and the snapshots share a run, each read from its
    own assets: ``RunOutcome.only``), read back through the types that wrote their metadata.

    Every reader takes the account: a sync covers every configured account, and each step
    records every account's figures as one record each of its ``account_records``
    (pipelines/orchestration/metadata.py)."""

    first: date
    last: date
    ledger: RunOutcome
    snapshots: RunOutcome
    reconciliation: RunOutcome
    history: History | None = None  # what discovery found, when it ran for this sync
    begins: date | None = None  # where discovery found the ledger begins (this or an earlier run)
    accounts: tuple[str, ...] = ()
    per_account: bool = False  # lines and check names carry the account (an accounts file)
    histories: dict[str, History] = field(default_factory=dict)
    beginnings: dict[str, date] = field(default_factory=dict)
    ranges: dict[str, tuple[date, date]] = field(default_factory=dict)
    # Accounts that failed before any run (a missing key variable, discovery refused).
    early_failures: list[AccountFailure] = field(default_factory=list)
    sync_id: str = ""  # what its rows in sync_outcomes share
    warehouse: Path | None = None  # where they are
    lock_timeout_s: float = field(kw_only=True)  # CREDITLENS_LOCK_TIMEOUT_S
    _failures: list[AccountFailure] | None = field(default=None, repr=False)
    _checks: list[tuple[CheckRecord | None, dict[object, list[CheckRecord]]]] | None = field(
        default=None, repr=False
    )

    def outcomes(self) -> list[RunOutcome]:
        return [self.ledger, self.snapshots, self.reconciliation]

    def _account(self, account: str | None) -> str | None:
        return account if account is not None else (self.accounts[0] if self.accounts else None)

    def ledger_result(self, account: str | None = None) -> LedgerSyncResult | None:
        name = self._account(account)
        meta = self.ledger.observed("ledger_entries", name) if name else None
        meta = meta or (self.ledger.materializations.get("ledger_entries") if not account else None)
        return LedgerSyncResult.from_metadata(meta, self.ledger.run_id) if meta else None

    def snapshot_results(self, account: str | None = None) -> dict[str, SnapshotResult]:
        name = self._account(account)
        found: dict[str, SnapshotResult] = {}
        for key, meta in self.snapshots.materializations.items():
            observed = self.snapshots.observed(key, name) if name else None
            if observed is not None:
                found[key] = SnapshotResult.from_metadata(observed)
            elif "accounts" not in meta and (name is None or meta.get("account") == name):
                found[key] = SnapshotResult.from_metadata(meta)
        return found

    def reconciliation_summary(self, account: str | None = None) -> ReconciliationSummary | None:
        name = self._account(account)
        meta = self.reconciliation.observed("balance_breaks", name) if name else None
        if meta is None and name is None:  # a report made of a run without accounts
            meta = self.reconciliation.materializations.get("balance_breaks")
        return ReconciliationSummary.from_metadata(meta) if meta is not None else None

    def reconciliation_checks(self, account: str | None = None) -> list[CheckRecord]:
        """Each check's verdict for the account: its own record of the check's
        ``account_records`` (pipelines/reconciliation/assets.py)."""
        name = self._account(account)
        found = []
        for whole, by_account in self._check_records():
            if whole is not None:
                found.append(whole)
            elif name is None:
                found += by_account.get(_EVERY, [])
            else:
                found += by_account.get(name, [])
        return found

    def _check_records(self) -> list[tuple[CheckRecord | None, dict[object, list[CheckRecord]]]]:
        """Per reconciliation check, in name order: the check's own record (a run without
        account records), or each account's records. Read once: a scan of every account's
        records per account made a 5,000-company summary quadratic."""
        if self._checks is None:
            self._checks = []
            for check, (passed, _severity, meta) in sorted(self.reconciliation.checks.items()):
                if check not in RECONCILIATION_CHECKS:
                    continue
                records = records_of(meta)
                if not records:  # an account's own check, as a run without records made it
                    self._checks.append((CheckRecord.from_metadata(check, passed, meta), {}))
                    continue
                by_account: dict[object, list[CheckRecord]] = {_EVERY: []}
                for record in records:
                    verdict = CheckRecord.from_metadata(check, bool(record["passed"]), record)
                    by_account[_EVERY].append(verdict)
                    by_account.setdefault(record.get("account"), []).append(verdict)
                self._checks.append((None, by_account))
        return self._checks

    def failures(self) -> list[AccountFailure]:
        """One per failed account, its first failure (the others follow from it), in the
        accounts' order: as this sync recorded them in ``sync_outcomes``, the record the site and
        the checks read too; from the runs' own events for a report made without a warehouse."""
        if self._failures is None:
            recorded = self._recorded_failures()
            self._failures = recorded if recorded is not None else self._run_failures()
        return self._failures

    def _recorded_failures(self) -> list[AccountFailure] | None:
        if self.warehouse is None or not self.sync_id:
            return None
        outcomes = outcomes_of_sync(
            self.warehouse, self.sync_id, lock_timeout_s=self.lock_timeout_s
        )
        if not outcomes:
            return None
        first: dict[str, AccountFailure] = {}
        for outcome in outcomes:
            if outcome.result == "failed" and outcome.error:
                prefix = f"account {outcome.account}: "
                step, _, error = outcome.error.removeprefix(prefix).partition(": ")
                first.setdefault(outcome.account, AccountFailure(outcome.account, step, error, ""))
        order = {name: i for i, name in enumerate(self.accounts)}
        return sorted(first.values(), key=lambda f: order.get(f.account, len(order)))

    def _run_failures(self) -> list[AccountFailure]:
        seen: dict[str, AccountFailure] = {}
        for failure in [*self.early_failures, *self.ledger.account_failures(),
                        *self.snapshots.account_failures(),
                        *self.reconciliation.account_failures()]:  # fmt: skip
            seen.setdefault(failure.account, failure)
        return list(seen.values())

    def has_breaks(self) -> bool:
        return any(
            summary is not None and summary.has_breaks
            for summary in (self.reconciliation_summary(a) for a in self.accounts or (None,))
        )
