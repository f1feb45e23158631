"""What the site says of an account whose last sync failed: its pages show older data than the
day suggests, and the reader must know why before trusting a figure."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from dashboards import model
from pipelines.warehouse.outcomes import AccountStatus


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
