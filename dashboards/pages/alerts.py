"""The alerts page: every alert of every account, open, recovered or acknowledged, where and when
its messages were delivered (docs/alerts.md)."""

from __future__ import annotations

from typing import Any

from dashboards import paths
from dashboards.markup import Html, para, section
from dashboards.model import ReportData
from dashboards.pages.common import SITE_CRUMBS, Downloads, File, page_file, when
from dashboards.tables import Cell, Column, dash_cell, text_cell

ALERTS = "alerts.html"
TITLE = "Alerts"


def _state(alert: dict[str, Any]) -> str:
    if alert["acknowledged"]:
        return f"acknowledged ({alert['ack_reason']})"
    return "open" if alert["state"] == "firing" else str(alert["state"])


def _row(alert: dict[str, Any]) -> list[Cell]:
    delivered = alert["delivered"] or ("waiting in the outbox" if alert["pending"] else None)
    return [
        text_cell(alert["account"]),
        text_cell(alert["rule"]),
        text_cell(alert["kind"]),
        text_cell(alert["severity"].upper()),
        text_cell(alert["dimension_value"]) if alert["dimension_value"] else dash_cell(),
        text_cell(_state(alert)),
        text_cell(when(alert["since"])),
        text_cell(when(alert["changed_at"])),
        text_cell(delivered) if delivered else dash_cell(),
        text_cell(alert["evidence"]),
        text_cell(alert["alert_id"]),
    ]


def alerts_file(data: ReportData) -> list[File]:
    """The page, when the warehouse has alerts."""
    if not data.alerts:
        return []
    downloads = Downloads(ALERTS)
    open_alerts = [a for a in data.alerts if a["state"] == "firing" and not a["acknowledged"]]
    body: list[Html] = [
        para(f"{len(open_alerts)} open, {len(data.alerts)} in all.", "warn" if open_alerts else ""),
        section(
            "Every alert",
            downloads.table(
                "alerts.csv",
                "Alerts, open first",
                [
                    Column("Account"),
                    Column("Rule"),
                    Column("Kind"),
                    Column("Severity"),
                    Column("Value"),
                    Column("State"),
                    Column("Since"),
                    Column("Changed"),
                    Column("Delivered"),
                    Column("Evidence", breakable=True),
                    Column("Id"),
                ],
                [_row(a) for a in sorted(data.alerts, key=lambda a: a not in open_alerts)],
            ),
        ),
        para("Acknowledge one with `creditlens alerts ack ID --reason TEXT`; see docs/alerts.md."),
    ]
    page = page_file(ALERTS, TITLE, body, account=None, crumbs=SITE_CRUMBS, sortable=True)
    return [page, *downloads.files]


__all__ = ["ALERTS", "alerts_file", "paths"]
