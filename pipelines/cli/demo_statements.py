"""The demo's month close: every month its sync covered closed, then a restatement, as finance
would meet one: the simulated company posts a top-up late into the latest closed month, and a
sync from that month's first day (`creditlens sync --since`) re-reads it."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

from pipelines.cli.sync_command import run_sync
from pipelines.config.settings import Settings
from pipelines.statements.delivery import close_and_deliver
from simulator import Scenario, Simulator, serve
from simulator.scenario import TopUpSpec

LATE_TOP_UP = Decimal("250")


def demo_statements(settings: Settings, seed: int) -> list[str]:
    warehouse = settings.open_warehouse()
    closed = close_and_deliver(warehouse, settings).result
    if not closed.issued:
        return ["statements: no month is closed yet (docs/statements.md)"]
    month = max(s.month for s in closed.issued)
    lines = [
        f"statements: {len(closed.issued)} month(s) closed, {closed.issued[0].month:%Y-%m} to "
        f"{month:%Y-%m} (`creditlens statements list`)"
    ]
    account = settings.account
    # The demo's simulator runs on the real clock: days are counted back from today.
    days_ago = (datetime.now(UTC).date() - month.replace(day=15)).days
    late = Scenario.named("default").with_company(
        account.name, top_ups=[TopUpSpec(days_ago=days_ago, amount=LATE_TOP_UP)]
    )
    with serve(Simulator(late, seed=seed)) as server:
        moved = account.model_copy(update={"base_url": server.url})
        later = settings.model_copy(update={"accounts": (moved,)})
        report = run_sync(later, month.isoformat(), None)
        if report.failures():
            return [*lines, "statements: the demo's late entry could not be synced"]
        restated = close_and_deliver(warehouse, later).result
    lines.append(
        f"a top-up of {LATE_TOP_UP} credits posted late into {month:%Y-%m}, re-read by "
        f"`creditlens sync --since {month.isoformat()}`:"
    )
    lines += [f"  {line}" for line in restated.lines()]
    lines.append(
        f"  the report's statement page of {month:%Y-%m} says what was restated, line by line"
    )
    return lines
