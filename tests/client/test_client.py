"""The client against the real simulator: problem details, retries, faults, drift, exactness."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import date
from decimal import Decimal

import pytest

from pipelines.api.errors import (
    BadRequest,
    LedgerDriftError,
    MalformedResponse,
    RateLimited,
    ServerError,
    TransportFailure,
    Unauthorized,
)
from pipelines.api.ledger_reader import LedgerReader, PageRead, WindowDone, WindowRestart
from simulator import Fault
from tests.conftest import Simulated

Start = Callable[..., Simulated]
LEDGER = "/Consumption/transactions"


def read_all(s: Simulated, first: date | None = None, last: date | None = None, **over: object):
    """Every accepted entry, dropping a window's pages when it restarts, as the pipeline does."""
    with s.client(**over) as client:
        reader = LedgerReader(client, drift_pause_s=0)
        accepted: list[dict] = []
        window_rows: list[dict] = []
        for event in reader.read(first or s.first_day, last or s.today):
            if isinstance(event, PageRead):
                window_rows.extend(event.entries)
            elif isinstance(event, WindowRestart):
                window_rows = []
            elif isinstance(event, WindowDone):
                accepted.extend(window_rows)
                window_rows = []
        return accepted, reader.stats, client


def as_truth(rows: list[dict]) -> list[tuple]:
    def key(r: dict) -> tuple:
        return (
            r["createdAt"],
            r["type"],
            Decimal(r["amount"]),
            r.get("description"),
            r.get("hasDescription"),
            r.get("channel"),
            r.get("agentId"),
            r.get("campaignId"),
            Decimal(r["balanceAfter"]),
        )

    return sorted(key(r) for r in rows)


def truth_rows(s: Simulated) -> list[tuple]:
    return sorted(
        (
            e["createdAtText"],
            e["type"],
            e["amount"],
            e["description"],
            e["hasDescription"],
            e["channel"],
            e["agentId"],
            e["campaignId"],
            e["balanceAfter"],
        )
        for e in s.sim.truth(s.company).entries
    )


def test_reads_exactly_the_simulators_ledger(simulated: Start) -> None:
    s = simulated("small")
    rows, stats, _ = read_all(s)
    assert as_truth(rows) == truth_rows(s)
    assert stats.windows == 2 and stats.entries == len(rows)  # the settled days, then today


def test_exact_decimals_over_a_long_chain(simulated: Start) -> None:
    s = simulated("small")
    rows, _, _ = read_all(s)
    # The sum of thousands of amounts equals the balance change exactly: no float anywhere.
    ordered = sorted(rows, key=lambda r: r["createdAt"])
    truth = s.sim.truth(s.company)
    total = sum((Decimal(r["amount"]) for r in rows), Decimal(0))
    hidden = sum((m.gap for m in truth.hidden_movements), Decimal(0))
    assert (
        truth.opening_balance + total + hidden
        == Decimal(max(ordered, key=lambda r: r["createdAt"])["balanceAfter"])
        or truth.opening_balance + total + hidden == truth.balance
    )


def test_bad_request_carries_problem_details(simulated: Start) -> None:
    s = simulated("small")
    with s.client() as client, pytest.raises(BadRequest) as info:
        client.get_bytes(LEDGER, {"startDate": "2025-01-02", "endDate": "2025-01-01"})
    err = info.value
    assert err.status == 400 and err.title == "Bad Request"
    assert err.type == "https://tools.ietf.org/html/rfc7231#section-6.5.1"
    assert "endDate" in (err.detail or "")
    assert str(err).startswith(f"GET {LEDGER} failed: 400 Bad Request: ")
    assert client.requests_sent == 1  # 400 is never retried


def test_unauthorized_is_not_retried_and_never_shows_the_key(
    simulated: Start, caplog: pytest.LogCaptureFixture
) -> None:
    s = simulated("small")
    secret = "sk-live-this-is-not-a-valid-key-0123456789"
    caplog.set_level(logging.DEBUG)
    with s.client(api_key=secret) as client:
        with pytest.raises(Unauthorized) as info:
            client.get_json("/Consumption")
        assert client.requests_sent == 1
        text = f"{info.value} {info.value!r} {client!r} {client.settings!r} {caplog.text}"
    assert "the API key was rejected (401 Unauthorized)" in str(info.value)
    assert secret not in text


@pytest.mark.parametrize("kind", ["429", "500", "502", "503", "reset", "truncated", "malformed"])
def test_each_fault_kind_is_retried_to_the_exact_ledger(simulated: Start, kind: str) -> None:
    s = simulated("small")
    s.sim.faults.script(*[Fault(kind, path=LEDGER, retry_after=0) for _ in range(3)])
    rows, _, client = read_all(s)
    assert as_truth(rows) == truth_rows(s)
    assert client.retries >= 3


def test_timeout_is_retried(simulated: Start) -> None:
    s = simulated("small")
    s.sim.faults.script(Fault("timeout", path=LEDGER, delay=1.0))
    rows, _, client = read_all(s, timeout_s=0.3)
    assert as_truth(rows) == truth_rows(s) and client.retries >= 1


def test_retry_after_is_honoured(simulated: Start) -> None:
    s = simulated("small")
    s.sim.faults.script(Fault("429", path="/Consumption", retry_after=1))
    slept: list[float] = []
    with s.client() as client:
        client._sleep = slept.append  # observe, do not wait
        client.get_json("/Consumption")
    assert slept and slept[0] >= 1.0


@pytest.mark.parametrize(
    ("kind", "error"),
    [
        ("503", ServerError),
        ("429", RateLimited),
        ("reset", TransportFailure),
        ("malformed", MalformedResponse),
    ],
)
def test_a_clear_error_once_retries_run_out(simulated: Start, kind: str, error: type) -> None:
    s = simulated("small")
    s.sim.faults.set_rate(1.0, [kind], path="/Consumption", retry_after=0)
    with s.client(max_retries=2) as client, pytest.raises(error) as info:
        client.get_json("/Consumption")
    assert client.requests_sent == 3
    assert "/Consumption" in str(info.value)


def test_page_drift_is_detected_and_reread(simulated: Start) -> None:
    s = simulated("small")
    # New entries arrive at "now" between page requests: newest-first pages of the window that
    # holds today shift (the settled days before it are a window of their own and do not move).
    today = s.today.isoformat()
    s.sim.faults.script(
        Fault("drift", path=LEDGER, drift_entries=3, match=lambda q: q["startDate"] == today),
        Fault("drift", path=LEDGER, match=lambda q: q["startDate"] == today),
    )
    rows, stats, _ = read_all(s)
    assert stats.restarts >= 1
    assert as_truth(rows) == truth_rows(s)  # the truth includes the entries that arrived


def test_drift_that_never_settles_is_a_clear_error(simulated: Start) -> None:
    s = simulated("small")
    s.sim.faults.script(*[Fault("drift", path=LEDGER) for _ in range(200)])
    with pytest.raises(LedgerDriftError, match="kept changing"):
        read_all(s, drift_retries=2)


def test_a_lying_total_is_drift_not_data(simulated: Start) -> None:
    s = simulated("small")
    body = {"data": [], "total": 5, "pageNumber": 1, "pageSize": 100}
    s.sim.faults.respond(body, times=1)
    rows, stats, _ = read_all(s)
    assert stats.restarts == 1 and as_truth(rows) == truth_rows(s)


def _page(rows: list[dict], number: int, total: int) -> dict:
    return {"data": rows, "total": total, "pageNumber": number, "pageSize": 100}


def _rows(start: int, count: int) -> list[dict]:
    return [
        {"createdAt": f"2026-01-01T00:00:{i % 60:02d}.{i:03d}Z", "type": "Usage", "amount": 0,
         "balanceAfter": i}
        for i in range(start, start + count)
    ]  # fmt: skip


def _serve(s: Simulated, number: int, body: dict, times: int | None = None) -> None:
    s.sim.faults.respond(body, match=lambda q, n=str(number): q.get("pageNumber") == n, times=times)


def test_identical_entries_across_a_page_boundary_cost_two_requests_not_a_window(
    simulated: Start,
) -> None:
    s = simulated("small")
    twin = _rows(500, 1)[0]
    first, second = [*_rows(0, 99), twin], [twin, *_rows(100, 49)]
    _serve(s, 1, _page(first, 1, 150))
    _serve(s, 2, _page(second, 2, 150))
    _serve(s, 3, _page([], 3, 150))
    with s.client() as client:
        reader = LedgerReader(client, drift_pause_s=0)
        events = list(reader.read_window(reader.windows(s.today, s.today)[0]))
    assert reader.stats.restarts == 0 and reader.stats.entries == 150
    assert reader.stats.pages == 5  # two pages, the probe, and the two pages re-read once
    assert isinstance(events[-1], WindowDone)


def test_a_shift_seen_only_on_re_reading_the_boundary_restarts_the_window(
    simulated: Start,
) -> None:
    s = simulated("small")
    twin = _rows(500, 1)[0]
    first = [*_rows(0, 99), twin]
    _serve(s, 1, _page(first, 1, 150))
    _serve(s, 2, _page([twin, *_rows(100, 49)], 2, 150), times=1)  # shifted once ...
    _serve(s, 2, _page(_rows(99, 50), 2, 150))  # ... then read as it really is
    _serve(s, 3, _page([], 3, 150))
    with s.client() as client:
        reader = LedgerReader(client, drift_pause_s=0)
        list(reader.read_window(reader.windows(s.today, s.today)[0]))
    assert reader.stats.restarts == 1
    assert "a re-read of them differs" in reader.stats.restart_reasons[0]
