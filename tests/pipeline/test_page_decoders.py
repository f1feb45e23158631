"""The fast page decoder and the generic one mean the same thing, for any page.

Nearly every page takes the fast path (msgspec, typed, amounts as raw JSON text); anything odd
falls back to stdlib json. If the two ever disagreed, which entries land, which are quarantined
and why, or what drift detection compares, would depend on which path a page happened to take.
"""

from __future__ import annotations

import json
from datetime import date

import polars as pl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from pipelines.api.ledger_page import parse_ledger_page
from pipelines.api.wire import validate_columns

DAY = date(2025, 3, 1)

_plain_money = st.decimals(
    min_value=-(10**11) + 1, max_value=10**11 - 1, places=6, allow_nan=False
).map(lambda d: str(d.normalize()) if d == d.to_integral() else str(d))
_odd_money = st.sampled_from(
    ["1e-3", "-0.0", "12.5000000", "1.0000001", "123456789012.5", "1E+2", "0.1234567", "-7"]
)
_money = st.one_of(_plain_money, _odd_money).map(lambda t: ("raw", t))
_wrong = st.one_of(
    st.just(("raw", "null")),
    st.just(("raw", "true")),
    st.just(("raw", "[1]")),
    st.just(("raw", '{"a": 1}')),
    st.sampled_from(["12.5", "abc", ""]).map(lambda t: ("str", t)),
)
_text = st.one_of(
    st.none().map(lambda _: ("raw", "null")),
    st.text(max_size=12).map(lambda t: ("str", t)),
    st.just(("raw", '"\\ud800 lone"')),
)
_created = st.one_of(
    st.sampled_from(
        [
            "2025-03-01T00:00:00Z",
            "2025-03-01T23:59:59.999Z",
            "2025-03-01T10:00:00+02:00",
            "2025-03-01T10:00:00",
            "2025-03-02T00:00:00Z",
            "2025-03-01",
            "yesterday",
        ]
    ).map(lambda t: ("str", t)),
    st.just(("raw", "5")),
)


@st.composite
def _entry(draw: st.DrawFn) -> str:
    fields: dict[str, tuple[str, str]] = {
        "createdAt": draw(_created),
        "type": draw(
            st.one_of(st.sampled_from(["Usage", "TopUp", " ", ""]), st.text(max_size=5)).map(
                lambda t: ("str", t)
            )
            | st.just(("raw", "3"))
        ),
        "amount": draw(st.one_of(_money, _money, _wrong)),
        "balanceAfter": draw(st.one_of(_money, _money, _wrong)),
        "description": draw(_text),
        "hasDescription": draw(st.sampled_from([("raw", "true"), ("raw", "null"), ("raw", "1")])),
        "channel": draw(_text),
        "agentId": draw(_text),
        "campaignId": draw(_text),
    }
    if draw(st.booleans()):
        fields["costCenter"] = ("raw", draw(st.sampled_from(['{"rate": 0.10}', "7", '"x"'])))
    names = draw(st.permutations(list(fields)))
    dropped = draw(st.sets(st.sampled_from(names), max_size=2)) if draw(st.booleans()) else set()
    parts = []
    for name in names:
        if name in dropped:
            continue
        kind, value = fields[name]
        parts.append(f"{json.dumps(name)}: {value if kind == 'raw' else json.dumps(value)}")
    return "{" + ", ".join(parts) + "}"


@st.composite
def _page(draw: st.DrawFn) -> bytes:
    plain = (
        '{"createdAt": "2025-03-01T01:00:00Z", "type": "Usage", "amount": -1.5, "balanceAfter": 10}'
    )
    entries = draw(st.lists(st.one_of(_entry(), st.just(plain)), min_size=1, max_size=6))
    total = len(entries)
    return (
        f'{{"data": [{", ".join(entries)}], "total": {total}, "pageNumber": 1, "pageSize": 100}}'
    ).encode()


def _meaning(body: bytes, fast: bool) -> tuple[pl.DataFrame, dict[int, str], list, list]:
    page = parse_ledger_page(body, "test", fast=fast)
    columns, known = page.columns()
    frame, reasons = validate_columns(columns, known, DAY, DAY)
    raws = [page.raw(i) for i in sorted(reasons)]
    return frame, reasons, raws, page.keys


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_page())
def test_fast_and_generic_decoders_agree_on_any_page(body: bytes) -> None:
    fast_frame, fast_reasons, fast_raws, fast_keys = _meaning(body, fast=True)
    slow_frame, slow_reasons, slow_raws, slow_keys = _meaning(body, fast=False)
    assert_frame_equal(fast_frame, slow_frame)
    assert fast_reasons == slow_reasons
    assert fast_raws == slow_raws
    assert fast_keys == slow_keys


def test_a_plain_page_takes_the_fast_path_and_an_odd_one_does_not() -> None:
    entry = '{"createdAt": "2025-03-01T01:00:00Z", "type": "Usage", "amount": -1.5, "balanceAfter": 12345678901.123457}'  # noqa: E501
    plain = f'{{"data": [{entry}], "total": 1, "pageNumber": 1, "pageSize": 100}}'.encode()
    page = parse_ledger_page(plain, "test")
    assert page._columns is not None and page._rows is None
    columns, _ = page.columns()
    assert columns.money["balance_after"] == ["12345678901.123457"]  # the exact text, no float
    odd = plain.replace(b"-1.5", b'"-1.5"')
    assert parse_ledger_page(odd, "test")._columns is None
