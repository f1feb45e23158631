"""A month's statement as one CSV row of exact figures: the site's download, and the file month
close attaches to a closed statement (pipelines/statements/documents.py), written by this one
function so a spreadsheet that reads one reads the other."""

from __future__ import annotations

from dashboards.csv_files import Name, csv_text
from dashboards.model import STATEMENT_LINES, Statement
from transforms.aggregate import STATEMENT_MONEY_COLUMNS

CSV_COLUMNS = ("account", "month", *STATEMENT_MONEY_COLUMNS, "entries", "complete_month")


def statement_csv(account: str, statement: Statement, complete: bool) -> str:
    """One row with the page's figures as exact decimal text (never through float)."""
    row = (
        Name(account),
        f"{statement.month:%Y-%m}",
        *[statement.figure(name) for name, _ in STATEMENT_LINES],
        statement.entries,
        complete,
    )
    return csv_text(CSV_COLUMNS, [row])
