"""The small rules the pages rely on: exact money text, inert JSON, safe names, report months."""

from __future__ import annotations

import json
from datetime import date
from decimal import Decimal

import pytest

from dashboards import figures, paths, periods
from dashboards.money import decimal_text, money_text, percent_text, signed_money_text


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("1234.500000", "1,234.50"),
        ("0.000125", "0.000125"),
        ("-1234567.125000", "-1,234,567.125"),
        ("100", "100.00"),
        ("-0.000000", "0.00"),
        ("999999999999.999999", "999,999,999,999.999999"),
    ],
)
def test_money_text_keeps_every_digit(value: str, shown: str) -> None:
    assert money_text(Decimal(value)) == shown
    assert Decimal(money_text(Decimal(value)).replace(",", "")) == Decimal(value)


def test_decimal_text_is_plain_and_exact() -> None:
    assert decimal_text(Decimal("-12.500000")) == "-12.500000"
    assert decimal_text(Decimal("-0.000000")) == "0.000000"
    assert decimal_text(Decimal("1E+3")) == "1000"
    assert signed_money_text(Decimal("2.5")) == "+2.50"
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
