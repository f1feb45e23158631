"""The PDF finance files: a statement (or the consolidated one) laid out with fpdf2, pure Python.

Deterministic, so a re-sent statement is the same file: the document's creation date is the
close's own time, never the clock. Tables flow onto as many pages as they need, their header
repeated, a row never cut. Amounts are exact text (every significant digit); names are shown as
the site shows them (controls escaped, an absurdly long id cut with its hash; the CSV holds it
whole). The PDF's built-in fonts know Latin-1 only: any other character is written as its
``\\uXXXX`` escape rather than dropped, so no name is silently altered.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from fpdf import FPDF
from fpdf.fonts import FontFace

from dashboards.display_text import display_text
from dashboards.model import STATEMENT_LINES
from dashboards.money import exact_money_text
from pipelines.runtime.visible_text import visible_text
from pipelines.statements.close import ClosedStatement, Restatement
from transforms.aggregate import STATEMENT_MONEY_COLUMNS

FONT = "Helvetica"
HEADINGS = FontFace(emphasis="BOLD", fill_color=(225, 229, 236))
LINE_WORDS = dict(STATEMENT_LINES)
DIMENSION_TITLES = (("agent", "By agent"), ("campaign", "By campaign"), ("channel", "By channel"))
NO_VALUE = "(none)"
# The consolidated table's money columns, as short as a landscape page needs them.
SHORT_WORDS = {
    "opening": "Opening",
    "debits": "Usage",
    "credits": "Credits",
    "refunds": "Refunds",
    "adjustments": "Adjust- ments",
    "other": "Other",
    "hidden_movements": "Hidden",
    "closing": "Closing",
}


def latin(text: str) -> str:
    """Text the built-in fonts can write: controls escaped as the site escapes them, then any
    character beyond Latin-1 as its escape."""
    return "".join(c if ord(c) < 256 else f"\\u{ord(c):04x}" for c in visible_text(text))


def name(value: str) -> str:
    """A name or id from the API in a cell: as a cell of the site shows it (cut with its hash
    beyond 80 characters; the CSV holds it whole)."""
    return latin(display_text(value).replace("\u2026", "..."))


def money(value: object) -> str:
    return exact_money_text(value) if value is not None else ""  # type: ignore[arg-type]


class _Document(FPDF):
    def __init__(self, title: str, moment: datetime, landscape: bool = False) -> None:
        super().__init__(orientation="L" if landscape else "P", unit="mm", format="A4")
        self.heading = name(title)
        # One spelling of the instant, whichever tzinfo the warehouse handed back (fpdf2 writes
        # a pytz UTC and datetime.UTC differently).
        self.set_creation_date(moment.astimezone(UTC).replace(microsecond=0))
        self.set_title(self.heading)
        self.set_author("creditlens")
        self.set_auto_page_break(True, margin=15)
        self.add_page()

    def footer(self) -> None:
        self.set_y(-12)
        self.set_font(FONT, size=8)
        self.cell(0, 5, f"{self.heading} - page {self.page_no()}/{{nb}}", align="C")

    def title_line(self, text: str) -> None:
        self.set_font(FONT, "B", 15)
        self.multi_cell(0, 8, text, new_x="LMARGIN", new_y="NEXT")
        self.ln(1)

    def text_line(self, text: str, bold: bool = False) -> None:
        self.set_font(FONT, "B" if bold else "", 10)
        self.multi_cell(0, 5.5, text, new_x="LMARGIN", new_y="NEXT")

    def grid(
        self,
        title: str,
        header: Sequence[str],
        rows: Sequence[Sequence[str]],
        widths: Sequence[float],
        numeric: Sequence[bool],
        size: float = 9,
    ) -> None:
        self.ln(3)
        self.text_line(title, bold=True)
        self.set_font(FONT, size=size)
        align = tuple("RIGHT" if n else "LEFT" for n in numeric)
        with self.table(
            col_widths=tuple(widths),
            text_align=align,
            headings_style=HEADINGS,
            line_height=size * 0.5,
            repeat_headings=1,
        ) as table:
            for row in [header, *rows]:
                cells = table.row()
                for value in row:
                    cells.cell(value)


def statement_document(s: ClosedStatement, restatement: Restatement | None = None) -> bytes:
    month = f"{s.month:%B %Y}"
    pdf = _Document(f"Statement {month}: {s.account} (version {s.version})", s.closed_at)
    pdf.title_line(f"Statement of {month}")
    pdf.text_line(f"Account: {name(s.account)}")
    if restatement is None and s.version == 1:
        pdf.text_line(f"Version 1: closed on {s.closed_at:%Y-%m-%d}")
    else:
        was = f" (was version {restatement.previous.version})" if restatement else ""
        pdf.text_line(f"Version {s.version}: restated on {s.closed_at:%Y-%m-%d}{was}")
    pdf.text_line(f"Data as of {s.data_as_of:%Y-%m-%d %H:%M:%S} UTC. Amounts in credits, exact.")
    summary = [[LINE_WORDS[n], money(s.line(n))] for n in STATEMENT_MONEY_COLUMNS]
    pdf.grid("Statement", ["Line", "Amount"], summary, (3, 1), (False, True))
    if restatement is not None:
        changes = [
            [
                name(LINE_WORDS.get(c.name, c.name)),
                *(money(v) for v in (c.was, c.now, c.difference)),
                latin(c.why),
            ]
            for c in restatement.changes
        ]
        pdf.grid(
            "Restated: what changed",
            ["Line", "Was", "Now", "Difference", "Why"],
            changes,
            (3, 2, 2, 2, 3),
            (False, True, True, True, False),
        )
    by_type = [["Opening balance", "", "", money(s.line("opening"))]]
    by_type += [
        [LINE_WORDS.get(x.name, x.name), x.entry_type, str(x.entries), money(x.amount)]
        for x in s.lines
        if x.entry_type is not None
    ]
    by_type.append(
        [LINE_WORDS["hidden_movements"], "(no entry)", "", money(s.line("hidden_movements"))]
    )
    by_type.append([LINE_WORDS["closing"], "", "", money(s.line("closing"))])
    pdf.grid(
        "By entry type",
        ["Line", "Entry type", "Entries", "Amount"],
        [[name(c) for c in row[:2]] + row[2:] for row in by_type],
        (3, 3, 1.2, 2),
        (False, False, True, True),
    )
    for dimension, title in DIMENSION_TITLES:
        rows = [
            [name(t.value) if t.value is not None else NO_VALUE, str(t.entries), money(t.amount)]
            for t in s.totals
            if t.dimension == dimension
        ]
        if rows:
            pdf.grid(
                title,
                [title[3:].capitalize(), "Entries", "Amount"],
                rows,
                (4, 1, 2),
                (False, True, True),
            )
    pdf.ln(4)
    pdf.set_font(FONT, size=8)
    pdf.multi_cell(0, 4, f"Content hash: {s.content_hash}", new_x="LMARGIN", new_y="NEXT")
    return bytes(pdf.output())


def consolidated_document(
    statements: Sequence[ClosedStatement], rows: Sequence[Sequence[object]]
) -> bytes:
    """One line per company and the totals, from ``documents.consolidated_rows``."""
    months = sorted({s.month for s in statements})
    span = " - ".join(f"{m:%B %Y}" for m in (months[:1] + months[1:][-1:]))
    latest = max((s.closed_at for s in statements), default=datetime(2000, 1, 1, tzinfo=UTC))
    pdf = _Document(f"Statements {span}", latest, landscape=True)
    pdf.title_line(f"Statements of {span}: {len(statements)} accounts")
    pdf.text_line(
        "One line per company; amounts in credits, exact. Each line ties out: opening + "
        "movements = closing."
    )
    table = [
        [
            name(str(r[0])),
            str(r[1] or ""),
            str(r[2] or ""),
            *(money(v) for v in r[3:-1]),
            str(r[-1]),
        ]
        for r in rows
    ]
    header = [
        "Account",
        "Month",
        "Ver.",
        *(SHORT_WORDS[n] for n in STATEMENT_MONEY_COLUMNS),
        "Entries",
    ]
    widths = (4, 1.6, 0.8, *([2.6] * len(STATEMENT_MONEY_COLUMNS)), 1.4)
    numeric = (False, False, True, *([True] * len(STATEMENT_MONEY_COLUMNS)), True)
    pdf.grid("Statements", header, table, widths, numeric, size=7.5)
    return bytes(pdf.output())
