"""Whatever a ledger page holds, a sync either lands it with nothing lost or fails with one
clear error; it never crashes on its own.

Hypothesis generates ledger pages (wrong types, missing fields, huge and tiny numbers, NaN and
Infinity as text and as bare tokens, non-UTF-8 bytes, lone surrogates, unicode, HTML, dates
outside the window, a page served twice, a total that lies) and the simulator serves them, as
bytes, in place of the real ledger; the ledger step then syncs that one day through the ledger
asset's own functions (``land_one_day``). The whole `run_sync` around it (a Dagster instance, two
runs, the snapshots, the reconciliation) costs ~0.5 CPU-s an example and decides nothing about a
page; the targeted case of money at the limits runs it whole, since the reconciliation is what it
proves.
"""

from __future__ import annotations

import json
import os
import re
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

import duckdb
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from pipelines.api.client import PlatformClient
from pipelines.api.errors import ApiError
from pipelines.cli.sync_command import run_sync
from pipelines.config.settings import Settings
from pipelines.ledger.sync import land_staged, stage_ledger
from tests.conftest import Simulated
from tests.pipeline.helpers import table
from tests.reliability.support import empty_warehouse_at

Start = Callable[..., Simulated]
Env = Callable[..., Settings]

# Examples per way a page can lie (30 in all; docs/reliability.md quotes them). "none": honest
# pages of good and bad entries; "repeat": page 2 is page 1 again; "total": a total that does not
# match the pages; "envelope": a page that is not a ledger page; "bytes": a body that is not UTF-8;
# "constant": a bare NaN or Infinity token. Fixed examples in CI; to hunt with fresh ones:
# RELIABILITY_FUZZ_SCALE=10 RELIABILITY_FUZZ_RANDOM=1 pytest tests/reliability/test_bad_input.py
LIES = {"none": 10, "repeat": 5, "total": 4, "envelope": 4, "bytes": 3, "constant": 4}
NOT_PAGES = ("envelope", "bytes", "constant")  # a sync must refuse these
SCALE = int(os.environ.get("RELIABILITY_FUZZ_SCALE", "1"))
DERANDOMIZE = not os.environ.get("RELIABILITY_FUZZ_RANDOM")
# Messages a failed sync may give about the pages it was served: the API layer's own, which say
# which window and page, or which request, went wrong.
OWN_MESSAGE = re.compile(r"^(ledger window \d{4}-\d\d-\d\d\.\.\d{4}-\d\d-\d\d|GET /)")


class Raw(str):
    """A JSON token written as is: `NaN`, `1e400`, `-0`, a number with 30 digits."""


def render(value: Any) -> str:
    """JSON text, except that Raw tokens are written verbatim (so invalid JSON is possible)."""
    if isinstance(value, Raw):
        return str(value)
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(k)}:{render(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(render(v) for v in value) + "]"
    return json.dumps(value)


MISSING = object()

numbers = st.one_of(
    # Valid money stays within +-10**11 here: balanceAfter - amount must fit DECIMAL(18,6) too,
    # and the limits have their own test (test_money_at_the_decimal_limits_reconciles).
    st.decimals(min_value=-(10**11), max_value=10**11, places=6).map(lambda d: Raw(f"{d:f}")),
    st.decimals(allow_nan=False, allow_infinity=False).map(lambda d: Raw(f"{d:E}")),
    st.sampled_from(
        [
            Raw("1e400"),
            Raw("-1e400"),
            Raw("1e-30"),
            Raw("0.0000001"),
            Raw("-0"),
            Raw("123456789012345678901234567890"),
            Raw("9999999999999.5"),
            Raw("1000000000000"),
        ]
    ),
    st.sampled_from(["NaN", "Infinity", "-Infinity", "12.5", " 7 ", "1e3", "", "0x10", "1,5"]),
    st.booleans(),
    st.none(),
    st.just({}),
    st.just([1]),
)
texts = st.one_of(
    st.text(max_size=40),
    st.sampled_from(
        [
            "<script>alert('x')</script>",
            "<b>bold</b> &amp; <img src=x onerror=alert(1)>",
            "'; DROP TABLE ledger_entries; --",
            "\u202eevil\u202c",
            "\x00nul",
            "emoji \U0001f4de call",
            "a" * 2000,
        ]
    ),
)


@dataclass
class Day:
    text: str  # YYYY-MM-DD of the synced day
    other: list[str] = field(default_factory=list)  # days outside the window


def moments(day: Day) -> st.SearchStrategy[Any]:
    inside = st.tuples(
        st.integers(0, 23), st.integers(0, 59), st.integers(0, 59), st.integers(0, 999_999)
    ).flatmap(
        lambda t: st.sampled_from(
            [
                f"{day.text}T{t[0]:02}:{t[1]:02}:{t[2]:02}.{t[3] // 1000:03}Z",
                f"{day.text}T{t[0]:02}:{t[1]:02}:{t[2]:02}.{t[3]:06}+00:00",
                f"{day.text}T{t[0]:02}:{t[1]:02}:{t[2]:02}",
                f"{day.text}T{t[0]:02}:{t[1]:02}:{t[2]:02}+09:30",
                f"{day.text} {t[0]:02}:{t[1]:02}",
            ]
        )
    )
    outside = st.sampled_from(
        [f"{d}T12:00:00.000Z" for d in day.other]
        + ["0001-01-01T00:00:00Z", "9999-12-31T23:59:59.999Z", "1970-01-01T00:00:00Z"]
    )
    broken = st.one_of(
        st.sampled_from(["yesterday", "", "2025-02-30T00:00:00Z", "2025-1-1", "T12:00"]),
        st.integers(),
        st.none(),
    )
    return st.one_of(inside, inside, inside, outside, broken)


def good_entries(day: Day) -> st.SearchStrategy[dict[str, Any]]:
    """Entries every rule accepts: they must land, amounts exact."""
    money = st.decimals(min_value=-(10**6), max_value=10**6, places=4).map(lambda d: Raw(f"{d:f}"))
    return st.fixed_dictionaries(
        {
            "createdAt": st.integers(0, 86_399_999).map(
                lambda ms: (
                    f"{day.text}T{ms // 3_600_000:02}:{ms // 60_000 % 60:02}:"
                    f"{ms // 1000 % 60:02}.{ms % 1000:03}Z"
                )
            ),
            "type": st.sampled_from(["Usage", "TopUp", "Refund", "Adjustment", "Surprise"]),
            "amount": money,
            "description": texts,
            "hasDescription": st.booleans(),
            "channel": st.one_of(st.none(), st.sampled_from(["Phone", "Chat", "Fax"])),
            "agentId": st.one_of(st.none(), st.text(max_size=8)),
            "campaignId": st.one_of(st.none(), st.text(max_size=8)),
            "balanceAfter": money,
        }
    )


def bad_entries(day: Day) -> st.SearchStrategy[Any]:
    """Anything: a good entry with fields replaced, removed or added, or not an object at all."""
    replacements = {
        "createdAt": moments(day),
        "type": st.one_of(texts, numbers),
        "amount": numbers,
        "balanceAfter": numbers,
        "description": st.one_of(texts, numbers),
        "hasDescription": st.one_of(st.booleans(), numbers, texts),
        "channel": st.one_of(texts, numbers),
        "agentId": st.one_of(texts, numbers),
        "campaignId": st.one_of(texts, numbers),
    }

    @st.composite
    def mutated(draw: st.DrawFn) -> Any:
        entry = dict(draw(good_entries(day)))
        for name in draw(st.lists(st.sampled_from(sorted(replacements)), max_size=4)):
            value = draw(st.one_of(replacements[name], st.just(MISSING)))
            if value is MISSING:
                entry.pop(name, None)
            else:
                entry[name] = value
        entry.update(draw(st.dictionaries(st.text(max_size=10), numbers | texts, max_size=2)))
        return entry

    return st.one_of(mutated(), mutated(), mutated(), numbers, texts, st.just([]))


@dataclass
class Served:
    """The pages of one example, as served, and what an honest read of them holds."""

    bodies: dict[int, bytes]  # by pageNumber; any other page number gets `past_end`
    past_end: bytes
    entries: int  # entries in pages 1..n
    good: list[dict[str, Any]]
    valid_envelope: bool  # pages that agree with their total and are well-formed JSON
    lie: str

    def __repr__(self) -> str:  # the pages themselves run to hundreds of kilobytes
        return (
            f"Served(pages={len(self.bodies)}, entries={self.entries}, good={len(self.good)}, "
            f"lie={self.lie!r}, first_page={self.bodies[1][:300]!r})"
        )


@st.composite
def served_pages(draw: st.DrawFn, day: Day, lie: str) -> Served:
    pages: list[list[Any]] = []
    good: list[list[dict[str, Any]]] = []  # the good entries of each page
    count = draw(st.integers(2 if lie == "repeat" else 1, 3))
    for number in range(1, count + 1):
        size = 100 if number < count else draw(st.integers(0, 100))
        if count == 1 and draw(st.booleans()):  # a short page
            size = draw(st.integers(0, 8))
        # A few distinct entries, cycled to fill the page: drawing 100 distinct entries per page
        # costs more than it finds (a cycle also makes genuinely identical entries).
        distinct = draw(
            st.lists(
                st.one_of(
                    good_entries(day).map(lambda e: (True, e)),
                    bad_entries(day).map(lambda e: (False, e)),
                ),
                min_size=1,
                max_size=8,
            )
        )
        cycle = [distinct[i % len(distinct)] for i in range(size)]
        pages.append([entry for _, entry in cycle])
        good.append([entry for is_good, entry in cycle if is_good])
    if lie == "repeat" and count > 1:
        pages[1], good[1] = pages[0], good[0]  # page 2 is page 1 again
    entries_total = sum(len(p) for p in pages)
    total: Any = entries_total
    if lie == "total":
        total = draw(st.sampled_from([entries_total + 1, max(0, entries_total - 1), 10**9, -1]))
    bodies = {
        n: render(
            {"data": data, "total": Raw(str(total)), "pageNumber": n, "pageSize": 100}
        ).encode("utf-8", "surrogatepass")
        for n, data in enumerate(pages, start=1)
    }
    if lie == "envelope":
        n = draw(st.integers(1, count))
        bodies[n] = draw(
            st.sampled_from(
                [
                    b'{"data": {}, "total": 1, "pageNumber": 1, "pageSize": 100}',
                    b'{"total": 0}',
                    b"[]",
                    b'{"data": [], "total": "many", "pageNumber": 1, "pageSize": 100}',
                    b"<html>502 Bad Gateway</html>",
                    b"",
                ]
            )
        )
    if lie == "bytes":
        n = draw(st.integers(1, count))
        bodies[n] = bodies[n].replace(b'"data"', b'"d\xffta"', 1) + b"\xc3\x28"
    if lie == "constant":  # a bare NaN, Infinity or -Infinity token: not JSON
        n = draw(st.integers(1, count))
        token = draw(st.sampled_from([b"NaN", b"Infinity", b"-Infinity"]))
        bodies[n] = bodies[n].replace(b'"total":', b'"balance": ' + token + b', "total":', 1)
    past_end = render(
        {"data": [], "total": Raw(str(total)), "pageNumber": count + 1, "pageSize": 100}
    ).encode()
    # A page whose entries equal another page's is drift (a server serving a page for another),
    # so only a read whose non-empty pages all differ is honest; "repeat" is refused.
    rendered = [render({"data": data}) for data in pages if data]
    honest = (
        lie == "none"
        and len(set(rendered)) == len(rendered)
        and entries_total == total
        and all(map(_strict, bodies.values()))
    )
    return Served(
        bodies, past_end, sum(len(p) for p in pages), [e for g in good for e in g], honest, lie
    )


def _strict(body: bytes) -> bool:
    """Whether a body is JSON a strict reader accepts (no bare NaN or Infinity)."""
    try:
        json.loads(body, parse_constant=lambda name: 1 / 0)
    except (ValueError, ZeroDivisionError):
        return False
    return True


@pytest.mark.slow
def test_any_ledger_page_lands_whole_or_fails_clearly(
    simulated: Start, creditlens_env: Env
) -> None:
    s = simulated("small")
    day = Day(
        s.today.isoformat(),
        [(s.today - timedelta(days=1)).isoformat(), (s.today + timedelta(days=1)).isoformat()],
    )
    config = creditlens_env(
        s,
        CREDITLENS_LEDGER_START=day.text,
        CREDITLENS_MAX_RETRIES="1",
        CREDITLENS_DRIFT_RETRIES="1",
        CREDITLENS_BACKOFF_BASE_S="0.001",
        CREDITLENS_BACKOFF_MAX_S="0.01",
    )
    # Landed into a migrated empty warehouse, as the first example's landing would create it:
    # the claim is about the pages, not the file's creation (tested elsewhere).
    empty_warehouse_at(config.warehouse)
    seen: Counter[tuple[str, str]] = Counter()  # (lie, outcome)
    # The sync_runs rows as the last example left them, read back after it (a read-only open of
    # the warehouse costs ~15 ms, twice an example before); None while an example is under way,
    # so one that ended on an error leaves the next to read them afresh.
    known: list[list[tuple[int, int, int]] | None] = [[]]

    def examples(lie: str) -> None:
        @settings(
            max_examples=LIES[lie] * SCALE,
            derandomize=DERANDOMIZE,
            database=None,
            deadline=None,
            suppress_health_check=[
                HealthCheck.function_scoped_fixture,
                HealthCheck.too_slow,
                HealthCheck.data_too_large,
            ],
        )
        @given(served=served_pages(day, lie))
        def check(served: Served) -> None:
            s.sim.faults.clear()
            for number, body in served.bodies.items():
                s.sim.faults.respond(body, match=lambda q, n=str(number): q.get("pageNumber") == n)
            numbers = {str(n) for n in served.bodies}
            s.sim.faults.respond(
                served.past_end, match=lambda q: q.get("pageNumber") not in numbers
            )
            runs_before = known[0] if known[0] is not None else _runs(config)
            known[0] = None
            try:
                land_one_day(config, date.fromisoformat(day.text))
            except ApiError as error:
                message = str(error)
                note(f"failed: {message}")
                assert message and "\n" not in message and "Traceback" not in message
                assert OWN_MESSAGE.match(message), f"not one of the API layer's errors: {message}"
                assert not served.valid_envelope, f"honest pages were refused: {message}"
                assert _runs(config) == runs_before  # a failed sync records nothing
                known[0] = runs_before
                seen[served.lie, "failed"] += 1
                return
            finally:
                s.sim.faults.clear()
            assert served.lie not in NOT_PAGES, "a body that is not a ledger page was accepted"
            seen[served.lie, "synced"] += 1
            runs, in_day, amounts = _landed_day(config, day.text)
            assert len(runs) == len(runs_before) + 1
            fetched, landed_, quarantined = runs[-1]
            assert fetched == landed_ + quarantined
            assert fetched == served.entries
            assert in_day == fetched  # nothing lost, nothing doubled: every entry is in one table
            remaining = list(amounts)
            for entry in served.good:  # every good entry landed, its amount exact
                remaining.remove(Decimal(str(entry["amount"])))
            known[0] = runs

        check()

    for lie in LIES:
        examples(lie)
    print(f"reliability: fuzz {dict(sorted(seen.items()))}")  # docs/reliability.md
    assert {outcome for _, outcome in seen} == {"synced", "failed"}, seen


def land_one_day(config: Settings, day: date) -> None:
    """The ledger asset's step for one account and one day, through its own functions: the
    pages read and staged, validated (the quarantine rules, the drift and total checks), then
    landed in one transaction with their sync_runs row, and the analyst copy published; an
    account's failure raised as the step would report it."""
    account = config.account
    with PlatformClient(account.api_settings()) as client:
        staged = stage_ledger(
            client,
            account=account.name,
            first=day,
            last=day,
            run_id=f"fuzz-{uuid.uuid4().hex}",
            staging_root=config.staging_root,
        )
    warehouse = config.open_warehouse()
    outcome = land_staged(warehouse, [staged])[account.name]
    if isinstance(outcome, BaseException):
        raise outcome
    warehouse.publish_analyst_copy()


def _landed_day(config: Settings, day: str) -> tuple[list[tuple[int, int, int]], int, list[Any]]:
    """After a landing, through one read-only connection: the sync_runs rows (as ``_runs``),
    the entries of ``day`` in either table, and the landed amounts of ``day``."""
    con = duckdb.connect(str(config.warehouse), read_only=True)
    try:
        runs = con.execute(RUNS).fetchall()
        in_day = con.execute(
            "SELECT (SELECT count(*) FROM ledger_entries WHERE entry_day = CAST(? AS DATE)) "
            "+ (SELECT count(*) FROM quarantine WHERE entry_day = CAST(? AS DATE))",
            [day, day],
        ).fetchone()[0]
        amounts = con.execute(
            "SELECT amount FROM ledger_entries WHERE entry_day = CAST(? AS DATE)", [day]
        ).fetchall()
    finally:
        con.close()
    return runs, in_day, [r[0] for r in amounts]


RUNS = (
    "SELECT entries_fetched, entries_landed, entries_quarantined FROM sync_runs "
    "ORDER BY finished_at"
)


def _runs(config: Settings) -> list[tuple[int, int, int]]:
    if not config.warehouse.exists():
        return []
    return table(config.warehouse, RUNS)


def _serve_one_page(s: Simulated, entries: list[str]) -> None:
    body = '{"data": [' + ", ".join(entries) + f'], "total": {len(entries)}'
    s.sim.faults.respond(
        (body + ', "pageNumber": 1, "pageSize": 100}').encode(),
        match=lambda q: q.get("pageNumber") == "1",
    )
    s.sim.faults.respond(
        f'{{"data": [], "total": {len(entries)}, "pageNumber": 2, "pageSize": 100}}'.encode(),
        match=lambda q: q.get("pageNumber") != "1",
    )


def _entry(day: str, at: str, amount: str, balance: str, description: str = "x") -> str:
    return (
        f'{{"createdAt": "{day}T{at}.000Z", "type": "Usage", "amount": {amount}, '
        f'"description": "{description}", "hasDescription": true, "balanceAfter": {balance}}}'
    )


@pytest.mark.slow
def test_money_at_the_decimal_limits_reconciles(simulated: Start, creditlens_env: Env) -> None:
    s = simulated("small")
    day = s.today.isoformat()
    config = creditlens_env(s, CREDITLENS_LEDGER_START=day, CREDITLENS_MAX_RETRIES="0")
    empty_warehouse_at(config.warehouse)  # what the page holds is the claim, not the file
    top = "99999999999.999999"  # the largest an entry may carry: 11 integer digits
    beyond = "999999999999.999999"  # fits DECIMAL(18,6), but the balance before it may not
    _serve_one_page(
        s,
        [
            _entry(day, "10:00:00", top, top),
            _entry(day, "11:00:00", top, "-" + top),
            _entry(day, "12:00:00", "-" + top, top),
            _entry(day, "13:00:00", beyond, beyond),
        ],
    )
    run_sync(config, day, day)  # lands, quarantines, and reconciles without an overflow
    assert _runs(config)[-1] == (4, 3, 1)


@pytest.mark.slow
def test_a_lone_surrogate_is_quarantined_not_a_crash(simulated: Start, creditlens_env: Env) -> None:
    s = simulated("small")
    day = s.today.isoformat()
    config = creditlens_env(s, CREDITLENS_LEDGER_START=day, CREDITLENS_MAX_RETRIES="0")
    empty_warehouse_at(config.warehouse)  # what the page holds is the claim, not the file

    _serve_one_page(
        s,
        [
            _entry(day, "10:00:00", "-1", "5", "ok"),
            _entry(day, "10:00:01", "-1", "4", "\\ud800"),
        ],
    )
    # The ledger step, as the property's examples run it: a whole sync of lone surrogates, in
    # snapshots and entries alike, is test_hostile_api.py's (in a real process).
    land_one_day(config, date.fromisoformat(day))
    assert _runs(config)[-1] == (2, 1, 1)
