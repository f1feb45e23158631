"""The sync summary's lookups give what a scan of every record gives, at any number of accounts.

``RunOutcome.observed`` and ``SyncReport.reconciliation_checks`` are asked once per account and
key by the summary; each used to scan every account's records, which made a 5,000-company
summary quadratic (minutes after the runs had ended). Both now read an index made once; these
tests hold them to the plain definition, including an observation added after the index.
"""

from __future__ import annotations

from datetime import date
from typing import Any

from pipelines.cli.runner import RunOutcome
from pipelines.cli.sync_report import SyncReport
from pipelines.orchestration.metadata import ACCOUNT_RECORDS
from pipelines.reconciliation.summary import BREAKDOWN, HIDDEN_MOVEMENTS, SUMMARY

ACCOUNTS = [f"company-{n:03d}" for n in range(40)]


def _scan(outcome: RunOutcome, key: str, account: str) -> dict[str, Any] | None:
    found = [
        m
        for k, m in outcome.observations
        if k == key and m.get("account") == account and m.get("status") != "failed"
    ]
    return found[-1] if found else None


def test_observed_is_each_accounts_last_good_observation_even_after_one_is_added() -> None:
    outcome = RunOutcome("job", True)
    for n, account in enumerate(ACCOUNTS):
        outcome.observations.append(("ledger_entries", {"account": account, "entries": n}))
        if n % 3 == 0:  # a later failure does not hide the figures observed before it
            outcome.observations.append(
                ("ledger_entries", {"account": account, "status": "failed"})
            )
        if n % 5 == 0:
            outcome.observations.append(("balance_breaks", {"account": account, "entries": -n}))
    for key in ("ledger_entries", "balance_breaks", "missing"):
        for account in [*ACCOUNTS, "nobody"]:
            assert outcome.observed(key, account) == _scan(outcome, key, account)
    outcome.observations.append(("ledger_entries", {"account": ACCOUNTS[1], "entries": 99}))
    assert outcome.observed("ledger_entries", ACCOUNTS[1]) == {
        "account": ACCOUNTS[1],
        "entries": 99,
    }


def test_each_accounts_checks_are_its_own_records_and_none_names_every_one() -> None:
    def records(check: str) -> dict[str, Any]:
        rows = [
            {"account": a, "passed": n % 4 != 0, "status": "ok", "message": f"{check} {a}"}
            for n, a in enumerate(ACCOUNTS)
        ]
        return {ACCOUNT_RECORDS: rows}

    reconciliation = RunOutcome("reconciliation_run", True)
    reconciliation.checks = {
        SUMMARY: (True, "", records(SUMMARY)),
        HIDDEN_MOVEMENTS: (False, "", records(HIDDEN_MOVEMENTS)),
        BREAKDOWN: (True, "", {"status": "ok", "message": "a run without account records"}),
        "accounts_synced": (True, "", {}),  # the ledger's check: not a finding
    }
    empty = RunOutcome("job", True)
    report = SyncReport(
        date(2026, 1, 1), date(2026, 1, 2), empty, empty, reconciliation,
        accounts=tuple(ACCOUNTS), per_account=True, lock_timeout_s=1,
    )  # fmt: skip
    for n, account in enumerate(ACCOUNTS):
        checks = report.reconciliation_checks(account)
        assert [c.name for c in checks] == [BREAKDOWN, HIDDEN_MOVEMENTS, SUMMARY]
        assert [c.message for c in checks[1:]] == [
            f"{HIDDEN_MOVEMENTS} {account}",
            f"{SUMMARY} {account}",
        ]
        assert [c.passed for c in checks[1:]] == [n % 4 != 0] * 2
    every = SyncReport(
        date(2026, 1, 1), date(2026, 1, 2), empty, empty, reconciliation, lock_timeout_s=1
    ).reconciliation_checks()
    assert len(every) == 1 + 2 * len(ACCOUNTS)
    assert [c.message for c in every[1 : 1 + len(ACCOUNTS)]] == [
        f"{HIDDEN_MOVEMENTS} {a}" for a in ACCOUNTS
    ]
