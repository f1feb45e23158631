"""Column-wise validation of wire entries: exact money, a reason for every reject, nothing lost."""

from datetime import date
from decimal import Decimal

import polars as pl
from hypothesis import given
from hypothesis import strategies as st

from pipelines.api.json_text import dumps_exact
from pipelines.api.ledger_page import parse_ledger_page
from pipelines.api.wire import MONEY, entries_frame, exact_money
from pipelines.warehouse import table
from transforms import micros
from transforms.identify import with_fingerprint

DAY = date(2025, 1, 1)


def entry(**over: object) -> str:
    base = {
        "createdAt": '"2025-01-01T10:00:00.123Z"',
        "type": '"Usage"',
        "amount": "-1.25",
        "description": '"Phone call"',
        "hasDescription": "true",
        "channel": '"Phone"',
        "agentId": '"agt_1"',
        "campaignId": '"cmp_1"',
        "balanceAfter": "100.5",
    }
    base.update({k: str(v) for k, v in over.items()})
    return "{" + ",".join(f'"{k}":{v}' for k, v in base.items() if v != "OMIT") + "}"


def page(*entries: str) -> list:
    body = f'{{"data":[{",".join(entries)}],"total":{len(entries)},"pageNumber":1,"pageSize":100}}'
    return parse_ledger_page(body.encode(), "test").data


def test_money_is_exact_beyond_float_precision() -> None:
    frame, rejects = entries_frame(page(entry(balanceAfter="99999999999.999999")), DAY, DAY)
    assert not rejects
    assert frame["balance_after"][0] == Decimal("99999999999.999999")


def test_every_reject_has_a_reason_and_nothing_is_lost() -> None:
    rows = page(
        entry(),
        entry(amount='"NaN"'),
        entry(amount="1.1234567"),
        entry(balanceAfter="1e13"),
        entry(createdAt='"2024-12-31T23:59:59Z"'),
        entry(createdAt='"yesterday"'),
        entry(type="5"),
        entry(hasDescription='"yes"'),
        entry(channel="OMIT", agentId="null"),
        "[1, 2]",
    )
    frame, rejects = entries_frame(rows, DAY, DAY)
    assert frame.height + len(rejects) == len(rows)
    reasons = {r.position: r.reason for r in rejects}
    assert set(reasons) == {1, 2, 3, 4, 5, 6, 7, 9}
    assert "amount 'NaN'" in reasons[1]
    assert "6 decimal places" in reasons[2]
    assert "outside the requested window" in reasons[4]
    assert "type is a number" in reasons[6]
    assert "hasDescription" in reasons[7]
    assert "expected an object" in reasons[9]
    assert frame["position"].to_list() == [0, 8]


def test_extra_fields_are_kept_with_exact_numbers() -> None:
    frame, _ = entries_frame(page(entry(costCenter='{"rate": 0.10}')), DAY, DAY)
    assert frame["extra"][0] == '{"costCenter": {"rate": 0.10}}'


def test_raw_json_of_a_reject_keeps_numbers_as_sent() -> None:
    rows = page(entry(amount="1.1234567"))
    _, rejects = entries_frame(rows, DAY, DAY)
    assert '"amount": 1.1234567' in dumps_exact(rejects[0].raw)


def test_naive_timestamps_are_read_as_utc() -> None:
    frame, _ = entries_frame(page(entry(createdAt='"2025-01-01T10:00:00"')), DAY, DAY)
    assert str(frame["created_at"][0]) == "2025-01-01 10:00:00+00:00"


def test_identical_entries_share_a_fingerprint_that_reruns_reproduce() -> None:
    rows = page(entry(amount="0", balanceAfter="5"), entry(amount="0", balanceAfter="5"), entry())

    def fingerprints() -> list[str]:
        frame, _ = entries_frame(rows, DAY, DAY)
        framed = frame.with_columns(pl.lit("acme").alias("account"))
        return with_fingerprint(framed)["fingerprint"].to_list()

    first = fingerprints()
    assert first[0] == first[1] != first[2]  # the warehouse numbers the twins -1 and -2
    assert fingerprints() == first


@given(
    st.decimals(
        allow_nan=False,
        allow_infinity=False,
        places=6,
        max_value=10**11 - 1,
        min_value=-(10**11) + 1,
    )
)
def test_exact_money_accepts_every_decimal_18_6(value: Decimal) -> None:
    text = f"{value:f}"
    assert Decimal(exact_money(text)) == value


def test_money_is_one_type_in_every_room() -> None:
    """Validation, reconciliation and the warehouse each name DECIMAL(18,6); the import
    contracts keep the API layer and the transforms apart, so this holds them together."""
    assert MONEY == micros.MONEY
    assert f"DECIMAL({MONEY.precision},{MONEY.scale})" == table.MONEY
