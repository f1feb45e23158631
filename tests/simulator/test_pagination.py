"""Pages cover exactly the inclusive window, in the served order, under both range formats."""

from __future__ import annotations

from datetime import date, timedelta
from decimal import Decimal
from typing import Any

import pytest

from tests.simulator.conftest import LEDGER, Served, Start, decimal_json


def wire(entry: dict[str, Any]) -> dict[str, Any]:
    """A truth entry as it looks on the wire (signed scenario, no drift)."""
    out = {k: v for k, v in entry.items() if k not in ("position", "createdAtText", "signedAmount")}
    out["createdAt"] = entry["createdAtText"]
    return out


def normalize(entry: dict[str, Any]) -> dict[str, Any]:
    return {k: Decimal(v) if k in ("amount", "balanceAfter") else v for k, v in entry.items()}


def test_pages_cover_exactly_the_window_newest_first(small: Served) -> None:
    truth = small.sim.truth("acme")
    start, end = date(2025, 2, 1), date(2025, 3, 15)
    with small.client() as client:
        served = small.all_pages(client, {"startDate": start, "endDate": end}, page_size=37)
    expected = [wire(e) for e in reversed(truth.entries_between(start, end))]
    assert [normalize(e) for e in served] == expected
    assert len(expected) > 37 * 3


def test_window_boundaries_are_inclusive_utc_days(small: Served) -> None:
    truth = small.sim.truth("acme")
    grant = next(e for e in truth.entries if e["type"] == "PlanGrant" and e["createdAt"].month == 3)
    assert grant["createdAtText"] == "2025-03-01T00:00:00.000Z"
    last_of_february = truth.entries_between(date(2025, 2, 28), date(2025, 2, 28))[-1]
    with small.client() as client:
        march = small.all_pages(client, {"startDate": "2025-03-01", "endDate": "2025-03-01"})
        february = small.all_pages(client, {"startDate": "2025-02-28", "endDate": "2025-02-28"})
    assert march[-1]["createdAt"] == "2025-03-01T00:00:00.000Z"  # oldest last
    assert grant["balanceAfter"] in {e["balanceAfter"] for e in march}
    assert february[0]["balanceAfter"] == last_of_february["balanceAfter"]
    assert all(e["createdAt"].startswith("2025-02-28") for e in february)


def test_nothing_after_now_is_served(small: Served) -> None:
    now_text = "2025-03-15T12:00:00.000Z"
    with small.client() as client:
        today = small.all_pages(client, {"startDate": "2025-03-15", "endDate": "2025-03-20"})
    assert today and all(e["createdAt"] <= now_text for e in today)
    assert len(today) == len(
        small.sim.truth("acme").entries_between(date(2025, 3, 15), date(2025, 3, 20))
    )


def test_page_past_the_end_is_empty_with_the_right_total(small: Served) -> None:
    with small.client() as client:
        first = client.get(
            LEDGER, params={"startDate": "2025-03-01", "endDate": "2025-03-15"}
        ).json()
        past = client.get(
            LEDGER,
            params={"startDate": "2025-03-01", "endDate": "2025-03-15", "pageNumber": 2147483647},
        ).json()
    assert past == {"data": [], "total": first["total"], "pageNumber": 2147483647, "pageSize": 50}


def test_defaults_are_page_one_of_fifty(small: Served) -> None:
    params = {"startDate": "2025-01-01", "endDate": "2025-03-15"}
    with small.client() as client:
        default = client.get(LEDGER, params=params).json()
        explicit = client.get(LEDGER, params={**params, "pageNumber": 1, "pageSize": 50}).json()
    assert default == explicit
    assert len(default["data"]) == 50


def test_a_window_before_the_history_is_empty(small: Served) -> None:
    with small.client() as client:
        body = client.get(
            LEDGER, params={"startDate": "2020-01-01", "endDate": "2020-12-31"}
        ).json()
    assert body == {"data": [], "total": 0, "pageNumber": 1, "pageSize": 50}


def test_oldest_first_serves_chronological_pages(start: Start) -> None:
    served = start("oldest_first")
    truth = served.sim.truth("acme")
    with served.client() as client:
        pages = served.all_pages(client, {"startDate": "2025-03-01", "endDate": "2025-03-15"}, 41)
    expected = truth.entries_between(date(2025, 3, 1), date(2025, 3, 15))
    assert [normalize(e) for e in pages] == [wire(e) for e in expected]


# date-time ranges under other names -------------------------------------------------------


@pytest.fixture(scope="module")
def dt_served() -> Any:
    from simulator import Simulator, serve
    from tests.simulator.conftest import NOW

    sim = Simulator("datetime_range", now=NOW)
    with serve(sim) as server:
        yield Served(sim, server)


def dt_get(served: Served, start: str, end: str, **extra: Any) -> Any:
    with served.client() as client:
        return client.get(LEDGER, params={"from": start, "to": end, **extra})


def test_datetime_bounds_are_inclusive_to_the_microsecond(dt_served: Served) -> None:
    truth = dt_served.sim.truth("acme")
    entry = truth.entries[len(truth.entries) // 2]
    at = entry["createdAt"]
    same_instant = [e for e in truth.entries if e["createdAt"] == at]

    def count(start: Any, end: Any) -> int:
        response = dt_get(dt_served, start.isoformat(), end.isoformat())
        assert response.status_code == 200, response.text
        return response.json()["total"]

    micro = timedelta(microseconds=1)
    assert count(at, at) == len(same_instant)
    assert count(at + micro, at + timedelta(days=1)) == count(at, at + timedelta(days=1)) - len(
        same_instant
    )
    assert count(at - timedelta(days=1), at - micro) == count(at - timedelta(days=1), at) - len(
        same_instant
    )


def test_datetime_accepts_z_and_offsets(dt_served: Served) -> None:
    z = dt_get(dt_served, "2025-03-01T00:00:00Z", "2025-03-01T23:59:59.999999Z").json()
    offset = dt_get(
        dt_served, "2025-03-01T02:00:00+02:00", "2025-03-01T18:59:59.999999-05:00"
    ).json()
    assert z == offset
    assert z["total"] == len(
        dt_served.sim.truth("acme").entries_between(date(2025, 3, 1), date(2025, 3, 1))
    )
    assert any(e["createdAt"] == "2025-03-01T00:00:00.000Z" for e in decimal_json_all(dt_served))


def decimal_json_all(served: Served) -> list[dict[str, Any]]:
    with served.client() as client:
        return served.all_pages(
            client, {"from": "2025-03-01T00:00:00Z", "to": "2025-03-01T00:00:00Z"}
        )


@pytest.mark.parametrize(
    ("start", "end", "ok"),
    [
        ("2024-01-01T00:00:00Z", "2024-12-31T23:59:59.999999Z", True),
        ("2024-01-01T00:00:00Z", "2025-01-01T00:00:00Z", True),  # exactly 366 days
        ("2024-01-01T00:00:00Z", "2025-01-01T00:00:00.000001Z", False),
        ("2024-01-01T00:00:00+01:00", "2025-01-01T00:00:00+01:00", True),
        ("2024-01-01T00:00:00+01:00", "2025-01-01T00:00:00Z", False),  # 366 days and 1 hour
    ],
)
def test_datetime_span(dt_served: Served, start: str, end: str, ok: bool) -> None:
    response = dt_get(dt_served, start, end)
    if ok:
        assert response.status_code == 200, response.text
    else:
        assert response.status_code == 400
        assert response.json()["detail"] == "to: the range may not span more than 366 days"


@pytest.mark.parametrize(
    "value", ["2025-03-01", "2025-03-01T00:00:00", "2025-03-01T25:00:00Z", "not-a-date"]
)
def test_datetime_needs_an_offset_and_a_time(dt_served: Served, value: str) -> None:
    response = dt_get(dt_served, value, "2025-03-02T00:00:00Z")
    assert response.status_code == 400
    assert response.json()["detail"] == "from: must be an ISO 8601 date-time with a UTC offset or Z"


@pytest.mark.parametrize(
    ("start", "end"),
    [
        ("2025-03-01t00:00:00z", "2025-03-01 23:59:59.999999Z"),
        ("2025-03-01T00:00Z", "2025-03-01T23:59:59.9999999Z"),
        ("20250301T000000Z", "2025-03-01T23:59:59,999999+00:00"),
        ("2025-03-01T01:00:00+0100", "2025-03-02T00:00:00-00:00"),
    ],
)
def test_other_iso_8601_spellings(dt_served: Served, start: str, end: str) -> None:
    truth = dt_served.sim.truth("acme")
    expected = len(truth.entries_between(date(2025, 3, 1), date(2025, 3, 1)))
    midnight = [e for e in truth.entries if e["createdAtText"] == "2025-03-02T00:00:00.000Z"]
    response = dt_get(dt_served, start, end)
    assert response.status_code == 200, response.text
    assert response.json()["total"] in (expected, expected + len(midnight))


@pytest.mark.parametrize(
    ("start", "end"),
    [
        ("0001-01-01T00:00:00+01:00", "0001-01-01T00:00:00+01:00"),
        ("9999-12-31T23:59:59.999999-14:00", "9999-12-31T23:59:59.999999-14:00"),
        ("0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z"),
    ],
)
def test_extreme_instants_are_answered(dt_served: Served, start: str, end: str) -> None:
    response = dt_get(dt_served, start, end)
    assert response.status_code in (200, 400)
    if response.status_code == 200:
        assert response.json()["total"] == 0


def test_datetime_order(dt_served: Served) -> None:
    response = dt_get(dt_served, "2025-03-01T00:00:00.000001Z", "2025-03-01T00:00:00Z")
    assert response.json()["detail"] == "to: must not precede from (the range must be ordered)"


def test_default_names_are_not_accepted_when_renamed(dt_served: Served) -> None:
    with dt_served.client() as client:
        response = client.get(LEDGER, params={"startDate": "2025-03-01", "endDate": "2025-03-02"})
    assert response.status_code == 400
    assert response.json()["detail"] == "from: is required"


def test_amounts_parse_exactly(small: Served) -> None:
    with small.client() as client:
        body = decimal_json(
            client.get(
                LEDGER, params={"startDate": "2025-03-01", "endDate": "2025-03-15", "pageSize": 100}
            )
        )
    for entry in body["data"]:
        for name in ("amount", "balanceAfter"):
            value = Decimal(entry[name])
            assert value == value.quantize(Decimal("0.0001"))
