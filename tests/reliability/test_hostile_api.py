"""One bad value from the API never stops the pipeline; a hostile server never holds or floods it.

Each test plays one way a hostile upstream (tests/reliability/hostile.py, a server that is not the
simulator) broke creditlens, one test per way: lone surrogates in snapshots and entries, money in
non-ASCII digits, snapshot money beyond DECIMAL(18,6), a loose amount grammar and a forgeable
number marker, slow and bloated responses, a page served for another, a partial echo of the key.
Where the claim is "the pipeline goes on", a whole ``creditlens sync`` runs through the command's
entry point: it exits 0, the good data lands, fetched = landed + quarantined, reconciliation runs,
and the next sync works too. One of them (the lone surrogates, whose text is the likeliest to break
what a process prints) runs as a real subprocess; the others in-process through the same entry
point (``cli_in_process``: same parsing, output encoding and exit code), since what they prove is
about the data and the message, not the process. The rest runs against the client, to stay fast.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import tracemalloc
import zlib
from collections.abc import Callable, Iterator
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from pipelines.api.client import PlatformClient, parse_exact_json
from pipelines.api.errors import (
    DeadlineExceeded,
    LedgerDriftError,
    RequestDeadlineExceeded,
    ResponseTooLarge,
    Unauthorized,
)
from pipelines.api.ledger_page import parse_ledger_page
from pipelines.api.ledger_reader import LedgerReader, PageRead, WindowDone, WindowRestart
from pipelines.api.options import ApiSettings
from pipelines.api.wire import validate_columns
from pipelines.snapshots.rows import consumption_rows
from tests.pipeline.helpers import table
from tests.reliability.hostile import (
    BREAKDOWN,
    CAMPAIGN,
    CONSUMPTION,
    SUBSCRIPTION,
    TRANSACTIONS,
    HostileServer,
    Reply,
    Request,
    entry,
    problem,
)
from tests.reliability.support import cli_logged, empty_warehouse_at

KEY = "sk_live+Hostile/Q7x9Zr2mKp4Lw8Vn=="
DAY = "2026-11-20"
ROOT = Path(__file__).resolve().parents[2]


# -- helpers ----------------------------------------------------------------------------------


@pytest.fixture
def hostile() -> Iterator[HostileServer]:
    with HostileServer() as server:
        server.entries = chain(DAY, 3)
        server.balance = "997"
        yield server


def chain(day: str, count: int, start: Decimal = Decimal(1000)) -> list[str]:
    """``count`` distinct entries of ``day`` whose balances follow each other, newest first."""
    entries = []
    for i in range(count):
        at = f"{day}T10:{i // 60:02}:{i % 60:02}.000Z"
        entries.append(entry(at, "-1", str(start - i - 1), description=f"call {i}"))
    return entries[::-1]


def client(server: HostileServer, **options: Any) -> PlatformClient:
    settings: dict[str, Any] = {"backoff_base_s": 0.01, "backoff_max_s": 0.05, "max_retries": 0}
    settings.update(options)
    return PlatformClient(ApiSettings(base_url=server.url, api_key=SecretStr(KEY), **settings))


class Synced:
    """One `creditlens sync` run as a subprocess against the hostile server."""

    def __init__(self, result: subprocess.CompletedProcess[str], warehouse: Path, took: float):
        self.result = result
        self.warehouse = warehouse
        self.took = took

    @property
    def output(self) -> str:
        return self.result.stdout + self.result.stderr

    def rows(self, sql: str) -> list[tuple]:
        return table(self.warehouse, sql)

    def assert_went_on(self) -> None:
        """Exit 0, fetched = landed + quarantined, reconciliation ran."""
        assert self.result.returncode == 0, self.output[-3000:]
        fetched, landed, quarantined = self.rows(
            "SELECT entries_fetched, entries_landed, entries_quarantined FROM sync_runs "
            "ORDER BY finished_at DESC LIMIT 1"
        )[0]
        assert fetched == landed + quarantined
        assert self.rows("SELECT count(*) FROM reconciliation_runs")[0][0] >= 1


def sync(server: HostileServer, folder: Path, *, process: bool = False, **variables: str) -> Synced:
    """A user's `creditlens sync`: inherited CREDITLENS_* variables removed first. Through the
    command's entry point in this process, or with ``process`` in a child process (a fresh
    interpreter costs seconds of imports: once in this file, where the output is the hostile
    text most likely to break a real process's streams)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CREDITLENS_")}
    env.pop("DAGSTER_HOME", None)
    warehouse = folder / "w.duckdb"
    env |= {
        "CREDITLENS_BASE_URL": server.url,
        "CREDITLENS_API_KEY": KEY,
        "CREDITLENS_WAREHOUSE": str(warehouse),
        "CREDITLENS_LEDGER_START": DAY,
        "CREDITLENS_REPORTS_DIR": str(folder / "reports"),
        "CREDITLENS_MAX_RETRIES": "2",
        "CREDITLENS_BACKOFF_BASE_S": "0.01",
        "CREDITLENS_BACKOFF_MAX_S": "0.05",
        # Runs recorded in an ephemeral Dagster instance, as tests/conftest.py's are: a
        # persistent one costs a second or more per sync and none of these tests is about it.
        "CREDITLENS_DAGSTER_INSTANCE": "ephemeral",
        **variables,
    }
    if not warehouse.exists():  # each test's claim is about what the server sends
        empty_warehouse_at(warehouse)
    started = time.monotonic()
    if not process:
        result = cli_logged("sync", env=env, inherit=False, cwd=ROOT)
        return Synced(result, warehouse, time.monotonic() - started)
    result = subprocess.run(
        [sys.executable, "-m", "pipelines.cli", "sync"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return Synced(result, warehouse, time.monotonic() - started)


def error_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("creditlens: error:")]


def read_window(reader: LedgerReader, day: date) -> list[Any]:
    """The entries of a window as the pipeline keeps them (a restarted read's pages dropped)."""
    kept: list[Any] = []
    pending: list[Any] = []
    for event in reader.read(day, day):
        if isinstance(event, PageRead):
            pending.extend(event.entries)
        elif isinstance(event, WindowRestart):
            pending = []
        elif isinstance(event, WindowDone):
            kept, pending = kept + pending, []
    return kept


# -- 1. lone surrogates -----------------------------------------------------------------------


@pytest.mark.slow
def test_lone_surrogates_in_snapshots_and_entries_never_stop_the_sync(
    hostile: HostileServer, tmp_path: Path
) -> None:
    lone = "\ud800"
    hostile.routes[CAMPAIGN] = lambda r: Reply(
        body=b'[{"id": "cmp_1", "name": "Winter"}, {"id": "cmp_\\ud800", "name": "x\\ud800"}]'
    )
    default = hostile.default

    def subscription(request: Request) -> Reply:
        reply = default(request)
        return Reply(body={**reply.body, "plan": f"Growth {lone}"})

    def breakdown(request: Request) -> Reply:
        item = {"agentId": "agt_1", "campaignId": "cmp_1", "channel": lone, "credits": 3}
        return Reply(body={"periodStart": "2026-11-01T00:00:00Z", "items": [item]})

    hostile.routes[SUBSCRIPTION] = subscription
    hostile.routes[BREAKDOWN] = breakdown
    at = f"{DAY}T11:00:00.000Z"
    hostile.entries += [
        entry(at, "0", "997", description=lone),
        entry(at, "0", "997", type_=lone),
        entry(at, "0", "997", channel=lone),
        entry(at, "0", "997", agent_id=lone),
        entry(at, "0", "997", campaign_id=lone),
        entry(at, "0", "997", description="kept", note='"\\ud800"'),  # extra: kept, escaped
    ]

    first = sync(hostile, tmp_path, process=True)
    first.assert_went_on()
    assert "codec" not in first.output
    for endpoint, field in (("/Campaign", "[1] id"), ("/Subscription", "plan")):
        assert f"GET {endpoint} did not have the expected shape" in first.output
        assert f"{field}: is not valid Unicode" in first.output
    assert "items.0.channel: is not valid Unicode" in first.output
    for snapshots in ("campaigns", "subscription_snapshots", "breakdown_snapshots"):
        shape_ok, raw = first.rows(f"SELECT shape_ok, raw_json FROM {snapshots}")[0]
        assert shape_ok is False and "\\ud800" in raw  # kept, as a JSON escape
    reasons = sorted(r for (r,) in first.rows("SELECT reason FROM quarantine"))
    wires = ("agentId", "campaignId", "channel", "description", "type")
    assert [r.split(" ")[0] for r in reasons] == list(wires)
    assert all("not valid Unicode" in r for r in reasons)
    landed = first.rows("SELECT description, extra FROM ledger_entries ORDER BY created_at")
    assert len(landed) == 4  # the 3 calls and the entry whose extra field holds the surrogate
    assert json.loads(landed[-1][1]) == {"note": lone}

    second = sync(hostile, tmp_path)
    second.assert_went_on()
    print(f"reliability: hostile surrogates: sync exit 0 twice ({first.took:.1f}s, 5 quarantined)")


# -- 2. non-ASCII digits ----------------------------------------------------------------------


@pytest.mark.slow
def test_money_in_non_ascii_digits_is_quarantined_with_its_reason(
    hostile: HostileServer, tmp_path: Path
) -> None:
    at = f"{DAY}T12:00:00.000Z"
    hostile.entries += [
        entry(at, '"\u0661\u0662"', "985"),  # Arabic-Indic 12
        entry(at, '"\uff11\uff12"', "985"),  # full-width 12
        entry(at, "-12", '"\u0669\u0668\u0665"'),  # Arabic-Indic 985
    ]
    first = sync(hostile, tmp_path)
    first.assert_went_on()
    assert "NOT NULL" not in first.output
    reasons = [r for (r,) in first.rows("SELECT reason FROM quarantine ORDER BY reason")]
    assert len(reasons) == 3
    assert all("is not a number in JSON's grammar" in r for r in reasons)
    assert sum(r.startswith("balanceAfter ") for r in reasons) == 1
    assert first.rows("SELECT count(*) FROM ledger_entries")[0][0] == 3
    sync(hostile, tmp_path).assert_went_on()


# -- 3. snapshot money beyond DECIMAL(18,6) ---------------------------------------------------

UNFIT_BALANCES = [
    "0.0000001",
    "1.23456789",
    "1e400",
    "-1e400",
    "1234567890123",
    "1" + "0" * 5000,  # an integer Python will not even convert
    "1e999999999999999999",
    "1e-999999999999",
    '"\u0661\u0662"',
    '"1_000"',
    '"+5"',
]


@pytest.mark.parametrize("balance", UNFIT_BALANCES, ids=lambda b: b[:16])
def test_snapshot_money_that_does_not_fit_is_unfit_with_the_field_named(balance: str) -> None:
    body = ('{"balance": ' + balance + ', "creditsUsed": 1.5}').encode()
    rows = consumption_rows(parse_exact_json(body, "/Consumption"), {}, {})
    assert not rows.shape_ok
    assert rows.problem is not None and rows.problem.startswith("balance: ")
    row = rows.rows[0]
    assert row["balance"] is None and row["shape_ok"] is False
    sent = json.loads(balance) if balance.startswith('"') else balance
    assert str(json.loads(row["raw_json"])["balance"]) == sent  # kept exactly as sent


def test_snapshot_money_that_fits_is_exact() -> None:
    body = b'{"balance": 123456789012.123456, "creditsUsed": "2.5", "creditsIncluded": 1E+2}'
    rows = consumption_rows(parse_exact_json(body, "/Consumption"), {}, {})
    assert rows.shape_ok, rows.problem
    row = rows.rows[0]
    assert (row["balance"], row["credits_used"], row["credits_included"]) == (
        Decimal("123456789012.123456"),
        Decimal("2.5"),
        Decimal(100),
    )


@pytest.mark.slow
def test_snapshot_money_beyond_the_decimal_never_stops_the_sync(
    hostile: HostileServer, tmp_path: Path
) -> None:
    hostile.balance = "1" + "0" * 5000
    hostile.routes[BREAKDOWN] = lambda r: Reply(
        body=b'{"periodStart": "2026-11-01T00:00:00Z", "items": [{"channel": "Phone", '
        b'"credits": 1e-999999999999}]}'
    )
    first = sync(hostile, tmp_path)
    first.assert_went_on()
    assert "balance: '" in first.output and "integer digits" in first.output
    assert "items.0.credits: '1e-999999999999' is finer than a micro-credit" in first.output
    consumption = first.rows("SELECT shape_ok, balance, raw_json FROM consumption_snapshots")
    assert consumption[0][:2] == (False, None) and "0" * 5000 in consumption[0][2]
    breakdown = first.rows("SELECT shape_ok, raw_json FROM breakdown_snapshots")
    assert breakdown[0][0] is False and "1e-999999999999" in breakdown[0][1]
    assert first.rows("SELECT count(*) FROM ledger_entries")[0][0] == 3
    sync(hostile, tmp_path).assert_went_on()


# -- 4. the amount grammar and the number marker ----------------------------------------------


def test_amounts_follow_the_json_number_grammar_and_nothing_is_rounded() -> None:
    at = "2026-11-20T10:00:00.000Z"
    refused = ['"1_000"', '"+5"', '"0x10"', '"007"', '"1e-999999999999"', '"1."', '"\u00a07"']
    refused += ["1e-999999999999", "1e999999999999999999", "0.0000001"]
    accepted = {'"12.5"': "12.5", '" 7 "': "7", "-0": "0", "1E+2": "100", "0e-999999999": "0"}
    entries = [entry(at, amount, "5") for amount in [*refused, *accepted]]
    # Text shaped like the marker a former writer used for numbers: it must stay text.
    entries.append(entry(at, "1", "5", note='"\\u0000n:[1,2]\\u0000"'))
    body = '{"data": [' + ",".join(entries) + f'], "total": {len(entries)}, "pageNumber": 1, '
    page = parse_ledger_page((body + '"pageSize": 100}').encode(), "test")
    columns, known = page.columns()
    frame, reasons = validate_columns(columns, known, date(2026, 11, 20), date(2026, 11, 20))
    assert sorted(reasons) == list(range(len(refused)))
    for position, amount in enumerate(refused):
        text = json.loads(amount) if amount.startswith('"') else amount
        assert reasons[position].startswith(f"amount {text!r} "), reasons[position]
    assert frame["amount"].to_list() == [*map(Decimal, accepted.values()), Decimal(1)]
    extra = frame["extra"].to_list()[-1]
    assert json.loads(extra) == {"note": "\u0000n:[1,2]\u0000"}, extra


# -- 5. slow and bloated responses ------------------------------------------------------------


@pytest.mark.parametrize(
    ("trickle_s", "body_bytes"),
    [(0.2, 10), (0.002, 20_000)],
    ids=["headers", "body"],
)
def test_a_trickling_server_is_cut_off_at_the_request_deadline(
    hostile: HostileServer, trickle_s: float, body_bytes: int
) -> None:
    body = ('{"balance": 1, "pad": "' + "x" * body_bytes + '"}').encode()
    hostile.routes[CONSUMPTION] = lambda r: Reply(body=body, trickle_s=trickle_s)
    # Half a second: the deadline's own length proves nothing, only that it, not the 5 s read
    # timeout, ends the request; a shorter one spares the inner loop the wait.
    with client(hostile, timeout_s=5, request_deadline_s=0.5) as api:
        started = time.monotonic()
        with pytest.raises(RequestDeadlineExceeded) as raised:
            api.get_json("/Consumption")
        took = time.monotonic() - started
    # Not a speed target: below the 5 s read timeout proves the deadline, not it, cut it off
    # (the trickle alone would take far longer); loose enough for a loaded machine.
    assert took < 4.5, took
    assert str(raised.value).startswith("GET /Consumption did not complete within 0.5s")
    assert "CREDITLENS_REQUEST_DEADLINE_S" in str(raised.value)
    print(f"reliability: hostile slowloris ({trickle_s}s/byte): cut off after {took:.2f}s")


def test_a_window_that_outlasts_its_deadline_ends_with_one_clear_error(
    hostile: HostileServer,
) -> None:
    hostile.routes[TRANSACTIONS] = lambda r: problem(503, "Service Unavailable", "busy")
    with client(hostile, max_retries=10_000, window_deadline_s=0.5) as api:
        started = time.monotonic()
        with pytest.raises(DeadlineExceeded) as raised:
            read_window(LedgerReader(api, drift_pause_s=0), date(2026, 11, 20))
        took = time.monotonic() - started
    message = str(raised.value)
    assert message.startswith("ledger window 2026-11-20..2026-11-20 was not read within 0.5s")
    assert "CREDITLENS_WINDOW_DEADLINE_S" in message
    # The deadline falls between retries (the last answer, a 503, is named) or during one.
    assert "503" in message or "cut off by the deadline" in message, message
    assert took < 8, took  # 10,000 retries would not end: the window's deadline did


@pytest.mark.slow
def test_slowloris_is_retried_like_a_timeout_then_one_clear_error(
    hostile: HostileServer, tmp_path: Path
) -> None:
    lock = threading.Lock()
    slow = {"ledger": 1}  # the first ledger request only: retried, then the sync goes on

    def ledger(request: Request) -> Reply:
        with lock:
            first, slow["ledger"] = slow["ledger"] > 0, slow["ledger"] - 1
        reply = hostile.ledger_page(request)
        return Reply(body=reply.body, trickle_s=0.2 if first else 0)

    hostile.routes[TRANSACTIONS] = ledger
    # Two whole syncs, each mostly its three Dagster runs, not the 1 s deadlines (1 s once,
    # 3 s always).
    limits = {"CREDITLENS_TIMEOUT": "5", "CREDITLENS_REQUEST_DEADLINE_S": "1"}
    once = sync(hostile, tmp_path / "once", **limits)
    once.assert_went_on()
    assert once.rows("SELECT count(*) FROM ledger_entries")[0][0] == 3

    hostile.routes[CONSUMPTION] = lambda r: Reply(body=b'{"balance": 1}', trickle_s=0.2)
    always = sync(hostile, tmp_path / "always", **limits)
    assert always.result.returncode == 1
    assert error_lines(always.output) == [
        "creditlens: error: GET /Consumption did not complete within 1s "
        "(CREDITLENS_REQUEST_DEADLINE_S); the server sent too slowly or stopped"
    ], always.output[-2000:]
    assert "Traceback" not in always.output
    print(
        f"reliability: hostile slowloris sync: {once.took:.1f}s when retried once, "
        f"{always.took:.1f}s to fail when every /Consumption trickles (deadline 1s, 2 retries)"
    )


def gzip_bomb(megabytes: int) -> bytes:
    """``megabytes`` MiB of JSON whitespace, gzip-compressed, built without holding them."""
    packer = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    mebibyte = b" " * (1 << 20)
    parts = [packer.compress(b"{")]
    parts += [packer.compress(mebibyte) for _ in range(megabytes)]
    parts.append(packer.compress(b"}") + packer.flush())
    return b"".join(parts)


def test_a_gzip_bomb_is_refused_at_the_cap_holding_no_more(hostile: HostileServer) -> None:
    bomb = gzip_bomb(20)
    hostile.routes[SUBSCRIPTION] = lambda r: Reply(body=bomb, headers={"Content-Encoding": "gzip"})
    cap = 1 << 20
    with client(hostile, max_response_bytes=cap, max_retries=1) as api:
        tracemalloc.start()
        try:
            with pytest.raises(ResponseTooLarge) as raised:
                api.get_json("/Subscription")
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert api.requests_sent == 2  # retried like a timeout
    assert str(raised.value) == (
        f"GET /Subscription sent a body of more than {cap} bytes once decompressed "
        "(CREDITLENS_MAX_RESPONSE_BYTES); refused"
    )
    assert peak < 4 * cap, peak
    print(
        f"reliability: hostile gzip bomb {len(bomb)} B -> 20 MiB refused at {cap + 1} bytes "
        f"decompressed, peak {peak / 2**20:.1f} MiB traced"
    )


def test_compressed_answers_within_the_cap_read_as_usual(hostile: HostileServer) -> None:
    hostile.routes[CONSUMPTION] = lambda r: Reply(body=b'{"balance": 12.5}', gzip=True)
    deflated = zlib.compress(b'{"balance": 7}')
    hostile.routes[BREAKDOWN] = lambda r: Reply(
        body=deflated, headers={"Content-Encoding": "deflate"}
    )
    with client(hostile, max_response_bytes=64) as api:
        assert api.get_json("/Consumption") == {"balance": "12.5"}
        assert api.get_json("/Consumption/breakdown") == {"balance": 7}


@pytest.mark.slow
def test_a_bomb_on_every_request_is_one_clear_error(hostile: HostileServer, tmp_path: Path) -> None:
    bomb = gzip_bomb(8)
    hostile.routes[SUBSCRIPTION] = lambda r: Reply(body=bomb, headers={"Content-Encoding": "gzip"})
    synced = sync(hostile, tmp_path, CREDITLENS_MAX_RESPONSE_BYTES=str(1 << 20))
    assert synced.result.returncode == 1
    assert error_lines(synced.output) == [
        f"creditlens: error: GET /Subscription sent a body of more than {1 << 20} bytes once "
        "decompressed (CREDITLENS_MAX_RESPONSE_BYTES); refused"
    ], synced.output[-2000:]


# -- 6. a page served for another -------------------------------------------------------------


def serve_page_one_for_page_two(
    hostile: HostileServer, times: int, ranges: Callable[[dict[str, str]], bool] = lambda q: True
) -> Callable[[], int]:
    """The next ``times`` requests for page 2 of a range ``ranges`` accepts get page 1's entries,
    the envelope saying page 2 (so only the entries give it away); returns how many were."""
    lock = threading.Lock()
    served = [0]

    def ledger(request: Request) -> Reply:
        query = dict(request.query)
        if query.get("pageNumber") == "2" and ranges(query):
            with lock:
                lie, served[0] = served[0] < times, served[0] + 1
            if lie:
                query["pageNumber"] = "1"
                reply = hostile.ledger_page(Request(request.path, query, request.headers))
                return Reply(body=reply.body.replace(b'"pageNumber":1,', b'"pageNumber":2,'))
        return hostile.ledger_page(request)

    hostile.routes[TRANSACTIONS] = ledger
    return lambda: min(served[0], times)


def test_a_page_served_again_for_another_is_drift_and_a_clear_error(
    hostile: HostileServer,
) -> None:
    hostile.entries = chain(DAY, 250)
    serve_page_one_for_page_two(hostile, times=10**6)
    api = client(hostile, drift_retries=2, concurrency=1)
    with api, pytest.raises(LedgerDriftError) as raised:
        read_window(LedgerReader(api, drift_pause_s=0), date(2026, 11, 20))
    assert str(raised.value) == (
        "ledger window 2026-11-20..2026-11-20 kept changing while it was read (3 reads): "
        "page 2 repeats page 1 entry for entry: the server served one page for another"
    )


def test_a_pages_identity_is_the_same_whichever_decoder_read_it() -> None:
    entries = chain(DAY, 3)
    body = '{"data": [' + ",".join(entries) + '], "total": 3, "pageNumber": 1, "pageSize": 100}'
    fast, generic = (parse_ledger_page(body.encode(), "test", fast=f) for f in (True, False))
    assert fast._columns is not None and generic._columns is None  # two decoders, one identity
    assert fast.identity == generic.identity
    other = parse_ledger_page(body.replace("call 2", "call 9").encode(), "test")
    assert other.identity != fast.identity


def several_days(query: dict[str, str]) -> bool:
    return query.get("startDate") != query.get("endDate")


@pytest.mark.slow
def test_a_page_served_again_is_reread_and_identical_entries_stay(
    hostile: HostileServer, tmp_path: Path
) -> None:
    twins = [entry(f"{DAY}T09:00:00.000Z", "0", "1000", description="twin")] * 3
    hostile.entries = chain(DAY, 250) + twins  # 3 identical entries, all on page 3
    # Twice: the first read, then the re-read of the two pages sharing rows, which a check
    # comparing rows alone takes as identical entries staying put.
    # Only in ranges of several days: the sync's ledger window, not the history search, which
    # reads the first day alone (and would meet the lies, and re-read, before the sync does).
    served = serve_page_one_for_page_two(hostile, times=2, ranges=several_days)
    synced = sync(hostile, tmp_path, CREDITLENS_CONCURRENCY="1")
    synced.assert_went_on()
    assert served() == 2
    rows = synced.rows("SELECT description, count(*) FROM ledger_entries GROUP BY ALL")
    assert sorted(rows) == sorted([(f"call {i}", 1) for i in range(250)] + [("twin", 3)])
    assert synced.rows("SELECT entries_fetched, window_restarts FROM sync_runs") == [(253, 2)]


# -- 7. a partial echo of the key -------------------------------------------------------------


def runs_of_the_key(text: str, length: int = 8) -> list[str]:
    return sorted({KEY[i : i + length] for i in range(len(KEY) - length + 1)} & _slices(text))


def _slices(text: str, length: int = 8) -> set[str]:
    return {text[i : i + length] for i in range(len(text) - length + 1)}


@pytest.mark.slow
def test_a_partial_echo_of_the_key_is_never_repeated(
    hostile: HostileServer, tmp_path: Path
) -> None:
    def echo(request: Request) -> Reply:
        reply = problem(401, "Unauthorized", f"unknown key {KEY[:-4]} (is it {KEY[5:13]}?)")
        reply.body |= {"instance": KEY[-10:], "hint": {"prefix": KEY[:9]}}
        return reply

    for path in (TRANSACTIONS, CONSUMPTION, BREAKDOWN, SUBSCRIPTION, CAMPAIGN):
        hostile.routes[path] = echo
    with client(hostile) as api, pytest.raises(Unauthorized) as raised:
        api.get_json("/Campaign")
    error = raised.value
    seen = " ".join(map(str, [error, error.detail, error.instance, error.extra, error.title]))
    assert runs_of_the_key(seen) == [], seen
    assert "[redacted]" in str(error)

    synced = sync(hostile, tmp_path)
    assert synced.result.returncode == 1
    assert len(error_lines(synced.output)) == 1, synced.output[-2000:]
    assert runs_of_the_key(synced.output) == [], synced.output[-2000:]
