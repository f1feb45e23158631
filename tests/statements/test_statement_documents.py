"""A closed statement's documents: the PDF read back holds every line's words and exact amount
(over as many pages as it takes), the CSV is the site's and ties out, the consolidated totals
are the companies' sums, and the same statement renders the same bytes whenever it is asked."""

from __future__ import annotations

import csv
import dataclasses
import io
import re
import time
from decimal import Decimal
from zoneinfo import ZoneInfo

import pypdf

from dashboards.model import STATEMENT_LINES
from dashboards.money import exact_money_text
from dashboards.statement_csv import CSV_COLUMNS
from pipelines.statements import documents as docs
from tests.statements.samples import D, restatement, statement
from transforms.aggregate import STATEMENT_MONEY_COLUMNS, STATEMENT_MOVEMENTS


def pdf_text(content: bytes) -> tuple[str, int]:
    """The PDF's text, whitespace folded (a wrapped label reads as one line), and its pages."""
    reader = pypdf.PdfReader(io.BytesIO(content))
    text = " ".join(page.extract_text() for page in reader.pages)
    return " ".join(text.split()), len(reader.pages)


def read_csv(content: bytes) -> list[dict[str, str]]:
    assert content.startswith(b"\xef\xbb\xbf") and b"\r\n" in content
    return list(csv.DictReader(io.StringIO(content.decode("utf-8-sig"), newline="")))


def test_the_pdf_holds_every_line_with_its_words_and_exact_amount_over_many_pages() -> None:
    s = statement(agents=150)  # the agents' table alone runs over several pages
    text, pages = pdf_text(docs.statement_pdf(s))
    assert pages >= 3
    assert "Account: acme" in text and "Statement of October 2026" in text
    assert "Version 1: closed on 2026-11-03" in text
    assert f"Content hash: {s.content_hash}" in text
    assert "Data as of 2026-11-03 05:00:00 UTC" in text
    for name, words in STATEMENT_LINES:
        assert f"{words} {exact_money_text(s.line(name))}" in text, name
    assert exact_money_text(s.line("debits")) == "-1,250.125001"  # exact, not to the cent
    for line in s.lines:
        if line.entry_type is not None:
            found = f"{line.entry_type} {line.entries} {exact_money_text(line.amount)}"
            assert found in text, found
    for total in s.totals:  # every row of every table, none cut at a page's end
        value = total.value if total.value is not None else "(none)"
        assert f"{value} {total.entries} {exact_money_text(total.amount)}" in text, value
    assert re.search(r"page 1/\d+", text)


def test_a_restated_pdf_says_when_and_what_changed() -> None:
    r = restatement()
    text, _ = pdf_text(docs.statement_pdf(r.current, r))
    assert "Version 2: restated on 2026-11-04 (was version 1)" in text
    assert "Restated: what changed" in text
    for change in r.changes:
        words = dict(STATEMENT_LINES)[change.name]
        expected = " ".join(
            exact_money_text(v) for v in (change.was, change.now, change.difference)
        )
        assert f"{words} {expected} {change.why}" in text
    assert exact_money_text(r.changes[0].difference) == "-7.50"


def test_the_csv_is_the_sites_and_ties_out_exactly() -> None:
    s = statement()
    (row,) = read_csv(docs.statement_csv(s))
    assert tuple(row) == CSV_COLUMNS
    assert row["account"] == "acme" and row["month"] == "2026-10"
    assert row["complete_month"] == "true" and row["entries"] == "44"
    figures = {n: Decimal(row[n]) for n in STATEMENT_MONEY_COLUMNS}
    assert figures == {n: s.line(n) for n in STATEMENT_MONEY_COLUMNS}
    walked = figures["opening"] + sum(figures[m] for m in STATEMENT_MOVEMENTS)
    assert walked == figures["closing"]
    assert row["debits"] == "-1250.125001"


def test_consolidated_totals_are_the_sum_of_the_companies() -> None:
    companies = [statement("acme"), statement("beta", usage=D("-20.000003")), statement("=cmd")]
    rows = read_csv(docs.consolidated_csv(companies))
    assert [r["account"] for r in rows] == ["acme", "beta", "'=cmd", "Total"]
    total = rows[-1]
    assert total["month"] == "" and total["version"] == ""
    for name in STATEMENT_MONEY_COLUMNS:
        assert Decimal(total[name]) == sum(Decimal(r[name]) for r in rows[:-1]), name
    for r in rows:  # every line, the totals' too, ties out
        walked = Decimal(r["opening"]) + sum(Decimal(r[m]) for m in STATEMENT_MOVEMENTS)
        assert walked == Decimal(r["closing"])
    text, _ = pdf_text(docs.consolidated_pdf(companies))
    closing = sum((c.line("closing") for c in companies), Decimal(0))
    assert f"Total {exact_money_text(sum((c.line('opening') for c in companies), D(0)))}" in text
    assert exact_money_text(closing) in text
    for c in companies:
        assert f"{c.account} 2026-10 1 {exact_money_text(c.line('opening'))}" in text


def test_the_same_statement_renders_the_same_bytes() -> None:
    r = restatement()
    first = (docs.statement_pdf(r.current, r), docs.consolidated_pdf([r.current]))
    time.sleep(1.1)  # a PDF stamped with the clock would differ by now
    assert (docs.statement_pdf(r.current, r), docs.consolidated_pdf([r.current])) == first
    assert docs.statement_csv(r.current) == docs.statement_csv(r.current)


def test_file_names_never_carry_a_path_and_names_beyond_latin_1_are_kept() -> None:
    s = statement("../Acme Corp/日本", month=statement().month)
    for ext in ("csv", "pdf"):
        name = docs.filename(s, ext)
        assert "/" not in name and "\\" not in name and ".." not in name
        assert name.startswith("statement-") and name.endswith(f"-2026-10-v1.{ext}")
    assert docs.filename(statement(), "pdf") == "statement-acme-2026-10-v1.pdf"
    assert docs.consolidated_filename([statement()], "csv") == "statements-2026-10.csv"
    text, _ = pdf_text(docs.statement_pdf(s))
    assert "Account: ../Acme Corp/\\u65e5\\u672c" in text


def _figures(body: str) -> dict[str, Decimal]:
    """The message's figure lines, ``- label: amount``, by label."""
    found = re.findall(r"^- (.+?): (-?[\d,]+(?:\.\d+)?)$", body, re.M)
    return {label: Decimal(amount.replace(",", "")) for label, amount in found}


def test_a_statement_message_adds_up_on_its_face() -> None:
    """Every line that is not zero (refunds, adjustments, other included), one per line: the
    opening and the lines shown make the closing, as a reader checks it with a pencil."""
    s = statement()
    _, body = docs.message(s)
    figures = _figures(body)
    assert list(figures) == [
        "Opening balance", "Debits (usage)", "Credits (grants, top-ups)", "Refunds",
        "Other movements", "Hidden movements (not explained by any entry)", "Closing balance",
    ]  # adjustments are 0 this month: left out, the sum still holds  # fmt: skip
    movements = sum(v for k, v in figures.items() if k not in ("Opening balance",
                                                              "Closing balance"))  # fmt: skip
    assert figures["Opening balance"] + movements == figures["Closing balance"]


def test_the_messages_give_the_summary_the_changes_and_where_the_files_are() -> None:
    s = statement()
    title, body = docs.message(s)
    assert title == "creditlens statement: acme, October 2026"
    for name in ("opening", "debits", "credits", "refunds", "hidden_movements", "closing"):
        words = docs.line_label(name)
        assert f"\n- {words}: {exact_money_text(s.line(name))}\n" in body  # a figure a line
    assert "statement-acme-2026-10-v1.csv" in body and "statement-acme-2026-10-v1.pdf" in body
    assert "[creditlens statement statement/acme/2026-10/v1]" in body
    r = restatement()
    title, body = docs.message(r.current, r)
    assert "restated" in title and "(version 2)" in title
    assert (
        "- Debits (usage): was -1,250.125001, now -1,257.625001, difference -7.50 (late entries)"
        in body
    )
    title, body = docs.digest_message([statement("acme"), statement("beta")], [r])
    assert "2 closed, 1 restated" in title
    assert "**acme (October 2026):**\n\n- Opening balance" in body and "beta (October 2026)" in body
    assert "statements-2026-10.csv" in body and "restated on 2026-11-04" in body
    total = exact_money_text(statement("acme").line("closing") * 2)
    assert f"- Closing balance: {total}" in body
    assert "\n\n" in body and body.count("\n") > 20  # lines, never one run-on paragraph


def test_the_pdf_does_not_depend_on_how_the_close_time_is_spelt() -> None:
    """The warehouse hands a stored close's time back with another UTC than datetime's."""
    s = statement()
    stored = dataclasses.replace(s, closed_at=s.closed_at.replace(tzinfo=ZoneInfo("UTC")))
    assert docs.statement_pdf(stored) == docs.statement_pdf(s)
    assert docs.consolidated_pdf([stored]) == docs.consolidated_pdf([s])
