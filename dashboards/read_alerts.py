"""What the site says of alerts: every alert for the alerts page, and a banner on the pages of
an account with alerts firing, so nobody reads its figures without seeing them."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import date
from typing import Any

from dashboards import model
from pipelines.warehouse.alert_read import alerts_of
from pipelines.warehouse.read import ReadConnection


def read_alerts(con: ReadConnection, account: str | None) -> list[dict[str, Any]]:
    """Every alert but those only seen at a rule's first evaluation (never sent)."""
    found = alerts_of(con, everything=True, account=account)
    return [a for a in found if a["state"] != "baseline"]


ANOMALY_VALUE = re.compile(r"(agent|campaign|channel) (.+) on (\d{4}-\d{2}-\d{2})")
COLUMNS = {"agent": "agent_id", "campaign": "campaign_id", "channel": "channel"}


def say_alerts(accounts: Sequence[model.Account], alerts: Sequence[dict[str, Any]]) -> None:
    """A notice (the pages' banner) on each account with alerts firing and not acknowledged,
    and the days of its spend anomalies, for the charts of the values that spiked."""
    for account in accounts:
        for alert in alerts:
            found = ANOMALY_VALUE.fullmatch(alert["dimension_value"] or "")
            if alert["account"] == account.name and alert["kind"] == "spend_anomaly" and found:
                key = (COLUMNS[found[1]], found[2])
                account.anomalies.setdefault(key, []).append(date.fromisoformat(found[3]))
        firing = [
            a
            for a in alerts
            if a["account"] == account.name and a["state"] == "firing" and not a["acknowledged"]
        ]
        if firing:
            what = "; ".join(
                f"{a['severity'].upper()} {a['rule']}: {a['evidence']}" for a in firing
            )
            account.notices.append(
                f"{len(firing)} alert{'s' if len(firing) > 1 else ''} firing for {account.name} "
                f"(see the Alerts page): {what}"
            )
