"""Every rule of GET /Consumption/transactions, with exact status and problem-details fields."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.simulator.conftest import LEDGER, Served

BAD_REQUEST_TYPE = "https://tools.ietf.org/html/rfc7231#section-6.5.1"
WINDOW = {"startDate": "2025-03-01", "endDate": "2025-03-15"}


def get(small: Served, params: dict[str, Any]) -> httpx.Response:
    return small.shared().get(LEDGER, params=params)


def assert_bad_request(response: httpx.Response, detail: str) -> None:
    assert response.status_code == 400
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json()
    assert body["type"] == BAD_REQUEST_TYPE
    assert body["title"] == "Bad Request"
    assert body["status"] == 400
    assert body["detail"] == detail
    assert body["instance"] == LEDGER
    param, _, rule = detail.partition(": ")
    assert rule in body["errors"][param]


@pytest.mark.parametrize("missing", ["startDate", "endDate"])
def test_each_range_parameter_is_required(small: Served, missing: str) -> None:
    params = {k: v for k, v in WINDOW.items() if k != missing}
    assert_bad_request(get(small, params), f"{missing}: is required")


def test_both_missing_names_the_start_first_and_lists_both(small: Served) -> None:
    response = get(small, {})
    assert_bad_request(response, "startDate: is required")
    assert set(response.json()["errors"]) == {"startDate", "endDate"}


def test_an_empty_value_counts_as_missing(small: Served) -> None:
    assert_bad_request(get(small, {**WINDOW, "endDate": ""}), "endDate: is required")


@pytest.mark.parametrize(
    "value",
    ["2025-02-30", "2025/03/01", "20250301", "2025-03-01T00:00:00Z", "yesterday", "٢٠٢٥-03-01"],
)
def test_unparseable_dates_are_rejected(small: Served, value: str) -> None:
    response = get(small, {**WINDOW, "startDate": value})
    assert_bad_request(response, "startDate: must be an ISO 8601 date (YYYY-MM-DD)")


def test_end_before_start_is_rejected(small: Served) -> None:
    response = get(small, {"startDate": "2025-03-02", "endDate": "2025-03-01"})
    assert_bad_request(response, "endDate: must not precede startDate (the range must be ordered)")


def test_a_single_day_is_a_valid_range(small: Served) -> None:
    assert get(small, {"startDate": "2025-03-01", "endDate": "2025-03-01"}).status_code == 200


SPAN = "endDate: the range may not span more than 366 days"


@pytest.mark.parametrize(
    ("start", "end", "ok"),
    [
        ("2024-01-01", "2024-12-31", True),  # leap year: 366 days inclusive
        ("2024-01-01", "2025-01-01", False),  # 367
        ("2023-01-01", "2024-01-01", True),  # 365 + 1 = 366
        ("2023-01-01", "2024-01-02", False),
        ("2024-02-29", "2025-02-28", True),  # from a leap day: 366
        ("2024-02-29", "2025-03-01", False),
        ("2023-03-01", "2024-02-29", True),  # to a leap day: 366
        ("2023-02-28", "2024-02-29", False),
        ("2025-01-01", "2026-01-01", True),  # non-leap year + 1 day = 366
        ("2025-01-01", "2026-01-02", False),
        ("0001-01-01", "9999-12-31", False),
    ],
)
def test_span_is_at_most_366_days_counted_inclusively(
    small: Served, start: str, end: str, ok: bool
) -> None:
    response = get(small, {"startDate": start, "endDate": end})
    if ok:
        assert response.status_code == 200, response.text
    else:
        assert_bad_request(response, SPAN)


@pytest.mark.parametrize(
    ("name", "value", "rule"),
    [
        ("pageNumber", "0", "must be between 1 and 2147483647"),
        ("pageNumber", "-1", "must be between 1 and 2147483647"),
        ("pageNumber", "2147483648", "must be between 1 and 2147483647"),
        ("pageNumber", "9" * 5000, "must be between 1 and 2147483647"),
        ("pageNumber", "-" + "9" * 5000, "must be between 1 and 2147483647"),
        ("pageNumber", "abc", "must be an integer"),
        ("pageNumber", "1.5", "must be an integer"),
        ("pageNumber", "", "must be an integer"),
        ("pageSize", "0", "must be between 1 and 100"),
        ("pageSize", "101", "must be between 1 and 100"),
        ("pageSize", "1e2", "must be an integer"),
        ("pageSize", " 5", "must be an integer"),
    ],
)
def test_paging_bounds(small: Served, name: str, value: str, rule: str) -> None:
    assert_bad_request(get(small, {**WINDOW, name: value}), f"{name}: {rule}")


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("pageNumber", "1"),
        ("pageNumber", "2147483647"),
        ("pageNumber", "0" * 5000 + "2"),
        ("pageSize", "1"),
        ("pageSize", "100"),
        ("pageSize", "+7"),
    ],
)
def test_paging_limits_are_inclusive(small: Served, name: str, value: str) -> None:
    response = get(small, {**WINDOW, name: value})
    assert response.status_code == 200
    assert response.json()[name] == int(value.lstrip("0"))


def test_range_errors_come_before_paging_errors(small: Served) -> None:
    response = get(small, {"startDate": "2025-03-02", "endDate": "2025-03-01", "pageSize": "0"})
    assert_bad_request(response, "endDate: must not precede startDate (the range must be ordered)")
    assert response.json()["errors"]["pageSize"] == ["must be between 1 and 100"]


def test_success_envelope_and_content_type(small: Served) -> None:
    response = get(small, WINDOW)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert set(body) == {"data", "total", "pageNumber", "pageSize"}
    assert (body["pageNumber"], body["pageSize"]) == (1, 50)
    assert len(body["data"]) == 50 < body["total"]
    fields = {"createdAt", "type", "amount", "description", "hasDescription", "channel"}
    fields |= {"agentId", "campaignId", "balanceAfter"}
    assert all(set(entry) == fields for entry in body["data"])


def test_unknown_paths_and_methods_get_problem_details(small: Served) -> None:
    with small.client() as client:
        missing = client.get("/Consumption/unknown")
        wrong_method = client.post(LEDGER, params=WINDOW)
    assert missing.status_code == 404
    assert missing.headers["content-type"] == "application/problem+json"
    assert missing.json()["title"] == "Not Found"
    assert wrong_method.status_code == 405
    assert wrong_method.json()["status"] == 405


NAMES = st.sampled_from(["startDate", "endDate", "pageNumber", "pageSize", "other"])
VALUES = st.one_of(
    st.text(max_size=40),
    st.dates().map(str),
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
    st.text(alphabet="0123456789+-", max_size=6000),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(params=st.dictionaries(NAMES, VALUES, max_size=5))
def test_any_query_gets_200_or_a_named_400(small: Served, params: dict[str, str]) -> None:
    response = get(small, params)
    assert response.status_code in (200, 400), response.text
    if response.status_code == 400:
        detail = response.json()["detail"]
        assert detail.split(":")[0] in ("startDate", "endDate", "pageNumber", "pageSize")
