"""The small rules the pages rely on: exact money text, inert JSON, safe names, report months."""

from __future__ import annotations

import json
from datetime import date
from decimal import Decimal

import pytest

from dashboards import figures, paths, periods
from dashboards.money import (
    decimal_text,
    exact_money_text,
    figures_rounded,
    is_rounded,
    money_text,
    percent_text,
    rounding_difference,
    signed_money_text,
)


@pytest.mark.parametrize(
    ("value", "shown", "exact"),
    [
        ("1234.500000", "1,234.50", "1,234.50"),
        ("0.000125", "0.00", "0.000125"),
        ("-0.004", "0.00", "-0.004"),  # no negative zero on screen
        ("-0.005", "-0.01", "-0.005"),  # half away from zero, as a spreadsheet shows it
        ("37828.2485", "37,828.25", "37,828.2485"),
        ("-1234567.125000", "-1,234,567.13", "-1,234,567.125"),
        ("100", "100.00", "100.00"),
        ("-0.000000", "0.00", "0.00"),
        ("999999999999.999999", "1,000,000,000,000.00", "999,999,999,999.999999"),
    ],
)
def test_money_is_shown_to_the_cent_and_exact_on_demand(value: str, shown: str, exact: str) -> None:
    assert money_text(Decimal(value)) == shown
    assert exact_money_text(Decimal(value)) == exact
    assert Decimal(exact_money_text(Decimal(value)).replace(",", "")) == Decimal(value)
    assert is_rounded(Decimal(value)) is (Decimal(shown.replace(",", "")) != Decimal(value))


def test_the_rounding_line_makes_rounded_figures_add_up() -> None:
    parts = [Decimal("0.004"), Decimal("0.004"), Decimal("0.004")]
    total = sum(parts, Decimal(0))  # 0.012: shown 0.01, each part shown 0.00
    assert rounding_difference(parts) == Decimal("0.01")
    assert sum((Decimal(money_text(p)) for p in parts), Decimal("0.01")) == Decimal(
        money_text(total)
    )
    assert rounding_difference([Decimal("1.25"), Decimal("2.5")]) == 0


def test_figures_in_stored_sentences_are_shown_to_the_cent_but_times_are_not() -> None:
    text = "entry abc at 2026-01-20T01:05:00.086000Z, actual 500.000000, difference -12.345678"
    assert figures_rounded(text) == (
        "entry abc at 2026-01-20T01:05:00.086000Z, actual 500.00, difference -12.35"
    )


def test_decimal_text_is_plain_and_exact() -> None:
    assert decimal_text(Decimal("-12.500000")) == "-12.500000"
    assert decimal_text(Decimal("-0.000000")) == "0.000000"
    assert decimal_text(Decimal("1E+3")) == "1000"
    assert signed_money_text(Decimal("2.5")) == "+2.50"
    assert signed_money_text(Decimal("-0.001")) == "0.00"
    assert percent_text(Decimal(1), Decimal(3)) == "33.3%"
    assert percent_text(Decimal(1), Decimal(0)) == "—"


def test_figure_json_cannot_close_its_script_block() -> None:
    hostile = "</script><script>alert(1)</script>&<!--\u2028"
    payload = figures.safe_json({"name": hostile})
    assert "<" not in payload and ">" not in payload and "&" not in payload
    assert json.loads(payload) == {"name": hostile}
    block = figures.embed(hostile, [{"type": "bar", "name": figures.label(hostile)}])
    assert block.count("<script") == 1 and block.count("</script>") == 1


def test_plotly_labels_are_escaped_but_keep_quotes() -> None:
    assert figures.label('<b>"x"</b> & y') == '&lt;b&gt;"x"&lt;/b&gt; &amp; y'


def test_safe_names_never_collide_or_escape() -> None:
    names = {paths.safe_name(v) for v in ("a/b", "a-b", "A B", "a b", "../a b", "")}
    assert len(names) == 6
    assert all("/" not in n and not n.startswith(".") for n in names)
    href = paths.relative("accounts/x/agents/y.html", "assets/site.css")
    assert href == "../../../assets/site.css"


def test_report_month_is_the_latest_full_month() -> None:
    first = date(2026, 1, 10)
    assert periods.report_month(date(2026, 4, 15), first, None) == (date(2026, 3, 1), True)
    assert periods.report_month(date(2026, 4, 30), first, None) == (date(2026, 3, 1), True)
    assert periods.report_month(date(2026, 1, 20), first, None) == (date(2026, 1, 1), False)
    assert periods.report_month(date(2026, 4, 15), first, date(2026, 4, 2)) == (
        date(2026, 4, 1),
        False,
    )
    assert periods.months_between(date(2025, 11, 5), date(2026, 2, 1)) == [
        date(2025, 11, 1),
        date(2025, 12, 1),
        date(2026, 1, 1),
        date(2026, 2, 1),
    ]
