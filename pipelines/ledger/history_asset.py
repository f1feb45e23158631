"""The ``ledger_history`` asset: where the company's ledger begins, discovered and recorded.

A first sync runs it before the ledger (the CLI does so on an empty warehouse); from the UI,
materialize it once and reload the code location: the ledger's partitions then start at the
discovered first day (pipelines/ledger/partitions.py).
"""

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from dagster import AssetExecutionContext, MaterializeResult, asset

from pipelines.api.client import PlatformClient
from pipelines.config.account import AccountSettings
from pipelines.ledger.history_probe import ApiProbe
from pipelines.ledger.history_search import Decision, History, discover, first_entry, quiet_text
from pipelines.orchestration.account_work import (
    AccountOutcome,
    at_least_one,
    failures,
    for_each_account,
)
from pipelines.orchestration.metadata import row_count
from pipelines.resources import PlatformApiResource, WarehouseResource
from pipelines.resources.warehouse import WAREHOUSE_POOL
from pipelines.warehouse.row_counts import table_rows
from pipelines.warehouse.writer import Warehouse
from transforms.entry_type import EntryTypeRules


def discover_history(
    client: PlatformClient, account: AccountSettings, rules: EntryTypeRules
) -> History:
    probe = ApiProbe(client)
    try:
        return discover(
            probe,
            account=account.name,
            today=datetime.now(UTC).date(),
            limit_days=account.history_limit,
            opening_of=lambda entries: first_entry(entries, account.sign_convention, rules),
        )
    finally:
        probe.close()


def record_history(warehouse: Warehouse, history: History, run_id: str) -> None:
    """Appends what was found and publishes it, so the partitions can start there."""
    record_histories(warehouse, [history], run_id)


def history_row(history: History, run_id: str) -> dict[str, Any]:
    return {
        "account": history.account,
        "discovered_at": datetime.now(UTC),
        "first_day": history.first_day,
        "first_entry_at": history.first_entry_at,
        "opening_balance": history.opening_balance,
        "decided_by": str(history.decided_by),
        "searched_back_to": history.searched_back_to,
        "history_limit": history.limit_days,
        "requests": history.requests,
        "detail": history.sentence(),
        "run_id": run_id,
        "windows_probed": history.windows_probed,
        "entries_counted": history.entries_counted,
        "quiet_periods": quiet_text(history.quiet),
        "replaces_first_day": history.replaces_first_day,
    }


def history_metadata(history: History) -> dict[str, Any]:
    """What Dagster records; ``history_from_metadata`` reads it back for the CLI's summary."""
    return {
        "account": history.account,
        "first_day": history.first_day.isoformat() if history.first_day else "",
        "opening_balance": "" if history.opening_balance is None else str(history.opening_balance),
        "decided_by": str(history.decided_by),
        "searched_back_to": history.searched_back_to.isoformat(),
        "requests": history.requests,
        "windows_probed": history.windows_probed,
        "quiet_periods": quiet_text(history.quiet),
        "detail": history.sentence(),
    }


@asset(
    name="ledger_history",
    group_name="ledger",
    description=(
        "Where each company's ledger begins: history discovery counts every window back to "
        "CREDITLENS_HISTORY_LIMIT days (one request a window) and records the first entry, "
        "the balance before it, how that was decided and any quiet periods in the DuckDB "
        "table ledger_history. Reload the code "
        "location after it to start the ledger's partitions there."
    ),
    kinds={"duckdb", "python"},
    pool=WAREHOUSE_POOL,
)
def ledger_history(
    context: AssetExecutionContext,
    platform_api: PlatformApiResource,
    warehouse: WarehouseResource,
) -> MaterializeResult:
    settings = platform_api.settings()
    rules = EntryTypeRules(debit_pattern=settings.debit_type_pattern)
    with warehouse.step(context, "ledger_history"):
        histories = discover_histories(platform_api.accounts(), rules, settings.account_concurrency)
        for failure in failures(histories):
            context.log.error(failure.line())
        found = at_least_one(histories)
        wh = warehouse.warehouse()
        record_histories(wh, [h for _, h in found], context.run.run_id)
        rows = table_rows(
            warehouse.path, ["ledger_history"], lock_timeout_s=warehouse.lock_timeout_s
        )["ledger_history"]
    for _, history in found:
        context.log.info(f"history of {history.account}: {history.sentence()}")
    return MaterializeResult(
        metadata=discovery_metadata([h for _, h in found], len(histories), rows)
    )


def discovery_metadata(found: Sequence[History], tried: int, rows: int) -> dict[str, Any]:
    """What a discovery records in Dagster, run as the asset or by `creditlens sync`
    (pipelines/cli/recorded.py): one account's history, else how many accounts were found."""
    metadata = (
        history_metadata(found[0])
        if tried == 1 and found
        else {"accounts": len(found), "accounts_failed": tried - len(found)}
    )
    return {**metadata, **row_count(rows)}


def discover_histories(
    accounts: Sequence[AccountSettings], rules: EntryTypeRules, concurrency: int
) -> list[AccountOutcome[History]]:
    """Each account's history, several at once; one account failing fails only its own."""

    def one(account: AccountSettings) -> History:
        with PlatformClient(account.api_settings()) as client:
            return discover_history(client, account, rules)

    return for_each_account(accounts, one, step="history", concurrency=concurrency)


def record_histories(warehouse: Warehouse, histories: Sequence[History], run_id: str) -> None:
    """Appends what was found, in one write, and publishes it once."""
    warehouse.append("ledger_history", [history_row(h, run_id) for h in histories])
    warehouse.publish_analyst_copy()


__all__ = [
    "Decision",
    "discover_histories",
    "discover_history",
    "ledger_history",
    "record_histories",
    "record_history",
]
