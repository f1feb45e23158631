"""What a closed statement is sent as: its exact CSV, a PDF to file, and the message's words.

Pure: every document is a function of the frozen statement alone (no clock, no warehouse), so a
statement re-sent a year later is the same bytes as the one first delivered. The CSV is the
site's statement CSV, written by the site's own function (dashboards/statement_csv.py), so a
spreadsheet that reads one reads the other; the PDF is in pdf_layout.py. Amounts are exact
everywhere (the words round nothing).
"""

from __future__ import annotations

import hashlib
import json
import shlex
from collections.abc import Sequence
from datetime import date
from decimal import Decimal

from dashboards.csv_files import Name, csv_text
from dashboards.model import STATEMENT_LINES, Statement
from dashboards.money import exact_money_text
from dashboards.paths import account_folder
from dashboards.paths import statement as site_statement_path
from dashboards.statement_csv import statement_csv as site_statement_csv
from pipelines.notify.message import id_line, item
from pipelines.runtime.visible_text import visible_text
from pipelines.statements.close import ClosedStatement, Restatement
from transforms.aggregate import MOVEMENT_COLUMNS, STATEMENT_MONEY_COLUMNS

CONSOLIDATED_COLUMNS = ("account", "month", "version", *STATEMENT_MONEY_COLUMNS, "entries")
TOTAL = "Total"
LINE_WORDS = dict(STATEMENT_LINES)


def entries(s: ClosedStatement) -> int:
    """The month's entries: those of its five movement lines (opening, hidden movements and
    closing count none)."""
    return sum(x.entries for x in s.lines if x.entry_type is None and x.name in MOVEMENT_COLUMNS)


def site_statement(s: ClosedStatement) -> Statement:
    """The close as the site's statement model, to be written by the site's own rules."""
    figures = {name: s.line(name) for name in STATEMENT_MONEY_COLUMNS}
    return Statement(month=s.month, entries=entries(s), **figures)


def filename(s: ClosedStatement, ext: str) -> str:
    """``statement-acme-2026-10-v1.pdf``: the account as the site names its folder (the name
    itself when it is a safe slug, else a slug and a hash), so no name escapes a folder."""
    return f"statement-{account_folder(s.account)}-{s.month:%Y-%m}-v{s.version}.{ext}"


def consolidated_filename(statements: Sequence[ClosedStatement], ext: str) -> str:
    """``statements-2026-10.csv``; ``statements-2026-09-to-2026-10.csv`` across months."""
    months = sorted({s.month for s in statements})
    if not months:
        return f"statements.{ext}"
    span = f"{months[0]:%Y-%m}" + (f"-to-{months[-1]:%Y-%m}" if len(months) > 1 else "")
    return f"statements-{span}.{ext}"


def statement_csv(s: ClosedStatement) -> bytes:
    """The site's statement CSV of the month, a closed month being complete."""
    return site_statement_csv(s.account, site_statement(s), complete=True).encode("utf-8")


def statement_pdf(s: ClosedStatement, restatement: Restatement | None = None) -> bytes:
    # Imported when a PDF is made: fpdf2 takes ~1 s to import, which every `creditlens sync`
    # paid through the Dagster definitions, though most syncs close no month.
    from pipelines.statements.pdf_layout import statement_document

    return statement_document(s, restatement)


def consolidated_rows(statements: Sequence[ClosedStatement]) -> list[tuple[object, ...]]:
    """One row per company and a totals row (account ``Total``, no month, no version)."""
    rows: list[tuple[object, ...]] = [
        (
            Name(s.account),
            f"{s.month:%Y-%m}",
            s.version,
            *(s.line(n) for n in STATEMENT_MONEY_COLUMNS),
            entries(s),
        )
        for s in statements
    ]
    totals = [sum((s.line(n) for s in statements), Decimal(0)) for n in STATEMENT_MONEY_COLUMNS]
    rows.append((TOTAL, None, None, *totals, sum(entries(s) for s in statements)))
    return rows


def consolidated_csv(statements: Sequence[ClosedStatement]) -> bytes:
    return csv_text(CONSOLIDATED_COLUMNS, consolidated_rows(statements)).encode("utf-8")


def consolidated_pdf(statements: Sequence[ClosedStatement]) -> bytes:
    from pipelines.statements.pdf_layout import consolidated_document  # see statement_pdf

    return consolidated_document(statements, consolidated_rows(statements))


def month_label(month: date) -> str:
    return f"{month:%B %Y}"


def line_label(name: str) -> str:
    """A line's words on the site; a dimension total's name (``agent agt_1``) as it is."""
    return LINE_WORDS.get(name, visible_text(name))


# Lines a message shows even at zero: the balances and the movements no entry explains.
ALWAYS_SHOWN = ("opening", "hidden_movements", "closing")


def _shown(figures: dict[str, Decimal]) -> list[tuple[str, Decimal]]:
    """The statement's lines a message gives: the opening, each movement line that is not zero,
    the hidden movements and the closing, in the statement's order, so they add up on its face
    (opening + the lines shown = closing: the lines left out are zero)."""
    return [
        (name, figures[name])
        for name in STATEMENT_MONEY_COLUMNS
        if name in ALWAYS_SHOWN or figures[name] != 0
    ]


def _items(figures: dict[str, Decimal]) -> str:
    """One Markdown list item per figure: a chat service and e-mail both show them as lines."""
    return "\n".join(
        item(line_label(name), exact_money_text(amount)) for name, amount in _shown(figures)
    )


def summary_lines(s: ClosedStatement) -> str:
    return _items({name: s.line(name) for name in STATEMENT_MONEY_COLUMNS})


def event_id(s: ClosedStatement) -> str:
    """The message's stable id: one per account, month and version, whatever re-sends it."""
    return f"statement/{s.account}/{s.month:%Y-%m}/v{s.version}"


def where_files_are(s: ClosedStatement) -> str:
    """For a channel that cannot carry files: what they are called and how to get them."""
    return (
        f"Files: {filename(s, 'csv')} and {filename(s, 'pdf')} (attached where the channel "
        f"takes files; else the report site's {site_statement_path(s.account, s.month, 'csv')}, "
        f"and `creditlens close --month {s.month:%Y-%m} --account "
        f"{shlex.quote(visible_text(s.account))}` "
        "re-sends them)."
    )


def _restated(r: Restatement) -> str:
    """The changed lines, was, now and difference, and the summary as it now stands, in the
    layout of a close: one list item per figure."""
    s = r.current
    changes = "\n".join(
        item(
            line_label(c.name),
            f"was {exact_money_text(c.was)}, now {exact_money_text(c.now)}, "
            f"difference {exact_money_text(c.difference)} ({c.why})",
        )
        for c in r.changes
    )
    return (
        f"**Statement of {visible_text(s.account)}, {month_label(s.month)} restated on "
        f"{s.closed_at:%Y-%m-%d} (version {r.previous.version} -> {s.version}):**\n\n"
        f"{changes}\n\nNow:\n\n{summary_lines(s)}"
    )


def message(s: ClosedStatement, restatement: Restatement | None = None) -> tuple[str, str]:
    """The title and text of a close or, with ``restatement``, of a restatement."""
    who = f"{visible_text(s.account)}, {month_label(s.month)}"
    if restatement is None:
        title = f"creditlens statement: {who}"
        head = f"**Statement of {who} closed (version {s.version}):**\n\n{summary_lines(s)}"
    else:
        title = f"creditlens statement restated: {who} (version {s.version})"
        head = _restated(restatement)
    tail = f"Data as of {s.data_as_of:%Y-%m-%d %H:%M} UTC; content hash {s.content_hash}."
    # A figure a line: an email or a chat message is read, not parsed.
    parts = (head, tail, where_files_are(s), id_line("statement", event_id(s)))
    return title, "\n\n".join(parts)


def digest_id(statements: Sequence[ClosedStatement], restatements: Sequence[Restatement]) -> str:
    """One id per set of documents: every account, month and version it covers."""
    issued = [*statements, *(r.current for r in restatements)]
    months = sorted({f"{s.month:%Y-%m}" for s in issued})
    versions = sorted([s.account, f"{s.month:%Y-%m}", s.version] for s in issued)
    return f"statements/digest/{'+'.join(months)}/{_short_hash(json.dumps(versions))}"


def _short_hash(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=6).hexdigest()


def consolidated_of(
    statements: Sequence[ClosedStatement], restated: Sequence[ClosedStatement]
) -> list[ClosedStatement]:
    """What a digest's consolidated statement covers: the closes, else (a digest of
    restatements only) the restated versions."""
    return list(statements or restated)


def digest_message(
    statements: Sequence[ClosedStatement], restatements: Sequence[Restatement]
) -> tuple[str, str]:
    """One message for every company: each close's summary, each restatement's changes, the
    totals of the closes, and the consolidated files' names."""
    months = sorted({s.month for s in [*statements, *(r.current for r in restatements)]})
    span = ", ".join(month_label(m) for m in months)
    title = (
        f"creditlens statements: {span} ({len(statements)} closed, {len(restatements)} restated)"
    )
    parts = [
        f"**{visible_text(s.account)} ({month_label(s.month)}):**\n\n{summary_lines(s)}"
        for s in statements
    ]
    parts.extend(_restated(r) for r in restatements)
    covered = consolidated_of(statements, [r.current for r in restatements])
    if covered:
        totals = {
            name: sum((s.line(name) for s in covered), Decimal(0))
            for name in STATEMENT_MONEY_COLUMNS
        }
        parts.append(f"**Total of the {len(covered)} statements:**\n\n{_items(totals)}")
        parts.append(
            f"Files: {consolidated_filename(covered, 'csv')} and "
            f"{consolidated_filename(covered, 'pdf')} (one line per company), with each "
            "company's statement, attached where the channel takes files."
        )
    parts.append(id_line("statement", digest_id(statements, restatements)))
    return title, "\n\n".join(parts)
